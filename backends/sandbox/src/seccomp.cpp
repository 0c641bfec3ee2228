#include "kevo/sandbox/seccomp.hpp"

#include "kevo/core/error.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
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

// Plain traps: any use is a violation. Guarded because aarch64 has only the
// *at variants and some calls are newer than the build's headers.
const std::vector<Named>& trapped() {
  static const std::vector<Named> list = {
#define KEVO_NR(n) {__NR_##n, #n},
#ifdef __NR_fork
      KEVO_NR(fork)
#endif
#ifdef __NR_vfork
      KEVO_NR(vfork)
#endif
#ifdef __NR_execve
      KEVO_NR(execve)
#endif
#ifdef __NR_execveat
      KEVO_NR(execveat)
#endif
#ifdef __NR_socket
      KEVO_NR(socket)
#endif
#ifdef __NR_connect
      KEVO_NR(connect)
#endif
#ifdef __NR_bind
      KEVO_NR(bind)
#endif
#ifdef __NR_creat
      KEVO_NR(creat)
#endif
#ifdef __NR_unlink
      KEVO_NR(unlink)
#endif
#ifdef __NR_unlinkat
      KEVO_NR(unlinkat)
#endif
#ifdef __NR_rename
      KEVO_NR(rename)
#endif
#ifdef __NR_renameat
      KEVO_NR(renameat)
#endif
#ifdef __NR_renameat2
      KEVO_NR(renameat2)
#endif
#ifdef __NR_mkdir
      KEVO_NR(mkdir)
#endif
#ifdef __NR_mkdirat
      KEVO_NR(mkdirat)
#endif
#ifdef __NR_rmdir
      KEVO_NR(rmdir)
#endif
#ifdef __NR_link
      KEVO_NR(link)
#endif
#ifdef __NR_linkat
      KEVO_NR(linkat)
#endif
#ifdef __NR_symlink
      KEVO_NR(symlink)
#endif
#ifdef __NR_symlinkat
      KEVO_NR(symlinkat)
#endif
#ifdef __NR_chmod
      KEVO_NR(chmod)
#endif
#ifdef __NR_fchmod
      KEVO_NR(fchmod)
#endif
#ifdef __NR_fchmodat
      KEVO_NR(fchmodat)
#endif
#ifdef __NR_fchmodat2
      KEVO_NR(fchmodat2)
#endif
#ifdef __NR_chown
      KEVO_NR(chown)
#endif
#ifdef __NR_fchown
      KEVO_NR(fchown)
#endif
#ifdef __NR_lchown
      KEVO_NR(lchown)
#endif
#ifdef __NR_fchownat
      KEVO_NR(fchownat)
#endif
#ifdef __NR_truncate
      KEVO_NR(truncate)
#endif
#ifdef __NR_mknod
      KEVO_NR(mknod)
#endif
#ifdef __NR_mknodat
      KEVO_NR(mknodat)
#endif
#ifdef __NR_utime
      KEVO_NR(utime)
#endif
#ifdef __NR_utimes
      KEVO_NR(utimes)
#endif
#ifdef __NR_utimensat
      KEVO_NR(utimensat)
#endif
#ifdef __NR_futimesat
      KEVO_NR(futimesat)
#endif
#ifdef __NR_setxattr
      KEVO_NR(setxattr)
#endif
#ifdef __NR_lsetxattr
      KEVO_NR(lsetxattr)
#endif
#ifdef __NR_fsetxattr
      KEVO_NR(fsetxattr)
#endif
#ifdef __NR_removexattr
      KEVO_NR(removexattr)
#endif
#ifdef __NR_lremovexattr
      KEVO_NR(lremovexattr)
#endif
#ifdef __NR_fremovexattr
      KEVO_NR(fremovexattr)
#endif
#ifdef __NR_open_by_handle_at
      KEVO_NR(open_by_handle_at)
#endif
#ifdef __NR_ptrace
      KEVO_NR(ptrace)
#endif
#ifdef __NR_process_vm_readv
      KEVO_NR(process_vm_readv)
#endif
#ifdef __NR_process_vm_writev
      KEVO_NR(process_vm_writev)
#endif
#ifdef __NR_pidfd_send_signal
      KEVO_NR(pidfd_send_signal)
#endif
#ifdef __NR_tkill
      KEVO_NR(tkill)
#endif
#ifdef __NR_io_uring_setup
      KEVO_NR(io_uring_setup)   // io_uring operations bypass seccomp
#endif
#ifdef __NR_mount
      KEVO_NR(mount)
#endif
#ifdef __NR_umount2
      KEVO_NR(umount2)
#endif
#ifdef __NR_pivot_root
      KEVO_NR(pivot_root)
#endif
#ifdef __NR_chroot
      KEVO_NR(chroot)
#endif
#ifdef __NR_unshare
      KEVO_NR(unshare)
#endif
#ifdef __NR_setns
      KEVO_NR(setns)
#endif
#ifdef __NR_reboot
      KEVO_NR(reboot)
#endif
#ifdef __NR_kexec_load
      KEVO_NR(kexec_load)
#endif
#ifdef __NR_kexec_file_load
      KEVO_NR(kexec_file_load)
#endif
#ifdef __NR_init_module
      KEVO_NR(init_module)
#endif
#ifdef __NR_finit_module
      KEVO_NR(finit_module)
#endif
#ifdef __NR_delete_module
      KEVO_NR(delete_module)
#endif
#ifdef __NR_swapon
      KEVO_NR(swapon)
#endif
#ifdef __NR_swapoff
      KEVO_NR(swapoff)
#endif
#ifdef __NR_bpf
      KEVO_NR(bpf)
#endif
#ifdef __NR_userfaultfd
      KEVO_NR(userfaultfd)
#endif
#ifdef __NR_keyctl
      KEVO_NR(keyctl)
#endif
#ifdef __NR_add_key
      KEVO_NR(add_key)
#endif
#ifdef __NR_request_key
      KEVO_NR(request_key)
#endif
#undef KEVO_NR
  };
  return list;
}

// Names of the calls with argument checks (for messages).
const std::vector<Named>& checked() {
  static const std::vector<Named> list = {
#ifdef __NR_open
      {__NR_open, "open (for writing or creating)"},
#endif
      {__NR_openat, "openat (for writing or creating)"},
      {__NR_clone, "clone (a process, not a thread)"},
      {__NR_kill, "kill (another process)"},
      {__NR_tgkill, "tgkill (another process)"},
  };
  return list;
}

// CPU policy: opening for writing, creating or truncating is a violation.
constexpr std::uint32_t kWriteFlags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
// CUDA policy: the driver opens device and /proc files read-write after its
// context exists, and seccomp cannot see paths; so only the flags that
// create a file or destroy its contents on open are violations. (O_TMPFILE
// makes an unnamed file: creation too.)
#ifdef __O_TMPFILE
constexpr std::uint32_t kTmpfileFlag = __O_TMPFILE;
#else
constexpr std::uint32_t kTmpfileFlag = 0;
#endif
constexpr std::uint32_t kCreateFlags = O_CREAT | O_TRUNC | O_APPEND | kTmpfileFlag;

constexpr std::uint32_t arg_lo(int i) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * i);
#else
  return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * i + 4);
#endif
}

struct Prog {
  std::vector<sock_filter> ins;
  void stmt(std::uint16_t code, std::uint32_t k) { ins.push_back(BPF_STMT(code, k)); }
  void jump(std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
    ins.push_back(BPF_JUMP(code, k, jt, jf));
  }
  void load_nr() { stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)); }
  // if nr == n: return action
  void simple(long n, std::uint32_t action) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(n), 0, 1);
    stmt(BPF_RET | BPF_K, action);
  }
  // if nr == n: load arg i; if (arg & mask) return on_set else return on_clear
  void flags(long n, int arg, std::uint32_t mask, std::uint32_t on_set, std::uint32_t on_clear) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(n), 0, 4);
    stmt(BPF_LD | BPF_W | BPF_ABS, arg_lo(arg));
    jump(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1);
    stmt(BPF_RET | BPF_K, on_set);
    stmt(BPF_RET | BPF_K, on_clear);
  }
  // if nr == n: if (arg == value) return on_eq else return on_ne
  void equals(long n, int arg, std::uint32_t value, std::uint32_t on_eq, std::uint32_t on_ne) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(n), 0, 4);
    stmt(BPF_LD | BPF_W | BPF_ABS, arg_lo(arg));
    jump(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 1);
    stmt(BPF_RET | BPF_K, on_eq);
    stmt(BPF_RET | BPF_K, on_ne);
  }
};

// What the SIGSYS handler writes: static storage, filled before the filter.
char g_report[600];
std::size_t g_prefix_len = 0;
char g_suffix[256];
std::size_t g_suffix_len = 0;
int g_report_fd = -1;

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void on_sigsys(int, siginfo_t* si, void*) {
  // Async-signal-safe: formats into a static buffer and write()s it once.
  if (g_report_fd >= 0) {
    char* out = g_report + g_prefix_len;
    long nr = si ? si->si_syscall : -1;
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
  }
  ::_exit(kViolationExitCode);
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

void install_candidate_policy(Policy policy) {
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

  const std::uint32_t allow = SECCOMP_RET_ALLOW;
  const std::uint32_t trap = SECCOMP_RET_TRAP;
  const std::uint32_t kill = SECCOMP_RET_KILL_PROCESS;
  const std::uint32_t enosys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);
  const auto self = static_cast<std::uint32_t>(::getpid());

  Prog p;
  p.stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0);
  p.stmt(BPF_RET | BPF_K, kill);   // another ABI (i386 via int 0x80...)
  p.load_nr();
#if defined(__x86_64__)
  p.jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 0, 1);   // x32 syscalls
  p.stmt(BPF_RET | BPF_K, kill);
#endif
  for (const Named& n : trapped()) p.simple(n.nr, trap);
#ifdef __NR_clone3
  p.simple(__NR_clone3, enosys);   // its flags sit in memory: make glibc use clone
#endif
#ifdef __NR_openat2
  p.simple(__NR_openat2, enosys);  // likewise its open flags
#endif
  // The rules below load an argument only when nr matches, and then return
  // in every branch; a rule that does not match is skipped whole, so the
  // accumulator still holds nr for the next one.
  const std::uint32_t open_denied = policy == Policy::cuda ? kCreateFlags : kWriteFlags;
#ifdef __NR_open
  p.flags(__NR_open, 1, open_denied, trap, allow);
#endif
  p.flags(__NR_openat, 2, open_denied, trap, allow);
  p.flags(__NR_clone, 0, CLONE_THREAD, allow, trap);
  p.equals(__NR_kill, 0, self, allow, trap);
  p.equals(__NR_tgkill, 0, self, allow, trap);
  p.equals(__NR_rt_sigaction, 0, SIGSYS, kill, allow);
  p.stmt(BPF_RET | BPF_K, allow);

  sock_fprog prog;
  prog.len = static_cast<unsigned short>(p.ins.size());
  prog.filter = p.ins.data();
  check_errno(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "prctl(PR_SET_NO_NEW_PRIVS)");
  const std::string key = policy == Policy::cuda ? "backend.cuda.sandbox.seccomp" : "backend.cpu.sandbox.seccomp";
  // TSYNC puts the filter on every thread at once (the kernel also gives
  // them no_new_privs): threads that exist already, such as the CUDA
  // driver's, would otherwise run unfiltered. A positive result names a
  // thread that could not be synchronised.
  long rc = -1;
  errno = ENOSYS;
#ifdef __NR_seccomp
  rc = ::syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
#endif
  if (rc < 0 && errno == ENOSYS && policy == Policy::cpu) {
    // Kernels before 3.17: the calling thread only, which is all there is
    // in the CPU worker at this point.
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
  for (const Named& n : trapped())
    if (n.nr == nr) return n.name;
  for (const Named& n : checked())
    if (n.nr == nr) return n.name;
  return {};
}

}  // namespace kevo::sandbox
