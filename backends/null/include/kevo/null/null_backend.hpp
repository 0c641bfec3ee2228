// A backend that judges nothing. Its verdict is computed from the candidate's
// parameter block, so it is instant and reproducible:
//  * with a table (JSON: {"<task>": {"<point key>": seconds, ...}}), a point's
//    speedup is table[seed point] / table[point] — the search-efficiency
//    benchmark replays exhaustive measurements this way;
//  * without one, speedup is a smooth synthetic landscape over the point's
//    value indices, seeded by the task name;
//  * a fraction of candidates (chosen by source hash) are wrong answers.
// Used by benchmarks (engine overhead) and deterministic engine tests.
#pragma once

#include "kevo/core/backend.hpp"
#include "kevo/core/strict_json.hpp"

#include <memory>
#include <string>

namespace kevo::null_backend {

struct NullOptions {
  double wrong_fraction = 0.0;   // share of candidates judged wrong_answer
  std::string table;             // path of a timing table ("" = synthetic)
  int slots = 64;                // requests it accepts at once
};

NullOptions parse_null_options(StrictObject& obj);
nlohmann::json to_json(const NullOptions&);
std::unique_ptr<Backend> make_null_backend(NullOptions options);

// The speedup the synthetic landscape gives a point (exposed for tests).
double synthetic_speedup(const Task& task, const Point& point);

}  // namespace kevo::null_backend
