// Child-side steps shared by the runner and the spawner, between fork and
// exec: only async-signal-safe calls (the parent may have had threads).
#pragma once

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
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

}  // namespace kevo::sandbox::detail
