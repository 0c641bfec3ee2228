// Asks for 300 KB of dynamic shared memory per block (expected:
// runtime_error: the launch fails and the error is checked).
#include <cstdint>
__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  extern __shared__ float s[];
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.0f;
  if (i < n) out[i] = a * s[threadIdx.x] + y[i];
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  k<<<(N + 255) / 256, 256, 300 * 1024>>>(x, y, out, a, N);
}
