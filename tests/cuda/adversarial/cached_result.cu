// Computes once per output buffer, then replays that result: keyed by the
// input pointer and size, it is right when the same call repeats (the
// correctness trials alternate shapes and use fresh inputs), and served
// while timing calls it again and again. The replay reads as many bytes as
// the real kernel (x, y and the cache), so its time stays above the
// roofline floor and only the output checks can catch it. Expected:
// wrong_answer: the timed repeats change the input contents in place and
// the last timed output is checked.
#include <cstdint>
__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
__global__ void replay(const float* x, const float* y, const float* cache, float* out, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  // x and y are read (the compiler cannot drop the loads) but never
  // chosen: random inputs do not hit these values.
  if (i < n) out[i] = (x[i] == 12345.5f && y[i] == -6789.25f) ? x[i] : cache[i];
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static const float* key = nullptr;
  static float* cache = nullptr;
  static int cached_n = -1;
  if (key == x && cached_n == N) {
    replay<<<(N + 255) / 256, 256>>>(x, y, cache, out, N);
    return;
  }
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
  cudaFree(cache);
  cudaMalloc(&cache, N * sizeof(float));
  cudaMemcpy(cache, out, N * sizeof(float), cudaMemcpyDeviceToDevice);
  key = x;
  cached_n = N;
}
