// kevo:params begin
#define BLOCK 1
#define UNROLL 1
#define ORDER_fwd 1
#define ORDER "fwd"
#define THREADS 1
// kevo:params end
#include <cstdint>
extern "C" void scale(const float* x, float* y, int32_t n) {
  for (int32_t b = 0; b < n; b += BLOCK)
    for (int32_t i = b; i < n && i < b + BLOCK; ++i) y[i] = 2.0f * x[i];
}
