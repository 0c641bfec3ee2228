// What a run's LLM requests did, counted from their lineage records (the
// JSON text of each `llm` event, docs/lineage.md): requests, failures by
// kind, replies that could not be used, retries, tokens and USD, per model
// and per operator. `kevo report`, report.json and the progress view count
// the same way (docs/llm.md#what-a-run-reports).
#pragma once

#include "kevo/core/candidate.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kevo::engine {

struct LlmTally {
  std::int64_t requests = 0;
  std::int64_t failures = 0;        // requests that ended without a usable answer (ok false)
  std::int64_t rejected = 0;        // answered, but the operator could not use the reply
  std::int64_t retries = 0;         // attempts after the first, summed
  std::int64_t cached = 0;          // answered from the reply cache
  std::int64_t input_tokens = 0, output_tokens = 0;
  double usd = 0.0;
  std::map<std::string, std::int64_t> failures_by_kind;   // auth, timeout, server, ...
};

struct LlmSummary {
  LlmTally total;
  std::map<std::string, LlmTally> by_model;
  std::map<std::string, LlmTally> by_operator;
  std::map<std::string, LlmTally> by_operator_model;   // "operator/model"
  bool empty() const { return total.requests == 0; }
  // One request record of a candidate made by operator `op`; records that
  // are not JSON objects are skipped.
  void add(const std::string& op, const nlohmann::json& record);
  // The same for a record's JSON text.
  void add_record(const std::string& op, std::string_view record);
  // The candidate's `llm` text (a JSON array of records, Candidate::llm).
  void add_candidate(const std::string& op, const std::string& llm_text);
  // The same from the facts its operator handed over with the text
  // (Candidate::llm_facts); the text is read when there are none.
  void add_candidate(const std::string& op, const std::string& llm_text, const std::vector<LlmRequestFacts>& facts);
};

nlohmann::json to_json(const LlmSummary& s);
// The table `kevo report` prints: one line per model and per operator.
std::string format_llm(const LlmSummary& s);
// For the progress line: "llm failed op/model F of N, ..." over the pairs
// with failures ("" when none failed).
std::string llm_failure_line(const LlmSummary& s);

}  // namespace kevo::engine
