// The CUDA worker's memory space for the judging protocol: every buffer of
// every trial lives in GPU memory, and the protocol's bulk work (input
// generation, NaN poisoning, copies, the input check, comparisons) runs as
// GPU kernels. Nothing crosses PCIe but a few hundred bytes of block
// results per comparison and the elements a verdict message quotes, so the
// host (cores, memory bandwidth, PCIe) stops being what limits how many
// candidates a GPU judges per minute. Documented in docs/cuda.md.
#pragma once

#include "judge.hpp"

namespace kevo::cuda::worker {

namespace w = kevo::cpu::worker;

// The process-wide device space (the current device). Its kernels run
// inside the GPU's shared slot, like correctness calls: never during a
// timing.
w::Space& device_space();
// Loads the device space's kernels (lazy loading would load them at their
// first launch, inside the GPU's slot). Call once the context exists,
// before taking the slot; throws std::runtime_error on a CUDA error.
void load_device_space_kernels();

// Calls `entry` on the device arguments of `a` inside the shared slot,
// checking the CUDA error state after the launch and after a device-wide
// synchronize (work on any stream counts). A CUDA error throws
// std::runtime_error.
void device_call(w::Entry entry, w::ArgSet& a);

}  // namespace kevo::cuda::worker
