// The system-call policy for candidate code (documented in docs/sandbox.md):
// an allow-list seccomp-BPF filter that a kernel host process installs on
// itself before it loads a candidate. A kernel may compute, allocate and map
// memory, start threads, read files and tell the time; every other system
// call is a violation. Calls that name another process (signals,
// scheduling, affinity, resource limits, priorities) are allowed only on the
// caller itself; in a private PID namespace no other process has a number.
//
// A forbidden call traps (SIGSYS). The handler installed with the filter
// records the call (set_violation_report / set_violation_slot) and exits
// with kViolationExitCode; if the handler cannot run (SIGSYS blocked), the
// kernel kills the process with SIGSYS. Any rt_sigaction on SIGSYS is a
// violation too, trapped before it takes effect (the handler in place
// reports it). clone3 and openat2 fail with ENOSYS (their flags sit
// in memory, out of the filter's reach: glibc then uses clone and openat).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace kevo::sandbox {

inline constexpr int kViolationExitCode = 159;

// True when this build knows the architecture (x86_64, aarch64).
bool seccomp_supported_arch();

// Sets the line written on a violation: prefix + syscall number + suffix.
// Call before install_candidate_policy(); the texts are copied into static
// storage (at most 512 bytes in all) because the handler may only write().
void set_violation_report(int fd, const std::string& prefix, const std::string& suffix);
// Or: the handler stores the call's number in *slot (shared memory that
// another process reads) before it exits. Null turns it off.
void set_violation_slot(std::atomic<std::int64_t>* slot);

// Which allow-list: `cpu` (kernel hosts of the CPU backend) allows opening
// files for reading only and no ioctl; `cuda` (after the host's CUDA
// context exists) adds what the driver keeps doing: ioctl on its device
// files, opening existing files read-write (never creating, truncating or
// appending), polling and eventfds. Every other rule is the same in both.
enum class Policy { cpu, cuda };
const char* to_string(Policy);
// "cpu" or "cuda"; throws std::invalid_argument otherwise.
Policy policy_from_string(const std::string& name);

struct PolicyOptions {
  Policy policy = Policy::cpu;
  // The caller has a PID namespace of its own: every process number it can
  // name is one of its own threads, so scheduling and affinity calls may
  // name any (OpenMP pins its threads by thread id).
  bool own_pid_namespace = false;
  // Under the CUDA variant, flock fails (ENOLCK) but on `lockable_fds`:
  // kevo's kernel hosts and the CUDA worker's sanitizer child, which must
  // not hold the GPU timing slot's locks (the sanitizer child holds the
  // slot itself and names its descriptors). Off for the torch host, whose
  // libraries lock their caches (docs/sandbox.md).
  bool refuse_file_locks = false;
  std::vector<int> lockable_fds;
};

// Installs the SIGSYS handler and the filter on every thread of the process
// (SECCOMP_FILTER_FLAG_TSYNC: the CUDA driver's threads exist before the
// policy; threads created later inherit it). Throws Failure naming the
// reason when the kernel refuses.
void install_candidate_policy(const PolicyOptions& options);
inline void install_candidate_policy(Policy policy = Policy::cpu) { install_candidate_policy(PolicyOptions{policy}); }

// The name of a system call ("socket"), with what makes it forbidden for the
// calls whose arguments are checked ("openat (for writing or creating)");
// "" when this build has no name for the number.
std::string forbidden_syscall_name(long nr);

}  // namespace kevo::sandbox
