// The island hook of a multi-rank run (docs/islands.md): asynchronous
// migration along a topology inside a task group, global statistics and
// budgets through non-blocking collectives, stop propagation and fault
// detection. Polled from the island loop; nothing in poll() blocks.
//
// Global statistics. Every stats_seconds each rank contributes its counters
// to two MPI_Iallreduce (sum and max) on a private duplicate of the world
// communicator, and tests them on later polls. A completed round gives every
// rank the same global view: evaluations per task (the budget), verdict
// counts, best speedup per task, ranks alive, the highest stop level.
//
// Global budget. budget.evaluations_per_task counts over all ranks of a run.
// After each round a rank may submit ceil(remaining / unfinished ranks) more
// evaluations of a task, so the run overshoots by at most ranks - 1.
//
// Plugin budgets (kevo::SharedBudget, the LLM tokens and USD) contribute
// their own slots to the summed vector of every round; the budget decides
// what this rank may spend from the sums (docs/llm.md#budget).
//
// Faults. A round not complete after heartbeat_seconds means a rank is gone
// (or hung): the rank stops at once, and the caller flushes, checkpoints and
// exits non-zero without MPI_Finalize. Any MPI error is treated the same way.
#pragma once

#include "kevo/engine/config.hpp"
#include "kevo/engine/island.hpp"
#include "kevo/engine/progress.hpp"
#include "kevo/engine/resume.hpp"
#include "kevo/mpi/mpi.hpp"
#include "kevo/mpi/topology.hpp"

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kevo::lineage {
class LineageReader;
}

namespace kevo::mpi {

// What the lineage of the sessions before says about migration, so that a
// resumed run migrates as if it had never stopped (docs/islands.md#migration).
// Only correct candidates migrate (populations hold nothing else), so only
// their rows count here.
// What a resumed run learns about the migrations before it (engine/resume.hpp).
using engine::MigrationHistory;
using engine::migration_history;

struct NetworkOptions {
  engine::Config::Islands islands;
  std::uint64_t seed = 1;
  std::vector<std::string> all_tasks;        // the run's task names (global task index)
  std::vector<int> local_to_global;          // island task i -> global task index
  std::int64_t budget = 0;                   // evaluations per task, whole run
  std::vector<std::int64_t> spent;           // per global task, spent before this session (resume)
  engine::ProgressView* view = nullptr;      // rank 0 of a multi-rank run: the global view
  // Run-wide budgets of plugins (LLM tokens/USD), shared in every round.
  std::vector<SharedBudget*> budgets;
  // Resume: what the sessions before migrated (empty for a fresh run).
  MigrationHistory history;
};

// Counters of the time spent in poll()/finish(), for the overhead benchmark.
struct NetworkCosts {
  double poll_seconds = 0.0;      // inside poll(): migration and statistics while searching
  double finish_seconds = 0.0;    // inside finish(): waiting for the other ranks at the end
  // CPU time (this thread inside poll(); the process over the loop): with
  // more ranks than cores, wall time inside an MPI call also counts the
  // time other ranks ran while this one yielded.
  double poll_cpu_seconds = 0.0;
  double loop_cpu_seconds = 0.0;
  std::int64_t polls = 0;
  std::int64_t rounds = 0;
  std::int64_t messages_sent = 0, messages_received = 0;
  std::int64_t migrants_sent = 0, migrants_received = 0;
};

class IslandNetwork final : public engine::IslandHook {
 public:
  // `world`: every rank of the run; `group`: the ranks sharing this rank's tasks.
  IslandNetwork(const Comm& world, const Comm& group, NetworkOptions options, const std::atomic<int>& stop);
  ~IslandNetwork() override;

  // Before Island::run: the first share of the global budget.
  void start(engine::Island& island);
  int poll(engine::Island& island) override;
  // After Island::run returned: keeps receiving migrants and taking part in
  // statistics rounds until every rank is done and every message delivered.
  // Returns false on a fault (a rank lost).
  bool finish(engine::Island& island);

  bool fault() const { return fault_; }
  const std::string& fault_message() const { return fault_message_; }
  int stop_level() const { return global_stop_; }
  const NetworkCosts& costs() const { return costs_; }
  // The last completed global view (rank-independent).
  engine::IslandSnapshot global_snapshot() const { return global_; }
  const std::vector<int>& out_neighbours() const { return out_; }

 private:
  void receive(engine::Island& island);
  void emigrate(engine::Island& island);
  void round(engine::Island& island, bool active);   // test or start a statistics round
  void apply_round(engine::Island& island);
  void fail(const std::string& why);

  const Comm& world_;
  const Comm& group_;
  Comm stats_comm_;
  NetworkOptions o_;
  const std::atomic<int>& stop_;
  int world_rank_ = 0, world_size_ = 1, group_rank_ = 0, group_size_ = 1;
  std::vector<int> group_to_world_;
  std::vector<int> out_;
  std::size_t next_out_ = 0;
  double t_start_ = 0.0;
  double cpu_start_ = 0.0;
  double last_poll_ = -1e18;

  struct Pending {
    Request request;
    std::string buffer;
  };
  std::list<Pending> sends_;
  std::int64_t sent_ = 0, received_ = 0;
  std::int64_t evals_at_last_emigration_ = 0;
  // (id, world rank) known to have reached that rank (o_.history.reached,
  // then every send and every sender of an arrival): never sent there again.
  std::set<std::pair<std::uint64_t, int>> reached_;
  std::unordered_map<std::uint64_t, int> origin_;                // id -> origin rank (restored members, migrants)
  // Ids with a row in this rank's file: from the sessions before, and the
  // migrants recorded in this one (this session's own ids come home by origin).
  std::unordered_set<std::uint64_t> recorded_;

  Request sum_req_, max_req_;
  std::vector<double> sum_in_, sum_out_, max_in_, max_out_;
  std::size_t budget_base_ = 0;                                  // first slot of the plugin budgets
  bool round_open_ = false;
  double round_started_ = 0.0, last_round_end_ = -1e9;
  std::vector<std::int64_t> my_submitted_at_round_;              // per global task
  std::vector<bool> task_done_at_round_;
  bool active_at_round_ = true;

  int global_stop_ = 0;
  bool all_inactive_ = false, delivered_ = false;
  bool fault_ = false;
  std::string fault_message_;
  engine::IslandSnapshot global_;
  NetworkCosts costs_;
};

// Candidates as bytes (MessagePack) for migration: every field a lineage row
// holds, the point and the verdict.
std::string encode_migrants(int global_task, int origin_rank, const std::vector<Candidate>& cs,
                            const std::vector<int>& origins);
struct DecodedMigrants {
  int global_task = -1;
  int from_rank = -1;
  std::vector<Candidate> candidates;
  std::vector<int> origins;
};
DecodedMigrants decode_migrants(const std::string& bytes);

}  // namespace kevo::mpi
