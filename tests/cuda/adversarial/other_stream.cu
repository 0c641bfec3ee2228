// Correct work, launched on a non-blocking stream and not waited for: the
// device-wide synchronize makes it count (expected: correct).
#include <cstdint>
__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static cudaStream_t s = nullptr;
  if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  k<<<(N + 255) / 256, 256, 0, s>>>(x, y, out, a, N);
}
