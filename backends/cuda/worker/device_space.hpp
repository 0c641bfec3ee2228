// The CUDA worker's memory space for the judging protocol: every buffer of
// every trial lives in GPU memory, and the protocol's bulk work (input
// generation, NaN poisoning, copies, the input check, comparisons) runs as
// GPU kernels. Nothing crosses PCIe but a few hundred bytes of block
// results per comparison and the elements a verdict message quotes, so the
// host (cores, memory bandwidth, PCIe) stops being what limits how many
// candidates a GPU judges per minute. Documented in docs/cuda.md.
#pragma once

#include "space.hpp"

#include <cstdint>
#include <string>

namespace kevo::cuda::worker {

namespace w = kevo::native::judge;
using Entry = void (*)(void* const*);

// The process-wide device space (the current device). Its kernels run
// inside the GPU's shared slot, like correctness calls: never during a
// timing.
w::Space& device_space();
// The space's fill_inputs into `a` and the same contents into `b` (two
// argument sets of case `c`: the candidate's and the reference's of a
// timed call), each value drawn once and stored twice.
void fill_inputs_twice(const Task& task, const w::Case& c, w::ArgSet& a, w::ArgSet& b, std::uint64_t seed,
                       const std::string& tag);
// Loads the device space's kernels (lazy loading would load them at their
// first launch, inside the GPU's slot). Call once the context exists,
// before taking the slot; throws std::runtime_error on a CUDA error.
void load_device_space_kernels();

// Grows the device's memory pool, once, to at least what the protocol
// holds at its peak on the task's largest shape (7 sets of the shape's
// buffers: a bound with room to spare since the timing draws both sides'
// inputs in place, fill_inputs_twice, and keeps no staging set), and frees
// it back into the pool. Later
// allocations are carved from that reservoir without asking the driver, so
// they may run inside the GPU's slot (backend.cuda.slot_hold "phase"): the
// driver serialises such calls with other workers' context creation, and
// a holder stalled there would stall a timer waiting at the gate.
// `extra_bytes`: one more block (the timing's L2 flush buffer). Throws
// std::runtime_error on a CUDA error.
void reserve_protocol_memory(const Task& task, std::size_t extra_bytes);
// A device buffer from the same pool (freed back into it).
w::Buffer allocate_device(std::size_t bytes);
// Bytes the pool holds from the driver now (0 where it cannot be read):
// the worker reports how much it grew after the reservation.
std::size_t pool_reserved_bytes();

// Calls `entry` on the device arguments of `a` inside the shared slot,
// checking the CUDA error state after the launch and after a device-wide
// synchronize (work on any stream counts). A CUDA error throws
// std::runtime_error.
void device_call(Entry entry, w::ArgSet& a);

// A call's end where the caller made it (a kernel host): the launch's error
// state, then a device-wide synchronize; "" or the CUDA error's text.
std::string finish_device_call();
// An empty kernel and the same wait: the shortest call (calibration).
std::string empty_round_trip();
// Endpoint::prime()'s hook: an empty kernel on the host's prime stream and
// that stream's synchronize (not the device's: docs/cuda.md#timing).
std::string prime_round_trip();

}  // namespace kevo::cuda::worker
