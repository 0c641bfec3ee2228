// The CUDA backend without a GPU: options, the bundled task manifests, and
// every bundled source (reference and seed, with the entry adapter) compiling
// with the exact nvcc command the backend runs.
#include "kevo/cuda/cuda_backend.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/task.hpp"
#include "kevo/sandbox/runner.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using namespace kevo;

namespace {

cuda::CudaOptions parse(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  StrictObject o(j, "config.json", "/backend/cuda");
  return cuda::parse_cuda_options(o);
}

}  // namespace

TEST(CudaOptions, DefaultsAreTheCudaOnes) {
  const cuda::CudaOptions o = parse("{}");
  EXPECT_EQ(o.arch, "sm_90");
  EXPECT_EQ(o.base.flavour.name, "cuda");
  EXPECT_EQ(o.base.eval_jobs, 1);   // one timing slot per GPU
  EXPECT_EQ(o.base.limits.memory_mb, 0);
  const cpu::CpuOptions c = cuda::to_cpu_options(o);
  EXPECT_NE(std::find(c.flags.begin(), c.flags.end(), "-arch=sm_90"), c.flags.end());
  EXPECT_EQ(c.flavour.worker_request.at("floor_fraction"), 0.9);
  const nlohmann::json eff = cuda::to_json(o);
  EXPECT_EQ(eff.at("arch"), "sm_90");
  EXPECT_EQ(eff.at("roofline").at("peak_gbps"), 4800.0);
}

TEST(CudaOptions, ReadsItsKeysAndTheSharedOnes) {
  const cuda::CudaOptions o =
      parse(R"({"arch": "sm_90a", "roofline": {"peak_tflops": 990}, "eval_jobs": 2, "timing": {"min_repeats": 3}})");
  EXPECT_EQ(o.arch, "sm_90a");
  EXPECT_EQ(o.peak_tflops, 990.0);
  EXPECT_EQ(o.base.eval_jobs, 2);
  EXPECT_EQ(o.base.timing.min_repeats, 3);
  EXPECT_EQ(o.base.timing.max_repeats, 200);   // the CUDA default survives
}

TEST(CudaOptions, RejectsUnknownKeysAndBadArch) {
  EXPECT_THROW(parse(R"({"archh": "sm_90"})"), InputError);
  EXPECT_THROW(parse(R"({"arch": "hopper"})"), InputError);
  EXPECT_THROW(parse(R"({"roofline": {"peak": 1}})"), InputError);
  try {
    parse(R"({"roofline": {"peak_gbps": -1}})");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/backend/cuda/roofline/peak_gbps"), std::string::npos) << e.what();
  }
}

TEST(CudaTasks, EveryBundledTaskLoads) {
  const auto dirs = find_task_dirs(KEVO_CUDA_TASKS);
  EXPECT_GE(dirs.size(), 7u);
  for (const auto& d : dirs) {
    const Task t = load_task(d);
    EXPECT_EQ(t.backend, "cuda") << d;
    EXPECT_FALSE(t.space.empty()) << d;
    EXPECT_FALSE(t.hidden.empty()) << d;
    EXPECT_FALSE(t.bytes.empty()) << d;
    // Working sets of 16 to 256 MB at the visible shapes.
    for (const Shape& s : t.visible) {
      std::int64_t bytes = 0;
      for (const Arg& a : t.args)
        if (a.is_buffer()) bytes += t.elements(a, s) * static_cast<std::int64_t>(dtype_size(a.dtype));
      EXPECT_GE(bytes, std::int64_t{16} << 20) << t.name << " " << s.label;
      EXPECT_LE(bytes, std::int64_t{256} << 20) << t.name << " " << s.label;
    }
  }
}

// nvcc, exactly as the backend runs it, on each bundled reference and seed
// (with the entry adapter appended): CI has nvcc but no GPU.
TEST(CudaTasks, EverySourceCompilesWithTheBackendsCommand) {
  const cpu::CpuOptions c = cuda::to_cpu_options(parse("{}"));
  sandbox::Runner runner;
  struct Job {
    std::string what;
    std::uint64_t id;
  };
  std::vector<Job> running;
  std::vector<std::pair<std::string, std::string>> todo;
  for (const auto& d : find_task_dirs(KEVO_CUDA_TASKS)) {
    const Task t = load_task(d);
    todo.emplace_back(t.name + "/reference", cpu::compiled_source(t, t.reference_source));
    todo.emplace_back(t.name + "/seed", cpu::compiled_source(t, t.seed_source));
  }
  auto start = [&](const std::pair<std::string, std::string>& w) {
    sandbox::Spec s;
    s.argv = {c.compiler};
    s.argv.insert(s.argv.end(), c.flags.begin(), c.flags.end());
    s.argv.insert(s.argv.end(), c.flavour.link_flags.begin(), c.flavour.link_flags.end());
    for (const std::string& a : {std::string("-o"), std::string("kernel.so"), c.flavour.source_file}) s.argv.push_back(a);
    s.files = {{c.flavour.source_file, w.second}};
    s.scratch_base = fs::temp_directory_path();
    s.env = {std::string("PATH=") + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin")};
    s.limits.wall_seconds = 240;
    running.push_back({w.first, runner.start(std::move(s))});
  };
  std::size_t next = 0;
  int done = 0;
  while (done < static_cast<int>(todo.size())) {
    while (next < todo.size() && runner.running() < 2) start(todo[next++]);
    for (sandbox::Finished& f : runner.poll(std::chrono::milliseconds(500))) {
      ++done;
      std::string what;
      for (const auto& j : running)
        if (j.id == f.id) what = j.what;
      EXPECT_EQ(f.outcome, sandbox::Outcome::exited) << what;
      EXPECT_EQ(f.exit_code, 0) << what << ":\n" << f.output;
      EXPECT_TRUE(fs::exists(f.scratch.path() / "kernel.so")) << what;
    }
  }
}
