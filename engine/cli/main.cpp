// kevo's command line. Exit codes: 0 ok, 2 usage or input error, 1 runtime failure, 3 a run
// stopped because its LLM requests fail (docs/llm.md#failures).
#include "campaign.hpp"
#include "commands.hpp"

#include "kevo/core/text.hpp"
#include "kevo/core/error.hpp"
#include "kevo/engine/lifecycle.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <csignal>
#include <cstdio>

namespace {

std::atomic<int> g_stop{0};
kevo::engine::StopSignal g_stop_signal;   // the first stop signal and its time

extern "C" void on_stop_signal(int sig) {
  // First signal: stop proposing, let in-flight work finish, flush, exit 0.
  // Second: stop at once (still flushing what is recorded).
  g_stop_signal.note(sig);
  g_stop.fetch_add(1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kevo: evolutionary search for fast kernels"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kevo ") + KEVO_VERSION);

  kevo::app::RunArgs run_args;
  auto* run = app.add_subcommand("run", "Run a search described by a config file");
  run->add_option("config", run_args.config, "Config file (JSON, docs/config.md)")->required();
  run->add_option("--set", run_args.overrides, "Override a config key: --set budget.evaluations_per_task=50")
      ->take_all();
  run->add_option("--out", run_args.out, "Run directory (new or empty; default OUT_DIR/NAME-TIMESTAMP)");

  kevo::app::ResumeArgs resume_args;
  auto* resume = app.add_subcommand("resume", "Continue a stopped or killed run (same or another number of ranks)");
  resume->add_option("run_dir", resume_args.run_dir, "Run directory")->required();
  resume->add_option("--set", resume_args.overrides, "Override a key of the run's config: --set budget.evaluations_per_task=500")
      ->take_all();

  kevo::app::EvalArgs eval_args;
  auto* eval = app.add_subcommand("eval", "Judge candidate files against a task and print the verdicts");
  eval->add_option("task_dir", eval_args.task_dir, "Task directory (holding task.json)")->required();
  eval->add_option("candidate", eval_args.candidates,
                   "Candidate source file(s), judged by one backend; a task directory among them starts the next "
                   "task's files (TASK FILE... TASK FILE...)")
      ->required()
      ->expected(1, -1);
  eval->add_flag("--json", eval_args.json,
                 "Print the verdict as JSON (docs/verdicts.md); with several files one line each, {\"candidate\", \"verdict\"}");
  eval->add_option("--seed", eval_args.seed, "Seed of the random inputs");
  eval->add_option("--set", eval_args.overrides, "Override a backend option: --set limits.wall_seconds=5")->take_all();
  eval->add_flag("--no-prepare", eval_args.no_prepare, "Skip the task's reference and null-candidate checks");

  kevo::app::ReportArgs report_args;
  auto* report = app.add_subcommand("report", "Summarise a run: per task evaluations, verdicts, best speedup");
  report->add_option("run_dir", report_args.run_dir, "Run directory, or one lineage file (kevo merge)")->required();
  report->add_flag("--json", report_args.json, "Print JSON");

  kevo::app::LineageArgs lineage_args;
  auto* lineage = app.add_subcommand("lineage", "Print the ancestry of one candidate");
  lineage->add_option("run_dir", lineage_args.run_dir, "Run directory, or one lineage file (kevo merge)")->required();
  lineage->add_option("id", lineage_args.id, "Candidate id")->required();
  lineage->add_flag("--json", lineage_args.json, "Print JSON");

  kevo::app::MergeArgs merge_args;
  auto* merge = app.add_subcommand("merge", "Write one HDF5 file holding every rank's lineage of a run");
  merge->add_option("run_dir", merge_args.run_dir, "Run directory (also of a running or killed run)")->required();
  merge->add_option("-o,--out", merge_args.out, "Output file (default RUN_DIR/merged.h5)");
  merge->add_flag("--force", merge_args.force, "Replace an existing output file");

  kevo::app::TasksArgs tasks_args;
  auto* tasks = app.add_subcommand("tasks", "List and validate tasks");
  tasks->add_option("dir", tasks_args.dir, "A task directory or a folder of them (default: configs/tasks)");
  tasks->add_flag("--prepare", tasks_args.prepare,
                  "Also compile and check each reference and the null candidates with the task's backend");
  tasks->add_flag("--json", tasks_args.json, "Print JSON");
  tasks->add_option("--set", tasks_args.overrides, "With --prepare: a backend option, --set device=cpu")->take_all();
  kevo::app::ImportKernelBenchArgs kb_args;
  auto* kb = tasks->add_subcommand("import-kernelbench",
                                   "Write kevo torch tasks for the problems of a KernelBench level folder (docs/torch.md)");
  kb->add_option("level_dir", kb_args.level_dir, "A KernelBench level folder (KernelBench/level1, ...)")->required();
  kb->add_option("--out", kb_args.out, "Folder to write the tasks into")->required();
  kb->add_option("--python", kb_args.python, "Python with torch (2.0 or later for size overrides)");
  kb->add_option("--max-mb", kb_args.max_mb, "Largest working set kept; larger problems get smaller sizes")
      ->check(CLI::Range(1.0, 1e6));
  kb->add_option("--only", kb_args.only, "Comma-separated problem numbers or file stems");
  kevo::app::TritonSpaceArgs ts_args;
  auto* ts = tasks->add_subcommand("triton-space",
                                   "Print the search space spanning a Triton kernel's @triton.autotune configurations");
  ts->add_option("file", ts_args.file, "A Python file holding the autotuned kernel")->required();
  ts->add_option("--kernel", ts_args.kernel, "The kernel, when the file has several");
  ts->add_flag("--product", ts_args.product, "Every combination of the configurations' values (no restriction)");
  ts->add_flag("--json", ts_args.json, "Print JSON");
  ts->add_option("--python", ts_args.python, "Python 3 that runs the tool");

  auto* campaign = app.add_subcommand("campaign", "Configurations x seeds over task suites (docs/campaigns.md)");
  campaign->require_subcommand(1);
  kevo::app::CampaignPlanArgs plan_args;
  auto* plan = campaign->add_subcommand("plan", "Check a campaign file and print its cells and their cost");
  plan->add_option("file", plan_args.file, "Campaign file (JSON, docs/campaigns.md)")->required();
  plan->add_flag("--json", plan_args.json, "Print JSON");
  kevo::app::CampaignRunArgs crun_args;
  auto* crun = campaign->add_subcommand("run", "Run (or continue) a campaign's cells on this machine");
  crun->add_option("file", crun_args.file, "Campaign file")->required();
  crun->add_option("--out", crun_args.out, "Campaign directory (default OUT_DIR/NAME)");
  crun->add_option("--jobs", crun_args.jobs, "Cells at once (default: the file's local.jobs)")
      ->check(CLI::Range(1, 256));
  kevo::app::CampaignStatusArgs cstatus_args;
  auto* cstatus = campaign->add_subcommand("status", "Show which cells are done, running, cut, failed or pending");
  cstatus->add_option("dir", cstatus_args.dir, "Campaign directory")->required();
  cstatus->add_flag("--json", cstatus_args.json, "Print JSON");
  kevo::app::CampaignSbatchArgs csbatch_args;
  auto* csbatch = campaign->add_subcommand("sbatch", "Submit the cells not done yet as a Slurm job array");
  csbatch->add_option("file", csbatch_args.file, "Campaign file")->required();
  csbatch->add_option("--out", csbatch_args.out, "Campaign directory (default OUT_DIR/NAME)");
  csbatch->add_flag("--no-submit", csbatch_args.no_submit, "Write the job script and print the sbatch command only");
  kevo::app::CampaignCellArgs ccell_args;
  auto* ccell = campaign->add_subcommand("cell", "Run or resume one cell (what each Slurm array task runs)");
  ccell->add_option("dir", ccell_args.dir, "Campaign directory")->required();
  ccell->add_option("id", ccell_args.id, "Cell, as <configuration>.s<seed>")->required();
  ccell->add_option("--ranks", ccell_args.ranks, "MPI ranks (srun) for the cell's run")->check(CLI::Range(1, 4096));
  kevo::app::CampaignReportArgs creport_args;
  auto* creport = campaign->add_subcommand("report", "Write the campaign's report (Markdown, HTML, CSV, JSON)");
  creport->add_option("dir", creport_args.dir, "Campaign directory")->required();
  creport->add_option("--out", creport_args.out, "Report directory (default DIR/report)");
  creport->add_option("--seed", creport_args.seed, "Seed of the bootstrap");
  creport->add_option("--resamples", creport_args.resamples, "Bootstrap resamples")->check(CLI::Range(100, 1000000));
  creport->add_option("--python", creport_args.python, "Python with h5py, numpy and matplotlib");

  // Tools written in Python (next to the kevo executable): their options
  // are theirs (--help there), passed through as given.
  std::string tool_python = "python3";
  auto* plot = app.add_subcommand("plot", "Plots of one run: best-so-far, the best kernel's lineage, operators, speedups");
  plot->allow_extras()->prefix_command();
  plot->add_option("--python", tool_python, "Python with h5py, numpy and matplotlib");
  auto* exporter = app.add_subcommand("export", "Training data from a run's lineage (JSONL chat records)");
  exporter->allow_extras()->prefix_command();
  exporter->add_option("--python", tool_python, "Python with h5py and numpy");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGUSR1, on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);

  try {
    if (*run) return kevo::app::cmd_run(run_args, g_stop, &g_stop_signal);
    if (*resume) return kevo::app::cmd_resume(resume_args, g_stop, &g_stop_signal);
    if (*eval) return kevo::app::cmd_eval(eval_args);
    if (*report) return kevo::app::cmd_report(report_args);
    if (*lineage) return kevo::app::cmd_lineage(lineage_args);
    if (*kb) return kevo::app::cmd_import_kernelbench(kb_args);
    if (*ts) return kevo::app::cmd_triton_space(ts_args);
    if (*tasks) return kevo::app::cmd_tasks(tasks_args);
    if (*merge) return kevo::app::cmd_merge(merge_args, g_stop);
    if (*plan) return kevo::app::cmd_campaign_plan(plan_args);
    if (*crun) return kevo::app::cmd_campaign_run(crun_args, g_stop);
    if (*cstatus) return kevo::app::cmd_campaign_status(cstatus_args);
    if (*csbatch) return kevo::app::cmd_campaign_sbatch(csbatch_args);
    if (*ccell) return kevo::app::cmd_campaign_cell(ccell_args, g_stop);
    if (*creport) return kevo::app::cmd_campaign_report(creport_args);
    if (*plot) return kevo::app::run_python_tool(tool_python, "kevo_plot.py", plot->remaining());
    if (*exporter) return kevo::app::run_python_tool(tool_python, "kevo_export.py", exporter->remaining());
  } catch (const kevo::InputError& e) {
    // Messages may quote candidate or task text: safe for a terminal.
    fmt::print(stderr, "kevo: error: {}\n", kevo::sanitize_utf8(e.what(), kevo::kTerminalText));
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kevo: failure: {}\n", kevo::sanitize_utf8(e.what(), kevo::kTerminalText));
    return 1;
  }
  return 2;
}
