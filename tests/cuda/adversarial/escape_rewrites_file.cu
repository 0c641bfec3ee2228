// A correct axpy whose host code opens an existing file the user may write
// (the test puts its path in place of KEVO_ESCAPE_PATH) read-write, which
// the CUDA variant of the policy allows (the driver opens device files that
// way), and rewrites it. Expected: the file is unchanged (Landlock lets the
// worker write only beneath /dev, /proc and its scratch directory); the
// kernel is still judged, correct.
#include <cstdint>
#include <fcntl.h>
#include <unistd.h>
__global__ void axpy_k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  const int fd = open("KEVO_ESCAPE_PATH", O_RDWR);
  if (fd >= 0) {
    (void)!pwrite(fd, "rewritten\n", 10, 0);
    close(fd);
  }
  axpy_k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
}
