// The candidate's argument buffers in device memory that the judge exports
// to the candidate's kernel host, and nothing else of the judge's: one
// allocation made with the driver's virtual memory API, shared as a POSIX
// file descriptor (a capability: the host can map this allocation and no
// other; the reference's outputs and the protocol's copies stay in the
// judge's own context). Documented in docs/cuda.md#verdicts.
#pragma once

#include "endpoint.hpp"

#include <cstddef>
#include <string>

namespace kevo::cuda::worker {

namespace w = kevo::native::judge;

// The judge's side: allocates at least `bytes` on the current device,
// maps it into this context and exports it. Throws std::runtime_error on a
// CUDA error.
class ExportedArena {
 public:
  explicit ExportedArena(std::size_t bytes);
  ~ExportedArena();
  ExportedArena(const ExportedArena&) = delete;
  ExportedArena& operator=(const ExportedArena&) = delete;
  const w::DeviceArena& arena() const { return arena_; }

 private:
  w::DeviceArena arena_;
  unsigned long long handle_ = 0;   // CUmemGenericAllocationHandle
  unsigned long long va_ = 0;       // CUdeviceptr
  std::size_t size_ = 0;
};

// The host's side: maps the allocation behind `fd` (`bytes` long, as the
// judge made it) into the current context, read-write; "" and `base`, or
// why not.
std::string import_arena(int fd, std::size_t bytes, char*& base);

}  // namespace kevo::cuda::worker
