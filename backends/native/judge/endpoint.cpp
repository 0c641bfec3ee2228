#include "endpoint.hpp"

#include "host_control.hpp"

#include "kevo/core/error.hpp"
#include "kevo/sandbox/unique_fd.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>

namespace kevo::native::judge {

namespace {

using Clock = std::chrono::steady_clock;

double ns_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

std::string read_to_eof(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > (1u << 16)) break;
  }
  return out;
}

}  // namespace

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::int64_t timeout_ns) {
  timespec ts{};
  timespec* tp = nullptr;
  if (timeout_ns > 0) {
    ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000);
    ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000);
    tp = &ts;
  }
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, expected, tp, nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

// ---- LocalEndpoint ------------------------------------------------------------

ArgSet& LocalEndpoint::arguments(const Task& task, const Case& c) {
  case_ = c;
  args_ = scalars_of(task, c);
  for (std::size_t k = 0; k < task.args.size(); ++k)
    if (task.args[k].is_buffer())
      args_.buf[k] = Buffer(static_cast<std::size_t>(args_.n[k]) * dtype_size(task.args[k].dtype));
  args_.rebind();
  (void)space_;
  return args_;
}

CallResult LocalEndpoint::call(ArgSet& a, bool) {
  CallResult r;
  const auto t0 = Clock::now();
  kernel_(a, case_);
  r.ns = ns_between(t0, Clock::now());
  return r;
}

// ---- RemoteEndpoint -----------------------------------------------------------

RemoteEndpoint::RemoteEndpoint(const HostSpec& spec) : spec_(spec) {
  // A device's host: the shared memory holds the control block only.
  arena_bytes_ = kControlBytes + (spec.device ? 0 : spec.arena_bytes);
  arena_fd_ = static_cast<int>(::syscall(SYS_memfd_create, ("kevo-" + spec.role).c_str(), MFD_CLOEXEC));
  check_errno(arena_fd_ >= 0, "memfd_create (a kernel host's arena)");
  check_errno(::ftruncate(arena_fd_, static_cast<off_t>(arena_bytes_)) == 0, "ftruncate (a kernel host's arena)");
  arena_ = ::mmap(nullptr, arena_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, arena_fd_, 0);
  if (arena_ == MAP_FAILED) {
    arena_ = nullptr;
    throw std::bad_alloc();
  }
  ctl_ = new (arena_) HostControl();
  ctl_->violation.store(-1);

  sandbox::Pipe report = sandbox::make_pipe();
  const std::vector<std::string> argv = {
      spec.program,
      "--host",
      "--role",
      spec.role,
      "--library",
      spec.library,
      "--library-fd",
      "5",
      "--policy",
      spec.policy,
      "--seccomp",
      spec.seccomp ? "1" : "0",
      "--trusted",
      spec.trusted ? "1" : "0",
      "--memory-mb",
      std::to_string(spec.limits.memory_mb),
      "--cpu-seconds",
      std::to_string(spec.limits.cpu_seconds),
      "--file-mb",
      std::to_string(spec.limits.file_mb),
      "--open-files",
      std::to_string(spec.limits.open_files),
      // The host compares its namespaces with the judge's to learn which
      // ones it has (the clone may have fallen back to fewer).
      "--parent-ns",
      sandbox::namespace_ids(),
  };
  std::vector<std::string> args = argv;
  args.insert(args.end(), spec.host_args.begin(), spec.host_args.end());
  std::vector<std::pair<int, int>> fds;
  if (spec.device) {
    args.insert(args.end(), {"--device-arena-bytes", std::to_string(spec.device->bytes)});
    fds.push_back({spec.device->fd, 6});
  }
  if (spec.calibrate > 0) args.insert(args.end(), {"--calibrate", "1"});
  const std::vector<std::string>& env = spec.env;
  sandbox::IsolationRequest req;
  req.namespaces = spec.namespaces;
  // The library goes by descriptor: a host in a root of its own cannot
  // reach the judge's directories.
  sandbox::UniqueFd library(::open(spec.library.c_str(), O_RDONLY | O_CLOEXEC));
  if (!library.valid()) throw std::runtime_error("cannot open " + spec.library + ": " + std::strerror(errno));
  fds.insert(fds.begin(), {{arena_fd_, 3}, {report.write.get(), 4}, {library.get(), 5}});
  sandbox::IsolatedChild child = sandbox::spawn_isolated(spec.program, args, env, fds, req);
  pid_ = child.pid;
  // Kept open for still_stopped(), which reads it after every timed pair.
  stat_fd_.reset(::open(("/proc/" + std::to_string(pid_) + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
  report.write.reset();
  report_ = std::move(report.read);
  spawn_notes_ = child.report;
}

void RemoteEndpoint::wait_ready() {
  if (!report_.valid()) return;   // waited already
  const HostSpec& spec = spec_;
  const std::string text = read_to_eof(report_.get());
  report_.reset();
  const sandbox::IsolatedChild child{pid_, spawn_notes_};
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_object()) {
    isolation_ = sandbox::IsolationReport::from_json(j);
    for (const auto& n : child.report.notes) isolation_.notes.insert(isolation_.notes.begin(), n);
  } else {
    isolation_ = child.report;
  }
  // The host loads its library now (candidate constructors run), after
  // the calibration's null calls if any; then it says ready or why not.
  auto wait_while = [&](HostState s) {
    while (ctl_->state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(s)) {
      if (!alive()) {
        load_error_ = "the " + spec.role + "'s process ended while it started";
        return false;
      }
      futex_wait(ctl_->state, static_cast<std::uint32_t>(s), 2000000);
    }
    return true;
  };
  if (!wait_while(HostState::starting)) return;
  if (ctl_->state.load() == static_cast<std::uint32_t>(HostState::calibrating)) {
    calibrate();
    if (!wait_while(HostState::calibrating)) return;
  }
  if (ctl_->state.load() != static_cast<std::uint32_t>(HostState::ready)) {
    ctl_->message[sizeof ctl_->message - 1] = '\0';
    load_error_ = ctl_->message;
    if (load_error_.empty()) load_error_ = "the " + spec.role + " could not be loaded";
    return;
  }
  stop_and_wait();
  ready_ = pid_ > 0;
  if (!ready_ && load_error_.empty()) load_error_ = "the " + spec.role + "'s process ended after loading";
}

RemoteEndpoint::~RemoteEndpoint() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
  if (arena_) ::munmap(arena_, arena_bytes_);
  if (arena_fd_ >= 0) ::close(arena_fd_);
}

void RemoteEndpoint::reset_scheduling() {
  if (!sched_saved_) {
    sched_saved_ = ::sched_getaffinity(pid_, sizeof affinity_, &affinity_) == 0;
    return;
  }
  ::sched_setaffinity(pid_, sizeof affinity_, &affinity_);
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(pid_), 0);
  sched_param none{};
  ::sched_setscheduler(pid_, SCHED_OTHER, &none);
}

void RemoteEndpoint::reap(int status, const ::rusage& ru) {
  end_.ended = true;
  if (WIFEXITED(status)) end_.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) end_.signal = WTERMSIG(status);
  // A signal the host's handlers caught (it is its namespace's first
  // process): taken as the death it stands for.
  const int caught = ctl_->fatal_signal.load();
  if (WIFEXITED(status) && caught > 0 && end_.exit_code == 128 + caught) {
    end_.signal = caught;
    end_.exit_code = 0;
  }
  end_.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  end_.max_rss_kb = ru.ru_maxrss;
  end_.violation = ctl_->violation.load();
  end_.alloc_failed_bytes = ctl_->alloc_failed_bytes.load();
  pid_ = -1;
  stat_fd_.reset();
}

bool RemoteEndpoint::alive() {
  if (pid_ <= 0) return false;
  int st = 0;
  ::rusage ru{};
  const pid_t r = ::wait4(pid_, &st, WNOHANG, &ru);
  if (r == pid_) {
    reap(st, ru);
    return false;
  }
  return true;
}

void RemoteEndpoint::stop_and_wait() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGSTOP);
  wait_stopped();
}

void RemoteEndpoint::wait_stopped() {
  if (pid_ <= 0) return;
  // A stopped host reports it at once; one that keeps resuming itself never
  // settles: it is killed, and its death says why.
  // It stops within microseconds: the first 100 us are polled without
  // sleeping (a sleep costs the timer's slack, 50 us or more, on every
  // call), then with growing pauses.
  const auto start = Clock::now();
  const auto spin_until = start + std::chrono::microseconds(100);
  const auto deadline = start + std::chrono::seconds(5);
  for (auto pause = std::chrono::microseconds(20);; pause = std::min(pause * 2, std::chrono::microseconds(2000))) {
    int st = 0;
    ::rusage ru{};
    const pid_t r = ::wait4(pid_, &st, WUNTRACED | WNOHANG, &ru);
    if (r < 0 && errno == EINTR) continue;
    if (r == pid_ && WIFSTOPPED(st)) return;
    if (r == pid_) {
      reap(st, ru);
      return;
    }
    if (Clock::now() < spin_until) {
      pause = std::chrono::microseconds(10);   // doubled back to 20 once sleeping
      continue;
    }
    if (Clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      while (::wait4(pid_, &st, 0, &ru) < 0 && errno == EINTR) {
      }
      reap(st, ru);
      end_.resisted_stop = true;
      return;
    }
    ::usleep(static_cast<useconds_t>(pause.count()));
  }
}

bool RemoteEndpoint::still_stopped() const {
  if (pid_ <= 0 || !stat_fd_.valid()) return true;   // unreadable: nothing to say
  // One pread of the descriptor opened at the start (this runs after every
  // timed pair: no path to build, no file to open).
  char buf[1024];
  const ssize_t n = ::pread(stat_fd_.get(), buf, sizeof buf, 0);
  if (n <= 0) return true;
  const std::string_view line(buf, static_cast<std::size_t>(n));
  const auto close = line.rfind(')');
  if (close == std::string_view::npos || close + 2 >= line.size()) return true;
  const char state = line[close + 2];
  return state == 'T' || state == 't';
}

bool RemoteEndpoint::wait_done(std::uint32_t seq) {
  // A spin first, then futex waits with liveness checks between them. A
  // futex wake-up costs tens of microseconds, different from call to call,
  // and it would be inside the judge's clock: a CPU host (whose candidate
  // may want every core) is spun for 200 us, a device's host for up to
  // 50 ms (the judge has nothing else to do while its device works; the
  // liveness check every millisecond).
  const auto start = Clock::now();
  const auto spin_until = start + (spec_.device ? std::chrono::microseconds(50000) : std::chrono::microseconds(200));
  auto next_check = start + std::chrono::milliseconds(1);
  for (;;) {
    if (ctl_->done.load(std::memory_order_acquire) == seq) return true;
    const auto now = Clock::now();
    if (now >= spin_until) break;
    if (now >= next_check) {
      if (!alive()) return ctl_->done.load(std::memory_order_acquire) == seq;
      next_check = now + std::chrono::milliseconds(1);
    }
  }
  for (;;) {
    const std::uint32_t now = ctl_->done.load(std::memory_order_acquire);
    if (now == seq) return true;
    futex_wait(ctl_->done, now, 2000000);
    if (ctl_->done.load(std::memory_order_acquire) == seq) return true;
    if (!alive()) return false;
  }
}

ArgSet& RemoteEndpoint::arguments(const Task& task, const Case& c) {
  args_ = scalars_of(task, c);
  // In the shared memory after the control block, or from the start of
  // the device arena.
  char* const base = spec_.device ? spec_.device->base : static_cast<char*>(arena_);
  const std::size_t limit = spec_.device ? spec_.device->bytes : arena_bytes_;
  std::size_t off = spec_.device ? 0 : kControlBytes;
  for (std::size_t k = 0; k < task.args.size(); ++k) {
    if (!task.args[k].is_buffer()) continue;
    const std::size_t bytes = static_cast<std::size_t>(args_.n[k]) * dtype_size(task.args[k].dtype);
    const std::size_t span = std::max<std::size_t>((bytes + kArenaAlign - 1) / kArenaAlign * kArenaAlign, kArenaAlign);
    if (off + span > limit) throw std::logic_error("a case's buffers do not fit the kernel host's arena");
    args_.buf[k] = Buffer::view(base + off, bytes);
    off += span;
  }
  args_.rebind();
  return args_;
}

void RemoteEndpoint::post(std::uint32_t seq) {
  ctl_->call.store(seq, std::memory_order_release);
  ::kill(pid_, SIGCONT);
  futex_wake(ctl_->call);
}

bool RemoteEndpoint::round_trip(std::uint32_t seq, double& ns, bool stop_after) {
  // The clock runs from the resume to the answer: everything the host does
  // for this call (its threads included) falls inside it.
  // The call is posted before the resume: the host, stopped inside its
  // wait, sees it as it wakes (one wake-up, not two).
  const auto t0 = Clock::now();
  post(seq);
  const bool finished = wait_done(seq);
  answered_ = Clock::now();
  ns = ns_between(t0, answered_);
  if (finished && stop_after) {
    // The stop is sent at once and waited for after the flavour's hook:
    // a device's probe then starts at the answer, and GPU work the host
    // left running is waited for while the stop is delivered, not after.
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
    if (spec_.on_answer) spec_.on_answer(answered_);
    wait_stopped();
  }
  return finished && pid_ > 0;
}

void RemoteEndpoint::calibrate() {
  // The host runs (not yet stopped) and has no code of its side: each null
  // call goes as a real one will: from a stopped host, or (a device's
  // host) from one primed and left running, as prime() leaves it.
  stop_and_wait();
  const std::shared_ptr<void> hold =
      spec_.calibrate > 0 && spec_.hold_for_calibration ? spec_.hold_for_calibration() : nullptr;
  for (int k = 0; k < spec_.calibrate && pid_ > 0; ++k) {
    if (spec_.before_null_call) spec_.before_null_call();
    double ns = 0.0;
    if (spec_.device) {
      ctl_->null_call = 1;
      const bool ok = round_trip(++seq_, ns, false);
      ctl_->null_call = 0;
      if (!ok) return;
    }
    if (!round_trip(++seq_, ns)) return;
    if (ctl_->outcome == static_cast<std::int32_t>(CallOutcome::ok)) null_ns_.push_back(ns);
    if (spec_.after_null_call) spec_.after_null_call();
  }
  if (pid_ <= 0) return;
  ctl_->load_library = 1;
  post(++seq_);
}

void RemoteEndpoint::kill_now() {
  if (pid_ > 0) ::kill(pid_, SIGKILL);
}

void RemoteEndpoint::terminate() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int st = 0;
  ::rusage ru{};
  while (::wait4(pid_, &st, 0, &ru) < 0 && errno == EINTR) {
  }
  reap(st, ru);
  end_.terminated = true;
}

bool RemoteEndpoint::null_call(double& ns) {
  if (!spec_.device || pid_ <= 0 || !prime()) return false;
  ctl_->null_call = 2;
  const bool ok = round_trip(++seq_, ns);
  ctl_->null_call = 0;
  return ok && ctl_->outcome == static_cast<std::int32_t>(CallOutcome::ok);
}

bool RemoteEndpoint::prime() {
  if (!spec_.device) return true;   // no device context to make current
  if (pid_ <= 0) return false;
  // Left running (not stopped) after its answer: the timed call that
  // follows at once finds it polling for the next call, so that neither a
  // resume from SIGSTOP nor a futex wake-up is inside that call's window.
  // Nothing of the judge's runs between the two (the L2 flush is before).
  ctl_->null_call = 1;
  double ns = 0.0;
  const bool ok = round_trip(++seq_, ns, false);
  ctl_->null_call = 0;
  return ok && ctl_->outcome == static_cast<std::int32_t>(CallOutcome::ok);
}

CallResult RemoteEndpoint::call(ArgSet& a, bool poison_allocations) {
  CallResult r;
  if (pid_ <= 0) {
    r.kind = CallResult::Kind::died;
    return r;
  }
  const std::size_t n = a.buf.size();
  if (n > static_cast<std::size_t>(kMaxArgs)) throw std::logic_error("more arguments than a kernel host takes");
  char* const base = spec_.device ? spec_.device->base : static_cast<char*>(arena_);
  ctl_->nargs = static_cast<std::uint32_t>(n);
  for (std::size_t k = 0; k < n; ++k) {
    if (a.buf[k].data()) {
      ctl_->offset[k] = static_cast<std::uint64_t>(static_cast<char*>(a.buf[k].data()) - base);
    } else {
      ctl_->offset[k] = kNoBuffer;
      std::memcpy(&ctl_->scalar[k], &a.sc[k], sizeof(std::uint64_t));
    }
  }
  ctl_->poison_allocations = poison_allocations ? 1u : 0u;
  ctl_->outcome = 0;
  // A trusted host (the reference) is put back to the scheduling it started
  // with before every call (nothing should have changed it: the candidate
  // cannot name it; this keeps it so).
  if (spec_.trusted) reset_scheduling();
  if (!round_trip(++seq_, r.ns)) {
    r.kind = CallResult::Kind::died;
    return r;
  }
  const auto outcome = static_cast<CallOutcome>(ctl_->outcome);
  if (outcome != CallOutcome::ok) {
    ctl_->message[sizeof ctl_->message - 1] = '\0';
    r.message = ctl_->message;
    r.kind = outcome == CallOutcome::bad_alloc ? CallResult::Kind::bad_alloc : CallResult::Kind::threw;
  }
  return r;
}

std::string RemoteEndpoint::mapped_files() const {
  if (pid_ <= 0) return {};
  std::ifstream in("/proc/" + std::to_string(pid_) + "/maps");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace kevo::native::judge
