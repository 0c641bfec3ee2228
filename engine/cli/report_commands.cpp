// `kevo report`, `kevo lineage` and `kevo merge`: read a run's lineage files.
#include "commands.hpp"

#include "kevo/core/text.hpp"
#include "kevo/engine/progress.hpp"
#include "kevo/engine/report.hpp"
#include "kevo/lineage/merge.hpp"

#include <fmt/format.h>

namespace kevo::app {

int cmd_report(const ReportArgs& args) {
  const auto r = engine::read_report(args.run_dir);
  if (args.json) {
    // Texts from lineage files (which any tool may have written) and
    // baselines.json: invalid UTF-8 is replaced, never thrown on.
    fmt::print("{}\n", dump_json(engine::to_json(r), 2));
    return 0;
  }
  std::string out = fmt::format("run {}  ({} rank file(s), {} records, seed {}, host {})\n", r.run_dir.string(),
                                r.ranks, r.records, r.seed, r.host);
  out += engine::format_table(r.rows);
  if (!r.baselines.is_null()) out += "\n" + engine::format_baselines(r.rows, r.baselines);
  if (const std::string f = engine::format_fast_p(r); !f.empty()) out += "\n" + f;
  if (!r.llm.empty()) out += "\n" + engine::format_llm(r.llm);
  fmt::print("{}", sanitize_utf8(out, kTerminalText));
  return 0;
}

int cmd_lineage(const LineageArgs& args) {
  const auto chain = engine::ancestry(args.run_dir, args.id);
  if (args.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : chain)
      out.push_back({{"id", s.id}, {"task", s.task}, {"operator", s.op}, {"status", s.status},
                     {"speedup", s.speedup}, {"parent0", s.parent0}, {"parent1", s.parent1},
                     {"params", engine::params_to_json(s.params)},
                     {"rank", s.rank}});
    fmt::print("{}\n", dump_json(out, 2));
    return 0;
  }
  std::string text =
      fmt::format("{:>8}  {:<16} {:<14} {:>9}  {:>8}  {}\n", "id", "operator", "status", "speedup", "parent2", "parameters");
  for (const auto& s : chain)
    text += fmt::format("{:>8}  {:<16} {:<14} {:>9}  {:>8}  {}\n", s.id, s.op, s.status,
                        s.status == "correct" ? fmt::format("{:.3f}x", s.speedup) : std::string("-"),
                        s.parent1 >= 0 ? fmt::format("{}", s.parent1) : std::string(""), s.params);
  if (!chain.empty()) text += fmt::format("task {}: {} step(s) back to the seed\n", chain.front().task, chain.size() - 1);
  fmt::print("{}", sanitize_utf8(text, kTerminalText));
  return 0;
}

int cmd_merge(const MergeArgs& args, const std::atomic<int>& stop) {
  const std::filesystem::path out =
      args.out.empty() ? std::filesystem::path(args.run_dir) / "merged.h5" : std::filesystem::path(args.out);
  lineage::MergeOptions options;
  options.force = args.force;
  options.stop = &stop;
  const auto m = lineage::merge_run(args.run_dir, out, options);
  fmt::print("merged {} rank file(s): {} rows, {} events, {} texts -> {}\n", m.files, m.rows, m.events, m.texts,
             out.string());
  if (m.skipped_rows + m.skipped_events > 0)
    fmt::print("skipped {} row(s) and {} event(s) of interrupted flushes (never written)\n", m.skipped_rows,
               m.skipped_events);
  return 0;
}

}  // namespace kevo::app
