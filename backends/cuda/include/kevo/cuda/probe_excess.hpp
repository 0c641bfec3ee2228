// The buckets in which the CUDA worker counts how far the judge's probe
// after each timed call came out beyond its yardstick (the worker's phases
// "probe_excess_le_2us" ... "probe_excess_above_50us", docs/cuda.md#verdicts),
// shared by the worker that counts them and the benchmark that prints them.
// Header-only: the worker links nothing of the backend.
#pragma once

#include <array>
#include <cstddef>
#include <string>

namespace kevo::cuda {

// Upper bounds (us) of every bucket but the last, which holds what is above
// the largest.
inline constexpr std::array<double, 5> kProbeExcessBoundsUs = {2, 5, 10, 20, 50};
inline constexpr std::size_t kProbeExcessBuckets = kProbeExcessBoundsUs.size() + 1;

// The bucket of an excess of `excess_us`.
inline std::size_t probe_excess_bucket(double excess_us) {
  std::size_t b = 0;
  while (b < kProbeExcessBoundsUs.size() && excess_us > kProbeExcessBoundsUs[b]) ++b;
  return b;
}

// The worker phase that counts bucket `b` (< kProbeExcessBuckets).
inline std::string probe_excess_phase(std::size_t b) {
  const bool last = b + 1 == kProbeExcessBuckets;
  const double us = kProbeExcessBoundsUs[last ? b - 1 : b];
  return std::string(last ? "probe_excess_above_" : "probe_excess_le_") + std::to_string(static_cast<int>(us)) + "us";
}

}  // namespace kevo::cuda
