// Tools the CUDA worker runs on itself as a child process (compute-sanitizer
// before the protocol, ncu after a correct timing), and the condensing of
// their reports into the short texts a verdict and a prompt carry.
// Documented in docs/cuda.md (Profiler feedback, Sanitizer).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kevo::cuda::worker {

// v with `precision` significant digits ("162", "0.0573"), for verdict text.
std::string format_number(double v, int precision = 3);


struct ChildResult {
  int exit_code = -1;      // -1: killed by a signal or not started
  bool timed_out = false;
};

// Starts argv (argv[0] a path) with stdout and stderr to `log`, in its own
// process group, and waits at most `seconds`; past that the group is killed.
ChildResult run_child(const std::vector<std::string>& argv, const std::filesystem::path& log, double seconds);

// The first error blocks of a compute-sanitizer report, on one line, capped.
std::string sanitizer_summary(const std::string& report);

// ncu's raw CSV page (--csv --page raw) condensed, per profiled kernel (up
// to 3): duration, DRAM and SM throughput in % of peak, achieved and
// theoretical occupancy, registers per thread, shared memory per block,
// grid and block, the top three warp-stall reasons. A CSV without the
// expected header gives a one-line explanation instead.
std::string ncu_summary(const std::string& csv);

// Rows of a CSV text (RFC 4180 quoting), for ncu_summary and its tests.
std::vector<std::vector<std::string>> parse_csv(const std::string& text);

}  // namespace kevo::cuda::worker
