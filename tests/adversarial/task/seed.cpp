#include <cstdint>

// The same loop as the reference, written with a pointer per row.
extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) {
    const float* row = A + static_cast<int64_t>(i) * N;
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += row[j];
    out[i] = s;
  }
}
