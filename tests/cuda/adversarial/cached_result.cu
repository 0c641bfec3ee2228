// Computes once per output buffer, then replays that result: keyed by the
// input pointer and size, it is right when the same call repeats (the
// correctness trials alternate shapes and use fresh inputs), and fast when
// timing calls it again and again. Expected: wrong_answer: the timed repeats
// change the input contents in place and the last timed output is checked.
#include <cstdint>
__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static const float* key = nullptr;
  static float* cache = nullptr;
  static int cached_n = -1;
  if (key == x && cached_n == N) {
    cudaMemcpy(out, cache, N * sizeof(float), cudaMemcpyDeviceToDevice);
    return;
  }
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
  cudaFree(cache);
  cudaMalloc(&cache, N * sizeof(float));
  cudaMemcpy(cache, out, N * sizeof(float), cudaMemcpyDeviceToDevice);
  key = x;
  cached_n = N;
}
