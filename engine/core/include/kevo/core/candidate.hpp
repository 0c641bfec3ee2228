// A candidate kernel and where it came from.
#pragma once

#include "kevo/core/search_space.hpp"
#include "kevo/core/verdict.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kevo {

inline constexpr std::int64_t kNoParent = -1;

// What a report tallies of one LLM request record: its members of these
// names (cost_usd as usd), read as a record's reader would read them. An
// LLM operator hands them over beside the records it wrote, so that the
// island's tally does not parse its own text again; a candidate read back
// from a lineage file has none, and its records are read instead.
struct LlmRequestFacts {
  std::string model = "?";
  std::int64_t retries = 0, input_tokens = 0, output_tokens = 0, http_status = 0;
  double usd = 0.0;
  bool cached = false, rejected = false, ok = false;
  std::string failure;   // "" when none
};

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
  std::vector<LlmRequestFacts> llm_facts;   // OperatorOutcome::llm_facts (in memory only, never written)
  std::string profile_request;          // Proposal::profile: why an operator asked for a profile ("" none)
  Verdict verdict;

  // Seconds since the Unix epoch.
  double t_created = 0.0, t_submitted = 0.0, t_finished = 0.0;

  // Fitness for selection: speedup when correct, else 0.
  double fitness() const { return verdict.is_correct() ? verdict.speedup : 0.0; }
};

}  // namespace kevo
