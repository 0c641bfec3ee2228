// Raw clone() with CLONE_THREAD plus flags a thread should not carry:
// CLONE_PARENT, CLONE_NEWNS / NEWNET / NEWIPC / NEWUTS / NEWPID / NEWUSER,
// CLONE_VFORK, CLONE_PIDFD, CLONE_UNTRACED. The policy lets any clone with
// CLONE_THREAD through; the kernel must refuse the rest (EINVAL, or EPERM
// without capabilities). A child that starts exits at once. Prints which
// combinations made a thread, then computes honestly.
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace {

// clone(flags, stack): the child runs on `stack` and exits straight away.
long raw_clone(unsigned long flags, void* stack, int* pidfd) {
  long ret;
  register long r10 asm("r10") = 0;
  register long r8 asm("r8") = 0;
  asm volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "mov $60, %%eax\n\t"
      "xor %%edi, %%edi\n\t"
      "syscall\n\t"
      "1:"
      : "=a"(ret)
      : "a"(SYS_clone), "D"(flags), "S"(stack), "d"(pidfd), "r"(r10), "r"(r8)
      : "rcx", "r11", "memory");
  return ret;
}

}  // namespace

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  static bool done = false;
  if (!done) {
    done = true;
    const unsigned long thread = CLONE_THREAD | CLONE_SIGHAND | CLONE_VM | CLONE_FS | CLONE_FILES;
    const unsigned long extra[] = {CLONE_PARENT, CLONE_NEWNS,   CLONE_NEWNET, CLONE_NEWIPC,  CLONE_NEWUTS,
                                   CLONE_NEWPID, CLONE_NEWUSER, CLONE_VFORK,  CLONE_PIDFD,   CLONE_UNTRACED};
    const char* names[] = {"parent", "newns", "newnet", "newipc", "newuts", "newpid", "newuser", "vfork", "pidfd", "untraced"};
    std::printf("clone:");
    for (int k = 0; k < 10; ++k) {
      void* stack = ::mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      int pidfd = -1;
      const long r = raw_clone(thread | extra[k], static_cast<char*>(stack) + 65536, &pidfd);
      std::printf(" %s=%s", names[k], r > 0 ? "thread" : "refused");
      if (pidfd >= 0) ::close(pidfd);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
