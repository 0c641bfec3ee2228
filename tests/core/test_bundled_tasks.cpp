// Every task manifest shipped with kevo must load: this keeps the bundled
// tasks and the validator in step.
#include "kevo/core/task.hpp"

#include <gtest/gtest.h>

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
        ++loaded;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    }
  }
  EXPECT_GT(loaded, 0u);
}

}  // namespace
}  // namespace kevo
