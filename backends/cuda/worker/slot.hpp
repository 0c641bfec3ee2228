// The timing slot of one GPU: a reader-writer lock on files, shared by
// every kevo worker of the host. Plain POSIX (no CUDA), so that it is
// tested without a GPU. Documented in docs/cuda.md (GPU scheduling).
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace kevo::cuda::worker {

// Seconds of the host's monotonic clock (CLOCK_MONOTONIC: one clock for
// every process of the host), the time base of the slot's intervals and of
// the worker's timeline.
inline double monotonic_seconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// The timing slot of one GPU, shared by every kevo worker on the host (other
// workers of this rank, other ranks, other runs): a reader-writer lock on
// files named after the GPU's PCI bus id. GPU work for correctness holds it
// shared; timing and profiling hold it exclusive, so no kevo work runs on
// the GPU while a candidate is timed. A gate file taken before the lock
// keeps a waiting timer from starving behind a stream of correctness calls;
// a queue file that every waiter holds shared tells a holder whether anyone
// waits.
// Without open() (dir empty) every operation is a no-op.
class GpuSlot {
 public:
  GpuSlot() = default;
  ~GpuSlot();
  GpuSlot(const GpuSlot&) = delete;
  GpuSlot& operator=(const GpuSlot&) = delete;
  // Throws std::runtime_error naming the file when it cannot be opened.
  void open(const std::string& dir, const std::string& pci_bus_id);
  void lock_shared();
  void lock_exclusive();
  void unlock();
  // The descriptors of its files (none before open()): the only ones a
  // process under the CUDA policy that holds the slot may flock.
  std::vector<int> descriptors() const;
  // Whether another holder (of this GPU's slot, any process) is waiting for
  // it, shared or exclusive: a timer that has met its budget goes on only
  // while none is (backend.cuda.fill_idle_seconds). False when not open.
  bool others_waiting() const;
  // Seconds held exclusively so far, and spent waiting to get it (shared
  // or exclusive): where a worker's time went (its result's "phases").
  double exclusive_seconds() const;
  double shared_wait_seconds() const { return shared_wait_; }
  double exclusive_wait_seconds() const { return exclusive_wait_; }
  // Each exclusive hold as [start, end] in seconds of the host's monotonic
  // clock (CLOCK_MONOTONIC: one clock for every process of the host), so
  // that a benchmark can lay the holds of all workers on one time line.
  const std::vector<std::pair<double, double>>& exclusive_intervals() const { return intervals_; }
  // An exclusive hold that a child process of this worker made (the
  // profiler's), counted as this worker's.
  void add_exclusive_interval(double from, double to) { intervals_.emplace_back(from, to); }
  const std::vector<std::pair<double, double>>& shared_intervals() const { return shared_intervals_; }
  // The waits, the same way: [start, end] of each wait for the slot.
  const std::vector<std::pair<double, double>>& exclusive_wait_intervals() const { return exclusive_waits_; }
  const std::vector<std::pair<double, double>>& shared_wait_intervals() const { return shared_waits_; }

 private:
  int gate_ = -1, lock_ = -1, queue_ = -1;
  int depth_ = 0;
  bool exclusive_ = false;
  double shared_wait_ = 0.0, exclusive_wait_ = 0.0;
  std::vector<std::pair<double, double>> intervals_, shared_intervals_, exclusive_waits_, shared_waits_;
  std::chrono::steady_clock::time_point since_;
};

// The process-wide slot (opened by main once the device is known).
GpuSlot& gpu_slot();

// RAII holders.
struct SharedSlot {
  SharedSlot() { gpu_slot().lock_shared(); }
  ~SharedSlot() { gpu_slot().unlock(); }
  SharedSlot(const SharedSlot&) = delete;
  SharedSlot& operator=(const SharedSlot&) = delete;
};
struct ExclusiveSlot {
  ExclusiveSlot() { gpu_slot().lock_exclusive(); }
  ~ExclusiveSlot() { gpu_slot().unlock(); }
  ExclusiveSlot(const ExclusiveSlot&) = delete;
  ExclusiveSlot& operator=(const ExclusiveSlot&) = delete;
};

}  // namespace kevo::cuda::worker
