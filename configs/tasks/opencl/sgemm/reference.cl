// Reference for sgemm: C[i][j] = sum over k of A[i][k] * B[k][j] (row-major),
// one work-item per element of C, accumulated in double (cl_khr_fp64) so
// that the reference is far more precise than a float candidate. Axis 0 runs
// over the columns j (neighbouring work-items read neighbouring elements of
// B), axis 1 over the rows i; both are rounded up to the work-group size and
// work-items outside C do nothing.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
// kevo:global (N + 15) // 16 * 16, (M + 3) // 4 * 4
// kevo:local 16, 4
__kernel void sgemm(__global const float* A, __global const float* B, __global float* C,
                    const int M, const int N, const int K) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  if (i >= M || j >= N) return;
  double acc = 0.0;
  for (int k = 0; k < K; ++k) acc += (double)A[(long)i * K + k] * (double)B[(long)k * N + j];
  C[(long)i * N + j] = (float)acc;
}
