// The control block at the start of a kernel host's arena: the shared
// memory through which a judge asks its host (the process that holds the
// candidate's, or the reference's, code) to make one call. Judge and host
// run the same build, so the layout is a plain struct. Everything the host
// writes is written by a process that runs candidate code: the judge reads
// only `done`, and takes `outcome`, `message`, `violation` and
// `alloc_failed_bytes` as the candidate's own claims about its failures
// (they can make its verdict worse, never better). Documented in
// docs/sandbox.md ("Kernel hosts").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kevo::native::judge {

inline constexpr int kMaxArgs = 32;
inline constexpr std::uint64_t kNoBuffer = ~std::uint64_t{0};
// The control block's share of the arena; buffers start after it.
inline constexpr std::size_t kControlBytes = 4096;
// Buffers are laid out on page boundaries.
inline constexpr std::size_t kArenaAlign = 4096;

// calibrating: the host answers null calls (no code of its side loaded
// yet) until the judge sets `load_library` (HostSpec::calibrate).
enum class HostState : std::uint32_t { starting = 0, ready = 1, load_failed = 2, calibrating = 3 };
enum class CallOutcome : std::int32_t { ok = 0, threw = 1, bad_alloc = 2 };

struct alignas(64) HostControl {
  // judge -> host: written while the host is stopped, before `call` moves.
  std::atomic<std::uint32_t> call;        // futex word: the number of the call to make
  std::uint32_t nargs;
  std::uint32_t poison_allocations;       // fill fresh malloc blocks while this call runs
  std::uint32_t load_library;             // calibrating: leave the null calls and load the library
  std::uint32_t null_call;                // make no call of the side's code: 1 = the device's shortest round trip
                                          // (the prime), 2 = the null call of the calibration (an idle synchronize)
  std::uint32_t reserved0;
  std::uint64_t offset[kMaxArgs];         // buffer k's offset in the arena (kNoBuffer: a scalar)
  std::uint64_t scalar[kMaxArgs];         // scalar k's 8 bytes
  // host -> judge (untrusted)
  alignas(64) std::atomic<std::uint32_t> done;   // futex word: the last call finished
  std::atomic<std::uint32_t> state;       // HostState
  std::int32_t outcome;                   // CallOutcome of the last call
  std::int32_t reserved1;
  std::atomic<std::int64_t> violation;    // the system call the SIGSYS handler saw (-1: none)
  std::atomic<std::uint64_t> alloc_failed_bytes;
  // A host is the first process of its PID namespace, which ignores the
  // signals it has no handler for (abort's SIGABRT, RLIMIT_CPU's SIGXCPU):
  // its handlers record the signal here and exit with 128 + its number.
  std::atomic<std::int32_t> fatal_signal;
  char message[1024];                     // an exception's text, a load error
};
static_assert(sizeof(HostControl) <= kControlBytes);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free && std::atomic<std::int64_t>::is_always_lock_free);

// Futex wait/wake on a word in shared memory (not FUTEX_PRIVATE: the other
// side is another process). wait returns after a wake, a timeout
// (timeout_ns > 0) or a spurious wake-up; callers re-check the word.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::int64_t timeout_ns);
void futex_wake(std::atomic<std::uint32_t>& word);

}  // namespace kevo::native::judge
