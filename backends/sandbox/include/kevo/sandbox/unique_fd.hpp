// RAII owner of one file descriptor. Move-only; the destructor closes and
// never throws.
#pragma once

#include <utility>

namespace kevo::sandbox {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

// pipe2(O_CLOEXEC); throws Failure on error.
struct Pipe {
  UniqueFd read, write;
};
Pipe make_pipe();

// Sets or clears O_NONBLOCK; throws Failure on error.
void set_nonblocking(int fd, bool on = true);

}  // namespace kevo::sandbox
