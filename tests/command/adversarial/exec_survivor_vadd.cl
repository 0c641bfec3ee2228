// Red team (2026-12-06): the one way to start a process that the kernel
// processes' system-call policy leaves open is posix_spawn's (a clone with
// CLONE_VM | CLONE_VFORK, whose parent waits until the child has exec'd or
// ended), and the one program they may exec is the linker, which PoCL
// runs. Exec'd with its input a pipe this process keeps open, the linker
// waits on it and lives on after the call: it stands for any process that
// keeps working beside the judge and the reference. The judge finds a
// process of the kernel's still running when its call returns: `forbidden`.
// (Through /dev/stdin, which `confine` keeps the linker from opening: there
// it ends at once and the kernel is judged on its outputs.)
// kevo:global (N + 63) // 64 * 64
// kevo:local 64

__constant char kLinker[] = "/usr/bin/ld";
__constant char kArg[] = "@/dev/stdin";

__kernel void vadd(__global const float* a, __global const float* b, __global float* out, const int n) {
  const int i = get_global_id(0);
  if (i == 0) {
    int fds[2] = {-1, -1};
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(293L), "D"((long)fds), "S"(0L) : "rcx", "r11", "memory");   // pipe2
    long argv[3] = {(long)kLinker, (long)kArg, 0};
    long fd0 = fds[0];
    // clone(CLONE_VM | CLONE_VFORK | SIGCHLD, no new stack): the child runs
    // on this stack until its execve, as vfork's does; it takes the pipe as
    // its stdin.
    __asm__ volatile(
        "mov $56, %%eax\n\t"
        "mov $0x4111, %%edi\n\t"
        "xor %%esi, %%esi\n\t"
        "xor %%edx, %%edx\n\t"
        "xor %%r10d, %%r10d\n\t"
        "xor %%r8d, %%r8d\n\t"
        "syscall\n\t"
        "test %%rax, %%rax\n\t"
        "jnz 1f\n\t"
        "mov $33, %%eax\n\t"
        "mov %3, %%rdi\n\t"
        "xor %%esi, %%esi\n\t"
        "syscall\n\t"
        "mov $59, %%eax\n\t"
        "mov %1, %%rdi\n\t"
        "mov %2, %%rsi\n\t"
        "xor %%edx, %%edx\n\t"
        "syscall\n\t"
        "mov $60, %%eax\n\t"
        "mov $1, %%edi\n\t"
        "syscall\n\t"
        "1:\n\t"
        : "=&a"(r)
        : "r"((long)kLinker), "r"((long)argv), "r"(fd0)
        : "rcx", "r11", "rdi", "rsi", "rdx", "r10", "r8", "memory");
  }
  if (i < n) out[i] = a[i] + b[i];
}
