// Aborts.
#include <cstdint>
#include <cstdlib>

extern "C" void rowsum(const float*, float*, int32_t, int32_t) { std::abort(); }
