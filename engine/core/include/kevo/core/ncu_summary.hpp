// ncu's raw CSV page (--csv --page raw) condensed into the short text a
// verdict's `profile` and a prompt carry: the CUDA worker's profiles
// (docs/cuda.md#profiler-feedback) and the torch judge's
// (docs/torch.md#profiler), whose raw page reaches kevo as the verdict's
// `profile_ncu_csv` (docs/command-backend.md); and the heading that says
// why a profile was taken.
#pragma once

#include <string>
#include <vector>

namespace kevo {

// v with `precision` significant digits ("162", "0.0573"), for verdict text.
std::string format_number(double v, int precision = 3);

// ncu's raw CSV page (--csv --page raw) condensed, per profiled kernel (up
// to 3): duration, DRAM and SM throughput in % of peak, achieved and
// theoretical occupancy, registers per thread, shared memory per block,
// grid and block, the top three warp-stall reasons. A CSV without the
// expected header gives a one-line explanation instead.
std::string ncu_summary(const std::string& csv);

// Rows of a CSV text (RFC 4180 quoting), for ncu_summary and its tests.
std::vector<std::vector<std::string>> parse_csv(const std::string& text);

// Why a candidate was profiled, for the "[profiled: ...]" heading of its
// profile: picked by profile.every (`every`), or asked for by an operator
// (`request`, EvalRequest::profile); "" when neither. Counting the picks is
// the backend's.
std::string profile_reason(bool picked, int every, bool asked, const std::string& request);

}  // namespace kevo
