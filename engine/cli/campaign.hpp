// `kevo campaign`: configurations x seeds of one base config over a set of
// task suites, each cell an ordinary kevo run (docs/campaigns.md). The
// file is read strictly and every cell's config is checked (as `kevo run`
// would check it) before anything is created; `run` starts the cells as
// child `kevo run` processes (resumed with `kevo resume` where a cell was
// cut), never reruns a finished one, and keeps each cell's state in
// DIR/status/<cell>.json; `status` shows them; `report` hands the
// directory to kevo_campaign_report.py.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kevo::app {

struct CampaignConfiguration {
  std::string name;
  std::string description;
  std::vector<std::string> sets;   // "key=value" overrides, in the file's order of keys
  // What its runs will see, learnt when load_campaign checked it.
  std::size_t tasks = 0;
  std::int64_t evaluations_per_task = 0;
  double wall_seconds = 0.0;       // 0: unbounded
  double llm_usd = 0.0;            // 0: no LLM budget (or no LLM)
  std::string backend;
};

struct CampaignCell {
  std::string id;                  // "<configuration>.s<seed>"
  std::string configuration;
  std::uint64_t seed = 1;
  std::vector<std::string> overrides;   // everything passed to `kevo run` with --set
  std::string run_dir;             // relative to the campaign directory: cells/<id>
};

// A KernelBench level imported for the campaign (`kevo tasks
// import-kernelbench`), once: its folder of tasks is reused while the
// stamp there (kevo-import.json) matches the level and the options.
struct KernelBenchSuite {
  std::filesystem::path level;     // absolute: the problems' folder
  std::filesystem::path out;       // absolute: where the tasks are written
  std::string only;                // "1,23": these problem numbers only
  double max_mb = 256.0;
  std::string python;              // the importer's interpreter
  std::vector<std::string> tasks;  // imported, non-degenerate (filled by load_campaign)
  std::vector<std::string> left_out;   // degenerate or refused, with the reason
};

struct Campaign {
  std::string file;                // the campaign file as given
  std::string name;
  std::filesystem::path base_config;   // absolute
  std::vector<std::filesystem::path> tasks;   // absolute; empty: the base config's
  std::vector<KernelBenchSuite> kernelbench;  // their tasks are in `tasks` too
  std::vector<CampaignConfiguration> configurations;
  std::vector<std::uint64_t> seeds;
  std::int64_t evaluations_per_task = 0;   // 0: the base config's
  double wall_seconds = 0.0;               // 0: the base config's
  double llm_usd = 0.0;                    // 0: the base config's
  int jobs = 1;                            // cells at once on this machine
  std::string out_dir = "campaigns";       // parent of DIR (relative to the working directory)
  // `kevo campaign sbatch`: what each array task asks for.
  struct Slurm {
    int ranks = 1;                 // MPI ranks (islands) per cell: srun when > 1
    int cpus_per_task = 2;
    int gpus_per_task = 0;
    std::string time = "01:00:00";
    std::string partition;
    int signal_seconds = 120;      // SIGUSR1 this long before the time limit
    int max_parallel = 0;          // array tasks at once (0: Slurm's choice)
    std::vector<std::string> extra;   // more sbatch arguments ("--account=x")
  } slurm;
  std::vector<CampaignCell> cells;

  // What DIR/campaign.json holds (the contract with the report).
  nlohmann::json to_json() const;
};

// Reads and checks a campaign file: the file itself strictly (unknown keys,
// empty lists, zero budgets, missing suites; KernelBench suites imported
// where their folder holds no import yet), then every cell's config with
// its overrides through the same parser `kevo run` uses (an override that
// names no config key fails here). Throws InputError naming the campaign
// file, the key and what was expected.
Campaign load_campaign(const std::string& path);

struct CampaignPlanArgs {
  std::string file;
  bool json = false;
};
struct CampaignRunArgs {
  std::string file;
  std::string out;       // default OUT_DIR/NAME
  int jobs = 0;          // 0: the file's local.jobs
};
struct CampaignStatusArgs {
  std::string dir;
  bool json = false;
};
struct CampaignCellArgs {
  std::string dir;
  std::string id;
  int ranks = 1;
};
struct CampaignSbatchArgs {
  std::string file;
  std::string out;
  bool no_submit = false;
};
struct CampaignReportArgs {
  std::string dir;
  std::string out;       // default DIR/report
  std::uint64_t seed = 1;
  int resamples = 2000;
  std::string python = "python3";
};

int cmd_campaign_plan(const CampaignPlanArgs& args);
// Exit codes: 0 every cell done; 1 some cell failed (the others ran);
// 4 stopped by a signal (cut cells resume on the next run).
int cmd_campaign_run(const CampaignRunArgs& args, const std::atomic<int>& stop);
int cmd_campaign_status(const CampaignStatusArgs& args);
// One cell (what a Slurm array task runs): run or resume it, its state in
// DIR/status; SIGUSR1/SIGTERM stop it resumable. Exit 0 done, 4 cut, 1 failed.
int cmd_campaign_cell(const CampaignCellArgs& args, const std::atomic<int>& stop);
// Writes DIR/slurm/campaign.sbatch (a job array, one cell per index) and
// submits the cells not done yet (--no-submit: prints the command).
int cmd_campaign_sbatch(const CampaignSbatchArgs& args);
int cmd_campaign_report(const CampaignReportArgs& args);

// Runs `python SCRIPT ARGS...` for a tool written in Python that is
// installed next to the kevo executable (kevo_campaign_report.py,
// kevo_plot.py, kevo_export.py) and returns its exit code.
// `out_fd` >= 0: the tool's stdout goes there.
int run_python_tool(const std::string& python, const std::string& script, const std::vector<std::string>& args,
                    int out_fd = -1);

}  // namespace kevo::app
