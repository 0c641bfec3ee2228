// kevo:params begin
#define WG 64
#define VEC 1
#define ITEMS 1
// kevo:params end
// vadd: out[i] = a[i] + b[i] for i in [0, n).
//
// Parameters:
//   WG     work-items per work-group (the local size).
//   VEC    elements per vector load/store (vloadVEC/vstoreVEC of floatVEC);
//          1 = scalar code. A chunk that runs past n takes the scalar path.
//   ITEMS  chunks of VEC elements per work-item: work-item l of group g
//          handles chunks (g*ITEMS + c)*WG + l for c in [0, ITEMS), so that
//          neighbouring work-items touch neighbouring chunks.
//
// One work-group covers WG*VEC*ITEMS elements; the global size is the number
// of groups needed for N elements times WG.
// kevo:global (N + WG * VEC * ITEMS - 1) // (WG * VEC * ITEMS) * WG
// kevo:local WG

#define KEVO_CAT_(a, b) a##b
#define KEVO_CAT(a, b) KEVO_CAT_(a, b)
#if VEC > 1
#define VLOAD KEVO_CAT(vload, VEC)
#define VSTORE KEVO_CAT(vstore, VEC)
#endif

__kernel void vadd(__global const float* a, __global const float* b, __global float* out, const int n) {
  const int lid = get_local_id(0);
  const int grp = get_group_id(0);
  for (int c = 0; c < ITEMS; ++c) {
    const int chunk = (grp * ITEMS + c) * WG + lid;
    const long base = (long)chunk * VEC;
#if VEC > 1
    if (base + VEC <= n) {
      VSTORE(VLOAD(chunk, a) + VLOAD(chunk, b), chunk, out);
    } else {
      for (long i = base; i < n; ++i) out[i] = a[i] + b[i];
    }
#else
    if (base < n) out[base] = a[base] + b[base];
#endif
  }
}
