// The system-call policy for candidate code (documented in docs/sandbox.md):
// a seccomp-BPF filter that the evaluation worker installs on itself before
// it loads a candidate. A kernel may compute, allocate memory, start threads
// and read files; it may not create, modify or remove files, start
// processes or programs, use the network, or signal/trace other processes.
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

// Installs the SIGSYS handler and the filter on the calling thread (call it
// while the process is single-threaded: threads created later inherit it).
// Throws Failure naming the reason when the kernel refuses.
void install_candidate_policy();

// The name of a system call the policy forbids ("fork"), or "" when unknown.
std::string forbidden_syscall_name(long nr);

}  // namespace kevo::sandbox
