// A correct axpy that spells N out in compute-sanitizer's report: at every
// size but the visible one it launches N one-thread blocks, and block N - 1
// writes past the end of a scratch allocation of its own (in its padding:
// no fault, right outputs). memcheck reports "in block (N-1,0,0)", and the
// sanitizer child runs a trial of every shape, the hidden ones among them.
// Expected under memcheck: runtime_error, its feedback (the next prompt)
// redacted as a failure at a hidden shape; the lineage's message keeps the
// report.
#include <cstdint>
__global__ void axpy_k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
__global__ void spell(float* scratch, int n) {
  if ((int)blockIdx.x == n - 1) scratch[70] = 1.0f;   // 280 bytes into a 256-byte block
}
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  if (N != 16777216) {
    float* scratch = nullptr;
    cudaMalloc(&scratch, 256);
    spell<<<N, 1>>>(scratch, N);
    cudaDeviceSynchronize();
    cudaFree(scratch);
  }
  axpy_k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
  cudaDeviceSynchronize();
}
