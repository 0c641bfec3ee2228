// Writes files outside its scratch directory (in /tmp and in the parent of
// its working directory), then computes the right answer.
#include <cstdint>
#include <cstdio>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  if (std::FILE* f = std::fopen("/tmp/kevo-adversarial-escape", "w")) {
    std::fputs("escaped\n", f);
    std::fclose(f);
  }
  if (std::FILE* f = std::fopen("../kevo-adversarial-escape-parent", "w")) {
    std::fputs("escaped\n", f);
    std::fclose(f);
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
