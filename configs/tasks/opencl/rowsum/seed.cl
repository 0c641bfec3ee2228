// kevo:params begin
#define WG 64
#define VEC 1
// kevo:params end
// rowsum: out[r] = sum over c in [0, N) of X[r*N + c], X row-major M x N.
//
// One work-group per row. Each of the WG work-items sums a strided part of
// the row (VEC consecutive elements at a time, through vloadVEC; the last
// N % VEC elements one at a time), then the WG partial sums are added by a
// tree reduction in __local memory.
//
// Parameters:
//   WG   work-items per work-group (a power of two: the tree halves it).
//   VEC  elements per vector load (1 = scalar loads). Rows are only
//        float-aligned (r*N is arbitrary): vloadn needs no more.
// kevo:global M * WG
// kevo:local WG

#define KEVO_CAT_(a, b) a##b
#define KEVO_CAT(a, b) KEVO_CAT_(a, b)
#if VEC > 1
#define VTYPE KEVO_CAT(float, VEC)
#define VLOAD KEVO_CAT(vload, VEC)
#endif

#if VEC == 2
#define HSUM(v) ((v).x + (v).y)
#elif VEC == 4
#define HSUM(v) (((v).x + (v).y) + ((v).z + (v).w))
#elif VEC == 8
#define HSUM(v) hsum4((v).lo + (v).hi)
#elif VEC == 16
#define HSUM(v) hsum4(((v).lo.lo + (v).lo.hi) + ((v).hi.lo + (v).hi.hi))
#endif
inline float hsum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

__kernel void rowsum(__global const float* X, __global float* out, const int M, const int N) {
  __local float part[WG];
  const int r = get_group_id(0);
  const int lid = get_local_id(0);
  __global const float* row = X + (long)r * N;
  float s = 0.0f;
#if VEC > 1
  const int nv = N / VEC;
  VTYPE acc = (VTYPE)(0.0f);
  for (int v = lid; v < nv; v += WG) acc += VLOAD(v, row);
  s = HSUM(acc);
  for (int c = nv * VEC + lid; c < N; c += WG) s += row[c];
#else
  for (int c = lid; c < N; c += WG) s += row[c];
#endif
  part[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int off = WG / 2; off > 0; off >>= 1) {
    if (lid < off) part[lid] += part[lid + off];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[r] = part[0];
}
