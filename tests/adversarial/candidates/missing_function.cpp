// Defines the kernel under another name.
#include <cstdint>

extern "C" void row_sum(const float*, float*, int32_t, int32_t) {}
