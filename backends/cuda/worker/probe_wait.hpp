// The judge's wait, after a call of the candidate's kernel host, for GPU
// work that host left running. Plain C++ (no CUDA): the probe is passed in,
// so the wait is tested without a GPU. Documented in docs/cuda.md#verdicts.
#pragma once

#include <chrono>
#include <functional>
#include <stdexcept>

namespace kevo::cuda::worker {

// What the waits below throw once the GPU work they wait for still runs at
// their limit; what the probe itself throws (a CUDA error) is not one, so a
// caller that tolerates the limit catches this and lets the rest through.
struct ProbeLimitReached : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Makes `probe` (the judge's empty round trip on the GPU) once, then again
// while the last one took longer than `quiet_ns`: the GPU time-slices
// between contexts, so a probe that found the host's work running ends when
// the judge's context gets a slice, while that work may go on in the next.
// Every probe held up counts; the first quiet one does not. `quiet_ns` 0:
// the first probe only. Returns nanoseconds from `answered` to the end of
// the last probe that counts. Throws ProbeLimitReached once a probe that
// counts ends more than `limit_seconds` after `answered`; what `probe`
// throws goes through.
double wait_until_quiet(std::chrono::steady_clock::time_point answered, double quiet_ns, double limit_seconds,
                        const std::function<void()>& probe);

// Makes `probe` until one takes no longer than `quiet_ns` (> 0), and
// returns the nanoseconds from the start of the first to the end of the
// last that took longer (0 where the first is quiet): the GPU work of
// another context that held the probes up, as after the judge's input fill
// (work the fill released, docs/verdicts.md#threat-model hole 10). Throws
// ProbeLimitReached once that passes `limit_seconds`; what `probe` throws
// goes through.
double held_up_ns(double quiet_ns, double limit_seconds, const std::function<void()>& probe);

}  // namespace kevo::cuda::worker
