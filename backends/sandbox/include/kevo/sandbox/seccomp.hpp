// The system-call policy for candidate code (documented in docs/sandbox.md):
// a seccomp-BPF filter that the evaluation worker installs on itself before
// it loads a candidate. A kernel may compute, allocate memory, start threads
// and read files; it may not create or remove files, modify them (the CPU
// variant; see Policy), start processes or programs, use the network, or
// signal/trace other processes.
//
// A forbidden call traps (SIGSYS). The handler installed with the filter
// writes one report line (set_violation_report) to the result pipe and
// exits with kViolationExitCode; if the handler cannot run (SIGSYS blocked),
// the kernel kills the process with SIGSYS. Changing the SIGSYS handler
// kills the process at once. clone3 fails with ENOSYS (glibc's
// pthread_create then falls back to clone, which is allowed for threads).
#pragma once

#include <string>

namespace kevo::sandbox {

inline constexpr int kViolationExitCode = 159;

// True when this build knows the architecture (x86_64, aarch64).
bool seccomp_supported_arch();

// Sets the line written on a violation: prefix + syscall number + suffix.
// Call before install_candidate_policy(); the texts are copied into static
// storage (at most 512 bytes in all) because the handler may only write().
void set_violation_report(int fd, const std::string& prefix, const std::string& suffix);

// Which policy: `cpu` (kevo-cpu-worker) forbids every open for writing;
// `cuda` (kevo-cuda-worker, after its CUDA context exists) allows opening
// existing files O_WRONLY/O_RDWR, because the driver keeps opening
// /dev/nvidia* and /proc files read-write; creating, truncating or
// appending on open is still forbidden (docs/sandbox.md: the residual risk).
// Every other rule is the same in both.
enum class Policy { cpu, cuda };
const char* to_string(Policy);
// "cpu" or "cuda"; throws std::invalid_argument otherwise.
Policy policy_from_string(const std::string& name);

// Installs the SIGSYS handler and the filter on every thread of the process
// (SECCOMP_FILTER_FLAG_TSYNC: the CUDA driver's threads exist before the
// policy; threads created later inherit it). Throws Failure naming the
// reason when the kernel refuses.
void install_candidate_policy(Policy policy = Policy::cpu);

// The name of a system call a policy forbids ("fork"), or "" when unknown.
std::string forbidden_syscall_name(long nr);

}  // namespace kevo::sandbox
