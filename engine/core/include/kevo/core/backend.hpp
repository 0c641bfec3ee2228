// The interface through which the engine has candidates judged. A backend
// never runs candidate code inside the calling process: it hands it to
// sandboxed subprocesses (see backends/sandbox) or, for the null backend used
// by benchmarks, does not run it at all.
//
// Non-virtual interface: the public methods check what goes in and out and
// name the backend in every error; implementations override the do_* hooks.
#pragma once

#include "kevo/core/task.hpp"
#include "kevo/core/verdict.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace kevo {

struct EvalRequest {
  std::uint64_t id = 0;
  std::shared_ptr<const Task> task;   // must have been prepare()d
  std::string source;
  std::uint64_t seed = 0;             // seeds the random inputs of every trial
  // Non-empty: an operator asks for a profile of this candidate, and why
  // (docs/cuda.md#profiler-feedback). Backends without a profiler ignore it.
  std::string profile;
};

// The verdict of one of a task's source baselines (Task::source_baselines).
struct BaselineVerdict {
  std::string name;
  Verdict verdict;
};

struct EvalResult {
  std::uint64_t id = 0;
  Verdict verdict;
};

// What a backend needs from the machine; the scheduler reads it.
struct BackendNeeds {
  bool accelerator = false;
  int compile_slots = 1;
  int eval_slots = 1;
};

class Backend {
 public:
  explicit Backend(std::string name) : name_(std::move(name)) {}
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  const std::string& name() const { return name_; }
  BackendNeeds needs() const { return do_needs(); }

  // Checks that the task suits this backend: compiles and self-checks the
  // reference and judges the null candidates (zeros, input copy, other-seed
  // output). Throws InputError naming the task manifest when the task is
  // unusable. Blocking; call before the search starts. `checks` false
  // (`kevo eval --no-prepare`, a task known good): only what judging needs
  // (the reference built), none of those checks.
  void prepare(const Task& task, bool checks = true);

  // How many more requests the backend wants queued now to keep its compile
  // and evaluation slots busy.
  std::size_t wanted() const { return do_wanted(); }

  // Queues one candidate. Throws Failure when the id is in flight already or
  // the task was not prepared.
  void submit(EvalRequest request);

  // Makes progress, waiting at most max_wait for something to finish, and
  // returns the finished verdicts (never pending ones), their texts made
  // safe for JSON, HDF5 and terminals (sanitize_texts; also for evaluate()
  // and judge_baselines()).
  std::vector<EvalResult> poll(std::chrono::milliseconds max_wait);

  std::size_t in_flight() const { return in_flight_.size(); }

  // Stops everything in flight (kills worker process groups). Returns the ids
  // that were dropped.
  std::vector<std::uint64_t> cancel_all();

  // Judges one candidate synchronously (for `kevo eval` and tests).
  Verdict evaluate(std::shared_ptr<const Task> task, std::string source, std::uint64_t seed);
  // Judges several candidates, of one task or several (each prepared first,
  // or prepared here), as many in flight as the backend wants: all of them
  // share the compile stage, which builds them in parallel, and the judge.
  // `done(i, verdict)` is called in order as each verdict is known. Needs an
  // idle backend.
  struct Candidate {
    std::shared_ptr<const Task> task;
    std::string source;
  };
  void evaluate_all(const std::vector<Candidate>& candidates, std::uint64_t seed,
                    const std::function<void(std::size_t, Verdict)>& done);

  // Compiles and judges (correctness and timing against the reference) the
  // task's source baselines, one verdict each, in manifest order; empty when
  // the backend cannot judge sources (it says so in the report). Blocking;
  // needs a prepared task and an idle backend.
  std::vector<BaselineVerdict> judge_baselines(const Task& task, std::uint64_t seed);

  // What the backend's sandbox guarantees on this machine, as its candidates'
  // processes last reported it (docs/sandbox.md): {"missing": [...], ...};
  // null when it runs no candidate code (the null backend) or has judged
  // nothing yet.
  nlohmann::json guarantees() const { return do_guarantees(); }

 protected:
  virtual BackendNeeds do_needs() const = 0;
  virtual void do_prepare(const Task& task) = 0;
  virtual std::size_t do_wanted() const = 0;
  virtual void do_submit(EvalRequest request) = 0;
  virtual std::vector<EvalResult> do_poll(std::chrono::milliseconds max_wait) = 0;
  virtual void do_cancel_all() = 0;
  virtual std::vector<BaselineVerdict> do_judge_baselines(const Task&, std::uint64_t) { return {}; }
  virtual nlohmann::json do_guarantees() const { return nullptr; }
  // Inside do_prepare: whether the task's checks are wanted (prepare's
  // `checks`); a backend without checks to skip may ignore it.
  bool prepare_checks() const { return prepare_checks_; }

 private:
  std::string name_;
  bool prepare_checks_ = true;
  std::set<std::uint64_t> in_flight_;
  std::set<std::string> prepared_;   // task manifest paths
};

// The cores one process may use for its default job counts (compiles,
// workers, protocol threads): the host's hardware threads divided among the
// kevo ranks running on it. The islands set the number of ranks on the host
// before any backend is built; a single process keeps all cores.
void set_ranks_on_host(int ranks);
int usable_cores();

}  // namespace kevo
