// Whether the run's LLM requests can still succeed (docs/llm.md#failures).
// Every request that ended passes through record(). Two conditions stop the
// run, like a spent budget (drain, record, resumable), but with exit status
// 3, because the user must fix something before a resume can help:
//  * a fatal failure: one that every later request to the model would repeat
//    (a rejected key, a model the server does not have);
//  * more than `max_failure_share` of the last `window` requests of a rank
//    failed for any other reason (timeouts, 5xx after the retries, replies
//    that are not JSON, empty replies...), once the rank has ended `window`
//    requests. Budget refusals are the budget's business and do not count.
// It is a SharedBudget so that the statistics rounds carry a stop decided on
// one rank to every rank, with what decided it.
#pragma once

#include "kevo/core/shared_budget.hpp"
#include "kevo/operators/llm_client.hpp"

#include <deque>
#include <string>
#include <vector>

namespace kevo::operators::llm {

struct HealthOptions {
  double max_failure_share = 0.5;   // in (0, 1]; 1 never stops on the share
  int window = 20;                  // requests of a rank judged together (and needed before the share applies)
};

class Health final : public SharedBudget {
 public:
  static constexpr int kExitCode = 3;
  Health(HealthOptions options, std::vector<Model> models);
  // One ended request of model `model` (an index into the models).
  void record(std::size_t model, const ChatResult& r);
  // Requests and failures of this rank's window now.
  int window_requests() const { return static_cast<int>(window_.size()); }
  int window_failures() const { return failures_; }

  // SharedBudget
  std::string name() const override { return "llm health"; }
  void start_shared(int rank, int ranks) override;
  std::size_t width() const override { return 3 * static_cast<std::size_t>(ranks_); }
  void open_round(double* contribution) override;
  void close_round(const double* sums) override;
  bool exhausted() const override { return !reason_.empty(); }
  bool stop_when_exhausted() const override { return true; }
  std::string summary() const override { return reason_; }
  // Each session judges its own requests: a resumed run starts afresh.
  void restore(const std::vector<std::string_view>&) override {}
  int stop_exit_code() const override { return kExitCode; }
  std::string stop_advice(const std::string& run_dir) const override;

 private:
  void trip(std::string reason, int code, double a, double b);
  std::string fatal_reason(std::size_t model, int status, const std::string& kind, const std::string& error) const;
  std::string share_reason(int failures, int window, const std::string& where) const;

  HealthOptions options_;
  std::vector<Model> models_;
  std::deque<std::string> window_;   // the kinds of the last requests ("" = ok)
  int failures_ = 0;
  std::string last_error_;           // the latest failure, for the reason
  std::string reason_;
  // What this rank tells the others at the next round: 1 fatal (status, model
  // + 1), 2 share (failures, window).
  int code_ = 0;
  double a_ = 0.0, b_ = 0.0;
  int rank_ = 0, ranks_ = 1;
};

}  // namespace kevo::operators::llm
