// A correct axpy with a static constructor that creates a file: it runs
// inside dlopen, so the policy must be in place before the candidate is
// loaded (the test puts a path in place of KEVO_ESCAPE_PATH). Expected with
// backend.cuda.sandbox.seccomp on: runtime_error "sandbox violation", and no
// file.
#include <cstdint>
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void on_load() {
  const int fd = open("KEVO_ESCAPE_PATH", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) close(fd);
}
__global__ void axpy_k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  axpy_k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
}
