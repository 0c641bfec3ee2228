// Fails to compile.
#include <cstdint>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) out[i] = A[i] +   // missing operand
}
