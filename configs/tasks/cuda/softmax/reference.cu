// Reference: one thread per row, double accumulation.
#include <cstdint>

__global__ void softmax_ref_kernel(const float* X, float* Y, int R, int C) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const float* x = X + (long long)r * C;
  float* y = Y + (long long)r * C;
  float m = x[0];
  for (int c = 1; c < C; ++c) m = fmaxf(m, x[c]);
  double s = 0.0;
  for (int c = 0; c < C; ++c) s += exp((double)x[c] - m);
  for (int c = 0; c < C; ++c) y[c] = (float)(exp((double)x[c] - m) / s);
}

extern "C" void softmax(const float* X, float* Y, int32_t R, int32_t C) {
  softmax_ref_kernel<<<(R + 127) / 128, 128>>>(X, Y, R, C);
}
