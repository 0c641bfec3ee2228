// kevo:params begin
#define WG 32
#define EXP_exp 1
#define EXP "exp"
#define PASSES_recompute 1
#define PASSES "recompute"
// kevo:params end
// softmax over each row of an R x C row-major float32 matrix:
//   Y[r][c] = exp(X[r][c] - m_r) / sum_c' exp(X[r][c'] - m_r),  m_r = max_c X[r][c]
//
// One work-group per row. Each work-item walks a strided part of the row;
// the row maximum and the sum of exponentials are combined across the
// work-group by tree reductions in __local memory.
//
// Parameters:
//   WG      work-items per work-group (a power of two: the trees halve it).
//   EXP     "exp": the precise exp; "native": native_exp (faster, less precise).
//   PASSES  "recompute": the last pass recomputes exp(x - m); "store": the
//           sum pass stores exp(x - m) into Y and the last pass rescales it
//           (each work-item reads back only the elements it wrote).
// kevo:global R * WG
// kevo:local WG

#if defined(EXP_native)
#define EXPF(x) native_exp(x)
#else
#define EXPF(x) exp(x)
#endif

__kernel void softmax(__global const float* X, __global float* Y, const int R, const int C) {
  __local float red[WG];
  const int r = get_group_id(0);
  const int lid = get_local_id(0);
  __global const float* x = X + (long)r * C;
  __global float* y = Y + (long)r * C;

  // pass 1: row maximum
  float m = -INFINITY;
  for (int c = lid; c < C; c += WG) m = fmax(m, x[c]);
  red[lid] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int off = WG / 2; off > 0; off >>= 1) {
    if (lid < off) red[lid] = fmax(red[lid], red[lid + off]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  m = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);   // everyone has read red[0] before it is reused

  // pass 2: sum of exp(x - m)
  float s = 0.0f;
  for (int c = lid; c < C; c += WG) {
    const float e = EXPF(x[c] - m);
#if defined(PASSES_store)
    y[c] = e;
#endif
    s += e;
  }
  red[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int off = WG / 2; off > 0; off >>= 1) {
    if (lid < off) red[lid] += red[lid + off];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float inv = 1.0f / red[0];

  // pass 3: normalise
  for (int c = lid; c < C; c += WG) {
#if defined(PASSES_store)
    y[c] *= inv;
#else
    y[c] = EXPF(x[c] - m) * inv;
#endif
  }
}
