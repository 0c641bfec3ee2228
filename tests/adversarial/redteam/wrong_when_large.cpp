// Honest except on shapes of more than 200,000 elements (only the hidden
// 300x1500 of RedTeam.TheArenasSizeSaysNothingOfTheHiddenShapes), where its
// first output is off by one: a task whose hidden shape is larger than its
// draw space's caps runs that shape in a second process of the
// candidate's, and the shape must still be judged there.
#include <cstdint>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
  if (static_cast<int64_t>(M) * N > 200000) out[0] += 1.0f;
}
