// kevo-cpu-worker: judges one candidate in a fresh process. Started by the
// CPU backend inside the sandbox runner (rlimits, own process group, scratch
// dir as cwd); installs the seccomp policy on itself before it loads the
// candidate, so candidate code never runs without it. See docs/verdicts.md.
#include "alloc_hooks.hpp"
#include "judge.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/task.hpp"
#include "kevo/cpu/protocol.hpp"
#include "kevo/sandbox/seccomp.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cfenv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

namespace {

namespace fs = std::filesystem;
namespace proto = kevo::cpu::protocol;
namespace w = kevo::cpu::worker;

int g_result_fd = -1;
std::string g_nonce;

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t left = s.size();
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

[[noreturn]] void finish(int code) {
  // _Exit: static destructors of candidate code must not run after the
  // verdict (a crash there would contradict it). Flush what it printed.
  std::fflush(nullptr);
  std::_Exit(code);
}

[[noreturn]] void fatal(const std::string& kind, const std::string& message) {
  if (g_result_fd >= 0) {
    w::emit({{"event", "fatal"}, {"kind", kind}, {"message", message}});
  } else {
    std::fprintf(stderr, "kevo-cpu-worker: %s: %s\n", kind.c_str(), message.c_str());
  }
  finish(proto::kWorkerFatalExit);
}

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > (1u << 20)) fatal("bad_request", "request larger than 1 MiB");
  }
  return out;
}

// Moves the result pipe to a random descriptor in [256, 1024) so that a
// candidate cannot find it by writing to fd 3, 4, 5...; the nonce is what
// really keeps forged lines out (see the threat model in docs/verdicts.md).
int hide_fd(int fd) {
  unsigned short r = 0;
  if (::getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) r = static_cast<unsigned short>(::getpid());
  for (int attempt = 0; attempt < 64; ++attempt) {
    int target = 256 + (r + attempt * 97) % 768;
    if (::fcntl(target, F_GETFD) >= 0) continue;   // taken
    if (::dup3(fd, target, O_CLOEXEC) >= 0) {
      ::close(fd);
      return target;
    }
  }
  return fd;   // RLIMIT_NOFILE below 1024: keep it where it is
}

std::uint64_t parse_u64(const nlohmann::json& j) {
  if (j.is_number_unsigned()) return j.get<std::uint64_t>();
  if (j.is_number_integer()) return static_cast<std::uint64_t>(j.get<std::int64_t>());
  if (j.is_string()) return std::stoull(j.get<std::string>());
  throw std::invalid_argument("expected an unsigned integer");
}

void* open_library(const fs::path& path, const char* what) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    throw std::runtime_error(std::string("cannot load the ") + what + ": " + (e ? e : "dlopen failed"));
  }
  return h;
}

w::Entry entry_of(void* handle) {
  void* sym = ::dlsym(handle, proto::kEntrySymbol);
  if (!sym) throw std::runtime_error(std::string("the library has no ") + proto::kEntrySymbol);
  return reinterpret_cast<w::Entry>(sym);
}

}  // namespace

namespace kevo::cpu::worker {

void emit(nlohmann::json j) {
  if (g_result_fd < 0) return;
  j["nonce"] = g_nonce;
  // A leading newline resynchronises the stream should a candidate have
  // written a partial line to this descriptor.
  write_all(g_result_fd, "\n" + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace kevo::cpu::worker

int main(int argc, char** argv) {
  const auto started = std::chrono::steady_clock::now();
  int request_fd = -1, result_fd = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--request-fd") request_fd = std::atoi(argv[i + 1]);
    else if (a == "--result-fd") result_fd = std::atoi(argv[i + 1]);
  }
  if (request_fd < 0 || result_fd < 0 || ::fcntl(request_fd, F_GETFD) < 0 || ::fcntl(result_fd, F_GETFD) < 0) {
    std::fprintf(stderr,
                 "usage: kevo-cpu-worker --request-fd N --result-fd M\n"
                 "The evaluation worker of kevo's CPU backend; the engine starts it.\n");
    return 2;
  }

  // 1. The request (with the nonce), then the channel is closed.
  const std::string text = read_all(request_fd);
  ::close(request_fd);
  g_result_fd = hide_fd(result_fd);
  nlohmann::json req;
  try {
    req = nlohmann::json::parse(text);
    g_nonce = req.at("nonce").get<std::string>();
  } catch (const std::exception& e) {
    fatal("bad_request", std::string("unreadable request: ") + e.what());
  }
  w::set_alloc_report(g_result_fd, "\n{\"event\":\"alloc_failed\",\"nonce\":\"" + g_nonce + "\",\"bytes\":",
                      "}\n");

  w::Options opt;
  fs::path task_dir, candidate_so, reference_so;
  bool seccomp = true;
  int open_files = 0;
  try {
    opt.mode = req.at("mode").get<std::string>();
    task_dir = req.at("task_dir").get<std::string>();
    reference_so = req.at("reference_so").get<std::string>();
    if (opt.mode != proto::kModeNull) candidate_so = req.at("candidate_so").get<std::string>();
    if (opt.mode == proto::kModeNull) opt.null_kind = req.at("null_kind").get<std::string>();
    opt.seed = parse_u64(req.at("seed"));
    opt.trials = req.at("trials").get<int>();
    opt.timing = req.at("timing").get<bool>();
    opt.warmup = req.value("warmup", 1);
    opt.min_repeats = req.value("min_repeats", 5);
    opt.max_repeats = req.value("max_repeats", 100);
    opt.budget_seconds = req.value("budget_seconds", 0.25);
    opt.flush_bytes = req.value("flush_bytes", std::int64_t{64} << 20);
    seccomp = req.value("seccomp", true);
    open_files = req.value("open_files", 0);
    opt.wall_seconds = req.value("wall_seconds", 0.0);
    opt.started = started;
    if (opt.mode != proto::kModeJudge && opt.mode != proto::kModeSelfCheck && opt.mode != proto::kModeNull)
      throw std::invalid_argument("unknown mode '" + opt.mode + "'");
    if (opt.trials < 1) throw std::invalid_argument("trials must be at least 1");
  } catch (const std::exception& e) {
    fatal("bad_request", std::string("bad request: ") + e.what());
  }

  // 2. The task and the reference (trusted: compiled by kevo from the task).
  kevo::Task task;
  try {
    task = kevo::load_task(task_dir);
  } catch (const std::exception& e) {
    fatal("task_load", e.what());
  }
  std::fenv_t default_env;
  std::fegetenv(&default_env);
  w::Entry ref = nullptr;
  try {
    ref = entry_of(open_library(reference_so, "reference"));
  } catch (const std::exception& e) {
    fatal("reference_load", e.what());
  }

  // The candidate library gets its own inode in the scratch dir: dlopen
  // shares a handle (and static state) between paths of one file, and the
  // reference and an identical candidate come from the same cache entry.
  fs::path local_so;
  if (opt.mode != proto::kModeNull) {
    local_so = fs::current_path() / "candidate.so";
    std::error_code ec;
    fs::copy_file(candidate_so, local_so, fs::copy_options::overwrite_existing, ec);
    if (ec) fatal("candidate_copy", "cannot copy " + candidate_so.string() + ": " + ec.message());
  }

  // 3. The sandbox policy, before any candidate code (its constructors run
  // inside dlopen).
  if (seccomp) {
    try {
      kevo::sandbox::set_violation_report(
          g_result_fd, "\n{\"event\":\"violation\",\"nonce\":\"" + g_nonce + "\",\"syscall\":", "}\n");
      kevo::sandbox::install_candidate_policy();
    } catch (const std::exception& e) {
      fatal("sandbox_unavailable", e.what());
    }
  }
  if (open_files > 0) {
    rlimit rl{static_cast<rlim_t>(open_files), static_cast<rlim_t>(open_files)};
    ::setrlimit(RLIMIT_NOFILE, &rl);   // lowering never fails for want of rights
  }

  w::Kernel cand;
  w::emit({{"event", "stage"}, {"stage", "load"}});
  try {
    if (opt.mode == proto::kModeNull) {
      cand = w::null_kernel(opt.null_kind, task, ref, opt.seed);
    } else {
      w::Entry e = entry_of(open_library(local_so, opt.mode == proto::kModeSelfCheck ? "reference copy" : "candidate"));
      cand = [e](w::ArgSet& a, const w::Case&) { e(a.ptr.data()); };
    }
  } catch (const std::exception& e) {
    w::emit({{"event", "load_error"}, {"message", e.what()}});
    finish(0);
  }
  std::fenv_t cand_env;
  std::fegetenv(&cand_env);

  // 4. Judge.
  try {
    w::Judge judge(task, opt, ref, cand, default_env, cand_env);
    nlohmann::json result = judge.run();
    // Time spent inside main(): the rest of the wall time the engine sees is
    // the cost of the sandbox (exec, dynamic loading, pipes, reaping).
    result["worker_ns"] = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count();
    w::emit(result);
  } catch (const std::bad_alloc&) {
    fatal("worker_memory", "the worker could not allocate the task's buffers within the memory limit");
  } catch (const std::exception& e) {
    fatal("internal", e.what());
  }
  finish(0);
}
