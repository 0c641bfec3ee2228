// What `kevo resume` takes over from the sessions before it
// (docs/islands.md#checkpoint-and-resume): read from every rank's lineage
// file and checkpoint before anything of the run directory is written.
#pragma once

#include "kevo/core/candidate.hpp"
#include "kevo/core/task.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <string>
#include <utility>
#include <vector>

namespace kevo::lineage {
class LineageReader;
}

namespace kevo::engine {

// What a multi-rank run migrated before a resume, from every rank file
// (docs/islands.md#checkpoint-and-resume); correct candidates only, the
// only ones populations hold.
struct MigrationHistory {
  // (id, world rank): the candidate reached that rank. From a migrant row
  // (origin_rank != rank) in rank R's file, a migration_out event to R, a
  // migration_in event in R's file (and its sender, from_rank). Nothing is
  // sent along such a pair again (nor to the origin, which has it anyway).
  std::set<std::pair<std::uint64_t, int>> reached;
  // id -> the rank that created it (the rank whose file holds its row with
  // origin_rank == rank): restored members keep their origin when they migrate.
  std::unordered_map<std::uint64_t, int> origins;
  // Ids this rank's own file holds: it never records a second row of one.
  std::unordered_set<std::uint64_t> recorded;
};
// Reads it from every rank file of the run (read_run_dir), for world rank `rank`.
MigrationHistory migration_history(const std::vector<lineage::LineageReader>& readers, int rank);

struct Prior {
  std::uint64_t base = 0;                                  // first id of this session
  std::vector<std::int64_t> spent;                         // per task: evaluations recorded
  std::vector<std::vector<Candidate>> members;             // per local task: this rank's share of the correct ones
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> seen;   // per local task: (hash, id)
  struct Lost {
    std::uint64_t id;
    std::uint32_t task;
    std::int32_t rank;
  };
  std::vector<Lost> lost;                                  // in flight at the kill, never recorded
  std::vector<std::string> llm_records;                    // every rank's `llm` events (shared budgets)
  std::int64_t old_ranks = 0;
  MigrationHistory migrations;                             // what reached which rank, and every origin
  // Every recorded candidate of this rank's tasks (task: local index), for
  // Island::replay: `here` ones in the order this island committed them.
  struct Past {
    Candidate c;
    bool here = false;
  };
  std::vector<Past> history;
  // Per local task: children in flight at a stop, recorded lost with their
  // source, to be judged again first (Island::requeue), in id order.
  std::vector<std::vector<Candidate>> requeue;

  // Nothing before (a fresh run): `tasks` tasks, `local` of them here.
  static Prior none(std::size_t tasks, std::size_t local);
};

// Reads what a resume of RUN_DIR takes over, for the rank `rank` of `ranks`
// working on the tasks `local` (indices into `names`/`all_tasks`), rank
// `group_rank` of `group_size` in its task group. Reads only. Throws
// InputError naming a lineage file that cannot be read.
Prior read_prior(const std::filesystem::path& run_dir, const std::vector<std::string>& names,
                 const std::vector<std::shared_ptr<const Task>>& all_tasks, const std::vector<std::uint32_t>& local,
                 int rank, int ranks, int group_rank, int group_size, int population);

// Writes the lost rows into rank 0's file (before its writer opens it).
void record_lost(const std::filesystem::path& file, const std::vector<Prior::Lost>& lost, int flush_records);

}  // namespace kevo::engine
