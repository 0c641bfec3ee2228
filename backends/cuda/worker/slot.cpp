#include "slot.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace kevo::cuda::worker {

namespace {

using Clock = std::chrono::steady_clock;

int flock_retry(int fd, int op) {
  int rc;
  while ((rc = ::flock(fd, op)) != 0 && errno == EINTR) {
  }
  return rc;
}

}  // namespace

GpuSlot::~GpuSlot() {
  for (int fd : {gate_, lock_, queue_})
    if (fd >= 0) ::close(fd);
}

std::vector<int> GpuSlot::descriptors() const {
  std::vector<int> fds;
  for (const int fd : {gate_, lock_, queue_})
    if (fd >= 0) fds.push_back(fd);
  return fds;
}

void GpuSlot::open(const std::string& dir, const std::string& pci_bus_id) {
  if (dir.empty()) return;
  std::string id = pci_bus_id;
  for (char& ch : id)
    if (ch == ':' || ch == '/' || ch == '.') ch = '-';
  const std::string base = dir + "/kevo-gpu-" + id;
  for (auto [fd, path] : {std::pair<int*, std::string>{&gate_, base + ".gate"}, {&lock_, base + ".lock"},
                          {&queue_, base + ".queue"}}) {
    // World-writable, so that runs of several users on one node share it.
    *fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (*fd < 0)
      throw std::runtime_error("cannot open the GPU timing-slot file " + path + ": " + std::strerror(errno) +
                               " (backend.cuda.lock_dir)");
    (void)::fchmod(*fd, 0666);
  }
}

void GpuSlot::lock_shared() {
  if (lock_ < 0 || depth_++ > 0) return;
  const auto t0 = Clock::now();
  // Through the gate, so that a waiting timer is not starved; in the queue
  // meanwhile, so that the holder knows someone waits (others_waiting).
  if (flock_retry(queue_, LOCK_SH) != 0 || flock_retry(gate_, LOCK_EX) != 0 || flock_retry(lock_, LOCK_SH) != 0 ||
      flock_retry(gate_, LOCK_UN) != 0 || flock_retry(queue_, LOCK_UN) != 0)
    throw std::runtime_error(std::string("GPU timing slot: flock failed: ") + std::strerror(errno));
  since_ = Clock::now();
  shared_wait_ += std::chrono::duration<double>(since_ - t0).count();
  shared_waits_.emplace_back(monotonic_seconds(t0), monotonic_seconds(since_));
}

void GpuSlot::lock_exclusive() {
  if (lock_ < 0) return;
  if (depth_ > 0) throw std::logic_error("GPU timing slot: exclusive requested while held");
  depth_ = 1;
  const auto t0 = Clock::now();
  if (flock_retry(queue_, LOCK_SH) != 0 || flock_retry(gate_, LOCK_EX) != 0 || flock_retry(lock_, LOCK_EX) != 0 ||
      flock_retry(queue_, LOCK_UN) != 0)
    throw std::runtime_error(std::string("GPU timing slot: flock failed: ") + std::strerror(errno));
  exclusive_ = true;
  since_ = Clock::now();
  exclusive_wait_ += std::chrono::duration<double>(since_ - t0).count();
  exclusive_waits_.emplace_back(monotonic_seconds(t0), monotonic_seconds(since_));
}

void GpuSlot::unlock() {
  if (lock_ < 0 || depth_ == 0 || --depth_ > 0) return;
  const auto now = Clock::now();
  if (exclusive_) {
    intervals_.emplace_back(monotonic_seconds(since_), monotonic_seconds(now));
    exclusive_ = false;
    (void)flock_retry(lock_, LOCK_UN);
    (void)flock_retry(gate_, LOCK_UN);
  } else {
    shared_intervals_.emplace_back(monotonic_seconds(since_), monotonic_seconds(now));
    (void)flock_retry(lock_, LOCK_UN);
  }
}

double GpuSlot::exclusive_seconds() const {
  double held = 0.0;
  for (const auto& [from, to] : intervals_) held += to - from;
  return held;
}

bool GpuSlot::others_waiting() const {
  if (queue_ < 0) return false;
  // Waiters hold the queue shared: an exclusive try fails while any does.
  if (::flock(queue_, LOCK_EX | LOCK_NB) != 0) return errno == EWOULDBLOCK;
  (void)flock_retry(queue_, LOCK_UN);
  return false;
}

GpuSlot& gpu_slot() {
  static GpuSlot slot;
  return slot;
}

}  // namespace kevo::cuda::worker
