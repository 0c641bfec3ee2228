#include "kevo/sandbox/seccomp.hpp"

#include "kevo/core/error.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ucontext.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef CLONE_THREAD
#define CLONE_THREAD 0x00010000
#endif
#ifndef SECCOMP_SET_MODE_FILTER
#define SECCOMP_SET_MODE_FILTER 1
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC 1U
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif

namespace kevo::sandbox {

namespace {

#if defined(__x86_64__)
constexpr unsigned kAuditArch = AUDIT_ARCH_X86_64;
constexpr bool kKnownArch = true;
#elif defined(__aarch64__)
constexpr unsigned kAuditArch = AUDIT_ARCH_AARCH64;
constexpr bool kKnownArch = true;
#else
constexpr unsigned kAuditArch = 0;
constexpr bool kKnownArch = false;
#endif

struct Named {
  long nr;
  const char* name;
};

// The calls every kernel host may make with any arguments: computing,
// memory, threads (their synchronisation and exit), reading what is open,
// time, its own signals and identity. Guarded: aarch64 has only the *at
// variants, and some calls are newer than the build's headers.
#define KEVO_NR(n) {__NR_##n, #n},
const std::vector<Named>& always_allowed() {
  static const std::vector<Named> list = {
      KEVO_NR(read) KEVO_NR(write) KEVO_NR(readv) KEVO_NR(writev) KEVO_NR(pread64) KEVO_NR(preadv)
      KEVO_NR(close) KEVO_NR(fstat) KEVO_NR(newfstatat) KEVO_NR(statx) KEVO_NR(lseek) KEVO_NR(faccessat)
      KEVO_NR(readlinkat) KEVO_NR(getcwd) KEVO_NR(getdents64) KEVO_NR(dup) KEVO_NR(dup3)
      KEVO_NR(ppoll) KEVO_NR(pselect6) KEVO_NR(brk) KEVO_NR(munmap)
      KEVO_NR(mremap) KEVO_NR(madvise) KEVO_NR(mincore) KEVO_NR(membarrier) KEVO_NR(futex)
      KEVO_NR(set_robust_list) KEVO_NR(get_robust_list) KEVO_NR(set_tid_address) KEVO_NR(exit)
      KEVO_NR(exit_group) KEVO_NR(gettid) KEVO_NR(getpid) KEVO_NR(getppid) KEVO_NR(sched_yield)
      KEVO_NR(sched_get_priority_max) KEVO_NR(sched_get_priority_min) KEVO_NR(sched_rr_get_interval)
      KEVO_NR(getcpu) KEVO_NR(rt_sigprocmask) KEVO_NR(rt_sigreturn) KEVO_NR(sigaltstack)
      KEVO_NR(rt_sigpending) KEVO_NR(rt_sigtimedwait) KEVO_NR(rt_sigsuspend) KEVO_NR(restart_syscall)
      KEVO_NR(clock_gettime) KEVO_NR(clock_getres) KEVO_NR(clock_nanosleep) KEVO_NR(nanosleep)
      KEVO_NR(gettimeofday) KEVO_NR(times) KEVO_NR(getrusage) KEVO_NR(getrandom) KEVO_NR(uname)
      KEVO_NR(sysinfo) KEVO_NR(getuid) KEVO_NR(geteuid) KEVO_NR(getgid) KEVO_NR(getegid)
      KEVO_NR(getresuid) KEVO_NR(getresgid) KEVO_NR(getgroups) KEVO_NR(capget) KEVO_NR(umask)
      KEVO_NR(mbind) KEVO_NR(get_mempolicy) KEVO_NR(set_mempolicy) KEVO_NR(pipe2) KEVO_NR(getitimer)
      KEVO_NR(setitimer) KEVO_NR(timer_settime) KEVO_NR(timer_gettime)
      KEVO_NR(timer_getoverrun) KEVO_NR(timer_delete) KEVO_NR(getpriority)
#ifdef __NR_rseq
      KEVO_NR(rseq)
#endif
#ifdef __NR_futex_waitv
      KEVO_NR(futex_waitv)
#endif
#ifdef __NR_faccessat2
      KEVO_NR(faccessat2)
#endif
#ifdef __NR_fstatfs
      KEVO_NR(fstatfs)
#endif
#ifdef __NR_stat
      KEVO_NR(stat) KEVO_NR(lstat) KEVO_NR(access) KEVO_NR(readlink) KEVO_NR(poll) KEVO_NR(select)
      KEVO_NR(dup2) KEVO_NR(pipe) KEVO_NR(time) KEVO_NR(alarm) KEVO_NR(getdents) KEVO_NR(getpgrp)
#endif
#ifdef __NR_arch_prctl
      KEVO_NR(arch_prctl)
#endif
  };
  return list;
}

// What the CUDA driver keeps doing after its context exists (the CUDA
// variant adds these; ioctl on the device files above all).
const std::vector<Named>& cuda_allowed() {
  static const std::vector<Named> list = {
      KEVO_NR(ioctl) KEVO_NR(eventfd2) KEVO_NR(epoll_create1) KEVO_NR(epoll_ctl) KEVO_NR(epoll_pwait)
      KEVO_NR(mlock) KEVO_NR(munlock) KEVO_NR(msync) KEVO_NR(fdatasync)
      // The CUDA worker's spawner channel (a socket made before the policy;
      // making one after it is still a violation).
      KEVO_NR(sendto) KEVO_NR(recvfrom) KEVO_NR(sendmsg) KEVO_NR(recvmsg)
#ifdef __NR_epoll_wait
      KEVO_NR(epoll_wait) KEVO_NR(eventfd)
#endif
#ifdef __NR_epoll_pwait2
      KEVO_NR(epoll_pwait2)
#endif
  };
  return list;
}

// Names of calls a policy forbids, for messages (a violation names the
// call). Not a rule: anything not allowed above traps.
const std::vector<Named>& other_names() {
  static const std::vector<Named> list = {
      KEVO_NR(ioctl) KEVO_NR(socket) KEVO_NR(connect) KEVO_NR(bind) KEVO_NR(listen) KEVO_NR(accept4)
      KEVO_NR(sendto) KEVO_NR(recvfrom) KEVO_NR(sendmsg) KEVO_NR(recvmsg) KEVO_NR(socketpair)
      KEVO_NR(execve) KEVO_NR(execveat) KEVO_NR(wait4) KEVO_NR(waitid) KEVO_NR(unlinkat) KEVO_NR(renameat)
      KEVO_NR(mkdirat) KEVO_NR(linkat) KEVO_NR(symlinkat) KEVO_NR(fchmod) KEVO_NR(fchmodat) KEVO_NR(fchown)
      KEVO_NR(fchownat) KEVO_NR(truncate) KEVO_NR(ftruncate) KEVO_NR(fallocate) KEVO_NR(mknodat)
      KEVO_NR(utimensat) KEVO_NR(setxattr) KEVO_NR(fsetxattr) KEVO_NR(removexattr) KEVO_NR(open_by_handle_at)
      KEVO_NR(ptrace) KEVO_NR(process_vm_readv) KEVO_NR(process_vm_writev) KEVO_NR(pidfd_send_signal)
      KEVO_NR(pidfd_open) KEVO_NR(pidfd_getfd) KEVO_NR(tkill) KEVO_NR(kcmp) KEVO_NR(io_uring_setup)
      KEVO_NR(io_setup) KEVO_NR(mount) KEVO_NR(umount2) KEVO_NR(pivot_root) KEVO_NR(chroot) KEVO_NR(unshare)
      KEVO_NR(setns) KEVO_NR(reboot) KEVO_NR(kexec_load) KEVO_NR(init_module) KEVO_NR(finit_module)
      KEVO_NR(delete_module) KEVO_NR(swapon) KEVO_NR(swapoff) KEVO_NR(bpf) KEVO_NR(userfaultfd)
      KEVO_NR(keyctl) KEVO_NR(add_key) KEVO_NR(request_key) KEVO_NR(perf_event_open) KEVO_NR(shmget)
      KEVO_NR(shmat) KEVO_NR(shmctl) KEVO_NR(semget) KEVO_NR(semop) KEVO_NR(msgget) KEVO_NR(msgsnd)
      KEVO_NR(mq_open) KEVO_NR(memfd_create) KEVO_NR(setuid) KEVO_NR(setgid) KEVO_NR(setresuid)
      KEVO_NR(setresgid) KEVO_NR(setgroups) KEVO_NR(capset) KEVO_NR(personality) KEVO_NR(seccomp)
      KEVO_NR(settimeofday) KEVO_NR(clock_settime) KEVO_NR(clock_adjtime) KEVO_NR(adjtimex) KEVO_NR(chdir)
      KEVO_NR(fchdir) KEVO_NR(sync) KEVO_NR(syncfs) KEVO_NR(splice) KEVO_NR(tee) KEVO_NR(sendfile)
      KEVO_NR(inotify_init1) KEVO_NR(fanotify_init) KEVO_NR(setpgid) KEVO_NR(setsid) KEVO_NR(getpgid)
      KEVO_NR(getsid) KEVO_NR(sched_setaffinity) KEVO_NR(sched_getaffinity) KEVO_NR(sched_setscheduler)
      KEVO_NR(sched_setparam) KEVO_NR(sched_getparam) KEVO_NR(sched_getscheduler) KEVO_NR(sched_setattr)
      KEVO_NR(sched_getattr) KEVO_NR(prlimit64) KEVO_NR(setpriority) KEVO_NR(prctl) KEVO_NR(kill)
      KEVO_NR(tgkill) KEVO_NR(rt_sigqueueinfo) KEVO_NR(rt_tgsigqueueinfo) KEVO_NR(rt_sigaction)
      KEVO_NR(quotactl) KEVO_NR(acct) KEVO_NR(sethostname) KEVO_NR(setdomainname) KEVO_NR(ioprio_set)
      KEVO_NR(eventfd2) KEVO_NR(epoll_create1) KEVO_NR(mlock) KEVO_NR(msync) KEVO_NR(flock) KEVO_NR(fsync)
      KEVO_NR(timer_create) KEVO_NR(pkey_mprotect)
#ifdef __NR_fork
      KEVO_NR(fork) KEVO_NR(vfork) KEVO_NR(creat) KEVO_NR(unlink) KEVO_NR(rename) KEVO_NR(mkdir)
      KEVO_NR(rmdir) KEVO_NR(link) KEVO_NR(symlink) KEVO_NR(chmod) KEVO_NR(chown) KEVO_NR(lchown)
      KEVO_NR(mknod) KEVO_NR(utime) KEVO_NR(utimes) KEVO_NR(futimesat) KEVO_NR(lsetxattr)
      KEVO_NR(lremovexattr) KEVO_NR(fremovexattr) KEVO_NR(iopl) KEVO_NR(ioperm)
#endif
#ifdef __NR_renameat2
      KEVO_NR(renameat2)
#endif
#ifdef __NR_io_uring_enter
      KEVO_NR(io_uring_enter) KEVO_NR(io_uring_register)
#endif
#ifdef __NR_process_madvise
      KEVO_NR(process_madvise)
#endif
#ifdef __NR_landlock_create_ruleset
      KEVO_NR(landlock_create_ruleset)
#endif
  };
  return list;
}
#undef KEVO_NR

// Names of the calls with argument checks (for messages).
const std::vector<Named>& checked() {
  static const std::vector<Named> list = {
#ifdef __NR_open
      {__NR_open, "open (for writing or creating)"},
#endif
      {__NR_openat, "openat (for writing or creating)"},
      {__NR_clone, "clone (a process, not a thread)"},
      {__NR_kill, "kill (another process, or SIGCONT)"},
      {__NR_tgkill, "tgkill (another process, or SIGCONT)"},
      {__NR_rt_sigqueueinfo, "rt_sigqueueinfo (another process)"},
      {__NR_rt_tgsigqueueinfo, "rt_tgsigqueueinfo (another process)"},
      {__NR_mmap, "mmap (anonymous executable, or writable and executable)"},
      {__NR_mprotect, "mprotect (making memory executable)"},
#ifdef __NR_pkey_mprotect
      {__NR_pkey_mprotect, "pkey_mprotect (making memory executable)"},
#endif
      {__NR_timer_create, "timer_create (a timer that could signal the process)"},
  };
  return list;
}

// CPU policy: opening for writing, creating or truncating is a violation.
constexpr std::uint32_t kWriteFlags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
// CUDA policy: the driver opens device and /proc files read-write after its
// context exists, and seccomp cannot see paths; so only the flags that
// create a file or destroy its contents on open are violations. (O_TMPFILE
// makes an unnamed file: creation too. glibc's O_TMPFILE includes the
// O_DIRECTORY bit, which opendir sets: only the bit of its own is denied.)
#ifdef O_TMPFILE
constexpr std::uint32_t kTmpfileFlag = O_TMPFILE & ~static_cast<std::uint32_t>(O_DIRECTORY);
#else
constexpr std::uint32_t kTmpfileFlag = 0;
#endif
static_assert(kTmpfileFlag == 0 || (kTmpfileFlag & O_DIRECTORY) == 0, "the policy must let opendir through");
constexpr std::uint32_t kCreateFlags = O_CREAT | O_TRUNC | O_APPEND | kTmpfileFlag;

constexpr std::uint32_t arg_lo(int i) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * i);
#else
  return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * i + 4);
#endif
}

constexpr std::uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t kTrap = SECCOMP_RET_TRAP;
constexpr std::uint32_t kKill = SECCOMP_RET_KILL_PROCESS;
constexpr std::uint32_t errno_ret(int e) { return SECCOMP_RET_ERRNO | (static_cast<std::uint32_t>(e) & SECCOMP_RET_DATA); }

// A BPF program built rule by rule. Every rule starts with the call's
// number in the accumulator and either returns or jumps past itself with
// the number reloaded, so rules are independent and no jump is long.
struct Prog {
  std::vector<sock_filter> ins;
  void stmt(std::uint16_t code, std::uint32_t k) { ins.push_back(BPF_STMT(code, k)); }
  void jump(std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
    ins.push_back(BPF_JUMP(code, k, jt, jf));
  }
  void load_nr() { stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)); }
  void load_arg(int i) { stmt(BPF_LD | BPF_W | BPF_ABS, arg_lo(i)); }
  // if nr == n: return action
  void simple(long n, std::uint32_t action) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(n), 0, 1);
    stmt(BPF_RET | BPF_K, action);
  }
  // if nr == n: return (arg & mask) ? on_set : on_clear
  void flags(long n, int arg, std::uint32_t mask, std::uint32_t on_set, std::uint32_t on_clear) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(n), 0, 4);
    load_arg(arg);
    jump(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1);
    stmt(BPF_RET | BPF_K, on_set);
    stmt(BPF_RET | BPF_K, on_clear);
  }
  // if nr == n: arg a is `self` and arg b is not `bad` ? allow : trap
  void self_not(long n, int a, std::uint32_t self, int b, std::uint32_t bad) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(n), 0, 7);
    load_arg(a);
    jump(BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0);
    stmt(BPF_RET | BPF_K, kTrap);
    load_arg(b);
    jump(BPF_JMP | BPF_JEQ | BPF_K, bad, 0, 1);
    stmt(BPF_RET | BPF_K, kTrap);
    stmt(BPF_RET | BPF_K, kAllow);
  }
  // mmap: trap PROT_EXEC with MAP_ANONYMOUS or with PROT_WRITE, else allow.
  void mmap_rule(long n) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(n), 0, 7);
    load_arg(2);
    jump(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 4);
    jump(BPF_JMP | BPF_JSET | BPF_K, PROT_WRITE, 2, 0);
    load_arg(3);
    jump(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 0, 1);
    stmt(BPF_RET | BPF_K, kTrap);
    stmt(BPF_RET | BPF_K, kAllow);
  }
  // if nr == n: return arg in values ? on_in : on_out (at most 250 values)
  void one_of(long n, int arg, const std::vector<std::uint32_t>& values, std::uint32_t on_in, std::uint32_t on_out) {
    const auto k = static_cast<std::uint8_t>(values.size());
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(n), 0, static_cast<std::uint8_t>(k + 3));
    load_arg(arg);
    for (std::size_t i = 0; i < values.size(); ++i)
      jump(BPF_JMP | BPF_JEQ | BPF_K, values[i], static_cast<std::uint8_t>(k - i), 0);
    stmt(BPF_RET | BPF_K, on_out);
    stmt(BPF_RET | BPF_K, on_in);
  }
  // if nr == n: return (arg0 in values0 && arg1 in values1) ? on_in : on_out
  void two_of(long n, int a0, const std::vector<std::uint32_t>& v0, int a1, const std::vector<std::uint32_t>& v1,
              std::uint32_t on_in, std::uint32_t on_out) {
    const auto k0 = static_cast<std::uint8_t>(v0.size()), k1 = static_cast<std::uint8_t>(v1.size());
    // nr check, load a0, k0 tests, ret out, load a1, k1 tests, ret out, ret in
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(n), 0, static_cast<std::uint8_t>(k0 + k1 + 5));
    load_arg(a0);
    for (std::size_t i = 0; i < v0.size(); ++i)
      jump(BPF_JMP | BPF_JEQ | BPF_K, v0[i], static_cast<std::uint8_t>(k0 - i), 0);
    stmt(BPF_RET | BPF_K, on_out);
    load_arg(a1);
    for (std::size_t i = 0; i < v1.size(); ++i)
      jump(BPF_JMP | BPF_JEQ | BPF_K, v1[i], static_cast<std::uint8_t>(k1 - i), 0);
    stmt(BPF_RET | BPF_K, on_out);
    stmt(BPF_RET | BPF_K, on_in);
  }
};

// What the SIGSYS handler writes: static storage, filled before the filter.
char g_report[600];
std::size_t g_prefix_len = 0;
char g_suffix[256];
std::size_t g_suffix_len = 0;
int g_report_fd = -1;
std::atomic<std::int64_t>* g_slot = nullptr;

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// The path argument of a trapped open/openat, from the registers of the
// trapped call (null for other calls and other architectures).
const char* trapped_open_path(long nr, void* ctx) {
  if (!ctx) return nullptr;
  const auto* uc = static_cast<const ucontext_t*>(ctx);
#if defined(__x86_64__)
  if (nr == __NR_openat) return reinterpret_cast<const char*>(uc->uc_mcontext.gregs[REG_RSI]);
  if (nr == __NR_open) return reinterpret_cast<const char*>(uc->uc_mcontext.gregs[REG_RDI]);
#elif defined(__aarch64__)
  if (nr == __NR_openat) return reinterpret_cast<const char*>(uc->uc_mcontext.regs[1]);
#endif
  return nullptr;
}

void on_sigsys(int, siginfo_t* si, void* ctx) {
  // Async-signal-safe: formats into a static buffer and write()s it once.
  const long nr = si ? si->si_syscall : -1;
  if (g_slot) g_slot->store(nr, std::memory_order_release);
  if (g_report_fd >= 0) {
    char* out = g_report + g_prefix_len;
    char digits[24];
    int nd = 0;
    bool neg = nr < 0;
    unsigned long v = neg ? static_cast<unsigned long>(-nr) : static_cast<unsigned long>(nr);
    do {
      digits[nd++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v && nd < 22);
    if (neg) *out++ = '-';
    while (nd) *out++ = digits[--nd];
    std::memcpy(out, g_suffix, g_suffix_len);
    out += g_suffix_len;
    write_all(g_report_fd, g_report, static_cast<std::size_t>(out - g_report));
    // For a file opened for writing or creating, a second line with the
    // path (printable ASCII, at most 160 bytes), written after the first so
    // that a path pointer that faults loses only this line.
    if (const char* path = trapped_open_path(nr, ctx)) {
      static const char kHead[] = "sandbox violation path: ";
      char line[sizeof kHead + 172];
      std::size_t n = sizeof kHead - 1;
      std::memcpy(line, kHead, n);
      std::size_t i = 0;
      for (; i < 160 && path[i] != '\0'; ++i) {
        const char c = path[i];
        line[n++] = (c >= 0x20 && c < 0x7f) ? c : '?';
      }
      if (i == 160 && path[i] != '\0') {
        std::memcpy(line + n, "...", 3);
        n += 3;
      }
      line[n++] = '\n';
      write_all(g_report_fd, line, n);
    }
  }
  ::_exit(kViolationExitCode);
}

// The rules whose arguments matter.
void add_checked_rules(Prog& p, const PolicyOptions& o) {
  const auto self = static_cast<std::uint32_t>(::getpid());
  // Files: reading only (CPU), or without creating or truncating (CUDA).
  const std::uint32_t open_denied = o.policy == Policy::cuda ? kCreateFlags : kWriteFlags;
#ifdef __NR_open
  p.flags(__NR_open, 1, open_denied, kTrap, kAllow);
#endif
  p.flags(__NR_openat, 2, open_denied, kTrap, kAllow);
  // Threads, never processes.
  p.flags(__NR_clone, 0, CLONE_THREAD, kAllow, kTrap);
#ifdef __NR_clone3
  p.simple(__NR_clone3, errno_ret(ENOSYS));
#endif
#ifdef __NR_openat2
  p.simple(__NR_openat2, errno_ret(ENOSYS));
#endif
  // Signals to itself only: kill(0)/kill(-pgid) would reach the judge's
  // process group. And never SIGCONT: the judge stops the host between
  // calls, and a host that continued itself would run while the reference
  // runs or the judge compares.
  p.self_not(__NR_kill, 0, self, 1, SIGCONT);
  p.self_not(__NR_tgkill, 0, self, 2, SIGCONT);
  p.self_not(__NR_rt_sigqueueinfo, 0, self, 1, SIGCONT);
  p.self_not(__NR_rt_tgsigqueueinfo, 0, self, 2, SIGCONT);
  // A host (CPU or CUDA) is stopped between calls; nothing may start it
  // again. Timers that signal: their sigevent (in memory) may name any
  // signal, SIGCONT among them (setitimer's are fixed: SIGALRM...).
  // (tests/adversarial/redteam/timing/timer_precompute.cpp on the CPU,
  // tests/cuda/adversarial/resumes_itself.cu on the GPU.)
  p.simple(__NR_timer_create, kTrap);
  // File locks (flock): the GPU's timing slot is a lock on files that
  // every worker of the host shares (backends/cuda/worker/slot.hpp); a
  // host that could open them (no root of its own) and hold one would
  // stall every timing on the GPU while it lives
  // (tests/cuda/adversarial/holds_the_slot.cu). Refused with ENOLCK, as a
  // lock the kernel has no room for: what the driver may lock (a cache of
  // its own) it does without. fcntl's record locks do not exclude flock's.
  // Under the CPU variant flock stays a violation (not allowed). A process
  // that holds the slot itself (the sanitizer child) names its descriptors.
  if (o.policy == Policy::cuda && o.refuse_file_locks) {
    std::vector<std::uint32_t> lockable;
    for (const int fd : o.lockable_fds)
      if (fd >= 0) lockable.push_back(static_cast<std::uint32_t>(fd));
    p.one_of(__NR_flock, 0, lockable, kAllow, errno_ret(ENOLCK));
  } else if (o.policy == Policy::cuda) {
    p.simple(__NR_flock, kAllow);
  }
  // fcntl: descriptors, flags and locks; not the commands that choose a
  // signal or its receiver (F_SETSIG, F_SETOWN(_EX), F_NOTIFY, F_SETLEASE).
  p.one_of(__NR_fcntl, 1,
           {F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_GETLK, F_SETLK, F_SETLKW, F_DUPFD_CLOEXEC, 36u, 37u, 38u,
            1032u /* F_GETPIPE_SZ */, 1034u /* F_GET_SEALS */},
           kAllow, errno_ret(EINVAL));
  if (o.policy == Policy::cpu) {
    // Executable memory: only what the loader maps from files. An anonymous
    // executable mapping, a writable and executable one, or memory made
    // executable later would let a candidate run code no mapped file names
    // (a library copied out of its file, hidden from the library check).
    p.mmap_rule(__NR_mmap);
    p.flags(__NR_mprotect, 2, PROT_EXEC, kTrap, kAllow);
#ifdef __NR_pkey_mprotect
    p.flags(__NR_pkey_mprotect, 2, PROT_EXEC, kTrap, kAllow);
#endif
  } else {
    // The driver maps and protects memory as it likes (a suspected hole:
    // a library copied into anonymous executable memory,
    // docs/verdicts.md#threat-model).
    for (long nr : {static_cast<long>(__NR_mmap), static_cast<long>(__NR_mprotect)}) p.simple(nr, kAllow);
  }
  // The violation handler cannot be replaced (or even read back): any
  // rt_sigaction on SIGSYS is itself a violation, trapped before it takes
  // effect, so the handler still in place reports it by name (Triton's LLVM
  // calls it at a compile; killing at once left "SIGSYS" without a number).
  // A thread that blocks SIGSYS is still killed by the kernel.
  p.one_of(__NR_rt_sigaction, 0, {SIGSYS}, kTrap, kAllow);
  // Scheduling, affinity, limits: on itself (pid 0 or its own number); in a
  // PID namespace of its own, every number it can name is its own thread.
  for (long nr : {static_cast<long>(__NR_sched_setaffinity), static_cast<long>(__NR_sched_getaffinity),
                  static_cast<long>(__NR_sched_setscheduler), static_cast<long>(__NR_sched_setparam),
                  static_cast<long>(__NR_sched_getparam), static_cast<long>(__NR_sched_getscheduler),
                  static_cast<long>(__NR_sched_setattr), static_cast<long>(__NR_sched_getattr),
                  static_cast<long>(__NR_prlimit64)}) {
    if (o.own_pid_namespace && nr != __NR_prlimit64) p.simple(nr, kAllow);
    else p.one_of(nr, 0, {0u, self}, kAllow, errno_ret(EPERM));
  }
  // setpriority(PRIO_PROCESS, 0 or itself): a process group or a user
  // would reach other processes.
  p.two_of(__NR_setpriority, 0, {PRIO_PROCESS}, 1, {0u, self}, kAllow, errno_ret(EPERM));
  // prctl: naming threads and reading state; nothing that changes how the
  // process dies, is traced or is dumped.
  p.one_of(__NR_prctl, 0,
           {PR_SET_NAME, PR_GET_NAME, PR_GET_DUMPABLE, PR_CAPBSET_READ, PR_GET_SECUREBITS, PR_GET_NO_NEW_PRIVS,
            PR_GET_TIMERSLACK, PR_GET_THP_DISABLE, PR_SET_VMA, PR_GET_TSC},
           kAllow, errno_ret(EPERM));
  // ioctl: the CUDA driver's (allowed below); the CPU variant answers
  // "not a terminal" (stdio's isatty probes) without a violation.
  if (o.policy == Policy::cpu) p.simple(__NR_ioctl, errno_ret(ENOTTY));
}

}  // namespace

bool seccomp_supported_arch() { return kKnownArch; }

const char* to_string(Policy p) { return p == Policy::cuda ? "cuda" : "cpu"; }

Policy policy_from_string(const std::string& name) {
  if (name == "cpu") return Policy::cpu;
  if (name == "cuda") return Policy::cuda;
  throw std::invalid_argument("unknown seccomp policy '" + name + "' (expected \"cpu\" or \"cuda\")");
}

void set_violation_report(int fd, const std::string& prefix, const std::string& suffix) {
  if (prefix.size() > 300 || suffix.size() >= sizeof g_suffix)
    throw Failure("seccomp: violation report line too long");
  std::memcpy(g_report, prefix.data(), prefix.size());
  g_prefix_len = prefix.size();
  std::memcpy(g_suffix, suffix.data(), suffix.size());
  g_suffix_len = suffix.size();
  g_report_fd = fd;
}

void set_violation_slot(std::atomic<std::int64_t>* slot) { g_slot = slot; }

void install_candidate_policy(const PolicyOptions& o) {
  if (!kKnownArch) throw Failure("seccomp: this architecture is not supported by kevo's policy");

  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  check_errno(::sigaction(SIGSYS, &sa, nullptr) == 0, "sigaction(SIGSYS)");
  sigset_t sys;
  sigemptyset(&sys);
  sigaddset(&sys, SIGSYS);
  ::sigprocmask(SIG_UNBLOCK, &sys, nullptr);

  Prog p;
  p.stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0);
  p.stmt(BPF_RET | BPF_K, kKill);   // another ABI (i386 via int 0x80...)
  p.load_nr();
#if defined(__x86_64__)
  p.jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 0, 1);   // x32 syscalls
  p.stmt(BPF_RET | BPF_K, kKill);
#endif
  for (const Named& n : always_allowed()) p.simple(n.nr, kAllow);
  add_checked_rules(p, o);
  if (o.policy == Policy::cuda)
    for (const Named& n : cuda_allowed()) p.simple(n.nr, kAllow);
  p.stmt(BPF_RET | BPF_K, kTrap);   // everything else

  sock_fprog prog;
  prog.len = static_cast<unsigned short>(p.ins.size());
  prog.filter = p.ins.data();
  check_errno(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "prctl(PR_SET_NO_NEW_PRIVS)");
  const std::string key = o.policy == Policy::cuda ? "backend.cuda.sandbox.seccomp" : "backend.cpu.sandbox.seccomp";
  // TSYNC puts the filter on every thread at once (the kernel also gives
  // them no_new_privs): threads that exist already, such as the CUDA
  // driver's, would otherwise run unfiltered. A positive result names a
  // thread that could not be synchronised.
  long rc = -1;
  errno = ENOSYS;
#ifdef __NR_seccomp
  rc = ::syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
#endif
  if (rc < 0 && errno == ENOSYS && o.policy == Policy::cpu) {
    // Kernels before 3.17: the calling thread only, which is all there is
    // in a CPU kernel host at this point.
    rc = ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
  }
  if (rc > 0)
    throw Failure("seccomp: thread " + std::to_string(rc) + " could not take the candidate filter (TSYNC)");
  if (rc != 0) {
    int err = errno;
    throw Failure(std::string("seccomp: the kernel refused the candidate filter (seccomp(SECCOMP_SET_MODE_FILTER): ") +
                  std::strerror(err) + "); run on a kernel with CONFIG_SECCOMP_FILTER, or set " + key +
                  " to false to judge without it");
  }
}

std::string forbidden_syscall_name(long nr) {
  for (const Named& n : checked())
    if (n.nr == nr) return n.name;
  for (const auto* list : {&other_names(), &always_allowed(), &cuda_allowed()})
    for (const Named& n : *list)
      if (n.nr == nr) return n.name;
  return {};
}

}  // namespace kevo::sandbox
