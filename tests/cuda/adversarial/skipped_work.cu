// Computes only every other block of elements (expected: wrong_answer).
#include <cstdint>
__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (blockIdx.x % 2 == 0 && i < n) out[i] = a * x[i] + y[i];
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
}
