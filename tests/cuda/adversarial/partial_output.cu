// Right for sizes that are multiples of 256, leaves the tail unwritten
// (expected: wrong_answer on a hidden shape).
#include <cstdint>
__global__ void k(const float* x, const float* y, float* out, float a) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  out[i] = a * x[i] + y[i];
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  if (N / 256 > 0) k<<<N / 256, 256>>>(x, y, out, a);
}
