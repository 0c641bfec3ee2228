// Installs a filter of its own that makes futex and write fail (the
// host's answer would fail): prctl(PR_SET_SECCOMP) is refused (EPERM),
// then the seccomp() call itself is a violation.
#include <cstdint>
#include <cstring>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  sock_filter ins[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1)};
  sock_fprog prog{1, ins};
  ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
  ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
