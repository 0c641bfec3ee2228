// Allocates 100 GB with malloc, ignores the failure and writes through the
// null pointer (a crash that follows a failed allocation).
#include <cstdint>
#include <cstdlib>

float* volatile kept;

extern "C" void rowsum(const float*, float* out, int32_t M, int32_t) {
  kept = static_cast<float*>(std::malloc(std::size_t{100} * 1024 * 1024 * 1024));
  for (int32_t i = 0; i < M; ++i) kept[i] = 1.0f;
  for (int32_t i = 0; i < M; ++i) out[i] = kept[i];
}
