#include "worker_io.hpp"

#include "kevo/cpu/protocol.hpp"
#include "kevo/sandbox/seccomp.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace kevo::cpu::worker {

namespace fs = std::filesystem;
namespace proto = kevo::cpu::protocol;

namespace {

int g_result_fd = -1;
std::string g_nonce;
const char* g_program = "kevo-worker";

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

}  // namespace

void set_program_name(const char* name) { g_program = name; }

bool parse_fds(int argc, char** argv, int& request_fd, int& result_fd, const char* what) {
  request_fd = result_fd = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--request-fd") request_fd = std::atoi(argv[i + 1]);
    else if (a == "--result-fd") result_fd = std::atoi(argv[i + 1]);
  }
  if (request_fd < 0 || result_fd < 0 || ::fcntl(request_fd, F_GETFD) < 0 || ::fcntl(result_fd, F_GETFD) < 0) {
    std::fprintf(stderr, "usage: %s --request-fd N --result-fd M\n%s; the engine starts it.\n", g_program, what);
    return false;
  }
  return true;
}

nlohmann::json open_channel(int request_fd, int result_fd) {
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
  return req;
}

int result_channel() { return g_result_fd; }
const std::string& channel_nonce() { return g_nonce; }

void emit(nlohmann::json j) {
  if (g_result_fd < 0) return;
  j["nonce"] = g_nonce;
  // A leading newline resynchronises the stream should a candidate have
  // written a partial line to this descriptor.
  write_all(g_result_fd, "\n" + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void finish(int code) {
  std::fflush(nullptr);
  std::_Exit(code);
}

void fatal(const std::string& kind, const std::string& message) {
  if (g_result_fd >= 0) {
    emit({{"event", "fatal"}, {"kind", kind}, {"message", message}});
  } else {
    std::fprintf(stderr, "%s: %s: %s\n", g_program, kind.c_str(), message.c_str());
  }
  finish(proto::kWorkerFatalExit);
}

Request parse_request(const nlohmann::json& req, std::chrono::steady_clock::time_point started) {
  Request r;
  Options& opt = r.opt;
  opt.mode = req.at("mode").get<std::string>();
  r.task_dir = req.at("task_dir").get<std::string>();
  r.reference_so = req.at("reference_so").get<std::string>();
  if (opt.mode != proto::kModeNull) r.candidate_so = req.at("candidate_so").get<std::string>();
  if (opt.mode == proto::kModeNull) opt.null_kind = req.at("null_kind").get<std::string>();
  opt.seed = parse_u64(req.at("seed"));
  opt.trials = req.at("trials").get<int>();
  opt.timing = req.at("timing").get<bool>();
  opt.warmup = req.value("warmup", 1);
  opt.min_repeats = req.value("min_repeats", 5);
  opt.max_repeats = req.value("max_repeats", 100);
  opt.budget_seconds = req.value("budget_seconds", 0.25);
  opt.flush_bytes = req.value("flush_bytes", std::int64_t{64} << 20);
  r.seccomp = req.value("seccomp", true);
  r.policy = kevo::sandbox::policy_from_string(req.value("seccomp_policy", std::string("cpu")));
  r.open_files = req.value("open_files", 0);
  opt.wall_seconds = req.value("wall_seconds", 0.0);
  opt.threads = req.value("judge_threads", 1);
  opt.started = started;
  if (opt.mode != proto::kModeJudge && opt.mode != proto::kModeSelfCheck && opt.mode != proto::kModeNull)
    throw std::invalid_argument("unknown mode '" + opt.mode + "'");
  if (opt.trials < 1) throw std::invalid_argument("trials must be at least 1");
  return r;
}

void* open_library(const fs::path& path, const char* what) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    throw std::runtime_error(std::string("cannot load the ") + what + ": " + (e ? e : "dlopen failed"));
  }
  return h;
}

Entry entry_of(void* handle) {
  void* sym = ::dlsym(handle, proto::kEntrySymbol);
  if (!sym) throw std::runtime_error(std::string("the library has no ") + proto::kEntrySymbol);
  return reinterpret_cast<Entry>(sym);
}

Libraries load_libraries(const Request& r) {
  Libraries lib;
  try {
    lib.reference = entry_of(open_library(r.reference_so, "reference"));
  } catch (const std::exception& e) {
    fatal("reference_load", e.what());
  }
  const bool null = r.opt.mode == proto::kModeNull;
  const fs::path local_so = null ? fs::path() : local_copy(r.candidate_so);
  // Before any candidate code: its constructors run inside dlopen.
  lock_down(r.seccomp, r.open_files, r.policy);
  emit({{"event", "stage"}, {"stage", "load"}});
  if (null) return lib;
  try {
    lib.candidate =
        entry_of(open_library(local_so, r.opt.mode == proto::kModeSelfCheck ? "reference copy" : "candidate"));
  } catch (const std::exception& e) {
    emit({{"event", "load_error"}, {"message", e.what()}});
    finish(0);
  }
  return lib;
}

fs::path local_copy(const fs::path& so) {
  fs::path local = fs::current_path() / "candidate.so";
  std::error_code ec;
  fs::copy_file(so, local, fs::copy_options::overwrite_existing, ec);
  if (ec) fatal("candidate_copy", "cannot copy " + so.string() + ": " + ec.message());
  return local;
}

void lock_down(bool seccomp, int open_files, kevo::sandbox::Policy policy) {
  if (seccomp) {
    try {
      kevo::sandbox::set_violation_report(
          g_result_fd, "\n{\"event\":\"violation\",\"nonce\":\"" + g_nonce + "\",\"syscall\":", "}\n");
      kevo::sandbox::install_candidate_policy(policy);
    } catch (const std::exception& e) {
      fatal("sandbox_unavailable", e.what());
    }
  }
  if (open_files > 0) {
    rlimit rl{static_cast<rlim_t>(open_files), static_cast<rlim_t>(open_files)};
    ::setrlimit(RLIMIT_NOFILE, &rl);   // lowering never fails for want of rights
  }
}

}  // namespace kevo::cpu::worker
