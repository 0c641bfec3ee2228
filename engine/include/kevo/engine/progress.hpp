// Live progress of a run: a refreshing line on a terminal, plain periodic
// lines otherwise (batch logs), and the final per-task table.
#pragma once

#include "kevo/engine/config.hpp"
#include "kevo/engine/island.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace kevo::engine {

class ProgressView {
 public:
  ProgressView(ProgressMode mode, double interval_seconds, std::FILE* out = stderr);
  void update(const IslandSnapshot& s);   // rate-limited
  void finish(const IslandSnapshot& s);   // ends a refreshing line
  bool refreshing() const { return refreshing_; }

 private:
  std::string line(const IslandSnapshot& s) const;
  std::FILE* out_;
  bool refreshing_ = false;
  bool off_ = false;
  double interval_;
  double last_ = -1e9;
  std::size_t last_width_ = 0;
};

// One row per task, as `kevo run` prints at the end and `kevo report` prints.
struct TaskRow {
  std::string task;
  std::int64_t candidates = 0;
  std::int64_t evaluations = 0;
  std::array<std::int64_t, kStatusCount> status{};
  std::int64_t best_id = -1;
  double best_speedup = 0.0;
  std::string best_params;
  double best_ms = -1.0, ref_ms = -1.0;   // the best's median times (from its verdict); -1: unknown
};

std::string format_table(const std::vector<TaskRow>& rows);
nlohmann::json rows_to_json(const std::vector<TaskRow>& rows);
// A candidate's parameters text (a lineage `params` text) as JSON: null when
// empty, the text itself as a string when it is not JSON (a lineage file
// another tool wrote).
nlohmann::json params_to_json(const std::string& text);
std::vector<TaskRow> rows_from_snapshot(const IslandSnapshot& s);

}  // namespace kevo::engine
