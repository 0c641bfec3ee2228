// kevo:params begin
#define TILE 16
#define ROWS 16
#define PAD 0
// kevo:params end
// Tiled transpose through shared memory: a TILE x TILE tile is read with
// coalesced rows and written with coalesced rows of B; each of the TILE x
// ROWS threads moves TILE/ROWS elements. PAD 1 adds a column against bank
// conflicts.
#include <cstdint>

__global__ void __launch_bounds__(TILE * ROWS) transpose_kernel(const float* __restrict__ A, float* __restrict__ B,
                                                               int M, int N) {
  __shared__ float tile[TILE][TILE + PAD];
  const int j0 = blockIdx.x * TILE, i0 = blockIdx.y * TILE;
  for (int r = threadIdx.y; r < TILE; r += ROWS) {
    const int i = i0 + r, j = j0 + threadIdx.x;
    if (i < M && j < N) tile[r][threadIdx.x] = A[(long long)i * N + j];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < TILE; r += ROWS) {
    const int j = j0 + r, i = i0 + threadIdx.x;
    if (i < M && j < N) B[(long long)j * M + i] = tile[threadIdx.x][r];
  }
}

extern "C" void transpose(const float* A, float* B, int32_t M, int32_t N) {
  const dim3 block(TILE, ROWS);
  const dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  transpose_kernel<<<grid, block>>>(A, B, M, N);
}
