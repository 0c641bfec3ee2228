// A candidate kernel and where it came from.
#pragma once

#include "kevo/core/search_space.hpp"
#include "kevo/core/verdict.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace kevo {

inline constexpr std::int64_t kNoParent = -1;

struct Candidate {
  std::uint64_t id = 0;                 // unique within a run, never reused (also across resume)
  std::uint32_t task = 0;               // index into the run's task list
  std::int64_t parent0 = kNoParent;     // first parent id
  std::int64_t parent1 = kNoParent;     // second parent id (crossover)
  std::string op;                       // operator name: "seed", "param_mutation", ...
  std::string source;                   // full source as judged
  std::uint64_t hash = 0;               // source_hashes(source).full: the dedup key
  std::uint64_t body_hash = 0;          // source_hashes(source).body: without the params block
  std::optional<Point> point;           // search-space point, when known
  std::string params_json;              // the point as JSON text ("" when none)
  std::uint64_t eval_seed = 0;          // seed of the evaluation's random inputs
  std::int64_t duplicate_of = kNoParent;
  std::string op_note;                  // operator's remark or failure reason
  std::string llm;                      // LLM request records (OperatorOutcome::llm), "" when none
  std::string profile_request;          // Proposal::profile: why an operator asked for a profile ("" none)
  Verdict verdict;

  // Seconds since the Unix epoch.
  double t_created = 0.0, t_submitted = 0.0, t_finished = 0.0;

  // Fitness for selection: speedup when correct, else 0.
  double fitness() const { return verdict.is_correct() ? verdict.speedup : 0.0; }
};

}  // namespace kevo
