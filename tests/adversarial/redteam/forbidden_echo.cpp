// Correct everywhere. At every shape other than the visible one (the drawn
// and the hidden ones) it prints the sizes, and it loads libblas.so.3 without
// calling into it: the judge's check of the mapped files, after the
// protocol, makes the verdict `forbidden`, whose feedback was not withheld
// after a hidden shape and quoted the last 1000 bytes of the output, the
// hidden sizes among them (the fourteenth session's red team). Now it keeps
// kevo's finding (the library) and drops the output
// (RedTeam.AForbiddenVerdictAfterAHiddenShapeCarriesNoOutput).
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  if (!(M == 64 && N == 256)) {
    std::printf("called with rows %d cols %d\n", M, N);
    std::fflush(stdout);
    static void* h = ::dlopen("libblas.so.3", RTLD_NOW | RTLD_LOCAL);
    (void)h;
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;   // the reference's loop: the same sums to the bit
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
