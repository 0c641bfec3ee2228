// kevo:params begin
#define P0 0
#define P1 0
#define P2 0
#define P3 0
#define P4 0
#define P5 0
// kevo:params end
#include <cstdint>
extern "C" void scale(const float* x, float* y, int32_t n) {
  for (int32_t i = 0; i < n; ++i) y[i] = 2.0f * x[i];
}
