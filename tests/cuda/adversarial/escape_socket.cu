// A correct axpy whose host code also opens a network socket. Expected with
// backend.cuda.sandbox.seccomp on: runtime_error "sandbox violation"
// (socket).
#include <cstdint>
#include <sys/socket.h>
#include <unistd.h>
__global__ void axpy_k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s >= 0) close(s);
  axpy_k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
}
