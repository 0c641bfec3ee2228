// Reference for layernorm: every row of the R x C row-major float32 matrix X
// is normalised to zero mean and unit variance (biased variance, two passes,
// in double), then scaled by gamma and shifted by beta per column.
#include <cmath>
#include <cstdint>

extern "C" void layernorm(const float* X, const float* gamma, const float* beta, float* Y,
                          int32_t R, int32_t C, float eps) {
  for (int64_t r = 0; r < R; ++r) {
    const float* x = X + r * C;
    float* y = Y + r * C;
    double sum = 0.0;
    for (int64_t c = 0; c < C; ++c) sum += x[c];
    const double mean = sum / C;
    double sq = 0.0;
    for (int64_t c = 0; c < C; ++c) sq += (x[c] - mean) * (x[c] - mean);
    const double rstd = 1.0 / std::sqrt(sq / C + static_cast<double>(eps));
    for (int64_t c = 0; c < C; ++c) y[c] = static_cast<float>((x[c] - mean) * rstd * gamma[c] + beta[c]);
  }
}
