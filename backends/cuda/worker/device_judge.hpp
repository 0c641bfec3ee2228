// The GPU half of kevo-cuda-worker: timing candidate against reference on
// inputs generated in GPU memory (device_space.hpp), with CUDA events, a
// device-wide synchronize, a host wall-clock cross-check, an L2 flush
// before every repeat and a roofline floor.
// Documented in docs/cuda.md.
#pragma once

#include "device_space.hpp"
#include "judge.hpp"
#include "profile.hpp"
#include "slot.hpp"

#include "kevo/core/task.hpp"
#include "kevo/core/verdict.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace kevo::cuda::worker {

namespace w = kevo::native::judge;

// "NVIDIA H200 0000:19:00.0 GPU-8f2c..." for the current device; its PCI
// bus id in `bus_id`.
std::string device_identity(std::string& bus_id);

struct GpuTiming {
  double peak_tflops = 67.0;
  double peak_tflops_bf16 = 989.0;   // dense bf16 tensor-core peak (tasks with bf16 inputs)
  double peak_gbps = 4800.0;
  double floor_fraction = 0.9;
  std::int64_t flush_bytes = 0;   // 0: 2 x the device's L2
  double fill_idle_seconds = 0.0; // more timing while no other worker waits for the GPU (backend.cuda)
  // backend.cuda.slot_hold "phase": the timing's preparation (inputs,
  // copies) and its final check each take the shared slot once, instead
  // of once per protocol step.
  bool phase_holds = false;
};

// Times candidate and reference on every visible shape (fresh inputs from
// `seed`) and fills the timing fields of `v`; a CUDA error or a time under
// the roofline floor settles `v` as runtime_error. Returns the per-shape
// timings.
nlohmann::json time_on_device(const Task& task, const w::Options& opt, std::uint64_t seed, const GpuTiming& g,
                              Entry cand, Entry ref, Verdict& v);

// 2 x L2 of the current device, at least 64 MiB.
std::int64_t default_gpu_flush_bytes();

}  // namespace kevo::cuda::worker
