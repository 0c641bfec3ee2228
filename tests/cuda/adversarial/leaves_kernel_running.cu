// Computes the right answer, and leaves a thread behind that keeps putting
// long spinning kernels on the GPU, so that some still run when its call
// has answered and its process is stopped: while the reference is timed
// next, the GPU time-slices between them and the reference looks slower.
// Expected: correct, with a speedup no better than the honest kernel's:
// after the candidate's process is gone the reference is timed alone, and
// its time alone is used where the two differ.
#include <cuda_runtime.h>

#include <cstdint>
#include <thread>

__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static bool started = false;
  if (!started) {
    started = true;
    std::thread([] {
      cudaStream_t s;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      for (;;) {
        spin<<<1, 1, 0, s>>>(2000000);   // about 1 ms
        cudaStreamSynchronize(s);
      }
    }).detach();
  }
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
}
