// Correct for its first 100 calls (every correctness trial, drawn shapes
// included: axpy's 8 shapes make 32 calls), then launches an empty kernel:
// on a judge that checks only some timed outputs its timings would be a
// huge speedup (or fall under the roofline floor). Expected: wrong_answer
// at the first timed call after the 100th (every timed output is checked).
#include <cstdint>
__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
__global__ void nothing() {}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static int calls = 0;
  if (++calls > 100) {
    nothing<<<1, 1>>>();
    return;
  }
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
}
