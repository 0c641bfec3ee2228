// Library baselines of CUDA tasks (docs/cuda.md#library-baselines): for every
// task whose manifest names a "torch" expression, torch eager and
// torch.compile are timed on the GPU once when a run starts, by
// kevo_torch_baselines.py in a sandboxed subprocess (own process group,
// wall-clock limit), with the worker's method (L2 flush, CUDA events, median
// and IQR over adaptive repeats, TF32 off) and checked against the task's
// reference with its tolerance. A machine without torch gets a note, not an
// error: baselines are context for the report, never part of a verdict.
#pragma once

#include "kevo/core/strict_json.hpp"
#include "kevo/core/task.hpp"
#include "kevo/cuda/cuda_backend.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kevo::cuda {

// backend.cuda.baselines
struct BaselineOptions {
  bool enabled = true;
  std::string python = "python3";   // the interpreter that has torch (a path, or a name looked up in PATH)
  std::string script;               // "" = kevo_torch_baselines.py next to the kevo executable
  bool compile = true;              // torch.compile as well as eager (costs tens of seconds per task)
  double wall_seconds = 900.0;      // per task, compile included; the process group is killed past it
};

// obj: the "baselines" object of backend.cuda, or nullptr for the defaults.
BaselineOptions parse_baseline_options(StrictObject* obj);
nlohmann::json to_json(const BaselineOptions&);

// Everything the script needs besides the task: the options, and the
// backend's nvcc, architecture, device and timing.
struct BaselineSetup {
  BaselineOptions options;
  std::string nvcc;
  std::vector<std::string> nvcc_flags;   // the backend's flags plus -arch
  int device = 0;
  cpu::CpuTiming timing;
};
BaselineSetup baseline_setup(BaselineOptions options, const CudaOptions& cuda);

// The script's request for one task (its visible shapes resolved: extents
// and scalar values), or null when the manifest names no torch baseline.
nlohmann::json baseline_request(const Task& task, const BaselineSetup& setup, std::uint64_t seed);

// kevo_torch_baselines.py next to the running executable.
std::filesystem::path default_baseline_script();

// Probes python + torch, then measures every task that names a baseline,
// one subprocess per task, printing a line per task to `log`. Returns the
// document kevo stores as RUN_DIR/baselines.json ("kevo-baselines/1"):
// {"measured": bool, "note": why not (absent torch, no GPU, ...), "torch",
// "device_name", "tasks": {name: the script's result}}. Expected failures
// (no python or torch, a failing or timed-out baseline) are values in it.
nlohmann::json measure_baselines(const BaselineSetup& setup, const std::vector<std::shared_ptr<const Task>>& tasks,
                                 std::uint64_t seed, std::FILE* log);

}  // namespace kevo::cuda
