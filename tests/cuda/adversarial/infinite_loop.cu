// Never finishes: spins on a device flag nothing sets (an atomic read each
// turn, so the compiler cannot drop the loop). Expected: timeout; the
// worker's process group is killed.
#include <cstdint>
__device__ int kevo_stop_flag = 0;
__global__ void k(float* out, int n) {
  while (atomicAdd(&kevo_stop_flag, 0) == 0) __nanosleep(1000);
  out[0] = static_cast<float>(n);
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  k<<<1, 1>>>(out, N);
}
