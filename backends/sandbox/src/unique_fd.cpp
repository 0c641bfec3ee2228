#include "kevo/sandbox/unique_fd.hpp"

#include "kevo/core/error.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace kevo::sandbox {

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);   // errors from close are not actionable here
  fd_ = fd;
}

Pipe make_pipe() {
  int fds[2];
  check_errno(::pipe2(fds, O_CLOEXEC) == 0, "pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void set_nonblocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL);
  check_errno(flags >= 0, "fcntl(F_GETFL)");
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  check_errno(::fcntl(fd, F_SETFL, flags) == 0, "fcntl(F_SETFL)");
}

}  // namespace kevo::sandbox
