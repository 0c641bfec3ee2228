// A correct axpy whose host code also starts a process. Expected with
// backend.cuda.sandbox.seccomp on: runtime_error "sandbox violation" (clone
// without CLONE_THREAD).
#include <cstdint>
#include <unistd.h>
__global__ void axpy_k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  const pid_t p = fork();
  if (p == 0) _exit(0);
  axpy_k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
}
