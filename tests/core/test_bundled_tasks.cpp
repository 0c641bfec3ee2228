// Every task manifest shipped with kevo must load: this keeps the bundled
// tasks and the validator in step.
#include "kevo/core/task.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

namespace kevo {
namespace {

TEST(BundledTasks, AllLoad) {
  const std::filesystem::path root = KEVO_TEST_TASKS_DIR;
  std::size_t loaded = 0;
  for (const auto& backend : std::filesystem::directory_iterator(root)) {
    if (!backend.is_directory()) continue;
    for (const auto& dir : find_task_dirs(backend.path())) {
      SCOPED_TRACE(dir.string());
      try {
        const Task t = load_task(dir);
        EXPECT_EQ(t.name, dir.filename().string());
        EXPECT_FALSE(t.visible.empty());
        EXPECT_FALSE(t.description.empty());
        // Every CUDA task is reported against a library (docs/cuda.md#library-baselines).
        if (t.backend == "cuda") {
          EXPECT_EQ(t.baselines.count("torch"), 1u) << "no \"baselines\": {\"torch\": ...}";
        }
        if (!t.space.empty()) {
          ASSERT_TRUE(t.seed_point.has_value());
          EXPECT_TRUE(t.space.valid(*t.seed_point));
        }
        // Drawn shapes for every task, and no library beyond the runtime for
        // any candidate (docs/tasks.md#libraries).
        EXPECT_FALSE(t.draw.empty()) << "no \"shapes\": {\"draw\": ...}";
        if (!t.is_torch()) {
          EXPECT_EQ(t.libraries, runtime_libraries(t.backend));
        }
        ++loaded;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    }
  }
  EXPECT_GT(loaded, 0u);
}

std::vector<Task> bundled_tasks() {
  std::vector<Task> out;
  for (const auto& backend : std::filesystem::directory_iterator(KEVO_TEST_TASKS_DIR))
    if (backend.is_directory())
      for (const auto& dir : find_task_dirs(backend.path())) out.push_back(load_task(dir));
  return out;
}

// Drawn shapes are for correctness only, within the backend's limits: a few
// MB on the CPU (the worker also keeps copies and the reference's outputs),
// tens of MB on the GPU. Every one is a valid shape of its task, and every
// judgement sees every residue mod 4 of every drawn dimension.
TEST(BundledTasks, DrawnShapesFitTheBackendAndCoverEveryResidue) {
  for (const Task& t : bundled_tasks()) {
    SCOPED_TRACE(t.backend + "/" + t.name);
    const std::int64_t limit = t.backend == "cpu" ? std::int64_t{4} << 20 : std::int64_t{80} << 20;
    for (std::uint64_t seed = 0; seed < 500; ++seed) {
      std::map<std::string, std::set<std::int64_t>> residues;
      for (const Shape& s : draw_shapes(t, seed)) {
        std::int64_t bytes = 0;
        for (const Arg& a : t.args) {
          if (a.is_buffer()) bytes += t.elements(a, s) * static_cast<std::int64_t>(dtype_size(a.dtype));
          else ASSERT_NO_THROW(t.scalar_value(a, s)) << s.label;
        }
        ASSERT_LE(bytes, limit) << s.label;
        for (const auto& r : t.draw.free) residues[r.dim].insert(s.dims.at(r.dim) % 4);
      }
      for (const auto& r : t.draw.free) ASSERT_EQ(residues[r.dim].size(), 4u) << r.dim << " seed " << seed;
    }
  }
}

// The inputs a task's own distributions never produce: softmax far from 0
// (overflow without the max subtraction, underflow when the max starts at
// 0), layernorm far from 0 and with a variance near eps, rmsnorm with a
// mean square near eps.
TEST(BundledTasks, NormalisationTasksCarryStressTrials) {
  std::map<std::string, std::set<std::string>> want = {
      {"cpu/softmax", {"large-mean", "negative-mean"}},     {"cuda/softmax", {"large-mean", "negative-mean"}},
      {"cpu/layernorm", {"large-mean", "small-variance"}},  {"cuda/layernorm", {"large-mean", "small-variance"}},
      {"cuda/rmsnorm", {"small-scale"}},                    {"command/softmax", {"large-mean", "negative-mean"}},
      {"torch/torch_softmax", {"large-mean", "negative-mean"}}, {"torch/torch_layernorm", {"large-mean", "small-variance"}}};
  for (const Task& t : bundled_tasks()) {
    std::set<std::string> names;
    for (const StressTrial& s : t.stress) names.insert(s.name);
    if (t.torch)
      for (const auto& s : t.torch->stress) names.insert(s.name);
    const auto it = want.find(t.backend + "/" + t.name);
    EXPECT_EQ(names, it == want.end() ? std::set<std::string>{} : it->second) << t.backend << "/" << t.name;
    if (it != want.end()) want.erase(it);
  }
  EXPECT_TRUE(want.empty());
}

}  // namespace
}  // namespace kevo

namespace kevo {
namespace {

// The public copy (write_public_copy) of every bundled C-signature task
// loads as the same task with its visible shapes only: no hidden shape, no
// draw space, and none of the hidden shapes' sizes in any file of it. The
// CUDA worker's ncu child loads this copy, so that the candidate it runs
// has no hidden shape in its process (docs/cuda.md#profiler-feedback).
TEST(BundledTasks, APublicCopyHoldsNoHiddenShape) {
  const std::filesystem::path root = KEVO_TEST_TASKS_DIR;
  const auto tmp = std::filesystem::temp_directory_path() / ("kevo-public-copy-" + std::to_string(::getpid()));
  std::size_t copied = 0;
  for (const char* backend : {"cpu", "cuda"})
    for (const auto& dir : find_task_dirs(root / backend)) {
      SCOPED_TRACE(dir.string());
      const Task t = load_task(dir);
      ASSERT_FALSE(t.hidden.empty());
      const auto copy = tmp / t.name;
      write_public_copy(t, copy);
      const Task p = load_task(copy);
      EXPECT_TRUE(p.hidden.empty());
      EXPECT_TRUE(p.draw.empty());
      ASSERT_EQ(p.visible.size(), t.visible.size());
      for (std::size_t i = 0; i < t.visible.size(); ++i) EXPECT_EQ(p.visible[i].label, t.visible[i].label);
      EXPECT_EQ(p.args.size(), t.args.size());
      EXPECT_EQ(p.reference_source, t.reference_source);
      EXPECT_EQ(p.seed_source, t.seed_source);
      EXPECT_EQ(p.name, t.name);
      // No hidden shape's dimensions, as the manifest spells them, in any
      // file of the copy.
      for (const auto& f : std::filesystem::directory_iterator(copy)) {
        std::ifstream in(f.path());
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (f.path().filename() == "task.json") text = nlohmann::json::parse(text).dump();   // compact, as h.dump()
        for (const auto& h : t.manifest["shapes"]["hidden"])
          EXPECT_EQ(text.find(h.dump()), std::string::npos) << f.path() << " holds " << h.dump();
        EXPECT_EQ(text.find("\"hidden\""), std::string::npos) << f.path();
      }
      ++copied;
    }
  std::filesystem::remove_all(tmp);
  EXPECT_GE(copied, 13u);
}

}  // namespace
}  // namespace kevo
