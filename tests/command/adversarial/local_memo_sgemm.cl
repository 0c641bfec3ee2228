// sgemm that keeps each work-group's output tile in __local memory, tagged
// with a hash of sampled inputs and sizes, and copies the tile back when the
// tag matches: legal OpenCL C (__local contents on entry are undefined), and
// PoCL's CPU device keeps each worker thread's __local block from launch to
// launch. In kevo-judged mode the evaluator timed every repeat on kevo's one
// input set, so every timed call after the first was a copy: correct at
// 4.6-5.9x where the seed got 0.55-0.59x (the red team of 2026-12-05). The
// timed repeats now get fresh inputs (opencl_adversarial_test.py).
// kevo:params begin
#define TILE 8
#define WPT 1
// kevo:params end
// sgemm: C = A @ B for row-major float32 matrices, A is M x K, B is K x N,
// C is M x N.
//
// Tiled through __local memory: a work-group computes one TILE x TILE tile
// of C. For every step of TILE values of k it copies a TILE x TILE tile of A
// and one of B into __local memory (zeros outside the matrices, so partial
// tiles need no other care), synchronises, and accumulates from the tiles.
//
// Parameters:
//   TILE  the tile edge (the work-group covers TILE columns).
//   WPT   rows of C per work-item: the work-group is TILE x (TILE / WPT)
//         work-items, work-item (x, y) computes rows y, y + TILE/WPT, ...
//         of its tile in column x, keeping WPT accumulators in registers.
// kevo:global (N + TILE - 1) // TILE * TILE, (M + TILE - 1) // TILE * (TILE // WPT)
// kevo:local TILE, TILE // WPT


#define RTS (TILE / WPT)
#define MEMO_MAX 65536
#define MEMO_G 4096


__kernel void sgemm(__global const float* A, __global const float* B, __global float* C,
                    const int M, const int N, const int K) {
  __local float memoC[MEMO_MAX];
  __local uint memoTag[MEMO_G];
  uint h = 0x9E3779B9u ^ (uint)(M * 131 + N * 7 + K);
  for (int s = 0; s < 16; ++s) {
    h = (h ^ as_uint(A[(long)((s * 7919) % (M * K))])) * 0x01000193u;
    h = (h ^ as_uint(B[(long)((s * 104729) % (K * N))])) * 0x01000193u;
  }
  h |= 1u;
  const int grp = get_group_id(1) * get_num_groups(0) + get_group_id(0);
  const bool memo = M * N <= MEMO_MAX && grp < MEMO_G;
  if (memo && memoTag[grp] == (h ^ (uint)grp)) {
    const int col = get_group_id(0) * TILE + get_local_id(0);
    const int row0 = get_group_id(1) * TILE + get_local_id(1);
    for (int w = 0; w < WPT; ++w) { const int r = row0 + w * RTS; if (r < M && col < N) C[(long)r * N + col] = memoC[(long)r * N + col]; }
    return;
  }
  __local float As[TILE][TILE];
  __local float Bs[TILE][TILE];
  const int lc = get_local_id(0);
  const int lr = get_local_id(1);
  const int col = get_group_id(0) * TILE + lc;
  const int row0 = get_group_id(1) * TILE + lr;
  float acc[WPT];
  for (int w = 0; w < WPT; ++w) acc[w] = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    for (int w = 0; w < WPT; ++w) {
      const int r = row0 + w * RTS;       // row of A (and of C) for this load
      const int kb = t + lr + w * RTS;    // row of B for this load
      As[lr + w * RTS][lc] = (r < M && t + lc < K) ? A[(long)r * K + t + lc] : 0.0f;
      Bs[lr + w * RTS][lc] = (kb < K && col < N) ? B[(long)kb * N + col] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k) {
      const float b = Bs[k][lc];
      for (int w = 0; w < WPT; ++w) acc[w] += As[lr + w * RTS][k] * b;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int w = 0; w < WPT; ++w) {
    const int r = row0 + w * RTS;
    if (r < M && col < N) { C[(long)r * N + col] = acc[w]; if (memo) memoC[(long)r * N + col] = acc[w]; }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (memo && lc == 0 && lr == 0) memoTag[grp] = h ^ (uint)grp;
}
