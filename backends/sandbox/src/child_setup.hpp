// Child-side steps shared by the runner and the spawner, between fork and
// exec: only async-signal-safe calls (the parent may have had threads).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kevo::sandbox::detail {

// Default dispositions and an empty mask: the parent may ignore SIGPIPE or
// block signals, and both survive execve.
inline void default_signals() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    ::sigaction(s, &dfl, nullptr);   // fails harmlessly for reserved signals
  }
}

// Closes descriptors [lo, hi_excl): close_range where the kernel has it,
// else one by one below close_max (the RLIMIT_NOFILE the parent read).
inline void close_from(int lo, int hi_excl, long close_max) {
  if (lo >= hi_excl) return;
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(lo), static_cast<unsigned>(hi_excl - 1), 0u) == 0) return;
#endif
  const long top = std::min<long>(hi_excl, close_max);
  for (long fd = lo; fd < top; ++fd) ::close(static_cast<int>(fd));
}

// Reports errno on the error pipe (which the parent turns into a Failure)
// and exits.
[[noreturn]] inline void child_fail(int errfd, int err) {
  ssize_t r = ::write(errfd, &err, sizeof err);
  (void)r;
  ::_exit(127);
}

// Puts src[i] on descriptor dst[i] for each of n (dst >= 3, below hi_base),
// closes every other descriptor above 2, and returns the error pipe moved
// above them all (close-on-exec). Sources and the error pipe are first
// moved above hi_base, so that no dup2 onto a target clobbers a source.
inline int remap_fds(const int* src, const int* dst, int n, int hi_base, int err_write, long close_max) {
  int errfd = ::fcntl(err_write, F_DUPFD_CLOEXEC, hi_base);
  if (errfd < 0) child_fail(err_write, errno);
  int tmp[8];
  for (int i = 0; i < n; ++i) {
    tmp[i] = ::fcntl(src[i], F_DUPFD, hi_base);
    if (tmp[i] < 0) child_fail(errfd, errno);
  }
  for (int i = 0; i < n; ++i)
    if (::dup2(tmp[i], dst[i]) < 0) child_fail(errfd, errno);
  for (int fd = 3; fd < hi_base; ++fd) {
    bool keep = false;
    for (int i = 0; i < n; ++i) keep = keep || dst[i] == fd;
    if (!keep) ::close(fd);
  }
  close_from(hi_base, errfd, close_max);
  close_from(errfd + 1, 0x7fffffff, close_max);
  return errfd;
}

}  // namespace kevo::sandbox::detail
