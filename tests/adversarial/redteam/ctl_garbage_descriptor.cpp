// Computes the right answer, then fills every judge-written field of the
// control block with garbage (nargs, offsets past the arena, scalars,
// state load_failed, violation and alloc fields left alone): the judge
// writes a fresh descriptor before every call and reads none of these,
// so the verdict is the honest one.
#include <cstdint>
#include <cstring>

namespace {
// The control block (backends/native/judge/host_control.hpp): the page
// before the first buffer; offsets of its fields in this build.
struct Ctl {
  std::uint32_t call, nargs, poison_allocations, reserved0;
  std::uint64_t offset[32], scalar[32];
  alignas(64) std::uint32_t done;
  std::uint32_t state;
  std::int32_t outcome, reserved1;
  std::int64_t violation;
  std::uint64_t alloc_failed_bytes;
  std::int32_t fatal_signal;
  char message[1024];
};
// volatile: the stores must happen even right before _exit or a crash.
volatile Ctl* ctl_of(const float* A) {
  return reinterpret_cast<volatile Ctl*>(reinterpret_cast<char*>(const_cast<float*>(A)) - 4096);
}
}  // namespace

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
  volatile Ctl* c = ctl_of(A);
  c->nargs = 0xFFFFFFFFu;
  c->poison_allocations = 0xFFFFFFFFu;
  for (int k = 0; k < 32; ++k) {
    c->offset[k] = 0xFFFF0000FFFF0000ull + static_cast<std::uint64_t>(k);
    c->scalar[k] = 0xDEADBEEFDEADBEEFull;
  }
  c->state = 2;
}
