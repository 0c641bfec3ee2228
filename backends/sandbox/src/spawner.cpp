#include "kevo/sandbox/spawner.hpp"

#include "kevo/core/error.hpp"
#include "kevo/sandbox/isolation.hpp"
#include "kevo/sandbox/unique_fd.hpp"

#include "child_setup.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <utility>

extern char** environ;

namespace kevo::sandbox {

namespace {

constexpr std::uint32_t kMagic = 0x6B73706EU;   // "kspn": a request, not stray bytes

// One request and one reply per command, as fixed-size SOCK_SEQPACKET
// messages: the spawner never allocates to read them.
struct Request {
  std::uint32_t magic = kMagic;
  std::uint32_t index = 0;
  double wall_seconds = 0.0;
};

// Why a command did not start (Reply::stage).
enum Stage : std::int32_t { kNone = 0, kBadRequest, kPipe, kFork, kOutput, kExec, kConfine };

struct Reply {
  std::int32_t started = 0;
  std::int32_t exit_code = -1;
  std::int32_t signal = 0;
  std::int32_t timed_out = 0;
  std::int32_t stage = kNone;
  std::int32_t err = 0;
  double wall_seconds = 0.0;
};

// A command as the spawner process sees it: pointers only, prepared before
// the clone.
struct Plan {
  char* const* argv = nullptr;
  const char* output = nullptr;   // nullptr: /dev/null
  double max_wall = 0.0;
  int ruleset = -1;               // Landlock ruleset to put on (SpawnCommand::confined), or -1
  char* const* envp = nullptr;    // nullptr: the caller's environment
};

// fork() without pthread_atfork handlers: a library's handler (the CUDA
// driver registers some) may wait for a lock held by a thread that does not
// exist in the child. Neither side needs glibc's fork bookkeeping: the
// child makes only async-signal-safe calls.
pid_t raw_fork() { return static_cast<pid_t>(::syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)); }

double now_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}


[[noreturn]] void command_fail(int errfd, Stage stage, int err) {
  const std::int32_t report[2] = {stage, err};
  ssize_t w = ::write(errfd, report, sizeof report);
  (void)w;
  ::_exit(127);
}

// In the command's process: its own group, death with the spawner, output
// wiring, then execve.
[[noreturn]] void command_main(const Plan& plan, char* const* envp, int errfd, pid_t spawner) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != spawner) ::_exit(127);   // the spawner died before prctl
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  if (plan.output) {
    const int out = ::open(plan.output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) command_fail(errfd, kOutput, errno);
    if (::dup2(out, 1) < 0 || ::dup2(out, 2) < 0) command_fail(errfd, kOutput, errno);
  }
  if (plan.ruleset >= 0 && !restrict_to(plan.ruleset)) command_fail(errfd, kConfine, errno);
  ::execve(plan.argv[0], plan.argv, envp);
  command_fail(errfd, kExec, errno);
}

// Waits up to timeout_ms for the command to exit (pidfd readable; without a
// pidfd the wait is the whole timeout) or the caller to go; true when the
// caller's end of the socket is closed.
bool wait_or_peer_gone(int sock, int pidfd, int timeout_ms) {
  // No events asked for on the socket: poll still reports POLLHUP once the
  // caller's end is closed, and a request sent meanwhile does not wake it.
  pollfd p[2] = {{sock, 0, 0}, {pidfd, POLLIN, 0}};
  const int n = ::poll(p, pidfd >= 0 ? 2 : 1, timeout_ms);
  return n > 0 && (p[0].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
}

// Runs one command; false when the caller went away meanwhile.
bool run_command(int sock, const Plan& plan, double wall, char* const* envp, Reply& r) {
  const double limit = (wall > 0.0 && wall < plan.max_wall) ? wall : plan.max_wall;
  int errpipe[2];
  if (::pipe2(errpipe, O_CLOEXEC) != 0) {
    r.stage = kPipe;
    r.err = errno;
    return true;
  }
  const pid_t self = ::getpid();
  const double t0 = now_seconds();
  const pid_t pid = raw_fork();
  if (pid == 0) {
    ::close(errpipe[0]);
    command_main(plan, plan.envp ? plan.envp : envp, errpipe[1], self);
  }
  ::close(errpipe[1]);
  if (pid < 0) {
    r.stage = kFork;
    r.err = errno;
    ::close(errpipe[0]);
    return true;
  }
  ::setpgid(pid, pid);   // as the child does: whichever runs first
  // The report pipe closes at execve (started) or carries why not.
  std::int32_t report[2] = {0, 0};
  ssize_t got;
  while ((got = ::read(errpipe[0], report, sizeof report)) < 0 && errno == EINTR) {
  }
  ::close(errpipe[0]);
  int status = 0;
  if (got == static_cast<ssize_t>(sizeof report)) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.stage = report[0];
    r.err = report[1];
    return true;
  }
  r.started = 1;
  // A pidfd (Linux 5.3+) wakes the wait when the command exits; without
  // one, ticks of 10 ms.
  int pidfd = -1;
#ifdef SYS_pidfd_open
  pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#endif
  const double tick_ms = pidfd >= 0 ? 1000.0 : 10.0;
  bool caller_here = true;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    const double left = limit - (now_seconds() - t0);
    if (left <= 0.0 ||
        !(caller_here = !wait_or_peer_gone(sock, pidfd, static_cast<int>(std::clamp(left * 1000.0, 1.0, tick_ms))))) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      r.timed_out = caller_here ? 1 : 0;
      break;
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  ::kill(-pid, SIGKILL);   // whatever the command left running in its group
  r.wall_seconds = now_seconds() - t0;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return caller_here;
}

// The spawner process: serves requests until the caller's end closes.
[[noreturn]] void serve(int sock_in, Plan* plans, std::size_t count, char* const* envp, long close_max) {
  ::setpgid(0, 0);
  detail::default_signals();
  // The socket and the commands' rulesets above stdio, stdio on /dev/null,
  // nothing else open: the caller's pipes must see EOF when the caller
  // ends, whatever runs here. The kept descriptors are copied to the lowest
  // free numbers from 3, and everything else is closed around them.
  const int sock = ::fcntl(sock_in, F_DUPFD_CLOEXEC, 3);
  const int null = ::open("/dev/null", O_RDWR);
  if (sock < 0 || null < 0) ::_exit(127);
  int top = sock;
  for (std::size_t i = 0; i < count; ++i)
    if (plans[i].ruleset >= 0) {
      plans[i].ruleset = ::fcntl(plans[i].ruleset, F_DUPFD_CLOEXEC, 3);
      if (plans[i].ruleset < 0) ::_exit(127);
      top = std::max(top, plans[i].ruleset);
    }
  for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  for (int fd = 3; fd < top; ++fd) {
    bool keep = fd == sock;
    for (std::size_t i = 0; i < count && !keep; ++i) keep = plans[i].ruleset == fd;
    if (!keep) ::close(fd);
  }
  detail::close_from(top + 1, 0x7fffffff, close_max);
  for (;;) {
    Request q;
    const ssize_t n = ::recv(sock, &q, sizeof q, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(0);
    Reply r;
    if (n != static_cast<ssize_t>(sizeof q) || q.magic != kMagic || q.index >= count) {
      r.stage = kBadRequest;
      r.err = EINVAL;
    } else if (!run_command(sock, plans[q.index], q.wall_seconds, envp, r)) {
      ::_exit(0);
    }
    if (::send(sock, &r, sizeof r, MSG_NOSIGNAL) < 0 && errno != EINTR) ::_exit(0);
  }
}

const char* stage_text(std::int32_t s) {
  switch (s) {
    case kBadRequest: return "the spawner refused the request";
    case kPipe: return "pipe2";
    case kFork: return "fork";
    case kOutput: return "cannot open the output file";
    case kExec: return "execve";
    case kConfine: return "Landlock (landlock_restrict_self)";
    default: return "unknown";
  }
}

}  // namespace

struct Spawner::State {
  std::vector<SpawnCommand> commands;
  std::vector<std::vector<char*>> argvs;
  std::vector<std::vector<std::string>> env_strings;   // SpawnCommand::env over environ
  std::vector<std::vector<char*>> envps;
  std::vector<Plan> plans;
  int sock = -1;
  pid_t pid = -1;
  std::mutex mu;   // one request at a time
};

Spawner::Spawner(std::vector<SpawnCommand> commands) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.commands = std::move(commands);
  // Everything the spawner process reads is built here, before the clone.
  s.argvs.resize(s.commands.size());
  s.plans.resize(s.commands.size());
  s.env_strings.resize(s.commands.size());
  s.envps.resize(s.commands.size());
  // The rulesets stay open here until the spawner has its copies (closed
  // when the constructor returns).
  std::vector<UniqueFd> rulesets;
  for (std::size_t i = 0; i < s.commands.size(); ++i) {
    SpawnCommand& c = s.commands[i];
    if (c.argv.empty() || c.argv[0].empty()) throw Failure("spawner: command " + std::to_string(i) + " has no argv");
    if (!(c.max_wall_seconds > 0.0)) throw Failure("spawner: command " + std::to_string(i) + " needs a wall limit");
    for (std::string& a : c.argv) s.argvs[i].push_back(a.data());
    s.argvs[i].push_back(nullptr);
    s.plans[i] = {s.argvs[i].data(), c.output.empty() ? nullptr : c.output.c_str(), c.max_wall_seconds, -1};
    if (!c.env.empty()) {
      std::vector<std::string>& e = s.env_strings[i];
      for (char** v = environ; v && *v; ++v) {
        const std::string kv = *v;
        const std::string name = kv.substr(0, kv.find('='));
        const bool replaced = std::any_of(c.env.begin(), c.env.end(),
                                          [&](const std::string& o) { return o.substr(0, o.find('=')) == name; });
        if (!replaced) e.push_back(kv);
      }
      for (const std::string& o : c.env) {
        if (o.find('=') == std::string::npos || o.front() == '=')
          throw Failure("spawner: command " + std::to_string(i) + ": environment entry \"" + o + "\" is not NAME=VALUE");
        e.push_back(o);
      }
      for (std::string& kv : e) s.envps[i].push_back(kv.data());
      s.envps[i].push_back(nullptr);
      s.plans[i].envp = s.envps[i].data();
    }
    if (c.confined) {
      std::string why;
      rulesets.emplace_back(make_ruleset(c.write_dirs, c.read_dirs, why, c.scoped));
      if (!rulesets.back().valid()) throw Failure("spawner: command " + std::to_string(i) + " cannot be confined: " + why);
      s.plans[i].ruleset = rulesets.back().get();
    }
  }
  rlimit nofile{};
  const long close_max = ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
                             ? static_cast<long>(std::min<rlim_t>(nofile.rlim_cur, 1 << 20))
                             : 1024;
  int sv[2];
  check_errno(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0, "spawner: socketpair");
  char* const* envp = environ;
  const pid_t pid = raw_fork();
  if (pid == 0) serve(sv[1], s.plans.data(), s.plans.size(), envp, close_max);
  const int err = errno;
  ::close(sv[1]);
  if (pid < 0) {
    ::close(sv[0]);
    errno = err;
    check_errno(false, "spawner: clone");
  }
  s.sock = sv[0];
  s.pid = pid;
}

Spawner::Spawner() noexcept = default;

Spawner::~Spawner() { stop(); }

Spawner::Spawner(Spawner&& o) noexcept : state_(std::move(o.state_)) {}

Spawner& Spawner::operator=(Spawner&& o) noexcept {
  if (this != &o) {
    stop();
    state_ = std::move(o.state_);
  }
  return *this;
}

std::size_t Spawner::size() const noexcept { return state_ ? state_->plans.size() : 0; }

pid_t Spawner::pid() const noexcept { return state_ ? state_->pid : -1; }

void Spawner::stop() noexcept {
  if (!state_) return;
  // EOF on the socket: the spawner kills what it runs and exits.
  if (state_->sock >= 0) ::close(state_->sock);
  if (state_->pid > 0) {
    while (::waitpid(state_->pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  state_.reset();
}

SpawnResult Spawner::run(std::size_t index, double wall_seconds) {
  if (!state_) throw Failure("spawner: not started");
  State& s = *state_;
  if (index >= s.plans.size())
    throw Failure("spawner: no command " + std::to_string(index) + " (it has " + std::to_string(s.plans.size()) + ")");
  std::lock_guard<std::mutex> lock(s.mu);
  Request q;
  q.index = static_cast<std::uint32_t>(index);
  q.wall_seconds = wall_seconds;
  ssize_t n;
  while ((n = ::send(s.sock, &q, sizeof q, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof q)) throw Failure("spawner: the spawner process is gone (send)");
  Reply r;
  while ((n = ::recv(s.sock, &r, sizeof r, 0)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof r)) throw Failure("spawner: the spawner process is gone (no reply)");
  SpawnResult out;
  out.started = r.started != 0;
  out.exit_code = r.exit_code;
  out.signal = r.signal;
  out.timed_out = r.timed_out != 0;
  out.wall_seconds = r.wall_seconds;
  if (!out.started) {
    out.error = std::string(stage_text(r.stage)) + ": " + std::strerror(r.err);
    if (r.stage == kOutput) out.error += " (" + s.commands[index].output.string() + ")";
    if (r.stage == kExec) out.error += " (" + s.commands[index].argv[0] + ")";
  }
  return out;
}

}  // namespace kevo::sandbox
