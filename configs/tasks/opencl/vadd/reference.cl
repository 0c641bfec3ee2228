// Reference for vadd: out[i] = a[i] + b[i] for i in [0, n), one work-item per
// element. The global size is n rounded up to a multiple of the work-group
// size; work-items past the end do nothing.
// kevo:global (N + 63) // 64 * 64
// kevo:local 64
__kernel void vadd(__global const float* a, __global const float* b, __global float* out, const int n) {
  const int i = get_global_id(0);
  if (i < n) out[i] = a[i] + b[i];
}
