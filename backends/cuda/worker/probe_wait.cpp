#include "probe_wait.hpp"

#include "kevo/core/ncu_summary.hpp"

#include <stdexcept>
#include <string>

namespace kevo::cuda::worker {

namespace {

using Clock = std::chrono::steady_clock;

// Probes from `end` on while each takes longer than `quiet_ns`; each held-up
// probe moves `end` to its own end. Returns nanoseconds from `from` to
// `end`; throws ProbeLimitReached with "... " + `after` once `end` is more
// than `limit_seconds` after `from`.
double until_quiet(Clock::time_point from, Clock::time_point end, double quiet_ns, double limit_seconds,
                   const std::function<void()>& probe, const std::string& still_ran, const char* after) {
  const auto limit = std::chrono::duration<double>(limit_seconds);
  for (;;) {
    if (end - from > limit)
      throw ProbeLimitReached("GPU work of the candidate's process " + still_ran + " " +
                               format_number(limit_seconds) + " s after " + after);
    const Clock::time_point start = Clock::now();
    probe();
    const Clock::time_point now = Clock::now();
    if (std::chrono::duration<double, std::nano>(now - start).count() <= quiet_ns) break;
    end = now;
  }
  return std::chrono::duration<double, std::nano>(end - from).count();
}

}  // namespace

double wait_until_quiet(Clock::time_point answered, double quiet_ns, double limit_seconds,
                        const std::function<void()>& probe) {
  probe();
  const Clock::time_point end = Clock::now();
  if (quiet_ns <= 0) return std::chrono::duration<double, std::nano>(end - answered).count();
  return until_quiet(answered, end, quiet_ns, limit_seconds, probe, "still ran",
                     "its answer (the judge's probes after the call kept waiting for it)");
}

double held_up_ns(double quiet_ns, double limit_seconds, const std::function<void()>& probe) {
  if (quiet_ns <= 0) throw std::logic_error("held_up_ns without a quiet threshold");
  const Clock::time_point first = Clock::now();
  return until_quiet(first, first, quiet_ns, limit_seconds, probe, "ran",
                     "the judge's input fill (the judge's probes kept waiting for it)");
}

}  // namespace kevo::cuda::worker
