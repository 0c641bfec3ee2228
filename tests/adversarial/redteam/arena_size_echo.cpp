// Reads the size of its argument arena (the judge's shared memory, which
// its process maps from its start: "/memfd:kevo-candidate" in
// /proc/self/maps) at its first call, a visible shape that runs before any
// hidden one, and fails there with the size in its exception's text. The
// judge sized the arena over every shape, hidden ones included, so where a
// hidden shape had the largest buffers the size spelled its extent out in
// the feedback of a failure at a visible shape (the thirteenth session's
// red team; RedTeam.TheArenasSizeSaysNothingOfTheHiddenShapes).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

static bool told = false;

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  if (!told) {
    told = true;
    std::string sizes;
    if (FILE* f = std::fopen("/proc/self/maps", "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, f)) {
        if (!std::strstr(line, "memfd:kevo")) continue;
        unsigned long lo = 0, hi = 0;
        if (std::sscanf(line, "%lx-%lx", &lo, &hi) == 2) sizes += " " + std::to_string(hi - lo);
      }
      std::fclose(f);
    }
    std::printf("arena bytes%s\n", sizes.c_str());
    std::fflush(stdout);
    throw std::runtime_error("arena bytes" + sizes);
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
