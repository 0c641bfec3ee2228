// Computes the right answer, then tries to kill everything it can reach:
// every process of its user (kill(-1)), its process group and its parent.
// Expected: runtime_error (sandbox violation: kill is allowed only on the
// candidate's own process), and the engine goes on judging.
#include <signal.h>
#include <unistd.h>

#include <cstdint>

__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
  ::kill(-1, SIGKILL);
  ::kill(0, SIGKILL);
  ::kill(::getppid(), SIGKILL);
}
