// Reference for sgemm: C = A @ B, row-major float32, naive triple loop with a
// double accumulator so the reference is far more precise than any float
// candidate (the tolerance then only has to cover the candidate's rounding).
#include <cstdint>

extern "C" void sgemm(const float* A, const float* B, float* C, int32_t M, int32_t N, int32_t K) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(A[i * K + k]) * B[k * N + j];
      C[i * N + j] = static_cast<float>(acc);
    }
  }
}
