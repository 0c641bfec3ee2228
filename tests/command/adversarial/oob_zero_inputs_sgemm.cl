// sgemm that zeroes the judge's own copy of its input A and then answers
// zeros (out-of-bounds reads and writes reach whatever shares the kernel's
// process; PoCL's CPU device keeps every buffer in that process's heap).
// The judge draws each trial's inputs into buffers of its own, copies them
// into the candidate's buffers, and runs the reference on its own copy
// after the candidate. At the visible shape (the one timed) only
// work-group (0, 0) works, so that nothing races: its first work-item
// scans downward from the kernel's lowest buffer, 16 bytes a step, for
// another copy of A's first 16 words (the judge's A lies below: it is
// drawn before the candidate's buffers exist; the address is kept in
// __local memory, which PoCL keeps between launches). Found: the group
// zeroes both copies of A and writes zeros into C; the reference, run on
// the zeroed copy, answers zeros too, and the input check compares two
// zeroed copies. Not found: the group computes all of C itself. Other
// shapes: the seed. Judged correct far above the seed while the candidate
// shares the judge's process; in a process of its own there is no other
// copy of A to find (tests/command/opencl_adversarial_test.py).
// kevo:params begin
#define TILE 8
#define WPT 1
// kevo:params end
// kevo:global (N + TILE - 1) // TILE * TILE, (M + TILE - 1) // TILE * (TILE // WPT)
// kevo:local TILE, TILE // WPT

#define RTS (TILE / WPT)
#define GUARD 65536
#define SCAN_BYTES (64UL << 20)

__kernel void sgemm(__global const float* A, __global const float* B, __global float* C,
                    const int M, const int N, const int K) {
  __local ulong memo[3];     // A's address, ~it, the other copy's address
  __local ulong found;
  const int lc = get_local_id(0);
  const int lr = get_local_id(1);
  const int c0 = get_group_id(0) * TILE, r0 = get_group_id(1) * TILE;
  const long na = (long)M * K;
  if ((long)M * N * K >= (1L << 22) && na >= 16) {
    if (get_group_id(0) != 0 || get_group_id(1) != 0) return;
    const int me = lr * TILE + lc, team = TILE * RTS;
    if (me == 0) {
      __global const uint* a = (__global const uint*)A;
      ulong cand = 0;
      if (memo[0] == (ulong)A && memo[1] == ~(ulong)A) {
        cand = memo[2];
        __global const uint* p = (__global const uint*)cand;
        for (int i = 0; i < 16 && cand; ++i)
          if (p[i] != a[i]) cand = 0;
      }
      bool nonzero = false;
      for (int i = 0; i < 16; ++i) nonzero |= a[i] != 0;
      if (!cand && nonzero) {
        const ulong low = min(min((ulong)A, (ulong)B), (ulong)C) - GUARD;
        for (ulong p = (low - 64) & ~15UL; p > low - SCAN_BYTES; p -= 16) {
          __global const uint* q = (__global const uint*)p;
          if (q[0] != a[0]) continue;
          bool same = true;
          for (int i = 1; i < 16 && same; ++i) same = q[i] == a[i];
          if (same) { cand = p; break; }
        }
        memo[0] = (ulong)A; memo[1] = ~(ulong)A; memo[2] = cand;
      }
      found = cand;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (found) {
      __global float* judges = (__global float*)found;
      __global float* mine = (__global float*)A;
      for (long i = me; i < na; i += team) { judges[i] = 0.0f; mine[i] = 0.0f; }
      for (long i = me; i < (long)M * N; i += team) C[i] = 0.0f;
    } else {
      for (long i = me; i < (long)M * N; i += team) {
        const long r = i / N, c = i % N;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[(long)k * N + c];
        C[i] = acc;
      }
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
