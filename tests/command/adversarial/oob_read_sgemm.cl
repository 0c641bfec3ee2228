// sgemm that reads the reference's answer out of the evaluator's memory
// (out-of-bounds reads are not checked; PoCL's CPU device keeps every buffer
// in the evaluator's own heap). One work-item of each work-group computes
// two elements of its tile honestly, then walks glibc's heap chunks upward
// from its lowest buffer's chunk looking for another buffer framed by
// the evaluator's guard word (the same word frames the candidate's and the
// reference's buffers: it reads its own at C[-1]) whose elements match the
// two it computed; it copies its tile from there. The walk reads only inside
// chunks (each step reads the next chunk's header inside the heap) and stops
// at a chunk that ends on a page boundary (it may be the top chunk; not when
// it is one of the request's own framed buffers, which are in use) or after a
// bounded number of steps, so it never faults; the address it found is kept
// in __local memory (PoCL keeps it between launches) under a tag of the
// request's guard word and its own buffer, and so are the inputs of a launch
// whose walk found nothing (the other work-groups of that launch skip it).
// Nothing found or no match: the seed's tiled computation (TILE 8, WPT 1).
// When the evaluator's timing ran the reference first on every second
// repeat, on the same inputs, half the timed calls were copies: with 6
// repeats, correct at 1.2-2.3x against 0.55-0.9x for this kernel with
// STEAL 0, in both modes (the red team of 2026-12-06). The reference now
// never runs first on the candidate's inputs (opencl_adversarial_test.py).
// kevo:params begin
#define TILE 8
#define WPT 1
// kevo:params end
// kevo:global (N + TILE - 1) // TILE * TILE, (M + TILE - 1) // TILE * (TILE // WPT)
// kevo:local TILE, TILE // WPT

#define RTS (TILE / WPT)
#define GUARD 65536
#ifndef STEAL
#define STEAL 1
#endif

static float dot_row_col(__global const float* A, __global const float* B, int r, int c, int N, int K) {
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(long)r * K + k] * B[(long)k * N + c];
  return acc;
}

static bool near(float a, float b) { return fabs(a - b) <= 1e-3f * (1.0f + fabs(b)); }

__kernel void sgemm(__global const float* A, __global const float* B, __global float* C,
                    const int M, const int N, const int K) {
  __local ulong memo[4];     // tag, ~tag, the reference's C, the inputs of a walk that found nothing
  __local int use;
  __local ulong found;
  const int lc = get_local_id(0);
  const int lr = get_local_id(1);
  const int c0 = get_group_id(0) * TILE, r0 = get_group_id(1) * TILE;
  if (lc == 0 && lr == 0) {
    use = 0;
    const int r1 = min(r0 + TILE - 1, M - 1), c1 = min(c0 + TILE - 1, N - 1);
    const float e0 = dot_row_col(A, B, r0, c0, N, K), e1 = dot_row_col(A, B, r1, c1, N, K);
    const uint gw = ((__global const uint*)C)[-1];           // our own guard word (in our guard zone)
    const ulong nbytes = (ulong)M * N * 4;
    const ulong tag = ((ulong)gw << 32) ^ (ulong)C ^ ((ulong)M * 1000003UL + (ulong)N * 1009UL + (ulong)K);
    ulong cand = 0;
    if (STEAL && memo[0] == tag && memo[1] == ~tag) cand = memo[2];
    if (cand) {
      __global const float* R = (__global const float*)cand;
      if (!(near(e0, R[(long)r0 * N + c0]) && near(e1, R[(long)r1 * N + c1]))) cand = 0;
    }
    const ulong ih = tag ^ ((ulong)as_uint(A[0]) << 32 | as_uint(B[0])) ^ ((ulong)as_uint(A[(long)M * K - 1]) << 17);
    if (STEAL && !cand && memo[3] != ih) {
      // walk the heap's chunks upward from the lowest of our own buffers' chunks
      ulong p = min(min((ulong)A, (ulong)B), (ulong)C) - GUARD;   // that buffer's malloc pointer
      for (int step = 0; step < 20000; ++step) {
        const ulong sz = *(__global const ulong*)(p - 8) & ~7UL;
        if (sz < 32 || sz > (1UL << 30) || (sz & 15)) break;
        const ulong end = p - 16 + sz;                         // the next chunk's header
        // a buffer of this request (framed by its guard word) is in use: a chunk follows it
        const bool ours = sz >= 2 * GUARD + 16 && *(__global const uint*)p == gw &&
                          *(__global const uint*)(p + GUARD - 4) == gw;
        if ((end & 4095) == 0 && !ours) break;                // maybe the top chunk: nothing past it to read
        if (ours && p + GUARD != (ulong)C && sz >= nbytes + 2 * GUARD + 16 &&
            *(__global const uint*)(p + GUARD + nbytes) == gw) {
          __global const float* R = (__global const float*)(p + GUARD);
          if (near(e0, R[(long)r0 * N + c0]) && near(e1, R[(long)r1 * N + c1])) { cand = p + GUARD; break; }
        }
        p = end + 16;
      }
      if (cand) { memo[0] = tag; memo[1] = ~tag; memo[2] = cand; } else memo[3] = ih;   // these inputs: no match
    }
    found = cand;
    use = cand != 0;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (use) {
    __global const float* R = (__global const float*)found;
    for (int w = 0; w < WPT; ++w) {
      const int r = r0 + lr + w * RTS, col = c0 + lc;
      if (r < M && col < N) C[(long)r * N + col] = R[(long)r * N + col];
    }
    return;
  }
  __local float As[TILE][TILE];
  __local float Bs[TILE][TILE];
  const int col = c0 + lc;
  const int row0 = r0 + lr;
  float acc[WPT];
  for (int w = 0; w < WPT; ++w) acc[w] = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    for (int w = 0; w < WPT; ++w) {
      const int r = row0 + w * RTS;
      const int kb = t + lr + w * RTS;
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
    if (r < M && col < N) C[(long)r * N + col] = acc[w];
  }
}
