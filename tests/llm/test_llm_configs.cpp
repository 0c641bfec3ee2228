// The bundled LLM configs validate as a run validates them before it creates
// anything: every key accepted by the parsers (config, llm section,
// operators, backend), and every enabled LLM operator finds the prompts and
// knowledge of every task's backend (engine::prepare_operators). Neither a
// model nor a GPU is needed: the probe is off and the backend prepares
// nothing here.
#include "kevo/app/plugins.hpp"
#include "kevo/core/task.hpp"
#include "kevo/engine/config.hpp"
#include "kevo/engine/run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace kevo {
namespace {
namespace fs = std::filesystem;

const fs::path kSource = KEVO_SOURCE_DIR;

// Loads the config and checks the operators' files for each of its tasks;
// returns the config for further checks.
engine::Config validate(const std::string& rel, const engine::Plugins& plugins,
                        const std::vector<std::string>& sets = {"llm.probe=false"}) {
  engine::Config c = engine::load_config((kSource / rel).string(), sets, plugins);
  std::size_t tasks = 0;
  for (const auto& dir : c.task_dirs)
    for (const auto& tdir : find_task_dirs(dir)) {
      const Task t = load_task(tdir);
      EXPECT_EQ(t.backend, c.backend_type) << t.manifest_path;
      engine::prepare_operators(c, t);
      ++tasks;
    }
  EXPECT_GT(tasks, 0u) << rel;
  return c;
}

std::set<std::string> enabled_types(const engine::Config& c) {
  std::set<std::string> s;
  for (const auto& op : c.operators)
    if (op.enabled && op.weight > 0) s.insert(op.type);
  return s;
}

TEST(LlmConfigs, TheCpuLlmConfigValidates) {
  const engine::Config c = validate("configs/llm.json", app::builtin_plugins({"cpu", "null"}));
  EXPECT_EQ(c.backend_type, "cpu");
  EXPECT_TRUE(enabled_types(c).count("llm_rewrite"));
}

TEST(LlmConfigs, TheCudaLlmConfigValidatesWithEveryLlmOperatorOn) {
  const engine::Plugins plugins = app::builtin_plugins();
  if (std::find(plugins.backend_types.begin(), plugins.backend_types.end(), "cuda") == plugins.backend_types.end())
    GTEST_SKIP() << "this kevo has no CUDA backend (built without the CUDA toolkit)";
  const engine::Config c = validate("configs/llm-cuda.json", plugins);
  EXPECT_EQ(c.backend_type, "cuda");
  const auto on = enabled_types(c);
  for (const char* type : {"llm_rewrite", "llm_diff", "llm_crossover", "llm_fix", "llm_analyst"})
    EXPECT_TRUE(on.count(type)) << type << " is not on in configs/llm-cuda.json";
  // wgmma, which the bf16 GEMM's description invites, needs sm_90a.
  EXPECT_EQ(c.effective["backend"]["cuda"].value("arch", ""), "sm_90a") << c.effective["backend"].dump();
}

// Whether the Python the torch tests use imports torch (and sees a GPU).
bool python_has(const std::string& check) {
  const std::string cmd = std::string(KEVO_TEST_PYTHON) + " -c \"import sys, torch; sys.exit(0 if " + check +
                          " else 1)\" > /dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

TEST(LlmConfigs, TheTorchLlmConfigValidatesWithEveryLlmOperatorOn) {
  if (!python_has("True")) GTEST_SKIP() << KEVO_TEST_PYTHON << " does not import torch";
  const engine::Config c =
      validate("configs/llm-torch.json", app::builtin_plugins(),
               {"llm.probe=false", std::string("backend.torch.python=") + KEVO_TEST_PYTHON});
  EXPECT_EQ(c.backend_type, "torch");
  EXPECT_EQ(c.effective["backend"]["torch"].value("device", ""), "cpu");
  const auto on = enabled_types(c);
  for (const char* type : {"llm_rewrite", "llm_diff", "llm_crossover", "llm_fix", "llm_analyst"})
    EXPECT_TRUE(on.count(type)) << type << " is not on in configs/llm-torch.json";
}

// The GPU config: on a machine without a GPU the backend refuses "cuda", so
// the rest of it is checked with the device switched to the CPU.
TEST(LlmConfigs, TheKernelBenchConfigValidates) {
  if (!python_has("True")) GTEST_SKIP() << KEVO_TEST_PYTHON << " does not import torch";
  std::vector<std::string> sets = {"llm.probe=false", std::string("backend.torch.python=") + KEVO_TEST_PYTHON};
  const bool gpu = python_has("torch.cuda.is_available()");
  if (!gpu) sets.push_back("backend.torch.device=cpu");
  const engine::Config c = validate("configs/kernelbench.json", app::builtin_plugins(), sets);
  const auto& torch = c.effective["backend"]["torch"];
  EXPECT_EQ(torch.value("device", ""), gpu ? "cuda" : "cpu");
  EXPECT_EQ(torch.value("arch", ""), "9.0a");
  EXPECT_EQ(torch["roofline"].value("peak_gflops", 0.0), 67000.0);
  EXPECT_EQ(torch["roofline"].value("peak_gbps", 0.0), 4800.0);
  const auto on = enabled_types(c);
  for (const char* type : {"llm_rewrite", "llm_diff", "llm_crossover", "llm_fix", "llm_analyst"})
    EXPECT_TRUE(on.count(type)) << type << " is not on in configs/kernelbench.json";
  EXPECT_FALSE(on.count("param_mutation")) << "torch tasks have no search space";
}

}  // namespace
}  // namespace kevo
