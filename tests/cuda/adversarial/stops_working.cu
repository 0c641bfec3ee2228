// Correct for its first 20 calls (the correctness trials), then launches an
// empty kernel: its timings fall under the roofline floor (expected:
// runtime_error naming the floor).
#include <cstdint>
__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
__global__ void nothing() {}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static int calls = 0;
  if (++calls > 20) {
    nothing<<<1, 1>>>();
    return;
  }
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
}
