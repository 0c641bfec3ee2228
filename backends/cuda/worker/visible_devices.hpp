// Which GPU a CUDA worker process sees. Plain POSIX (no CUDA), so that it is
// tested without a GPU. Documented in docs/cuda.md (device binding).
#pragma once

#include <string>
#include <vector>

namespace kevo::cuda::worker {

// The entries of a CUDA_VISIBLE_DEVICES value ("0,1", "GPU-ab12, GPU-cd34"):
// comma-separated, blanks dropped, empty entries skipped.
std::vector<std::string> visible_device_list(const std::string& value);

// A worker judges on one GPU, so before its first CUDA call it makes only
// that GPU visible to itself and its tool children: the driver then sets
// up one device instead of every GPU of the host. `device` is an ordinal of
// CUDA_VISIBLE_DEVICES when that is set (Slurm's, the islands' binding),
// else of the driver's enumeration (which CUDA_VISIBLE_DEVICES indices
// follow too). Sets CUDA_VISIBLE_DEVICES to that one entry and
// KEVO_DEVICE_INDEX to 0, and returns 0, the ordinal to open; returns
// `device` and changes nothing when it is not in the list (opening it then
// fails with the reason).
int narrow_visible_devices(int device);

}  // namespace kevo::cuda::worker
