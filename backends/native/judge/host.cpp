#include "host.hpp"

#include "alloc_hooks.hpp"
#include "host_control.hpp"
#include "space.hpp"

#include "kevo/native/protocol.hpp"
#include "kevo/sandbox/isolation.hpp"
#include "kevo/sandbox/seccomp.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <typeinfo>

namespace kevo::native::judge {

namespace {

using Entry = void (*)(void* const*);

struct HostArgs {
  std::string role = "candidate", library, policy = "cpu", parent_ns;
  int library_fd = -1;   // the library, opened by the judge (its path may not exist in this root)
  bool seccomp = true, trusted = false, calibrate = false;
  std::size_t device_arena_bytes = 0;   // > 0: the buffers are on the device (descriptor 6)
  std::int64_t memory_mb = 0, file_mb = 0;
  double cpu_seconds = 0;
  int open_files = 0;
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "kevo kernel host: %s\n", why.c_str());
  std::_Exit(kJudgeFatalExit);
}

HostArgs parse(int argc, char** argv) {
  std::map<std::string, std::string> kv;
  for (int i = 2; i + 1 < argc; i += 2) kv[argv[i]] = argv[i + 1];
  HostArgs a;
  auto get = [&](const char* k) -> std::string {
    auto it = kv.find(k);
    if (it == kv.end()) die(std::string("missing ") + k);
    return it->second;
  };
  a.role = get("--role");
  a.library = get("--library");
  a.library_fd = std::atoi(get("--library-fd").c_str());
  a.policy = get("--policy");
  a.parent_ns = get("--parent-ns");
  a.seccomp = get("--seccomp") == "1";
  a.trusted = get("--trusted") == "1";
  a.memory_mb = std::atoll(get("--memory-mb").c_str());
  a.file_mb = std::atoll(get("--file-mb").c_str());
  a.cpu_seconds = std::atof(get("--cpu-seconds").c_str());
  a.open_files = std::atoi(get("--open-files").c_str());
  if (kv.count("--device-arena-bytes")) a.device_arena_bytes = std::stoull(kv["--device-arena-bytes"]);
  a.calibrate = kv.count("--calibrate") && kv["--calibrate"] == "1";
  return a;
}

void set_limit(int resource, rlim_t soft, rlim_t hard) {
  rlimit rl{soft, hard};
  ::setrlimit(resource, &rl);   // lowering never fails for want of rights
}

void set_limits(const HostArgs& a) {
  set_limit(RLIMIT_CORE, 0, 0);
  if (a.memory_mb > 0) {
    const rlim_t b = static_cast<rlim_t>(a.memory_mb) * 1024 * 1024;
    set_limit(RLIMIT_AS, b, b);
  }
  if (a.cpu_seconds > 0) {
    const auto s = static_cast<rlim_t>(std::ceil(a.cpu_seconds));
    set_limit(RLIMIT_CPU, s, s + 1);
  }
  if (a.file_mb > 0) {
    const rlim_t b = static_cast<rlim_t>(a.file_mb) * 1024 * 1024;
    set_limit(RLIMIT_FSIZE, b, b);
  }
}

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t left = s.size();
  while (left) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void set_message(HostControl* ctl, const std::string& m) {
  const std::size_t n = std::min(m.size(), sizeof ctl->message - 1);
  std::memcpy(ctl->message, m.data(), n);
  ctl->message[n] = '\0';
}

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

std::atomic<std::int32_t>* g_fatal_slot = nullptr;

void on_fatal_signal(int sig) {
  if (g_fatal_slot) g_fatal_slot->store(sig, std::memory_order_release);
  ::_exit(128 + sig);
}

// The first process of a PID namespace is spared every signal it has no
// handler for, its own raise() included; these give abort(), kill(self)
// and the CPU-time limit their usual ends, recorded for the judge.
void catch_fatal_signals(HostControl* ctl) {
  g_fatal_slot = &ctl->fatal_signal;
  for (int sig : {SIGABRT, SIGXCPU, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE, SIGXFSZ,
                  SIGVTALRM, SIGPROF, SIGTRAP}) {
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

// A fresh /proc for this PID namespace, in this mount namespace only.
bool mount_own_proc(sandbox::IsolationReport& rep) {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
      ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0)
    return true;
  rep.notes.push_back(std::string("mounting a /proc of its own: ") + std::strerror(errno));
  return false;
}

[[noreturn]] void load_failed(HostControl* ctl, const std::string& why) {
  set_message(ctl, why);
  ctl->state.store(static_cast<std::uint32_t>(HostState::load_failed), std::memory_order_release);
  futex_wake(ctl->state);
  std::_Exit(0);
}

// One call: the descriptor copied out of shared memory first (the judge
// wrote it while this process was stopped), pointers checked against the
// arena, then the entry.
void serve_one(HostControl* ctl, char* arena, std::size_t arena_bytes, Entry entry, const HostDevice* device) {
  void* args[kMaxArgs];
  std::uint64_t scalars[kMaxArgs];
  const std::uint32_t n = std::min<std::uint32_t>(ctl->nargs, kMaxArgs);
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint64_t off = ctl->offset[k];
    if (off == kNoBuffer) {
      scalars[k] = ctl->scalar[k];
      args[k] = &scalars[k];
    } else {
      args[k] = off < arena_bytes ? arena + off : nullptr;
    }
  }
  set_alloc_poison(ctl->poison_allocations != 0);
  CallOutcome outcome = CallOutcome::ok;
  try {
    entry(args);
  } catch (const std::bad_alloc& e) {
    outcome = CallOutcome::bad_alloc;
    set_message(ctl, e.what());
  } catch (const std::exception& e) {
    outcome = CallOutcome::threw;
    set_message(ctl, "(" + demangle(typeid(e).name()) + "): " + e.what());
  } catch (...) {
    outcome = CallOutcome::threw;
    set_message(ctl, "of unknown type");
  }
  set_alloc_poison(false);
  // A device's work: the call is over when everything it queued is done.
  if (device && device->finish_call) {
    const std::string err = device->finish_call();
    if (!err.empty() && outcome == CallOutcome::ok) {
      outcome = CallOutcome::threw;
      set_message(ctl, err);
    }
  }
  ctl->outcome = static_cast<std::int32_t>(outcome);
}

// Waits for the judge's next call (a number other than `last`). A
// device's host polls for 1 ms first: a call that follows a prime at once
// (Endpoint::prime) then starts without a futex wake-up in its window.
std::uint32_t next_call(HostControl* ctl, std::uint32_t last, bool poll_first) {
  if (poll_first) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    do {
      const std::uint32_t c = ctl->call.load(std::memory_order_acquire);
      if (c != last) return c;
    } while (std::chrono::steady_clock::now() < until);
  }
  for (;;) {
    const std::uint32_t c = ctl->call.load(std::memory_order_acquire);
    if (c != last) return c;
    futex_wait(ctl->call, last, 0);
  }
}

void answer(HostControl* ctl, std::uint32_t c) {
  ctl->done.store(c, std::memory_order_release);
  futex_wake(ctl->done);
}

// A call that runs none of the side's code (a device's hook); its error is
// the call's outcome.
void run_hook(HostControl* ctl, const std::function<std::string()>& hook) {
  const std::string err = hook ? hook() : std::string();
  ctl->outcome = static_cast<std::int32_t>(err.empty() ? CallOutcome::ok : CallOutcome::threw);
  if (!err.empty()) set_message(ctl, err);
}

// Null calls until the judge says load: the round trip the judge's clock
// sees with no code of this side in the process (HostSpec::calibrate).
std::uint32_t serve_calibration(HostControl* ctl, const HostDevice* device) {
  ctl->state.store(static_cast<std::uint32_t>(HostState::calibrating), std::memory_order_release);
  futex_wake(ctl->state);
  for (std::uint32_t last = 0;;) {
    last = next_call(ctl, last, device != nullptr);
    if (ctl->load_library) return last;
    // The judge's prime before a measured null call, as before a timed one.
    run_hook(ctl, device ? (ctl->null_call && device->prime_call ? device->prime_call : device->null_call) : nullptr);
    answer(ctl, last);
  }
}

}  // namespace

void host_main(int argc, char** argv, const HostDevice* device) {
  const HostArgs a = parse(argc, argv);
  struct stat st {};
  if (::fstat(3, &st) != 0 || st.st_size < static_cast<off_t>(kControlBytes)) die("no arena on descriptor 3");
  std::size_t arena_bytes = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, arena_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, 3, 0);
  if (map == MAP_FAILED) die(std::string("cannot map the arena: ") + std::strerror(errno));
  ::close(3);
  char* arena = static_cast<char*>(map);
  auto* ctl = reinterpret_cast<HostControl*>(arena);
  if (a.device_arena_bytes > 0 && !(device && device->open)) die("a device arena, and no device");
  if (a.device_arena_bytes == 0) device = nullptr;

  // Before any code of the library: namespaces learnt, file system
  // read-only, limits, no capabilities, not dumpable, the policy. Then the
  // report, on a pipe closed before the library loads (what candidate code
  // could write later never reaches the judge as isolation facts).
  sandbox::IsolationReport rep;
  sandbox::detect_namespaces(a.parent_ns, rep);
  if (device) {
    // The device first, while the machine's files are still there (its
    // driver reads many); the buffers are then the judge's device arena.
    // In a PID namespace of its own the driver needs a /proc of that
    // namespace (the machine's names other processes: its initialisation
    // fails with "OS call failed").
    if (rep.pid_ns && rep.mount_ns && !mount_own_proc(rep))
      load_failed(ctl, "the " + a.role + "'s process cannot mount a /proc of its own, which its device needs");
    char* base = nullptr;
    const std::string why = device->open(6, a.device_arena_bytes, base);
    ::close(6);
    if (!why.empty()) load_failed(ctl, "the " + a.role + "'s process cannot use the device: " + why);
    arena = base;
    arena_bytes = a.device_arena_bytes;
  }
  sandbox::harden_filesystem(rep, device ? device->device_files : std::vector<std::string>{});
  // Path rules belong to the policy's switch: off, the host is judged
  // without either (the control tests show each attack then succeeds).
  if (device && a.seccomp && !rep.private_root && device->confine_writes) device->confine_writes(rep);
  if (rep.pid_ns) catch_fatal_signals(ctl);
  set_limits(a);
  sandbox::drop_capabilities(rep);
  // The judge reads a candidate's mapped files; it holds the capabilities
  // of the user namespace it made, so a host with one may be non-dumpable.
  // The reference always is: no candidate may read its memory.
  if (a.trusted || rep.user_ns) sandbox::set_non_dumpable();
  set_alloc_slot(&ctl->alloc_failed_bytes);
  if (a.seccomp) {
    try {
      sandbox::set_violation_slot(&ctl->violation);
      sandbox::PolicyOptions po;
      po.policy = sandbox::policy_from_string(a.policy);
      po.own_pid_namespace = rep.pid_ns;
      po.refuse_file_locks = true;   // the GPU timing slot's locks (docs/sandbox.md)
      sandbox::install_candidate_policy(po);
      rep.seccomp = true;
    } catch (const std::exception& e) {
      rep.notes.push_back(std::string("seccomp: ") + e.what());
      write_all(4, rep.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      ::close(4);
      die(e.what());
    }
  } else {
    rep.notes.push_back("seccomp turned off (sandbox.seccomp false)");
  }
  if (a.open_files > 0) set_limit(RLIMIT_NOFILE, static_cast<rlim_t>(a.open_files), static_cast<rlim_t>(a.open_files));
  write_all(4, rep.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  ::close(4);

  std::uint32_t last = a.calibrate ? serve_calibration(ctl, device) : 0;

  // The library: a candidate's static constructors run here, under all of
  // the above.
  // Through the descriptor the judge opened: in a root of its own the
  // library's path does not exist (and its directory is the judge's).
  const std::string load_path =
      rep.private_proc && a.library_fd >= 0 ? "/proc/self/fd/" + std::to_string(a.library_fd) : a.library;
  void* handle = ::dlopen(load_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    load_failed(ctl, std::string("cannot load the ") + a.role + ": " + (e ? e : "dlopen failed"));
  }
  void* sym = ::dlsym(handle, kEntrySymbol);
  if (!sym) load_failed(ctl, "the " + a.role + "'s library has no " + kEntrySymbol);
  const auto entry = reinterpret_cast<Entry>(sym);
  ctl->state.store(static_cast<std::uint32_t>(HostState::ready), std::memory_order_release);
  futex_wake(ctl->state);

  for (;;) {
    last = next_call(ctl, last, device != nullptr);
    if (ctl->null_call && device) run_hook(ctl, ctl->null_call == 2 ? device->null_call : device->prime_call);
    else serve_one(ctl, arena, arena_bytes, entry, device);
    answer(ctl, last);
  }
}

}  // namespace kevo::native::judge
