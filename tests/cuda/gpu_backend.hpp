// The CUDA backend as the GPU tests build it: the worker and tools of this
// build tree, no compile cache, a wall-clock limit per candidate.
#pragma once

#include "kevo/cuda/cuda_backend.hpp"

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace kevo::test {

inline cuda::CudaOptions gpu_test_options(double wall_seconds, const std::string& sanitizer = "",
                                          int profile_every = 0) {
  cuda::CudaOptions o;
  o.sanitizer = sanitizer;
  o.profile_every = profile_every;
  o.profile_unconfined = false;   // the default: the ncu child of a task with hidden shapes is confined
  o.sanitizer_path = KEVO_CUDA_BIN "/compute-sanitizer";
  o.profiler_path = KEVO_CUDA_BIN "/ncu";
  o.base.worker = KEVO_CUDA_WORKER;
  o.base.cache_dir = "";
  o.base.limits.wall_seconds = wall_seconds;
  return o;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace kevo::test
