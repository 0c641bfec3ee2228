// A run-wide budget that a plugin spends (the LLM operators' tokens and USD)
// and that the ranks of a multi-rank run share. The engine knows nothing of
// what is counted: it sums each rank's contribution in the non-blocking
// statistics rounds (engine/mpi/network.cpp) and hands the sum back, and it
// stops the run when the budget says it is spent and asks for a stop. The
// plugin decides how much this rank may spend between two rounds.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kevo {

class SharedBudget {
 public:
  virtual ~SharedBudget() = default;

  // "llm": names the budget in stop reasons and the lineage.
  virtual std::string name() const = 0;

  // Multi-rank runs only, before the first round: this rank's place.
  virtual void start_shared(int rank, int ranks) = 0;
  // How many doubles this rank contributes to a round (fixed for a run; may
  // depend on the rank count given to start_shared).
  virtual std::size_t width() const = 0;
  // A round starts: writes width() values, which the engine sums over every
  // rank. Until close_round() the budget must not grant anything new (what
  // it contributed is what it may have spent).
  virtual void open_round(double* contribution) = 0;
  // The round completed: the sums of every rank's contribution.
  virtual void close_round(const double* sums) = 0;

  // A request did not fit in what the whole run has left: the budget is spent.
  virtual bool exhausted() const = 0;
  // Whether the run should stop when it is spent (else it goes on without
  // whatever needs the budget).
  virtual bool stop_when_exhausted() const = 0;
  // One line for the lineage and the console: what was spent of what.
  virtual std::string summary() const = 0;
  // Non-empty: the budget stopped the run because of an error, not because
  // it was spent (the LLM budget: a replay missed a recorded reply). The run
  // stops as for a spent budget (drained, checkpointed, resumable) and exits
  // non-zero with this message. Implies exhausted() and stop_when_exhausted().
  virtual std::string failure() const { return {}; }

  // Resume: the plugin's lineage records of the sessions before (for the
  // LLM budget the text of every `llm` event); called on every rank with the
  // records of every rank, before start_shared.
  virtual void restore(const std::vector<std::string_view>& records) = 0;

  // The exit status of a run this budget stopped: 0 for a limit reached as
  // planned (the LLM tokens), non-zero for a stop that needs the user to fix
  // something first (the LLM health: 3, docs/llm.md#failures).
  virtual int stop_exit_code() const { return 0; }
  // What the user does next, for the console line after the stop; `run_dir`
  // for the resume command.
  virtual std::string stop_advice(const std::string& run_dir) const {
    return "continue with `kevo resume " + run_dir + "`";
  }
};

// The budget that stopped the run (the first spent one that stops), or null.
inline const SharedBudget* stopping_budget(const std::vector<std::shared_ptr<SharedBudget>>& budgets) {
  for (const auto& b : budgets)
    if (b && b->exhausted() && b->stop_when_exhausted()) return b.get();
  return nullptr;
}

// The exit status of a run that ended with these budgets: the highest of
// those that stop it (0 when none does).
inline int stop_exit_code(const std::vector<std::shared_ptr<SharedBudget>>& budgets) {
  int code = 0;
  for (const auto& b : budgets)
    if (b && b->exhausted() && b->stop_when_exhausted() && b->stop_exit_code() > code) code = b->stop_exit_code();
  return code;
}

// The console advice after a budget stop ("" when none stopped the run).
inline std::string stop_advice(const std::vector<std::shared_ptr<SharedBudget>>& budgets, const std::string& run_dir) {
  const SharedBudget* b = stopping_budget(budgets);
  return b ? b->stop_advice(run_dir) : std::string();
}

}  // namespace kevo
