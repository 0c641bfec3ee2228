// Computes honestly until it has been called at a shape other than the
// visible one (64x256); the next time the visible shape comes, it adds
// 1000 * M + N of the first other shape it saw (the first hidden one:
// 7033) to its first output, so that the wrong answer's maximum absolute
// error, which the feedback quotes, spells the hidden sizes out at a
// visible shape (red team 22).
#include <cstdint>

static int32_t first_m = -1, first_n = -1;

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  const bool visible = M == 64 && N == 256;
  if (!visible && first_m < 0) {
    first_m = M;
    first_n = N;
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
  if (visible && first_m >= 0) out[0] += static_cast<float>(1000 * first_m + first_n);
}
