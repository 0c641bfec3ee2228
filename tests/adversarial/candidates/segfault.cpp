// Segfaults: writes through a null pointer.
#include <cstdint>

extern "C" void rowsum(const float*, float* out, int32_t M, int32_t) {
  volatile float* p = nullptr;
  for (int32_t i = 0; i < M; ++i) p[i] = out[i];
}
