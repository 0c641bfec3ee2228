#include "kevo/engine/report.hpp"

#include "kevo/core/error.hpp"
#include "kevo/lineage/reader.hpp"

#include <fmt/format.h>

#include <map>
#include <unordered_map>

namespace kevo::engine {

RunReport read_report(const std::filesystem::path& run_dir) {
  auto readers = lineage::read_run_dir(run_dir);
  RunReport r;
  r.run_dir = run_dir;
  r.ranks = static_cast<std::int64_t>(readers.size());
  std::map<std::string, TaskRow> by_task;
  std::vector<std::string> order;
  for (const auto& reader : readers) {
    r.seed = reader.run().seed;
    r.host = reader.run().host;
    const auto& names = reader.run().tasks;
    for (const auto& name : names)
      if (!by_task.count(name)) {
        by_task[name].task = name;
        order.push_back(name);
      }
    // Best rows per task: their params text is fetched in one visit below.
    std::map<std::string, const lineage::Row*> best;
    for (const auto& row : reader.rows()) {
      if (!row.written()) continue;
      // A migrant appears in its origin's file and in every receiver's; count
      // it once, where it was created.
      if (row.origin_rank != row.rank) continue;
      const std::string name = row.task < names.size() ? names[row.task] : fmt::format("task{}", row.task);
      TaskRow& t = by_task[name];
      if (t.task.empty()) {
        t.task = name;
        order.push_back(name);
      }
      ++r.records;
      ++t.candidates;
      ++t.status[static_cast<int>(row.status)];
      if (row.status != Status::duplicate && row.status != Status::invalid && row.status != Status::lost)
        ++t.evaluations;
      if (row.status == Status::correct && row.speedup > t.best_speedup) {
        t.best_speedup = row.speedup;
        t.best_id = static_cast<std::int64_t>(row.id);
        best[name] = &row;
      }
    }
    for (const auto& [name, row] : best) by_task[name].best_params = reader.text(row->params);
  }
  for (const auto& name : order) r.rows.push_back(by_task[name]);
  return r;
}

nlohmann::json to_json(const RunReport& r) {
  return {{"run_dir", r.run_dir.string()}, {"ranks", r.ranks},   {"records", r.records},
          {"seed", r.seed},                {"host", r.host},     {"tasks", rows_to_json(r.rows)}};
}

std::vector<AncestryStep> ancestry(const std::filesystem::path& run_dir, std::uint64_t id) {
  auto readers = lineage::read_run_dir(run_dir);
  struct Found {
    const lineage::LineageReader* reader;
    const lineage::Row* row;
  };
  std::unordered_map<std::uint64_t, Found> index;
  for (const auto& reader : readers)
    for (const auto& row : reader.rows())
      if (row.written() && (!index.count(row.id) || row.origin_rank == row.rank)) index[row.id] = {&reader, &row};
  if (!index.count(id))
    throw InputError(run_dir.string(), fmt::format("candidate {}", id), "the id of a candidate in this run");
  std::vector<AncestryStep> chain;
  std::int64_t cur = static_cast<std::int64_t>(id);
  while (cur >= 0 && index.count(static_cast<std::uint64_t>(cur)) && chain.size() < 100000) {
    const auto& f = index.at(static_cast<std::uint64_t>(cur));
    AncestryStep s;
    s.id = f.row->id;
    const auto& names = f.reader->run().tasks;
    s.task = f.row->task < names.size() ? names[f.row->task] : "";
    s.op = std::string(f.row->op_name());
    s.status = std::string(to_string(f.row->status));
    s.params = f.reader->text(f.row->params);
    s.speedup = f.row->speedup;
    s.parent0 = f.row->parent0;
    s.parent1 = f.row->parent1;
    s.rank = f.row->rank;
    chain.push_back(s);
    cur = f.row->parent0;
  }
  return chain;
}

}  // namespace kevo::engine
