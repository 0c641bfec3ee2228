// Summaries computed from a run's lineage files (`kevo report`, `kevo lineage`).
#pragma once

#include "kevo/engine/llm_summary.hpp"
#include "kevo/engine/progress.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace kevo::lineage {
class LineageReader;
}

namespace kevo::engine {

// Per task, what the search made beyond its seed (KernelBench's view: the
// seed is the reference program itself), and where wrong answers were found.
struct EvolvedRow {
  std::string task;
  std::int64_t best_id = -1;          // the best correct candidate not made by the seed operator
  double speedup = 0.0;               // its speedup over the reference (eager PyTorch for torch tasks)
  double best_ms = -1.0;
  std::int64_t wrong_visible = 0, wrong_hidden = 0, wrong_drawn = 0, wrong_other = 0;
};

// fast_p over the run's tasks (KernelBench): the share of tasks with a
// correct evolved candidate whose speedup is over p, for p in kFastP.
inline constexpr double kFastP[] = {0.0, 0.5, 0.8, 1.0, 1.5, 2.0};
struct FastP {
  std::vector<double> share;          // per threshold
  double geomean = 0.0;               // of the evolved speedups over the tasks that have one
  std::int64_t tasks = 0, correct = 0;
};
// `speedups`: per task, the evolved speedup (0: none correct).
FastP fast_p(const std::vector<double>& speedups);

struct RunReport {
  std::filesystem::path run_dir;
  std::vector<TaskRow> rows;
  std::int64_t records = 0;
  std::int64_t ranks = 0;
  std::uint64_t seed = 0;
  std::string host;
  nlohmann::json baselines;   // RUN_DIR/baselines.json (null when the run has none)
  LlmSummary llm;             // the `llm` events of every rank file (empty without LLM requests)
  std::vector<EvolvedRow> evolved;   // in rows' order
};

// fast_p and geomean over the evolved candidates (against the reference,
// and against the faster of torch eager and torch.compile where the run has
// those baselines), and the wrong answers by the kind of shape that caught
// them (visible, hidden, drawn, other checks).
std::string format_fast_p(const RunReport& r);
nlohmann::json fast_p_json(const RunReport& r);

// Reads every rank file of RUN_DIR. Throws InputError when it is not a run directory.
RunReport read_report(const std::filesystem::path& run_dir);
// The same from rank files already read (lineage::read_run_dir(run_dir)).
RunReport read_report(const std::filesystem::path& run_dir, const std::vector<lineage::LineageReader>& readers);
nlohmann::json to_json(const RunReport& r);

// Library baselines (RUN_DIR/baselines.json, written when a run starts: the
// CUDA backend's torch ones, and the tasks' source baselines judged by any
// backend; docs/cuda.md#library-baselines, docs/tasks.md#baselines). read_baselines: null when the file is
// absent; an unreadable file gives a document holding only a note.
nlohmann::json read_baselines(const std::filesystem::path& run_dir);
// The fastest library baseline of one task whose output passed the check:
// (milliseconds, name), or (-1, "") when there is none.
std::pair<double, std::string> fastest_baseline(const nlohmann::json& baselines, const std::string& task);
// Per task: the best's and the reference's median times, torch eager and
// torch.compile, one column per source baseline name, and the best's speedup over the reference and over the
// fastest library baseline; then notes (missing torch, failed or wrong
// baselines, compile times).
std::string format_baselines(const std::vector<TaskRow>& rows, const nlohmann::json& baselines);
// One line per task (and the note, if any), for the lineage's events.
std::vector<std::string> baseline_notes(const nlohmann::json& baselines);

struct AncestryStep {
  std::uint64_t id = 0;
  std::string task, op, status, params;
  double speedup = 0.0;
  std::int64_t parent0 = -1, parent1 = -1;
  std::int32_t rank = 0;
};

// The chain from `id` back to its seed, following first parents (second
// parents are listed with each step). Throws InputError for an unknown id.
std::vector<AncestryStep> ancestry(const std::filesystem::path& run_dir, std::uint64_t id);

}  // namespace kevo::engine
