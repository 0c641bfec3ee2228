// The interface through which the engine has children made. An operator takes
// parents, the task and feedback, and returns a proposal (a full source) or a
// failure value. Synchronous operators (parameter mutation) answer at once;
// asynchronous ones (LLM calls) return nothing from begin() and deliver
// through poll(). The engine handles both the same way.
#pragma once

#include "kevo/core/candidate.hpp"
#include "kevo/core/rng.hpp"
#include "kevo/core/task.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kevo {

struct OperatorRequest {
  std::uint64_t id = 0;                      // the child's id
  const Task* task = nullptr;
  std::vector<const Candidate*> parents;     // arity() of them, best first
  std::vector<const Candidate*> inspirations;  // other good members (may be empty)
  std::string feedback;                      // parent verdict feedback
  Rng* rng = nullptr;                        // this child's own stream
  // True when the task already has a candidate whose body (source without
  // its params block) has this body hash (Candidate::body_hash) and whose
  // point is this one. Parameter operators use it to try another point
  // instead of proposing a duplicate; may be empty.
  std::function<bool(std::uint64_t body_hash, const Point& point)> known_point;
};

struct Proposal {
  std::string source;
  std::optional<Point> point;
  std::string note;
  // Non-empty: ask the backend to profile this child (when it turns out
  // correct), and why; EvalRequest::profile carries it.
  std::string profile;
};

struct OperatorOutcome {
  std::uint64_t id = 0;
  std::optional<Proposal> proposal;   // set on success
  std::string failure;                // reason when there is no proposal
  // LLM operators: a JSON array, one record per request (prompt, reply,
  // model, tokens, latency, retries, cost); "" otherwise. Goes to the lineage.
  std::string llm;
  // The same records' tallied members (LlmRequestFacts), one per record,
  // in order; empty when `llm` is, or when the operator does not give them.
  std::vector<LlmRequestFacts> llm_facts;

  static OperatorOutcome ok(std::uint64_t id, Proposal p) { return {id, std::move(p), {}, {}, {}}; }
  static OperatorOutcome failed(std::uint64_t id, std::string why) {
    return {id, std::nullopt, std::move(why), {}, {}};
  }
};

class MutationOperator {
 public:
  MutationOperator(std::string name, int arity) : name_(std::move(name)), arity_(arity) {}
  virtual ~MutationOperator() = default;
  MutationOperator(const MutationOperator&) = delete;
  MutationOperator& operator=(const MutationOperator&) = delete;

  const std::string& name() const { return name_; }
  int arity() const { return arity_; }
  virtual bool applicable(const Task& task) const = 0;
  virtual bool deterministic() const { return true; }

  // Loads what the operator needs for this task beyond its config (an LLM
  // operator: the system prompt and the knowledge of the task's backend), so
  // that a missing or unreadable file is an input error before the run
  // starts. Throws InputError naming the file, the config key and what was
  // expected. The engine calls it for every enabled operator with a positive
  // weight and every task it applies to, before any backend work
  // (engine::load_tasks). Default: nothing.
  void prepare(const Task& task) { do_prepare(task); }

  // Checks the request (parent count, task) and returns the outcome when the
  // operator is synchronous, nullopt when it will arrive through poll().
  // An exception out of do_begin other than InputError and Failure (the
  // engine's own) becomes that child's failure, with its text as the reason:
  // the parents' texts an operator reads are a candidate's to write.
  // Outcomes (of begin and poll) leave with their texts made safe: the
  // source and the LLM records valid UTF-8 without NUL (kStoredText), the
  // failure reason, note and profile reason without control bytes but
  // '\n' and '\t' (kShownText); see kevo/core/text.hpp.
  std::optional<OperatorOutcome> begin(const OperatorRequest& request);
  std::vector<OperatorOutcome> poll(std::chrono::milliseconds max_wait);
  virtual std::size_t in_flight() const { return 0; }
  // Every committed candidate of the island (in commit order, so in id order
  // when ordering is deterministic), judged or not. Operators that learn from
  // verdicts (the LLM repair operator) override it; must not throw.
  virtual void observe(const Candidate&) {}
  // Resume (`kevo resume`): the candidates this island committed in the
  // sessions before, in the order it committed them, before its first
  // proposal. An operator whose state is a function of the committed
  // candidates rebuilds it here, so that a resumed run continues from the
  // state an uninterrupted one would have. The candidates come back from the
  // lineage with id, task, op, status, speedup, hashes and point, but no
  // source, feedback or LLM records. Default: nothing (an operator whose
  // state needs more, such as the LLM repair queue, starts afresh). Must not
  // throw.
  virtual void replay(const Candidate&) {}

 protected:
  virtual std::optional<OperatorOutcome> do_begin(const OperatorRequest& request) = 0;
  virtual std::vector<OperatorOutcome> do_poll(std::chrono::milliseconds) { return {}; }
  virtual void do_prepare(const Task&) {}

 private:
  // Throws for an outcome without proposal or reason; cleans its texts.
  void check_outcome(OperatorOutcome& outcome) const;
  std::string name_;
  int arity_;
};

}  // namespace kevo
