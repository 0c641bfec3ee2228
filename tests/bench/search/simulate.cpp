#include "simulate.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/rng.hpp"
#include "kevo/engine/island.hpp"
#include "kevo/null/null_backend.hpp"
#include "kevo/operators/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <ostream>

namespace kevo::bench {
namespace {

// Only the null backend: simulated runs must never compile anything.
engine::Plugins null_plugins() {
  engine::Plugins p;
  p.backend_types = {"null"};
  p.make_backend = [](const std::string&, StrictObject& options) {
    engine::BuiltBackend b;
    auto o = null_backend::parse_null_options(options);
    b.effective = null_backend::to_json(o);
    b.backend = null_backend::make_null_backend(std::move(o));
    return b;
  };
  p.make_operator = [](StrictObject& spec) {
    auto s = operators::make_operator(spec);
    engine::BuiltOperator b;
    b.type = s.type;
    b.weight = s.weight;
    b.enabled = s.enabled;
    b.op = std::move(s.op);
    b.effective = std::move(s.effective);
    return b;
  };
  return p;
}

// Counts judged candidates in commit order and stops the island at the first
// one whose replayed time qualifies.
class HitSink final : public engine::LineageSink {
 public:
  HitSink(const Landscape& land, std::atomic<int>& stop, std::ostream* trace)
      : land_(land), stop_(stop), trace_(trace) {}

  void record(const Candidate& c) override {
    ++run_.candidates;
    if (trace_ && !run_.evaluations) {
      const auto it = c.point ? land_.seconds.find(land_.task->space.key(*c.point)) : land_.seconds.end();
      *trace_ << fmt::format("  {:>4} {:<16} {:>4} {:>4} {:<10} {:>8} {}\n", c.id, c.op, c.parent0, c.parent1,
                             to_string(c.verdict.status),
                             it == land_.seconds.end() ? std::string("-") : fmt::format("{:.3f}", it->second / land_.best),
                             c.point ? land_.task->space.key(*c.point) : std::string());
    }
    const Status s = c.verdict.status;
    if (s == Status::duplicate || s == Status::invalid || s == Status::lost) return;
    ++run_.judged;
    if (run_.evaluations || !c.verdict.is_correct()) return;
    if (!c.point) throw Failure(fmt::format("simulated run: correct candidate {} has no point", c.id));
    const std::string key = land_.task->space.key(*c.point);
    const auto it = land_.seconds.find(key);
    if (it == land_.seconds.end())
      throw Failure(fmt::format("simulated run: candidate {} at {} judged correct but not in the table", c.id, key));
    // The engine selected on the null backend's speedup; it must be the
    // table's time seen from the seed point, or this benchmark would count
    // one landscape while the engine searched another.
    const double expected = land_.seed_time / it->second;
    if (std::abs(c.verdict.speedup / expected - 1.0) > 1e-9)
      throw Failure(fmt::format("simulated run: candidate {} at {}: null backend speedup {} but the table gives {}",
                                c.id, key, c.verdict.speedup, expected));
    if (it->second <= land_.target) {
      run_.evaluations = run_.judged;
      stop_.store(2);   // 2: stop at once, nothing needs to drain
    }
  }

  const EvolutionRun& result() const { return run_; }

 private:
  const Landscape& land_;
  std::atomic<int>& stop_;
  std::ostream* trace_;
  EvolutionRun run_;
};

std::vector<std::string> split_dotted(const std::string& key) {
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const auto dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

}  // namespace

Landscape make_landscape(std::shared_ptr<const Task> task, const TaskTable& table, double tolerance) {
  Landscape l;
  l.task = std::move(task);
  l.seconds = table.seconds;
  l.space_size = table.seconds.size() + table.incorrect.size();
  if (l.seconds.empty()) throw Failure(fmt::format("task '{}': the table has no timed point", l.task->name));
  l.best = std::numeric_limits<double>::infinity();
  for (const auto& [key, s] : l.seconds) {
    l.keys.push_back(key);
    if (s < l.best) {
      l.best = s;
      l.best_key = key;
    }
  }
  l.target = (1.0 + tolerance) * l.best;
  for (const auto& [key, s] : l.seconds)
    if (s <= l.target) ++l.qualifying;
  // As the null backend does: without a timed seed point speedups are 1 / time.
  if (l.task->seed_point) {
    const auto it = l.seconds.find(l.task->space.key(*l.task->seed_point));
    if (it != l.seconds.end()) l.seed_time = it->second;
  }
  return l;
}

std::string resolve_override(const nlohmann::json& doc, const std::string& assignment) {
  const std::string prefix = "operators.";
  if (assignment.rfind(prefix, 0) != 0) return assignment;
  const auto dot = assignment.find('.', prefix.size());
  const auto eq = assignment.find('=');
  if (dot == std::string::npos || (eq != std::string::npos && eq < dot)) return assignment;
  const std::string which = assignment.substr(prefix.size(), dot - prefix.size());
  if (!which.empty() && std::all_of(which.begin(), which.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return assignment;
  const auto& ops = doc.contains("operators") ? doc["operators"] : nlohmann::json();
  if (ops.is_array())
    for (std::size_t k = 0; k < ops.size(); ++k)
      if (ops[k].is_object() && ops[k].value("type", "") == which)
        return prefix + std::to_string(k) + assignment.substr(dot);
  throw InputError("--set", assignment.substr(0, eq), "an operator type listed in the config's /operators, not '" + which + "'");
}

std::string value_at(const nlohmann::json& doc, const std::string& dotted_key) {
  const nlohmann::json* node = &doc;
  for (const auto& part : split_dotted(dotted_key)) {
    if (node->is_array()) {
      std::size_t index = 0;
      try {
        index = std::stoul(part);
      } catch (const std::exception&) {
        return {};
      }
      if (index >= node->size()) return {};
      node = &(*node)[index];
    } else if (node->is_object() && node->contains(part)) {
      node = &(*node)[part];
    } else {
      return {};
    }
  }
  return node->is_string() ? node->get<std::string>() : node->dump();
}

nlohmann::json run_document(const SimContext& ctx, const Landscape& land, std::uint64_t seed,
                            const std::vector<std::string>& overrides) {
  nlohmann::json doc = ctx.base;
  doc["seed"] = seed;
  doc["tasks"] = nlohmann::json::array({land.task->dir.string()});
  doc["backend"] = {{"type", "null"}, {"null", {{"table", ctx.table.string()}}}};
  // The whole space as budget: evaluations exclude duplicates, so the run
  // must meet a qualifying point before the budget ends. Stagnation is off
  // in effect: late in a run most proposals are repeats, which is the
  // engine's cost to bear, not a reason to give up.
  doc["budget"] = {{"evaluations_per_task", std::max<std::size_t>(land.space_size, 1)},
                   {"stagnation", 1'000'000},
                   {"max_candidates_per_task", 0}};
  if (!doc.contains("island") || !doc["island"].is_object()) doc["island"] = nlohmann::json::object();
  doc["island"]["in_flight"] = ctx.in_flight;
  doc["progress"] = {{"mode", "off"}};
  for (const auto& o : overrides) engine::apply_override(doc, resolve_override(doc, o));
  return doc;
}

nlohmann::json effective_config(const SimContext& ctx, const Landscape& land,
                                const std::vector<std::string>& overrides) {
  static const engine::Plugins plugins = null_plugins();
  return engine::parse_config(run_document(ctx, land, 1, overrides), ctx.config_file, plugins).effective;
}

EvolutionRun run_evolution(const SimContext& ctx, const Landscape& land, std::uint64_t seed,
                           const std::vector<std::string>& overrides, std::ostream* trace) {
  static const engine::Plugins plugins = null_plugins();
  engine::Config cfg = engine::parse_config(run_document(ctx, land, seed, overrides), ctx.config_file, plugins);
  // The bundled tasks name the cpu backend; the island is built here from
  // the loaded task instead of through the run's task check, which would
  // (rightly, for a real run) refuse them on the null backend.
  cfg.backend->prepare(*land.task);
  engine::IslandOptions io;
  io.seed = cfg.seed;
  io.budget = cfg.budget;
  io.island = cfg.island;
  io.drain_seconds = 0.0;
  std::atomic<int> stop{0};
  HitSink sink(land, stop, trace);
  engine::Island island(io, {land.task}, *cfg.backend, cfg.operators, sink);
  island.run(stop, nullptr);
  return sink.result();
}

std::int64_t run_random(const Landscape& land, std::uint64_t seed) {
  Rng rng = Rng::derive(seed, fnv1a64(land.task->name));
  const std::size_t n = land.keys.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // A Fisher-Yates shuffle, stopped at the first qualifying draw.
  for (std::size_t k = 0; k < n; ++k) {
    std::swap(order[k], order[k + rng.below(n - k)]);
    if (land.seconds.at(land.keys[order[k]]) <= land.target) return static_cast<std::int64_t>(k + 1);
  }
  throw Failure(fmt::format("task '{}': random search found no qualifying point (empty table?)", land.task->name));
}

Summary summarise(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.min = v.front();
  s.max = v.back();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(n);
  if (n > 1) {
    double ss = 0.0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.sem = std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
  }
  return s;
}

}  // namespace kevo::bench
