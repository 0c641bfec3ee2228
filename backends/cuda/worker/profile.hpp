// Tools the CUDA worker runs on itself as a child process (compute-sanitizer
// before the protocol, ncu after a correct timing), and the condensing of
// their reports into the short texts a verdict and a prompt carry.
// Documented in docs/cuda.md (Profiler feedback, Sanitizer).
#pragma once

#include "kevo/core/ncu_summary.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace kevo::cuda::worker {

// format_number, ncu_summary and parse_csv are kevo core's (the torch
// judge's profiles are condensed by the same code: kevo/core/ncu_summary.hpp).
using kevo::format_number;
using kevo::ncu_summary;
using kevo::parse_csv;

struct ChildResult {
  int exit_code = -1;      // -1: killed by a signal or not started
  bool timed_out = false;
};

// Starts argv (argv[0] a path) with stdout and stderr to `log`, in its own
// process group, and waits at most `seconds`; past that the group is killed.
ChildResult run_child(const std::vector<std::string>& argv, const std::filesystem::path& log, double seconds);

// The first error blocks of a compute-sanitizer report, on one line, capped.
std::string sanitizer_summary(const std::string& report);

// The profile of a candidate whose ncu child failed: kevo's own words for
// what it recognises in ncu's console (the counters not open to the user,
// no kernel profiled, the process's error), never the console's text,
// which the candidate's process writes to.
std::string ncu_failure(bool timed_out, int exit_code, const std::string& console);

}  // namespace kevo::cuda::worker
