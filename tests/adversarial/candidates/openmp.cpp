// Correct and multithreaded: rows in parallel with OpenMP.
#include <cstdint>
#include <omp.h>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
#pragma omp parallel for num_threads(4) schedule(static)
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
  if (omp_get_max_threads() < 1) out[0] = 0.0f;   // uses the runtime library
}
