// Tries to kill its parent (the engine).
#include <cstdint>
#include <signal.h>
#include <unistd.h>

extern "C" void rowsum(const float*, float*, int32_t, int32_t) { kill(getppid(), SIGKILL); }
