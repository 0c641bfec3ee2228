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
};

struct CampaignCell {
  std::string id;                  // "<configuration>.s<seed>"
  std::string configuration;
  std::uint64_t seed = 1;
  std::vector<std::string> overrides;   // everything passed to `kevo run` with --set
  std::string run_dir;             // relative to the campaign directory: cells/<id>
};

struct Campaign {
  std::string file;                // the campaign file as given
  std::string name;
  std::filesystem::path base_config;   // absolute
  std::vector<std::filesystem::path> tasks;   // absolute; empty: the base config's
  std::vector<CampaignConfiguration> configurations;
  std::vector<std::uint64_t> seeds;
  std::int64_t evaluations_per_task = 0;   // 0: the base config's
  double wall_seconds = 0.0;               // 0: the base config's
  double llm_usd = 0.0;                    // 0: the base config's
  int jobs = 1;                            // cells at once on this machine
  std::string out_dir = "campaigns";       // parent of DIR (relative to the working directory)
  std::vector<CampaignCell> cells;

  // What DIR/campaign.json holds (the contract with the report).
  nlohmann::json to_json() const;
};

// Reads and checks a campaign file: the file itself strictly (unknown keys,
// empty lists, zero budgets, missing suites), then every cell's config with
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
int cmd_campaign_report(const CampaignReportArgs& args);

// Runs `python SCRIPT ARGS...` for a tool written in Python that is
// installed next to the kevo executable (kevo_campaign_report.py,
// kevo_plot.py, kevo_export.py) and returns its exit code.
int run_python_tool(const std::string& python, const std::string& script, const std::vector<std::string>& args);

}  // namespace kevo::app
