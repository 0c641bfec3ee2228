// Reference for softmax: each row of the R x C row-major float32 matrix X is
// mapped to exp(x - max(row)) / sum(exp(row - max(row))). Exponentials and the
// sum are computed in double so the reference is far more precise than a
// float candidate.
#include <cmath>
#include <cstdint>

extern "C" void softmax(const float* X, float* Y, int32_t R, int32_t C) {
  for (int64_t r = 0; r < R; ++r) {
    const float* x = X + r * C;
    float* y = Y + r * C;
    float m = x[0];
    for (int64_t c = 1; c < C; ++c) m = x[c] > m ? x[c] : m;
    double sum = 0.0;
    for (int64_t c = 0; c < C; ++c) sum += std::exp(static_cast<double>(x[c]) - m);
    for (int64_t c = 0; c < C; ++c) y[c] = static_cast<float>(std::exp(static_cast<double>(x[c]) - m) / sum);
  }
}
