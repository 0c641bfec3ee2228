// Defines a correct kernel but returns without launching it (expected:
// wrong_answer: the outputs still hold the NaN poison).
#include <cstdint>
__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  if (N < 0) k<<<1, 1>>>(x, y, out, a, N);
}
