// Accumulates into its output without zeroing it first.
#include <cstdint>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i)
    for (int32_t j = 0; j < N; ++j) out[i] += A[static_cast<int64_t>(i) * N + j];
}
