// Simulated searches on a measured timing table, for the search-efficiency
// benchmark. Evolution runs the real engine (kevo::engine::Island with the
// real parameter operators) against the null backend replaying the table, so
// what is measured is the engine's own search behaviour, not a model of it.
// Random search draws valid points without replacement.
#pragma once

#include "measure.hpp"

#include "kevo/core/task.hpp"
#include "kevo/engine/config.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kevo::bench {

// One task's table as the searches see it.
struct Landscape {
  std::shared_ptr<const Task> task;
  std::vector<std::string> keys;            // timed (correct) points: what random search draws from
  std::map<std::string, double> seconds;    // key -> time
  std::string best_key;
  double best = 0.0;                        // exhaustive best time (s)
  double target = 0.0;                      // (1 + tolerance) x best: a point at or below it qualifies
  double seed_time = 1.0;                   // time of the seed point (the null backend's speedup base)
  std::size_t qualifying = 0;               // m: points at or below target
  std::size_t space_size = 0;               // valid points, including incorrect ones

  std::size_t n() const { return keys.size(); }
  // Expected draws of random search without replacement until the first of
  // m qualifying points among n: (n + 1) / (m + 1).
  double expected_random() const { return (static_cast<double>(n()) + 1.0) / (static_cast<double>(qualifying) + 1.0); }
};

// Throws Failure when the table has no timed point for the task.
Landscape make_landscape(std::shared_ptr<const Task> task, const TaskTable& table, double tolerance);

// What the evolution runs share.
struct SimContext {
  nlohmann::json base;            // the run config document (configs/quickstart.json or --config)
  std::string config_file;        // names it in errors
  std::filesystem::path table;    // the table file the null backend replays
  int in_flight = 8;              // island.in_flight unless an override sets it
};

struct EvolutionRun {
  std::optional<std::int64_t> evaluations;   // judged candidates up to and including the first hit; nullopt: none
  std::int64_t judged = 0;                   // judged candidates committed in all
  std::int64_t candidates = 0;               // all records (duplicates, operator failures included)
};

// The config document of one simulated run: the base with the task, the null
// backend on the table, a budget of the whole space, then `overrides`
// ("island.population=8"; "operators.<type>.key" addresses the first operator
// of that type).
nlohmann::json run_document(const SimContext& ctx, const Landscape& land, std::uint64_t seed,
                            const std::vector<std::string>& overrides);

// The effective config of run_document(ctx, land, 1, overrides) (every
// default filled in), as parse_config reports it; throws InputError for a
// bad key or value, so it also validates overrides before long runs.
nlohmann::json effective_config(const SimContext& ctx, const Landscape& land,
                                const std::vector<std::string>& overrides = {});

// Runs the island until the first judged candidate at or below the target.
// With `trace`, every committed candidate is printed there (id, operator,
// parents, status, time relative to the best, point).
EvolutionRun run_evolution(const SimContext& ctx, const Landscape& land, std::uint64_t seed,
                           const std::vector<std::string>& overrides, std::ostream* trace = nullptr);

// Draws (without replacement) until the first qualifying point; returns the
// number of draws.
std::int64_t run_random(const Landscape& land, std::uint64_t seed);

// "operators.param_mutation.rate=0.5" -> "operators.0.rate=0.5" for `doc`;
// other assignments unchanged. Throws InputError for an unknown operator type.
std::string resolve_override(const nlohmann::json& doc, const std::string& assignment);

// The current value at a dotted key of `doc` (after resolve_override), as
// text; "" when absent.
std::string value_at(const nlohmann::json& doc, const std::string& dotted_key);

struct Summary {
  double mean = 0.0, median = 0.0, min = 0.0, max = 0.0, sem = 0.0;   // sem: standard error of the mean
};
Summary summarise(std::vector<double> values);

}  // namespace kevo::bench
