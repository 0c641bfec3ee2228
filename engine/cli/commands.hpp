// The subcommands of `kevo`.
#pragma once

#include "kevo/engine/lifecycle.hpp"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace kevo::app {

struct RunArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::string out;
};
struct ResumeArgs {
  std::string run_dir;
  std::vector<std::string> overrides;
};
struct EvalArgs {
  std::string task_dir;
  std::vector<std::string> candidates;   // one or more files, judged in turn by one backend
  bool json = false;
  std::uint64_t seed = 1;
  std::vector<std::string> overrides;
  bool no_prepare = false;
};
struct ReportArgs {
  std::string run_dir;
  bool json = false;
};
struct LineageArgs {
  std::string run_dir;
  std::uint64_t id = 0;
  bool json = false;
};
struct MergeArgs {
  std::string run_dir;
  std::string out;   // default RUN_DIR/merged.h5
  bool force = false;
};
struct TasksArgs {
  std::string dir = "configs/tasks";
  bool prepare = false;
  bool json = false;
  std::vector<std::string> overrides;   // backend options for --prepare
};
// kevo tasks import-kernelbench LEVEL_DIR --out DIR (docs/torch.md#kernelbench)
struct ImportKernelBenchArgs {
  std::string level_dir, out;
  std::string python = "python3";
  double max_mb = 256;
  std::string only;
  int stdout_fd = -1;   // where the importer's report goes (-1: kevo's stdout)
};
int cmd_import_kernelbench(const ImportKernelBenchArgs& args);

// kevo tasks triton-space FILE: a Triton kernel's @triton.autotune
// configurations as a torch task's search space (docs/torch.md#search-space).
struct TritonSpaceArgs {
  std::string file, kernel;
  std::string python = "python3";
  bool product = false;
  bool json = false;
};
int cmd_triton_space(const TritonSpaceArgs& args);

int cmd_run(const RunArgs& args, const std::atomic<int>& stop, const engine::StopSignal* stop_signal = nullptr);
int cmd_resume(const ResumeArgs& args, const std::atomic<int>& stop, const engine::StopSignal* stop_signal = nullptr);
int cmd_eval(const EvalArgs& args);
int cmd_report(const ReportArgs& args);
int cmd_lineage(const LineageArgs& args);
int cmd_tasks(const TasksArgs& args);
int cmd_merge(const MergeArgs& args, const std::atomic<int>& stop);

}  // namespace kevo::app
