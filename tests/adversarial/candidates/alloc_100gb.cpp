// Allocates 100 GB with new (and touches it).
#include <cstdint>
#include <cstring>

float* volatile kept;   // keeps the allocation from being optimised away

extern "C" void rowsum(const float*, float* out, int32_t M, int32_t) {
  const std::size_t n = std::size_t{100} * 1024 * 1024 * 1024 / sizeof(float);
  kept = new float[n];
  std::memset(kept, 0, n * sizeof(float));
  for (int32_t i = 0; i < M; ++i) out[i] = kept[i];
  delete[] kept;
}
