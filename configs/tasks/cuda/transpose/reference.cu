// Reference: one thread per element, coalesced reads, strided writes.
#include <cstdint>

__global__ void transpose_ref_kernel(const float* A, float* B, int M, int N) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < M && j < N) B[(long long)j * M + i] = A[(long long)i * N + j];
}

extern "C" void transpose(const float* A, float* B, int32_t M, int32_t N) {
  const dim3 block(32, 8);
  const dim3 grid((N + 31) / 32, (M + 7) / 8);
  transpose_ref_kernel<<<grid, block>>>(A, B, M, N);
}
