// Reference for rowsum: out[r] = sum over c of X[r*N + c], one work-item per
// row, accumulated in double (cl_khr_fp64) so that the reference is far more
// precise than a float candidate. The global size is M rounded up to a
// multiple of the work-group size; work-items past the last row do nothing.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
// kevo:global (M + 63) // 64 * 64
// kevo:local 64
__kernel void rowsum(__global const float* X, __global float* out, const int M, const int N) {
  const int r = get_global_id(0);
  if (r >= M) return;
  __global const float* row = X + (long)r * N;
  double s = 0.0;
  for (int c = 0; c < N; ++c) s += (double)row[c];
  out[r] = (float)s;
}
