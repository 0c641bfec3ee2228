// Sleeps forever without using CPU: only the wall clock can stop it.
#include <cstdint>
#include <time.h>

extern "C" void rowsum(const float*, float*, int32_t, int32_t) {
  for (;;) {
    timespec t{3600, 0};
    nanosleep(&t, nullptr);
  }
}
