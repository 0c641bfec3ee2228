// One island: a steady-state evolutionary search over one or more tasks on
// one rank. There is no generation barrier: children are proposed while
// others are being judged, enough of them to keep the backend's slots busy.
//
// Determinism. Every candidate has a run-wide id and its own random stream
// (Rng::derive(seed, id)). In "deterministic" ordering, verdicts are
// committed to the populations strictly in id order, and child k is proposed
// right after the commit that leaves k - in_flight ids outstanding, so the
// population a child is drawn from depends only on the seed and the verdicts
// before it — not on how fast the backend happened to be. With operators
// that are deterministic and a backend whose verdicts are (the null backend,
// or replayed timings) the sequence of candidates is identical run to run.
// "arrival" ordering commits verdicts as they come, for throughput.
#pragma once

#include "kevo/core/backend.hpp"
#include "kevo/core/candidate.hpp"
#include "kevo/engine/config.hpp"
#include "kevo/engine/llm_summary.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kevo::engine {

// Where committed candidates go (the HDF5 lineage in a run; a vector in tests).
class LineageSink {
 public:
  virtual ~LineageSink() = default;
  virtual void record(const Candidate& c) = 0;
  // The same for a candidate the caller is done with: a sink may keep it
  // instead of copying it.
  virtual void record_moved(Candidate&& c) { record(c); }
  virtual void tick() {}     // called often; flushes on its own policy
  virtual void flush() {}
  // A candidate created on another rank (a migrant): it keeps its id, origin
  // rank and parents. Default: recorded like any other.
  virtual void record_migrant(const Candidate& c, int origin_rank) {
    (void)origin_rank;
    record(c);
  }
  // Run events (migration, checkpoint, resume); sinks that keep no events ignore them.
  enum class EventKind { migration_in, migration_out, checkpoint, resume, note };
  virtual void event(EventKind kind, std::int64_t id, int from_rank, int to_rank, const std::string& text) {
    (void)kind, (void)id, (void)from_rank, (void)to_rank, (void)text;
  }
  // How the session ended (the text of the `stop` event a closing sink writes).
  virtual void end(const std::string& text) { (void)text; }
};

class Island;

// What an island does besides searching, polled once per loop turn: in a
// multi-rank run, migration, global statistics and budgets, fault detection
// (engine/mpi). Returns a stop level like the `stop` counter: 0 go on,
// 1 stop proposing and drain, 2 stop at once.
class IslandHook {
 public:
  virtual ~IslandHook() = default;
  virtual int poll(Island& island) = 0;
};

struct TaskProgress {
  std::string name;
  std::int64_t candidates = 0;    // records committed (all statuses)
  std::int64_t evaluations = 0;   // judged and committed
  std::array<std::int64_t, kStatusCount> status{};
  std::int64_t best_id = -1;
  double best_speedup = 0.0;
  std::string best_params;
  bool done = false;
  std::string done_reason;
};

struct IslandSnapshot {
  double elapsed_seconds = 0.0;
  std::int64_t committed = 0;
  std::int64_t evaluations = 0;
  std::int64_t in_flight = 0;
  std::array<std::int64_t, kStatusCount> status{};
  std::vector<TaskProgress> tasks;
  int ranks = 1;                  // ranks alive (a multi-rank run's global view)
  LlmSummary llm;                 // LLM requests of the committed candidates (this rank's, also in the global view)
};

struct IslandOptions {
  std::uint64_t seed = 1;
  Config::Budget budget;
  Config::Island island;
  std::uint64_t first_id = 0;      // ids start here (resume never reuses ids)
  double drain_seconds = 30.0;     // after the wall-clock budget, how long in-flight work may finish
  // After a stop request (a signal, a shared budget, another rank's stop):
  // how long in-flight work may finish before it is killed and recorded lost.
  double stop_drain_seconds = 0.2;
  // Ids are first_id, first_id + id_stride, ...: with id_stride = ranks and
  // first_id = base + rank, ids are unique across the ranks of a run.
  std::uint64_t id_stride = 1;
  IslandHook* hook = nullptr;      // not owned
};

class Island {
 public:
  Island(IslandOptions options, std::vector<std::shared_ptr<const Task>> tasks, Backend& backend,
         std::vector<BuiltOperator>& operators, LineageSink& sink);

  // Runs until every task's budget is used, the wall budget passes, or
  // `stop` becomes true (then in-flight work drains for drain_seconds and
  // what is left is recorded as lost). `on_progress` is called after commits,
  // at most every few milliseconds.
  void run(const std::atomic<int>& stop, const std::function<void(const IslandSnapshot&)>& on_progress);

  IslandSnapshot snapshot() const;
  // The best correct candidate of each task (nullopt when none).
  std::optional<Candidate> best(std::size_t task) const;
  std::uint64_t next_id() const { return next_id_; }

  // --- For the island hook (migration, global budgets, resume). ---
  std::size_t task_count() const { return tasks_.size(); }
  const Task& task(std::size_t i) const { return *tasks_.at(i).task; }
  // Candidates sent to the backend for task i (what the evaluation budget counts).
  std::int64_t judged_submitted(std::size_t i) const { return tasks_.at(i).judged_submitted; }
  // The evaluation cap of task i (initially budget.evaluations_per_task).
  // While `final` is false, reaching the cap pauses the task instead of ending it.
  void set_cap(std::size_t i, std::int64_t cap, bool final);
  std::int64_t cap(std::size_t i) const { return tasks_.at(i).cap; }
  // `count` members of task i for emigration: the best, or by tournament,
  // among the members `eligible` accepts (every member when it is empty).
  std::vector<Candidate> emigrants(std::size_t i, int count, bool tournament, Rng& rng,
                                   const std::function<bool(const Candidate&)>& eligible = {}) const;
  // A migrant from another rank: recorded (record_migrant) and, when
  // `replace_worst` is false or it beats the weakest member of a full
  // population, inserted. Returns whether it joined the population.
  bool immigrate(std::size_t i, Candidate c, int origin_rank, bool replace_worst);
  // Resume: members of task i rebuilt from the lineage (correct ones, best
  // first), the hashes of every recorded source (so nothing is judged twice)
  // and the evaluations already spent on the task. Before run().
  void restore(std::size_t i, std::vector<Candidate> members, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& seen,
               std::int64_t spent);
  // Resume, after restore(): a candidate recorded before (c.task: this
  // island's task index). Its point counts as proposed, so parameter
  // operators do not propose it again. With `committed_here` (this island
  // committed it; called in the order it did) every operator replays it
  // too (MutationOperator::replay), rebuilding what it had learned.
  void replay(const Candidate& c, bool committed_here);
  // Resume, before run(): children of task i that were in flight when the
  // run stopped (recorded lost with their source). run() judges each again
  // first, under a new id, with its operator and parents; a `note` event
  // names the id it stands for.
  void requeue(std::size_t i, std::vector<Candidate> lost) { tasks_.at(i).requeue = std::move(lost); }
  // Ids created and not yet committed, with their task (checkpoints record them).
  std::vector<std::pair<std::uint64_t, std::uint32_t>> in_flight_ids() const;
  void record_event(LineageSink::EventKind kind, std::int64_t id, int from_rank, int to_rank, const std::string& text) {
    sink_.event(kind, id, from_rank, to_rank, text);
  }
  void flush_sink() { sink_.flush(); }

 private:
  struct TaskState {
    std::shared_ptr<const Task> task;
    // Fitness descending, then id ascending. Held by pointer: a sorted
    // insert into a population of a thousand moved a thousand candidates
    // (issue 19); it moves pointers now.
    std::vector<std::unique_ptr<const Candidate>> population;
    std::unordered_map<std::uint64_t, std::uint64_t> seen;   // source hash -> first id
    std::unordered_set<std::uint64_t> seen_points;           // variant_key(body hash, point)
    std::int64_t proposed = 0;                      // ids created for this task
    std::int64_t judged_submitted = 0;              // sent to the backend
    std::int64_t judged_committed = 0;              // judged and committed (this session)
    std::int64_t unjudged_streak = 0;               // consecutive duplicates / operator failures
    std::int64_t pending = 0;                       // created, not yet committed
    std::int64_t op_pending = 0;                    // waiting on an asynchronous operator
    std::optional<Candidate> best;
    TaskProgress progress;
    std::int64_t cap = 0;                           // evaluation cap (see set_cap)
    bool cap_final = true;
    bool restored = false;                          // population rebuilt on resume: no seed
    std::vector<Candidate> requeue;                 // see Island::requeue
  };
  enum class Where { operator_pending, backend, finished };
  struct Slot {
    Candidate c;
    Where where = Where::operator_pending;
    MutationOperator* op = nullptr;
    bool async = false;                 // outcome will arrive through poll()
    bool async_made = false;            // it came (or comes) from an asynchronous operator
  };

  double now() const;
  bool deterministic() const { return options_.island.ordering == Ordering::deterministic; }
  bool can_propose(const TaskState& t) const;
  std::optional<std::size_t> pick_task() const;
  bool propose();                                    // creates the next id; false when nothing eligible
  // A candidate the island makes itself (not an operator): `like`'s
  // operator name, parents and note, this source. Returns its id.
  std::uint64_t create_direct(std::size_t task, const Candidate& like, const std::string& source,
                              const std::optional<Point>& point);
  void create_seed(std::size_t task);
  void create_again(std::size_t task, const Candidate& lost);   // see requeue()
  void handle_outcome(OperatorOutcome outcome);
  // handle_outcome, except that under deterministic ordering outcomes are
  // accepted strictly in id order (deduplication depends on acceptance
  // order; asynchronous operators answer in any order): an outcome waits in
  // held_ until every older one has been accepted.
  void deliver(OperatorOutcome outcome);
  void accept_source(Slot& slot, std::string source, std::optional<Point> point);
  void commit_ready();
  void commit(Candidate c);
  void insert_member(TaskState& t, const Candidate& c);
  std::vector<const Candidate*> select_parents(const TaskState& t, int count, Rng& rng) const;
  void refresh_done(TaskState& t);
  bool all_done() const;

  IslandOptions options_;
  std::vector<TaskState> tasks_;
  Backend& backend_;
  std::vector<BuiltOperator>& operators_;
  LineageSink& sink_;
  std::map<std::uint64_t, Slot> slots_;              // created, not committed
  std::map<std::uint64_t, OperatorOutcome> held_;    // see deliver()
  std::uint64_t next_id_ = 0;
  std::uint64_t next_commit_ = 0;                    // deterministic ordering: next id to commit
  std::int64_t window_ = 8;
  double t_start_ = 0.0;
  bool stopping_ = false;
  std::int64_t committed_ = 0, evaluations_ = 0;
  std::array<std::int64_t, kStatusCount> status_{};
  LlmSummary llm_;                                   // of the committed candidates, for the progress view
};

}  // namespace kevo::engine
