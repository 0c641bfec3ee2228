// A correct axpy that also writes one element past the end of a 256-byte
// scratch allocation of its own. The write lands in the allocation's
// padding: no fault, right outputs. Only compute-sanitizer memcheck sees it
// (expected: correct without the sanitizer stage, runtime_error with it).
#include <cstdint>
__global__ void axpy_k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
__global__ void oob(float* scratch) { scratch[70] = 1.0f; }   // 280 bytes into a 256-byte block
extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  float* scratch = nullptr;
  cudaMalloc(&scratch, 256);
  oob<<<1, 1>>>(scratch);
  axpy_k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
  cudaDeviceSynchronize();
  cudaFree(scratch);
}
