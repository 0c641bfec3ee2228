#include "kevo/sandbox/runner.hpp"

#include "kevo/core/error.hpp"
#include "kevo/sandbox/isolation.hpp"

#include "child_setup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

namespace kevo::sandbox {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; }

// pidfd_open (Linux 5.3+) lets poll() wake up when the child exits, even
// when a grandchild still holds its pipes. Older kernels: short poll ticks.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#else
  (void)pid;
#endif
  return -1;
}

// Kills the process group and the leader; the leader is not reaped yet, so
// its pid (= pgid) cannot have been reused.
void kill_group(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

rlim_t to_rlim(double v) { return static_cast<rlim_t>(std::ceil(v)); }

// --- child side: async-signal-safe only -----------------------------------

struct ChildPlan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;
  int err_write = -1;                  // exec error report (CLOEXEC)
  int src[5] = {-1, -1, -1, -1, -1};   // source fds
  int dst[5] = {-1, -1, -1, -1, -1};   // target fd numbers
  int nmap = 0;
  int hi_base = 3;                     // above every target
  long close_max = 1024;               // loop bound when close_range is missing
  pid_t parent = -1;                   // the engine (for the death-signal race)
  int landlock = -1;                   // a write ruleset to take before exec (-1: none)
  struct Lim {
    decltype(RLIMIT_CPU) resource;
    rlimit value;
  } lims[8];
  int nlims = 0;
};

using detail::child_fail;

[[noreturn]] void child_main(const ChildPlan& plan) {
  if (::setsid() < 0) child_fail(plan.err_write, errno);
  // Dies with the engine: a judge (and through its own death signal, its
  // kernel hosts) never outlives the process that waits for its verdict.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != plan.parent) ::_exit(126);

  detail::default_signals();
  if (plan.landlock >= 0 && !restrict_to(plan.landlock)) child_fail(plan.err_write, errno);

  const int errfd = detail::remap_fds(plan.src, plan.dst, plan.nmap, plan.hi_base, plan.err_write, plan.close_max);

  if (plan.cwd && ::chdir(plan.cwd) != 0) child_fail(errfd, errno);
  for (int i = 0; i < plan.nlims; ++i) {
    if (::setrlimit(plan.lims[i].resource, &plan.lims[i].value) != 0)
      child_fail(errfd, errno);
  }
  ::execve(plan.path, plan.argv, plan.envp);
  child_fail(errfd, errno);
}

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

std::string signal_name(int sig) {
  static const std::map<int, const char*> names = {
      {SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
      {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGSYS, "SIGSYS"},
      {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGPIPE, "SIGPIPE"}, {SIGTRAP, "SIGTRAP"},
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGALRM, "SIGALRM"}, {SIGUSR1, "SIGUSR1"},
      {SIGUSR2, "SIGUSR2"}};
  auto it = names.find(sig);
  std::string out = it != names.end() ? it->second : "signal " + std::to_string(sig);
  if (const char* d = ::strsignal(sig)) out += std::string(" (") + d + ")";
  return out;
}

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::exited: return "exited";
    case Outcome::signaled: return "signaled";
    case Outcome::timeout: return "timeout";
    case Outcome::output_limit: return "output_limit";
    case Outcome::killed: return "killed";
  }
  return "?";
}

struct Runner::Proc {
  std::uint64_t id = 0;
  pid_t pid = -1;
  UniqueFd pidfd, out, err, res, in;
  std::string input;
  std::size_t input_off = 0;
  bool keep_input_open = false;
  bool wake_on_output = false;
  // New output read by any pump (in send(), start(), poll()): poll() owes
  // its caller a wake-up for it, however early it was read (an answer
  // faster than the send that asked for it); take_output() settles it.
  bool wake_pending = false;
  Clock::time_point started, deadline;
  bool has_deadline = false;
  bool forced = false;
  Outcome forced_outcome = Outcome::exited;
  Limits limits;
  std::string output, error_output, result;
  bool capped = false;
  std::string confine_error;
  ScratchDir scratch;
};

Runner::Runner() {
  devnull_ = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  check_errno(devnull_.valid(), "open /dev/null");
}

Runner::~Runner() { kill_all(); }

int count_user_tasks() {
  const uid_t uid = ::getuid();
  int total = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string base = std::string("/proc/") + e->d_name;
    struct stat st;
    if (::stat(base.c_str(), &st) != 0 || st.st_uid != uid) continue;
    std::ifstream f(base + "/stat");
    std::string line;
    if (!std::getline(f, line)) continue;
    // Field 20 (num_threads) counts after the ')' closing the command name.
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    int threads = 1;
    for (int i = 3; i <= 20 && (rest >> field); ++i)
      if (i == 20) threads = std::atoi(field.c_str());
    total += std::max(threads, 1);
  }
  ::closedir(d);
  return total;
}

std::string find_in_path(const std::string& name, const std::string& path_value) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = path_value;
  if (path.empty()) {
    const char* p = std::getenv("PATH");
    path = p ? p : "/usr/local/bin:/usr/bin:/bin";
  }
  std::size_t pos = 0;
  while (pos <= path.size()) {
    std::size_t colon = path.find(':', pos);
    if (colon == std::string::npos) colon = path.size();
    std::string dir = path.substr(pos, colon - pos);
    if (dir.empty()) dir = ".";
    std::string cand = dir + "/" + name;
    if (::access(cand.c_str(), X_OK) == 0) {
      struct stat st;
      if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return cand;
    }
    pos = colon + 1;
  }
  return {};
}

std::uint64_t Runner::start(Spec spec) {
  if (spec.argv.empty()) throw Failure("sandbox: empty argv");
  if (spec.input_fd == 1 || spec.input_fd == 2) throw Failure("sandbox: the input channel must be fd 0 or >= 3");
  if (spec.result_fd >= 0 && spec.result_fd < 3) throw Failure("sandbox: the result channel fd must be >= 3");
  if (spec.input_fd >= 0 && spec.input_fd == spec.result_fd)
    throw Failure("sandbox: input and result channels need different fds");

  std::string path_value;
  for (const auto& kv : spec.env)
    if (kv.rfind("PATH=", 0) == 0) path_value = kv.substr(5);
  const std::string exe = find_in_path(spec.argv[0], path_value);
  if (exe.empty()) throw Failure("sandbox: '" + spec.argv[0] + "' not found in PATH");

  auto p = std::make_unique<Proc>();
  p->id = next_id_++;
  p->limits = spec.limits;

  std::string cwd = spec.cwd.string();
  if (!spec.scratch_base.empty()) {
    p->scratch = ScratchDir::create(spec.scratch_base, "kevo-sbx");
    for (const auto& [name, content] : spec.files) {
      std::ofstream f(p->scratch.path() / name, std::ios::binary);
      f.write(content.data(), static_cast<std::streamsize>(content.size()));
      f.close();
      if (!f) throw Failure("sandbox: cannot write " + (p->scratch.path() / name).string());
    }
    cwd = p->scratch.path().string();
    std::erase_if(spec.env, [](const std::string& kv) { return kv.rfind("TMPDIR=", 0) == 0; });
    spec.env.push_back("TMPDIR=" + cwd);
  }

  // Everything the child touches is built now: the child only reads it.
  std::vector<char*> argv, envp;
  for (auto& a : spec.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : spec.env) envp.push_back(e.data());
  envp.push_back(nullptr);

  Pipe out = make_pipe();
  Pipe err;
  if (!spec.merge_stderr) err = make_pipe();
  Pipe res;
  if (spec.result_fd >= 0) res = make_pipe();
  UniqueFd in_parent, in_child;
  if (spec.input_fd >= 0) {
    // A socket rather than a pipe so that send(MSG_NOSIGNAL) cannot raise
    // SIGPIPE in the engine when the child exits without reading.
    int sv[2];
    check_errno(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
    in_parent = UniqueFd(sv[0]);
    in_child = UniqueFd(sv[1]);
    ::shutdown(sv[0], SHUT_RD);
  }
  Pipe errp = make_pipe();

  // Compilers write their build and nothing else, and read only what
  // read_dirs names (where Landlock exists).
  UniqueFd ruleset;
  std::string confine_error;
  if (spec.confine_writes && (p->scratch.valid() || !spec.write_dirs.empty())) {
    std::vector<std::string> writable = spec.write_dirs;
    if (p->scratch.valid()) writable.push_back(p->scratch.path().string());
    writable.push_back("/dev");
    ruleset = UniqueFd(make_ruleset(writable, spec.read_dirs, confine_error));
  }
  if (spec.confine_writes && spec.confine_required && !ruleset.valid())
    throw Failure("the command was to run confined and cannot be: " +
                  (confine_error.empty() ? std::string("no folder to confine it to") : confine_error));
  ChildPlan plan;
  plan.landlock = ruleset.get();
  p->confine_error = confine_error;
  plan.path = exe.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.cwd = cwd.empty() ? nullptr : cwd.c_str();
  plan.err_write = errp.write.get();
  plan.parent = ::getpid();
  auto map = [&](int src, int dst) {
    plan.src[plan.nmap] = src;
    plan.dst[plan.nmap] = dst;
    ++plan.nmap;
    plan.hi_base = std::max(plan.hi_base, dst + 1);
  };
  map(spec.input_fd == 0 ? in_child.get() : devnull_.get(), 0);
  map(out.write.get(), 1);
  map(spec.merge_stderr ? out.write.get() : err.write.get(), 2);
  if (spec.input_fd > 0) map(in_child.get(), spec.input_fd);
  if (spec.result_fd >= 0) map(res.write.get(), spec.result_fd);
  {
    long m = ::sysconf(_SC_OPEN_MAX);
    plan.close_max = m > 0 ? std::min<long>(m, 1 << 20) : 65536;
  }
  auto lim = [&](decltype(RLIMIT_CPU) resource, rlim_t soft, rlim_t hard) {
    plan.lims[plan.nlims].resource = resource;
    plan.lims[plan.nlims].value = rlimit{soft, hard};
    ++plan.nlims;
  };
  const Limits& L = spec.limits;
  lim(RLIMIT_CORE, 0, 0);
  if (L.cpu_seconds > 0) lim(RLIMIT_CPU, to_rlim(L.cpu_seconds), to_rlim(L.cpu_seconds) + 1);
  if (L.memory_mb > 0) {
    rlim_t b = static_cast<rlim_t>(L.memory_mb) * 1024 * 1024;
    lim(RLIMIT_AS, b, b);
  }
  if (L.file_mb > 0) {
    rlim_t b = static_cast<rlim_t>(L.file_mb) * 1024 * 1024;
    lim(RLIMIT_FSIZE, b, b);
  }
  if (L.open_files > 0) {
    rlim_t n = static_cast<rlim_t>(std::max(L.open_files, plan.hi_base + 1));
    lim(RLIMIT_NOFILE, n, n);
  }
  if (L.processes > 0) {
    rlim_t n = static_cast<rlim_t>(count_user_tasks() + L.processes);
    lim(RLIMIT_NPROC, n, n);
  }

  p->started = Clock::now();
  pid_t pid = ::fork();
  check_errno(pid >= 0, "fork");
  if (pid == 0) child_main(plan);

  p->pid = pid;
  errp.write.reset();
  out.write.reset();
  err.write.reset();
  res.write.reset();
  in_child.reset();

  // The error pipe closes at exec (CLOEXEC): EOF means the exec succeeded.
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(errp.read.get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    throw Failure("sandbox: cannot start '" + exe + "': " + errno_text(child_errno));
  }

  p->pidfd = UniqueFd(open_pidfd(pid));
  p->out = std::move(out.read);
  p->err = std::move(err.read);
  p->res = std::move(res.read);
  for (UniqueFd* f : {&p->out, &p->err, &p->res})
    if (f->valid()) set_nonblocking(f->get());
  if (in_parent.valid()) {
    set_nonblocking(in_parent.get());
    p->in = std::move(in_parent);
    p->input = std::move(spec.input);
    p->keep_input_open = spec.keep_input_open;
  }
  p->wake_on_output = spec.wake_on_output;
  if (L.wall_seconds > 0) {
    p->has_deadline = true;
    p->deadline = p->started + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(L.wall_seconds));
  }
  const std::uint64_t id = p->id;
  Proc& ref = *p;
  procs_.emplace(id, std::move(p));
  pump(ref, false);   // sends the input right away (it fits in the socket buffer)
  return id;
}

// Moves data between the engine and one child: writes pending input, reads
// the captures. Over a cap: the group is killed (output_limit).
void Runner::pump(Proc& p, bool final_drain) {
  if (p.in.valid()) {
    while (p.input_off < p.input.size()) {
      ssize_t n = ::send(p.in.get(), p.input.data() + p.input_off, p.input.size() - p.input_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        p.input_off += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !final_drain) return;
        p.input_off = p.input.size();   // the child is gone or stopped reading
        p.keep_input_open = false;
      }
    }
    p.input.clear();
    p.input_off = 0;
    if (!p.keep_input_open || final_drain) p.in.reset();   // EOF for the child
  }
  struct Cap {
    UniqueFd* fd;
    std::string* buf;
    std::int64_t cap;
  };
  Cap caps[] = {{&p.out, &p.output, p.limits.output_bytes},
                {&p.err, &p.error_output, p.limits.output_bytes},
                {&p.res, &p.result, p.limits.result_bytes}};
  char chunk[65536];
  const std::size_t had_output = p.output.size();
  for (Cap& c : caps) {
    while (c.fd->valid()) {
      ssize_t n = ::read(c.fd->get(), chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {   // EOF or error: nothing more will come
        c.fd->reset();
        break;
      }
      std::int64_t room = c.cap - static_cast<std::int64_t>(c.buf->size());
      if (n > room) {
        c.buf->append(chunk, static_cast<std::size_t>(std::max<std::int64_t>(room, 0)));
        p.capped = true;
        c.fd->reset();
        if (!p.forced) {
          p.forced = true;
          p.forced_outcome = Outcome::output_limit;
          kill_group(p.pid);
        }
        break;
      }
      c.buf->append(chunk, static_cast<std::size_t>(n));
    }
  }
  if (p.wake_on_output && p.output.size() > had_output) p.wake_pending = true;
}

void Runner::finish(Proc& p, std::vector<Finished>& out) {
  kill_group(p.pid);   // leftovers of the group (grandchildren) die with it
  int status = 0;
  rusage ru;
  std::memset(&ru, 0, sizeof ru);
  while (::wait4(p.pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) break;
  }
  pump(p, true);

  Finished f;
  f.id = p.id;
  f.confine_error = p.confine_error;
  f.wall_seconds = std::chrono::duration<double>(Clock::now() - p.started).count();
  f.user_seconds = seconds(ru.ru_utime);
  f.system_seconds = seconds(ru.ru_stime);
  f.max_rss_kb = ru.ru_maxrss;
  if (WIFEXITED(status)) {
    f.exit_code = WEXITSTATUS(status);
    f.outcome = Outcome::exited;
  } else if (WIFSIGNALED(status)) {
    f.signal = WTERMSIG(status);
    f.outcome = Outcome::signaled;
  }
  if (p.forced) f.outcome = p.forced_outcome;
  f.output = std::move(p.output);
  f.error_output = std::move(p.error_output);
  f.result = std::move(p.result);
  f.output_capped = p.capped;
  f.scratch = std::move(p.scratch);
  out.push_back(std::move(f));
}

std::vector<Finished> Runner::poll(std::chrono::milliseconds max_wait) {
  std::vector<Finished> done = std::move(stash_);
  stash_.clear();
  const auto until = Clock::now() + max_wait;
  for (auto& [id, pp] : procs_)
    if (std::exchange(pp->wake_pending, false)) return done;
  while (done.empty() && !procs_.empty()) {
    auto now = Clock::now();
    auto wake = until;
    bool need_tick = false;
    std::vector<pollfd> fds;
    std::vector<Proc*> owner;
    for (auto& [id, pp] : procs_) {
      Proc& p = *pp;
      if (p.has_deadline && !p.forced) wake = std::min(wake, p.deadline);
      if (!p.pidfd.valid()) need_tick = true;
      auto add = [&](const UniqueFd& fd, short ev) {
        if (fd.valid()) {
          fds.push_back(pollfd{fd.get(), ev, 0});
          owner.push_back(&p);
        }
      };
      add(p.pidfd, POLLIN);
      add(p.out, POLLIN);
      add(p.err, POLLIN);
      add(p.res, POLLIN);
      if (p.input_off < p.input.size()) add(p.in, POLLOUT);
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now);
    if (wake > now && wait.count() == 0) wait = std::chrono::milliseconds(1);   // round up
    if (need_tick) wait = std::min(wait, std::chrono::milliseconds(5));
    int timeout_ms = static_cast<int>(std::max<std::int64_t>(0, wait.count()));
    int r = ::poll(fds.data(), fds.size(), timeout_ms);
    if (r < 0 && errno != EINTR) throw Failure(std::string("sandbox: poll: ") + std::strerror(errno));

    now = Clock::now();
    std::vector<std::uint64_t> exited;
    bool woke = false;
    for (auto& [id, pp] : procs_) {
      Proc& p = *pp;
      pump(p, false);
      woke = std::exchange(p.wake_pending, false) || woke;
      bool gone = false;
      if (p.pidfd.valid()) {
        pollfd one{p.pidfd.get(), POLLIN, 0};
        gone = ::poll(&one, 1, 0) > 0;
      } else {
        siginfo_t si;
        std::memset(&si, 0, sizeof si);
        gone = ::waitid(P_PID, static_cast<id_t>(p.pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
               si.si_pid == p.pid;
      }
      if (gone) {
        exited.push_back(id);
      } else if (p.has_deadline && !p.forced && now >= p.deadline) {
        p.forced = true;
        p.forced_outcome = Outcome::timeout;
        kill_group(p.pid);
      }
    }
    for (auto id : exited) {
      finish(*procs_.at(id), done);
      procs_.erase(id);
    }
    if (woke || Clock::now() >= until) break;
  }
  return done;
}

bool Runner::send(std::uint64_t id, std::string data) {
  auto it = procs_.find(id);
  if (it == procs_.end() || !it->second->in.valid() || !it->second->keep_input_open) return false;
  Proc& p = *it->second;
  p.input.append(data);
  pump(p, false);   // output read here still wakes the next poll (wake_pending)
  return true;
}

bool Runner::close_input(std::uint64_t id) {
  auto it = procs_.find(id);
  if (it == procs_.end() || !it->second->in.valid()) return false;
  it->second->keep_input_open = false;
  pump(*it->second, false);
  return true;
}

std::string Runner::take_output(std::uint64_t id) {
  auto it = procs_.find(id);
  if (it == procs_.end()) return {};
  pump(*it->second, false);
  it->second->wake_pending = false;   // the caller has it now
  return std::exchange(it->second->output, std::string());
}

std::string Runner::take_error_output(std::uint64_t id) {
  auto it = procs_.find(id);
  if (it == procs_.end()) return {};
  return std::exchange(it->second->error_output, std::string());
}

bool Runner::set_deadline(std::uint64_t id, double seconds) {
  auto it = procs_.find(id);
  if (it == procs_.end()) return false;
  Proc& p = *it->second;
  p.has_deadline = seconds > 0;
  if (p.has_deadline)
    p.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  return true;
}

bool Runner::kill(std::uint64_t id) {
  auto it = procs_.find(id);
  if (it == procs_.end()) return false;
  Proc& p = *it->second;
  if (!p.forced) {
    p.forced = true;
    p.forced_outcome = Outcome::killed;
  }
  kill_group(p.pid);
  return true;
}

std::vector<std::uint64_t> Runner::kill_all() {
  std::vector<std::uint64_t> ids;
  for (auto& [id, pp] : procs_) {
    kill_group(pp->pid);
    int st;
    while (::waitpid(pp->pid, &st, 0) < 0 && errno == EINTR) {
    }
    ids.push_back(id);
  }
  procs_.clear();
  stash_.clear();
  return ids;
}

Finished Runner::run(Spec spec) {
  const std::uint64_t id = start(std::move(spec));
  std::vector<Finished> others;
  for (;;) {
    auto got = poll(std::chrono::milliseconds(1000));
    for (auto& f : got) {
      if (f.id == id) {
        for (auto& o : others) stash_.push_back(std::move(o));
        return std::move(f);
      }
      others.push_back(std::move(f));
    }
  }
}

}  // namespace kevo::sandbox
