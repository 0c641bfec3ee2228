// Library baseline (docs/tasks.md#baselines): cub::DeviceReduce::Sum, the
// CUDA core library's tuned single-pass reduction, in fp32 (a tree order,
// within the task's 1e-5 relative tolerance).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>

namespace {

void require(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "reduce_sum cub baseline: %s failed: %s\n", what, cudaGetErrorString(e));
  std::abort();
}

// The temporary storage cub asks for, kept across calls (as a library
// user would): only its size depends on N.
void* scratch(size_t bytes) {
  static void* buf = nullptr;
  static size_t capacity = 0;
  if (bytes > capacity) {
    if (buf) require(cudaFree(buf), "cudaFree");
    buf = nullptr;
    require(cudaMalloc(&buf, bytes), "cudaMalloc");
    capacity = bytes;
  }
  return buf;
}

}  // namespace

extern "C" void reduce_sum(const float* x, float* out, int32_t N) {
  size_t bytes = 0;
  require(cub::DeviceReduce::Sum(nullptr, bytes, x, out, N), "cub::DeviceReduce::Sum (size query)");
  void* tmp = scratch(bytes > 0 ? bytes : 1);
  require(cub::DeviceReduce::Sum(tmp, bytes, x, out, N), "cub::DeviceReduce::Sum");
}
