// The verdict record: a decorator around any Backend that keeps the verdicts
// of a run, so that a replay of it (the LLM reply cache's replay,
// docs/llm.md#record-and-replay) reproduces the selection decisions exactly
// on a real backend, whose measured timings differ from run to run
// (docs/config.md#determinism).
//
// One JSON file per verdict under DIR/<2 hex>/<32 hex>.json, keyed by what
// decides a verdict and nothing measured: the backend, the task (its name,
// manifest and reference source), the candidate's exact source, its
// evaluation seed and whether a profile was asked for.
//
// record:    every candidate is judged; its verdict is stored.
// replay:    a verdict found in the record is returned as recorded (timings
//            included), marked in its message, without judging; one not in
//            the record is judged and stored (counted).
// remeasure: every candidate is judged afresh (correctness rechecked, new
//            timings); verdicts whose status differs from the record's are
//            counted; the record is left as it was.
#pragma once

#include "kevo/core/backend.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kevo::engine {

enum class VerdictMode { off, record, replay, remeasure };
std::string to_string(VerdictMode m);

// The prefix of the message of a verdict taken from the record.
inline constexpr const char* kReplayedVerdict = "[replayed verdict] ";

struct VerdictCounts {
  std::int64_t replayed = 0;     // replay: taken from the record
  std::int64_t judged = 0;       // judged by the backend in this run
  std::int64_t stored = 0;       // written to the record
  std::int64_t unrecorded = 0;   // replay/remeasure: candidates the record did not hold
  std::int64_t differing = 0;    // remeasure: status differs from the recorded one
};

class VerdictRecord final : public Backend {
 public:
  VerdictRecord(std::unique_ptr<Backend> inner, VerdictMode mode, std::filesystem::path dir);
  VerdictMode mode() const { return mode_; }
  const std::filesystem::path& dir() const { return dir_; }
  const VerdictCounts& counts() const { return counts_; }
  // One line for the lineage and the console at the end of a run.
  std::string summary() const;
  // The record's key of a request (exposed for tests).
  std::string key(const EvalRequest& r) const;

 protected:
  BackendNeeds do_needs() const override { return inner_->needs(); }
  void do_prepare(const Task& task) override { inner_->prepare(task, prepare_checks()); }
  std::size_t do_wanted() const override { return inner_->wanted(); }
  void do_submit(EvalRequest request) override;
  std::vector<EvalResult> do_poll(std::chrono::milliseconds max_wait) override;
  void do_cancel_all() override;
  std::vector<BaselineVerdict> do_judge_baselines(const Task& task, std::uint64_t seed) override {
    return inner_->judge_baselines(task, seed);
  }
  nlohmann::json do_guarantees() const override { return inner_->guarantees(); }

 private:
  std::filesystem::path file(const std::string& key) const;
  std::optional<Verdict> load(const std::string& key) const;
  void store(const std::string& key, std::uint64_t id, const Verdict& v);

  std::unique_ptr<Backend> inner_;
  VerdictMode mode_;
  std::filesystem::path dir_;
  std::map<std::uint64_t, std::string> keys_;   // judged by the inner backend: id -> key
  std::vector<EvalResult> ready_;               // replayed, returned by the next poll
  VerdictCounts counts_;
};

}  // namespace kevo::engine
