// kevo:params begin
#define BM 32
#define BN 32
#define BK 8
#define TM 1
#define TN 1
// kevo:params end
// Block tiling: a block computes a BM x BN tile of C with (BM/TM) x (BN/TN)
// threads, each a TM x TN micro-tile in registers; A and B go through shared
// memory BK columns/rows at a time. Every load is bounds-checked (zero
// fill), so any M, N, K works.
#include <cstdint>

constexpr int kThreads = (BM / TM) * (BN / TN);

__global__ void __launch_bounds__(kThreads) sgemm_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                                         float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[BK][BM];   // transposed: As[k][m]
  __shared__ float Bs[BK][BN];
  const int tid = threadIdx.x;
  const int tr = tid / (BN / TN), tc = tid % (BN / TN);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += kThreads) {
      const int m = e / BK, k = e % BK;
      const int gi = row0 + m, gk = k0 + k;
      As[k][m] = (gi < M && gk < K) ? A[(long long)gi * K + gk] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += kThreads) {
      const int k = e / BN, n = e % BN;
      const int gk = k0 + k, gj = col0 + n;
      Bs[k][n] = (gk < K && gj < N) ? B[(long long)gk * N + gj] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[k][tr * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][tc * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int gi = row0 + tr * TM + i, gj = col0 + tc * TN + j;
      if (gi < M && gj < N) C[(long long)gi * N + gj] = acc[i][j];
    }
}

extern "C" void sgemm(const float* A, const float* B, float* C, int32_t M, int32_t N, int32_t K) {
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  sgemm_kernel<<<grid, kThreads>>>(A, B, C, M, N, K);
}
