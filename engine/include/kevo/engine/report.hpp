// Summaries computed from a run's lineage files (`kevo report`, `kevo lineage`).
#pragma once

#include "kevo/engine/progress.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <vector>

namespace kevo::engine {

struct RunReport {
  std::filesystem::path run_dir;
  std::vector<TaskRow> rows;
  std::int64_t records = 0;
  std::int64_t ranks = 0;
  std::uint64_t seed = 0;
  std::string host;
};

// Reads every rank file of RUN_DIR. Throws InputError when it is not a run directory.
RunReport read_report(const std::filesystem::path& run_dir);
nlohmann::json to_json(const RunReport& r);

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
