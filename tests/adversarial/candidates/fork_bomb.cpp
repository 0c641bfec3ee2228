// Forks repeatedly.
#include <cstdint>
#include <unistd.h>

extern "C" void rowsum(const float*, float*, int32_t, int32_t) {
  for (int i = 0; i < 1000; ++i) fork();
}
