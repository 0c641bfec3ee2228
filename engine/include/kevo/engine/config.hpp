// The run configuration (docs/config.md). JSON, strict: unknown keys are
// rejected with their JSON pointer and the allowed names; `--set a.b=c`
// overrides apply before validation; the effective config (defaults filled
// in) is saved in the run directory and the lineage.
#pragma once

#include "kevo/core/backend.hpp"
#include "kevo/core/mutation_operator.hpp"
#include "kevo/core/shared_budget.hpp"
#include "kevo/core/strict_json.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kevo::engine {

// Plugins are built by the application (which links the backends and
// operators); the engine sees them only through their interfaces.
// Measures a backend's library baselines of the run's tasks once, when a run
// starts (the CUDA backend: torch eager and torch.compile); returns the
// document stored as RUN_DIR/baselines.json. Expected failures (no torch)
// are notes in it.
using BaselineHook =
    std::function<nlohmann::json(const std::vector<std::shared_ptr<const Task>>& tasks, std::uint64_t seed)>;

struct BuiltBackend {
  std::unique_ptr<Backend> backend;
  nlohmann::json effective;
  BaselineHook baselines;   // empty: the backend has none
};
using BackendFactory = std::function<BuiltBackend(const std::string& type, StrictObject& options)>;

struct BuiltOperator {
  std::string type;
  double weight = 1.0;
  bool enabled = true;
  std::unique_ptr<MutationOperator> op;
  nlohmann::json effective;
};
using OperatorFactory = std::function<BuiltOperator(StrictObject& spec)>;

struct Plugins {
  std::vector<std::string> backend_types;
  BackendFactory make_backend;
  OperatorFactory make_operator;
  // Top-level config sections owned by plugins (e.g. "llm", shared by the LLM
  // operators). Each is parsed before the operators, with nullptr when the
  // file has none, and returns its effective config (null to leave it out).
  std::vector<std::string> sections;
  std::function<nlohmann::json(const std::string& name, StrictObject* section, const std::filesystem::path& base)>
      parse_section;
  // Run-wide budgets of the plugins (the LLM tokens and USD), asked for after
  // the sections and operators are built; may be empty.
  std::function<std::vector<std::shared_ptr<SharedBudget>>()> shared_budgets;
  // A plugin's record of the run that a replay reproduces (the LLM reply
  // cache), asked for after the sections: backend.verdicts.mode "auto"
  // follows its mode ("off", "record" or "replay") and keeps the verdicts in
  // its `dir`. May be empty (no such record).
  struct RunRecord {
    std::string mode = "off";
    std::filesystem::path dir;
  };
  std::function<RunRecord()> run_record;
  // Lines the plugins want said at the end of a run (in every rank's lineage
  // as notes, on the console and in report.json): e.g. how many replayed
  // prompts drifted from the recorded ones. May be empty.
  std::function<std::vector<std::string>()> run_notes;
};

enum class Selection { tournament, proportional };
enum class Ordering { deterministic, arrival };
enum class ProgressMode { auto_detect, bar, lines, off };

struct Config {
  std::string source_file;                       // the config file ("" = built-in)
  std::string name = "run";
  std::uint64_t seed = 1;
  std::vector<std::filesystem::path> task_dirs;  // resolved against the config file's folder
  std::string out_dir = "runs";                  // parent of run directories (relative to cwd)

  struct Budget {
    std::int64_t evaluations_per_task = 100;     // judged candidates (duplicates and operator failures excluded)
    double wall_seconds = 0.0;                   // 0 = unlimited
    std::int64_t max_candidates_per_task = 0;    // all records incl. duplicates; 0 = 20 x evaluations
    std::int64_t stagnation = 500;               // consecutive non-judged proposals that end a task
    double stop_drain_seconds = 0.2;             // after a stop signal: in-flight work may finish this long
  } budget;

  struct Island {
    int population = 16;
    int elites = 2;
    Selection selection = Selection::tournament;
    int tournament_size = 3;
    int in_flight = 0;                           // 0 = derive from the backend's slots
    int ramp = 4;                                // slow start: one more in flight per task every `ramp` commits; 0 = off
    Ordering ordering = Ordering::deterministic;
    int inspirations = 0;                        // members offered to operators besides parents
  } island;

  // Multi-rank runs (docs/islands.md); ignored by a single rank.
  struct Islands {
    std::string topology = "ring";               // ring, bidirectional_ring, torus, random, complete, none
    int degree = 2;                              // random: out-degree k of the k-regular graph
    struct Migration {
      std::int64_t interval = 50;                // evaluations between two emigrations
      int count = 2;                             // migrants per emigration
      std::string selection = "best";            // best, tournament
      std::string replacement = "replace_worst";  // replace_worst (if better), keep
      std::string mode = "p2p";                  // p2p: one neighbour in turn; broadcast: all neighbours
    } migration;
    double stats_seconds = 0.25;                 // global statistics round period
    double poll_seconds = 0.01;                  // MPI is polled at most this often from the island loop
    double heartbeat_seconds = 30.0;             // a round not complete after this: a rank is lost
    double checkpoint_seconds = 10.0;
    std::string device_binding = "none";         // none, cuda_visible_devices, index
    int devices = 0;                             // accelerators per node (0 = one per local rank)
  } islands;

  struct Lineage {
    int flush_records = 256;
    double flush_seconds = 2.0;
  } lineage;

  struct Progress {
    ProgressMode mode = ProgressMode::auto_detect;
    double interval_seconds = 5.0;
  } progress;

  std::string backend_type = "cpu";
  std::unique_ptr<Backend> backend;
  BaselineHook baselines;                        // from the backend; empty: none
  std::vector<BuiltOperator> operators;
  std::vector<std::shared_ptr<SharedBudget>> shared_budgets;   // from Plugins::shared_budgets
  // The verdict record around the backend (backend.verdicts, engine/verdict_record.hpp).
  std::string verdicts_mode = "off";             // off, record, replay, remeasure (after "auto" is resolved)
  std::filesystem::path verdicts_dir;
  // What to say at the end of a run (the plugins' notes, the verdict record's counts).
  std::function<std::vector<std::string>()> run_notes;

  nlohmann::json effective;                      // the whole config, defaults filled in
};

// Applies "a.b.c=value" to a JSON document: the value is parsed as JSON when
// it is valid JSON, else taken as a string. Array elements are addressed by
// index ("operators.0.weight"). Throws InputError("--set", ...) on bad syntax.
void apply_override(nlohmann::json& doc, const std::string& assignment);
// An error found in a config after `overrides` were applied, told against
// what the user wrote: an error of `file` at a key an override set (or
// below it) names the override instead of the file
// (`--set llm.budget.tokens=abc: /llm/budget/tokens: expected an integer`);
// one about a parent of an overridden key (`/operators`) keeps the file and
// adds "(with --set ...)". Other errors come back unchanged.
InputError attribute_overrides(const InputError& error, const std::string& file,
                               const std::vector<std::string>& overrides);

// Parses and validates a config. `file` names it in errors and anchors
// relative task paths. Throws InputError.
Config parse_config(const nlohmann::json& doc, const std::string& file, const Plugins& plugins);
// The "islands" section alone, validated as parse_config validates it. The
// multi-rank run reads it first: its device binding must be in effect
// before parse_config builds the backend (docs/islands.md, Start-up).
Config::Islands parse_islands(const nlohmann::json& doc, const std::string& file);
Config load_config(const std::string& path, const std::vector<std::string>& overrides, const Plugins& plugins);

}  // namespace kevo::engine
