// Reference for reduce_sum: column sums of an R x C row-major float32 matrix,
// Y[c] = sum over r of X[r][c], accumulated in double, rows in order.
#include <cstdint>
#include <vector>

extern "C" void reduce_sum(const float* X, float* Y, int32_t R, int32_t C) {
  std::vector<double> acc(static_cast<std::size_t>(C), 0.0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) acc[c] += X[r * C + c];
  for (int64_t c = 0; c < C; ++c) Y[c] = static_cast<float>(acc[c]);
}
