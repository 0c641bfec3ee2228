// Accumulates into a malloc'd buffer it never initialises.
#include <cstdint>
#include <cstdlib>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  float* acc = static_cast<float*>(std::malloc(sizeof(float) * static_cast<std::size_t>(M)));
  for (int32_t i = 0; i < M; ++i)
    for (int32_t j = 0; j < N; ++j) acc[i] += A[static_cast<int64_t>(i) * N + j];
  for (int32_t i = 0; i < M; ++i) out[i] = acc[i];
  std::free(acc);
}
