// `kevo run`: validate everything, then create the run directory, search,
// and leave behind the lineage, the effective config, the best kernel of each
// task and a report. Nothing is created before the inputs are validated.
//
// Run directory layout (docs/architecture.md):
//   config.json            effective config (defaults filled in)
//   lineage/rank-0000.h5   the lineage (docs/lineage.md)
//   best/<task>.cpp        best correct kernel of each task
//   report.json            per-task summary (as `kevo report --json`)
//   baselines.json         library baselines measured when the run started (CUDA backend)
#pragma once

#include "kevo/core/task.hpp"
#include "kevo/engine/config.hpp"
#include "kevo/engine/island.hpp"
#include "kevo/engine/progress.hpp"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

namespace kevo::engine {

// Loads every task under the configured directories, checks each suits the
// backend, checks what the operators need for it (prepare_operators), then
// has the backend prepare it (reference self-check, null candidates).
// Throws InputError naming the manifest (or the operator's file).
std::vector<std::shared_ptr<const Task>> load_tasks(const Config& config);
// Has every enabled operator with a positive weight that applies to `task`
// load what it needs for it (MutationOperator::prepare); load_tasks calls
// it for every task before the backend prepares any. Throws InputError
// naming the file, the key and the operator (/operators/K).
void prepare_operators(const Config& config, const Task& task);

// The host name, for run attributes.
std::string host_name();
// Now, in Unix seconds (lineage times, checkpoints).
double unix_now();

// Helpers shared with the multi-rank run (engine/mpi).
// Writes `text` to a temporary file and renames it: readers never see half a file.
void write_file(const std::filesystem::path& path, const std::string& text);
// OUT_DIR/NAME-TIMESTAMP (with -2, -3... when taken).
std::filesystem::path default_run_dir(const Config& config);
// The text of best/<task>.cpp.
std::string best_file_text(const Task& task, const Candidate& c);

// Runs the backend's baseline hook (when it has one), has `backend` judge
// the tasks' source baselines (Task::source_baselines; tasks[name]
// ["sources"][baseline] in the file), and writes RUN_DIR/baselines.json.
// Never throws for the baselines' sake: a failing hook or judge becomes a
// note in the file, printed to `log`, and the run goes on. Returns the
// document written (null when there is neither a hook nor a source baseline
// to judge).
nlohmann::json record_baselines(const BaselineHook& hook, const std::vector<std::shared_ptr<const Task>>& tasks,
                                std::uint64_t seed, const std::filesystem::path& run_dir, std::FILE* log,
                                Backend* backend = nullptr);
// Whether any task ships source baselines (then record_baselines has work
// even without a hook).
bool has_source_baselines(const std::vector<std::shared_ptr<const Task>>& tasks);
// One source baseline's entry in baselines.json: status, times, or the error.
nlohmann::json source_baseline_record(const Task::SourceBaseline& baseline, const Verdict& verdict);

}  // namespace kevo::engine
