// Installs the candidate policy on itself, then tries one thing named by
// argv[1] and prints what happened. Violations are reported on stdout as
// "violation <nr>" by the policy's SIGSYS handler (exit code 159). A first
// argument "--cuda" picks the CUDA variant of the policy.
#include "kevo/sandbox/seccomp.hpp"
#include "kevo/sandbox/spawner.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

void print_spawned(const char* name, const kevo::sandbox::SpawnResult& r) {
  std::printf("%s started %d exit %d signal %d timed_out %d%s%s\n", name, r.started ? 1 : 0, r.exit_code, r.signal,
              r.timed_out ? 1 : 0, r.error.empty() ? "" : " ", r.error.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  kevo::sandbox::Policy policy = kevo::sandbox::Policy::cpu;
  if (argc > 1 && std::strcmp(argv[1], "--cuda") == 0) {
    policy = kevo::sandbox::Policy::cuda;
    ++argv;
    --argc;
  }
  // "--locks": flock left alone (the torch host's variant).
  bool locks_allowed = false;
  if (argc > 1 && std::strcmp(argv[1], "--locks") == 0) {
    locks_allowed = true;
    ++argv;
    --argc;
  }
  if (argc < 2) return 2;
  const std::string what = argv[1];
  const std::string arg = argc > 2 ? argv[2] : "";
  kevo::sandbox::set_violation_report(1, "violation ", "\n");
  std::setvbuf(stdout, nullptr, _IONBF, 0);

  // What a worker sets up before the policy: a spawner with its commands
  // (arg: a directory for their files), or a thread that already runs (as
  // the CUDA driver's do) and forks once the policy is in place.
  kevo::sandbox::Spawner spawner;
  if (what == "spawner") {
    spawner = kevo::sandbox::Spawner({{{"/bin/true"}, "", 10},
                                      {{"/bin/sh", "-c", "echo made > " + arg + "/made.txt"}, arg + "/write.log", 10},
                                      {{"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, arg + "/out.log", 10}});
  }
  if (what == "spawner-long") {
    spawner = kevo::sandbox::Spawner(
        {{{"/bin/sh", "-c", "echo $$ > " + arg + "/long.pid; exec sleep 30"}, "", 60}});
  }
  std::atomic<bool> go{false};
  std::thread early;
  if (what == "early-thread-fork") {
    early = std::thread([&go] {
      while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      pid_t p = fork();
      if (p == 0) _exit(0);
      std::printf("forked from an early thread\n");
    });
  }
  // "flock-own": a descriptor opened before the policy and named to it
  // as lockable (the GPU slot's, in the sanitizer child), and another one
  // on the same file that is not.
  kevo::sandbox::PolicyOptions po;
  po.policy = policy;
  po.refuse_file_locks = !locks_allowed;   // as in kevo's kernel hosts, unless --locks
  int own_fd = -1, other_fd = -1;
  if (what == "flock-own") {
    own_fd = open(arg.c_str(), O_RDONLY | O_CLOEXEC);
    other_fd = open(arg.c_str(), O_RDONLY | O_CLOEXEC);
    if (own_fd < 0 || other_fd < 0) return 3;
    po.lockable_fds = {own_fd};
  }
  if (what != "none") kevo::sandbox::install_candidate_policy(po);

  if (what == "none" || what == "nothing") {
    std::printf("ok\n");
  } else if (what == "threads") {
    std::vector<std::thread> ts;
    std::vector<int> got(4, 0);
    for (int i = 0; i < 4; ++i) ts.emplace_back([&got, i] { got[i] = i + 1; });
    for (auto& t : ts) t.join();
    std::printf("threads %d\n", got[0] + got[1] + got[2] + got[3]);
  } else if (what == "openmp") {
#ifdef _OPENMP
    long sum = 0;
    omp_set_num_threads(4);
#pragma omp parallel for reduction(+ : sum)
    for (int i = 0; i < 1000; ++i) sum += i;
    std::printf("openmp %ld\n", sum);
#else
    std::printf("openmp 499500\n");
#endif
  } else if (what == "fork") {
    pid_t p = fork();
    if (p == 0) _exit(0);
    std::printf("forked\n");
  } else if (what == "exec") {
    char* const av[] = {const_cast<char*>("/bin/true"), nullptr};
    execv("/bin/true", av);
    std::printf("exec failed\n");
  } else if (what == "write-file") {
    int fd = open(arg.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::printf("opened %d\n", fd);
  } else if (what == "read-file") {
    int fd = open(arg.c_str(), O_RDONLY);
    std::printf("read-open %s\n", fd >= 0 ? "ok" : std::strerror(errno));
  } else if (what == "unlink") {
    int r = unlink(arg.c_str());
    std::printf("unlink %d\n", r);
  } else if (what == "mkdir") {
    int r = mkdir(arg.c_str(), 0755);
    std::printf("mkdir %d\n", r);
  } else if (what == "socket") {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    std::printf("socket %d\n", s);
  } else if (what == "kill-parent") {
    int r = kill(getppid(), 0);
    std::printf("kill %d\n", r);
  } else if (what == "raise") {
    signal(SIGUSR1, SIG_IGN);
    int r = raise(SIGUSR1);
    std::printf("raise %d\n", r);
  } else if (what == "clone3") {
#ifdef SYS_clone3
    long r = syscall(SYS_clone3, nullptr, 0);
    std::printf("clone3 %s\n", r < 0 && errno == ENOSYS ? "ENOSYS" : "other");
#else
    std::printf("clone3 ENOSYS\n");
#endif
  } else if (what == "rdwr-existing") {
    int fd = open(arg.c_str(), O_RDWR);
    std::printf("rdwr-open %s\n", fd >= 0 ? "ok" : std::strerror(errno));
  } else if (what == "list-dir") {
    // What opendir does (O_RDONLY | O_DIRECTORY): Python's os.listdir and
    // torch's lazy imports list package directories this way.
    DIR* d = opendir(arg.c_str());
    int n = 0;
    if (d) {
      while (readdir(d)) ++n;
      closedir(d);
    }
    std::printf("list-dir %s\n", d && n >= 2 ? "ok" : std::strerror(errno));
  } else if (what == "tmpfile") {
    int fd = open(arg.c_str(), O_TMPFILE | O_RDWR, 0600);
    std::printf("opened %d\n", fd);
  } else if (what == "create-rdwr") {
    int fd = open(arg.c_str(), O_RDWR | O_CREAT, 0600);
    std::printf("opened %d\n", fd);
  } else if (what == "truncate-rdwr") {
    int fd = open(arg.c_str(), O_RDWR | O_TRUNC);
    std::printf("opened %d\n", fd);
  } else if (what == "ptrace") {
    long r = ptrace(PTRACE_ATTACH, getppid(), nullptr, nullptr);
    std::printf("ptrace %ld\n", r);
  } else if (what == "early-thread-fork") {
    go = true;
    early.join();
  } else if (what == "spawner") {
    print_spawned("true", spawner.run(0));
    print_spawned("write", spawner.run(1));
    print_spawned("out", spawner.run(2, 5));
    // The probe itself still may not start a process.
    pid_t p = fork();
    if (p == 0) _exit(0);
    std::printf("forked\n");
  } else if (what == "spawner-long") {
    // Runs until the test's runner kills this probe.
    std::printf("spawner %d\n", static_cast<int>(spawner.pid()));
    print_spawned("long", spawner.run(0));
  } else if (what == "timer-sigcont") {
    // A timer whose signal is SIGCONT would resume a stopped host.
    sigevent sev{};
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGCONT;
    timer_t t{};
    const int r = timer_create(CLOCK_MONOTONIC, &sev, &t);
    std::printf("timer_create %d\n", r);
  } else if (what == "fcntl-signal") {
    // The commands that choose a signal or its receiver are refused
    // (EINVAL); the ones the driver and libc use still work.
    int fds[2];
    if (pipe(fds) != 0) return 3;
    const int setsig = fcntl(fds[0], F_SETSIG, SIGCONT);
    const int setsig_errno = errno;
    const int setown = fcntl(fds[0], F_SETOWN, getpid());
    const int setown_errno = errno;
    const int fl = fcntl(fds[0], F_GETFL);
    const int setfl = fcntl(fds[0], F_SETFL, fl | O_NONBLOCK);
    const int cloexec = fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    const int dup = fcntl(fds[0], F_DUPFD_CLOEXEC, 10);
    std::printf("F_SETSIG %s F_SETOWN %s F_GETFL %s F_SETFL %d F_SETFD %d F_DUPFD_CLOEXEC %s\n",
                setsig < 0 && setsig_errno == EINVAL ? "EINVAL" : "allowed",
                setown < 0 && setown_errno == EINVAL ? "EINVAL" : "allowed", fl >= 0 ? "ok" : "failed", setfl, cloexec,
                dup >= 10 ? "ok" : "failed");
  } else if (what == "flock") {
    // An exclusive lock on an existing file opened for reading, as a host
    // would take the GPU timing slot's (arg: the file).
    const int fd = open(arg.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 3;
    const int rc = flock(fd, LOCK_EX | LOCK_NB);
    std::printf("flock %s\n", rc == 0 ? "taken" : errno == ENOLCK ? "ENOLCK" : std::strerror(errno));
  } else if (what == "flock-own") {
    const int own = flock(own_fd, LOCK_EX | LOCK_NB);
    const int own_errno = errno;
    const int unlocked = flock(own_fd, LOCK_UN);
    const int other = flock(other_fd, LOCK_EX | LOCK_NB);
    std::printf("own %s unlock %d other %s\n", own == 0 ? "taken" : std::strerror(own_errno), unlocked,
                other == 0 ? "taken" : errno == ENOLCK ? "ENOLCK" : std::strerror(errno));
  } else if (what == "sigsys-handler") {
    signal(SIGSYS, SIG_IGN);
    std::printf("replaced\n");
  } else {
    return 2;
  }
  return 0;
}
