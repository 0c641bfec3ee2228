// The torch backend (docs/torch.md): PyTorch programs as tasks (KernelBench's
// form: Model, get_inputs, get_init_inputs), ModelNew candidates whose
// kernels are CUDA through load_inline or Triton, judged by kevo's own torch
// judge (backends/torch/python) through the command backend's machinery:
// the build stage is the compile stage (kevo_torch_build.py, cached), the
// judge a persistent evaluator per slot (kevo_torch_eval.py --serve), with
// every answer checked and the task's conformance (self check, null
// candidates, probe, seed) proved in prepare().
#pragma once

#include "kevo/command/command_backend.hpp"
#include "kevo/core/backend.hpp"
#include "kevo/core/strict_json.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kevo::torchb {

// backend.torch (docs/torch.md#config)
struct TorchOptions {
  std::string python = "python3";   // an interpreter that imports torch (a path, or a name in PATH)
  std::string device = "cuda";      // "cuda" or "cpu"
  std::string arch = "9.0";         // nvcc's target for load_inline builds ("9.0", "9.0a", "8.0")
  std::string scripts;              // folder of kevo_torch_*.py; "" = next to the kevo executable
  std::string pyhost;               // libkevo_pyhost.so; "" = next to the kevo executable
  int build_jobs = 0;               // 0: cores
  double build_wall_seconds = 900;
  bool build_cache = true;
  bool build_pch = true;            // precompiled <torch/extension.h> in the object cache
  double run_wall_seconds = 600;    // one judgement
  int max_requests = 50;            // a judge process serves this many, then a fresh one starts
  std::string lock_dir;
  bool seccomp = true;              // the system-call policy in the candidate's host
  bool namespaces = true;           // its namespaces and private root
  int trials = 3;
  command::Timing timing;
  std::int64_t output_kb = 64;
  double peak_gflops = 0, peak_gbps = 0, floor_fraction = 0.9;
  bool baselines = true;            // torch.compile (and eager) timed when a run starts
  bool baselines_compile = true;
  double baselines_wall_seconds = 900;
  // ncu on a correct candidate's kernels for the analyst (docs/torch.md#profiler):
  // every n-th timed candidate (0: never) and where an operator asks; the
  // profiler found in PATH or CUDA's bin at config time; one profile's limit.
  int profile_every = 0;
  bool profile_on_request = true;
  std::string profiler_path = "ncu";
  double profile_wall_seconds = 120;
  std::string cache_dir, scratch_dir;
  std::string config_file, pointer;
};

// Reads "backend": {"torch": {...}} strictly, and checks that the
// interpreter imports torch (an InputError naming /backend/torch/python
// otherwise).
TorchOptions parse_torch_options(StrictObject& obj);
nlohmann::json to_json(const TorchOptions&);

// The command backend's options that run kevo's torch judge (exposed for
// tests).
command::CommandOptions command_options(const TorchOptions&);
std::unique_ptr<Backend> make_torch_backend(const TorchOptions&);

// torch eager and torch.compile of every torch task, timed as the judge
// times candidates (RUN_DIR/baselines.json, docs/torch.md#baselines).
nlohmann::json measure_baselines(const TorchOptions&, const std::vector<std::shared_ptr<const Task>>& tasks,
                                 std::uint64_t seed, std::FILE* log);

// Where the scripts and the sandbox library are looked for.
std::filesystem::path scripts_dir(const TorchOptions&);
std::filesystem::path pyhost_library(const TorchOptions&);

}  // namespace kevo::torchb
