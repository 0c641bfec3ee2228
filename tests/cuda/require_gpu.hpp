// REQUIRE_GPU(): skips a GPU test (label gpu) with the reason when this
// machine has no usable CUDA device, so that CI without a GPU prints why.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

namespace kevo::test {

inline std::string no_gpu_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device visible";
  return {};
}

}  // namespace kevo::test

#define REQUIRE_GPU()                                          \
  do {                                                         \
    const std::string why = ::kevo::test::no_gpu_reason();     \
    if (!why.empty()) GTEST_SKIP() << why;                     \
  } while (0)
