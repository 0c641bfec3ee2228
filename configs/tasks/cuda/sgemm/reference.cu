// Reference: one thread per output, fp32 multiply-add in K order.
#include <cstdint>

__global__ void sgemm_ref_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= M || j >= N) return;
  float s = 0.0f;
  for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
  C[(long long)i * N + j] = s;
}

extern "C" void sgemm(const float* A, const float* B, float* C, int32_t M, int32_t N, int32_t K) {
  const dim3 block(32, 8);
  const dim3 grid((N + 31) / 32, (M + 7) / 8);
  sgemm_ref_kernel<<<grid, block>>>(A, B, C, M, N, K);
}
