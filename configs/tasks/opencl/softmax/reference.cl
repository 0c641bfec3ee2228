// Reference for softmax: for each row r of the R x C row-major matrix X,
// Y[r][c] = exp(X[r][c] - m) / sum over c' of exp(X[r][c'] - m), m the row's
// maximum. One work-item per row; exponentials and the sum in double
// (cl_khr_fp64), so that the reference is far more precise than a float
// candidate. Work-items past the last row do nothing.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
// kevo:global (R + 15) // 16 * 16
// kevo:local 16
__kernel void softmax(__global const float* X, __global float* Y, const int R, const int C) {
  const int r = get_global_id(0);
  if (r >= R) return;
  __global const float* x = X + (long)r * C;
  __global float* y = Y + (long)r * C;
  float m = x[0];
  for (int c = 1; c < C; ++c) m = x[c] > m ? x[c] : m;
  double sum = 0.0;
  for (int c = 0; c < C; ++c) sum += exp((double)x[c] - (double)m);
  for (int c = 0; c < C; ++c) y[c] = (float)(exp((double)x[c] - (double)m) / sum);
}
