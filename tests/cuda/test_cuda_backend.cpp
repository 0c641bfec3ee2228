// The CUDA backend without a GPU: options, the bundled task manifests, and
// every bundled source (reference and seed, with the entry adapter) compiling
// with the exact nvcc command the backend runs.
#include "kevo/cuda/cuda_backend.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/task.hpp"
#include "kevo/sandbox/runner.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

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
  // Several workers at once; the GPU's timing slot keeps their timings apart.
  EXPECT_EQ(o.base.eval_jobs, 8);
  // The timing budget, not the repeat count, ends a timing.
  EXPECT_EQ(o.base.timing.budget_seconds, 0.075);
  EXPECT_EQ(o.base.timing.max_repeats, 5000);
  EXPECT_EQ(o.base.limits.memory_mb, 0);
  EXPECT_EQ(o.lock_dir, "/tmp");
  EXPECT_TRUE(o.sanitizer.empty());
  EXPECT_EQ(o.profile_every, 0);
  const cpu::CpuOptions c = cuda::to_cpu_options(o);
  EXPECT_EQ(c.flavour.worker_request.at("lock_dir"), "/tmp");
  // Profiles on request are on wherever ncu is found (not on CI).
  EXPECT_EQ(c.flavour.worker_request.contains("profiler"), o.profile_on_request);
  EXPECT_EQ(c.flavour.profile_on_request, o.profile_on_request);
  EXPECT_FALSE(c.flavour.worker_request.contains("sanitizer"));
  // The worker, when sandbox.seccomp is on, installs the CUDA policy variant.
  EXPECT_EQ(c.flavour.policy, "cuda");
  EXPECT_EQ(c.flavour.reference_link, (std::vector<std::string>{"-lcublas"}));
  for (const auto& f : c.flavour.link_flags) EXPECT_NE(f, "-lcublas") << "candidates must not link cuBLAS by default";
  EXPECT_EQ(c.flavour.health_argv, (std::vector<std::string>{"--health", "0"}));
  EXPECT_NE(std::find(c.flags.begin(), c.flags.end(), "-Xptxas=-v"), c.flags.end());
  EXPECT_NE(std::find(c.flags.begin(), c.flags.end(), "-arch=sm_90"), c.flags.end());
  EXPECT_EQ(c.flavour.worker_request.at("floor_fraction"), 0.9);
  const nlohmann::json eff = cuda::to_json(o);
  EXPECT_EQ(eff.at("arch"), "sm_90");
  EXPECT_EQ(eff.at("roofline").at("peak_gbps"), 4800.0);
  // Timings fill the slot's idle time by default, and the worker is told.
  EXPECT_EQ(eff.at("fill_idle_seconds"), 0.3);
  EXPECT_EQ(c.flavour.worker_request.at("fill_idle_seconds"), 0.3);
  EXPECT_EQ(cuda::to_cpu_options(parse(R"({"fill_idle_seconds": 0})")).flavour.worker_request.at("fill_idle_seconds"), 0.0);
  EXPECT_THROW(parse(R"({"fill_idle_seconds": -1})"), InputError);
  // Workers open one hardware queue per context (cheaper contexts) unless
  // max_connections says otherwise; 0 leaves the CUDA default.
  auto env_of = [](const cpu::CpuOptions& o) {
    return std::find(o.flavour.worker_env.begin(), o.flavour.worker_env.end(), "CUDA_DEVICE_MAX_CONNECTIONS=1") !=
           o.flavour.worker_env.end();
  };
  EXPECT_EQ(eff.at("max_connections"), 1);
  EXPECT_TRUE(env_of(c));
  const cpu::CpuOptions eight = cuda::to_cpu_options(parse(R"({"max_connections": 8})"));
  EXPECT_NE(std::find(eight.flavour.worker_env.begin(), eight.flavour.worker_env.end(), "CUDA_DEVICE_MAX_CONNECTIONS=8"),
            eight.flavour.worker_env.end());
  const cpu::CpuOptions dflt = cuda::to_cpu_options(parse(R"({"max_connections": 0})"));
  for (const auto& kv : dflt.flavour.worker_env) EXPECT_EQ(kv.rfind("CUDA_DEVICE_MAX_CONNECTIONS=", 0), std::string::npos) << kv;
  EXPECT_THROW(parse(R"({"max_connections": 33})"), InputError);
  EXPECT_THROW(parse(R"({"max_connections": "one"})"), InputError);
  // Workers hold the slot once per phase unless told "call"; the worker is told.
  EXPECT_EQ(eff.at("slot_hold"), "phase");
  EXPECT_EQ(c.flavour.worker_request.at("slot_hold"), "phase");
  EXPECT_EQ(cuda::to_cpu_options(parse(R"({"slot_hold": "call"})")).flavour.worker_request.at("slot_hold"), "call");
  EXPECT_THROW(parse(R"({"slot_hold": "trial"})"), InputError);
  // The host's null calls are made again after every timed shape unless
  // told "when_long"; the worker is told; another word names the key.
  EXPECT_EQ(eff.at("null_recalibration"), "always");
  EXPECT_EQ(c.flavour.worker_request.at("null_recalibration"), "always");
  EXPECT_EQ(cuda::to_cpu_options(parse(R"({"null_recalibration": "when_long"})")).flavour.worker_request.at("null_recalibration"),
            "when_long");
  try {
    parse(R"({"null_recalibration": "never"})");
    FAIL() << "no error for an unknown null_recalibration";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("null_recalibration"), std::string::npos) << e.what();
  }
  // The probe's tolerance: a fiftieth of the round trip unless told; the
  // worker is told; a fraction outside [0, 1] names the key.
  EXPECT_DOUBLE_EQ(eff.at("probe_tolerance_fraction").get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(c.flavour.worker_request.at("probe_tolerance_fraction").get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(cuda::to_cpu_options(parse(R"({"probe_tolerance_fraction": 0.1})"))
                       .flavour.worker_request.at("probe_tolerance_fraction")
                       .get<double>(),
                   0.1);
  try {
    parse(R"({"probe_tolerance_fraction": 1.5})");
    FAIL() << "no error for a probe_tolerance_fraction above 1";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("probe_tolerance_fraction"), std::string::npos) << e.what();
  }
}

TEST(CudaOptions, ToolStagesAreCheckedAtStart) {
  // A tool that cannot be found is a config error naming the key.
  try {
    parse(R"({"profile": {"every": 5, "path": "no-such-ncu-kevo"}})");
    FAIL() << "no error for a missing ncu";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("profile"), std::string::npos) << e.what();
  }
  try {
    parse(R"({"sanitizer": {"tool": "memcheck", "path": "no-such-sanitizer-kevo"}})");
    FAIL() << "no error for a missing compute-sanitizer";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sanitizer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse(R"({"sanitizer": {"tool": "leakcheck"}})"), InputError);
  EXPECT_THROW(parse(R"({"lock_dir": "/nonexistent-kevo-locks"})"), InputError);
  // Found tools reach the worker's request as absolute paths ("true"
  // stands in for the tool: CI has neither ncu nor compute-sanitizer).
  const cuda::CudaOptions o =
      parse(R"({"profile": {"every": 3, "path": "true"}, "sanitizer": {"tool": "racecheck", "path": "true"}})");
  const cpu::CpuOptions c = cuda::to_cpu_options(o);
  EXPECT_EQ(c.flavour.profile_every, 3);
  EXPECT_EQ(c.flavour.worker_request.at("profiler").get<std::string>().front(), '/');
  EXPECT_EQ(c.flavour.worker_request.at("sanitizer_tool"), "racecheck");
  EXPECT_EQ(c.flavour.worker_request.at("sanitizer").get<std::string>().front(), '/');
  // The ncu child runs candidates unconfined: a task with hidden shapes is
  // profiled only when profile.unconfined says so (default false).
  EXPECT_EQ(c.flavour.worker_request.at("profile_unconfined"), false);
  EXPECT_EQ(cuda::to_json(o).at("profile").at("unconfined"), false);
  const cuda::CudaOptions u = parse(R"({"profile": {"every": 3, "path": "true", "unconfined": true}})");
  EXPECT_EQ(cuda::to_cpu_options(u).flavour.worker_request.at("profile_unconfined"), true);
  EXPECT_THROW(parse(R"({"profile": {"unconfined": "yes"}})"), InputError);
}

// profile.on_request: the workers get ncu and honour operators' requests
// when it is found; without it the policy (every) is an error and requests
// are turned off, which the effective config says.
TEST(CudaOptions, ProfilesOnRequestWhereNcuIsFound) {
  cuda::CudaOptions o = parse(R"({"profile": {"path": "true"}})");
  EXPECT_TRUE(o.profile_on_request);
  cpu::CpuOptions c = cuda::to_cpu_options(o);
  EXPECT_TRUE(c.flavour.profile_on_request);
  EXPECT_EQ(c.flavour.profile_every, 0);
  EXPECT_EQ(c.flavour.worker_request.at("profiler").get<std::string>().front(), '/');
  EXPECT_EQ(cuda::to_json(o).at("profile").at("on_request"), true);

  o = parse(R"({"profile": {"path": "no-such-ncu-kevo"}})");
  EXPECT_FALSE(o.profile_on_request);
  c = cuda::to_cpu_options(o);
  EXPECT_FALSE(c.flavour.profile_on_request);
  EXPECT_FALSE(c.flavour.worker_request.contains("profiler"));
  EXPECT_EQ(cuda::to_json(o).at("profile").at("on_request"), false);

  o = parse(R"({"profile": {"on_request": false, "path": "true"}})");
  c = cuda::to_cpu_options(o);
  EXPECT_FALSE(c.flavour.profile_on_request);
  EXPECT_FALSE(c.flavour.worker_request.contains("profiler"));
  EXPECT_THROW(parse(R"({"profile": {"on_request": 1}})"), InputError);
}

TEST(CudaOptions, ReadsItsKeysAndTheSharedOnes) {
  const cuda::CudaOptions o =
      parse(R"({"arch": "sm_90a", "roofline": {"peak_tflops": 990}, "eval_jobs": 2, "timing": {"min_repeats": 3}})");
  EXPECT_EQ(o.arch, "sm_90a");
  EXPECT_EQ(o.peak_tflops, 990.0);
  EXPECT_EQ(o.base.eval_jobs, 2);
  EXPECT_EQ(o.base.timing.min_repeats, 3);
  EXPECT_EQ(o.base.timing.max_repeats, 5000);   // the CUDA default survives
  // The L2's persisting lines are reset before every flush unless turned
  // off, and the worker is told either way.
  EXPECT_TRUE(o.reset_persisting_l2);
  EXPECT_EQ(cuda::to_cpu_options(o).flavour.worker_request.at("reset_persisting_l2"), true);
  const cuda::CudaOptions off = parse(R"({"reset_persisting_l2": false})");
  EXPECT_FALSE(off.reset_persisting_l2);
  EXPECT_EQ(cuda::to_cpu_options(off).flavour.worker_request.at("reset_persisting_l2"), false);
  EXPECT_THROW(parse(R"({"reset_persisting_l2": 1})"), InputError);
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
  struct Todo {
    std::string what, source;
    std::vector<std::string> link;
  };
  std::vector<Todo> todo;
  for (const auto& d : find_task_dirs(KEVO_CUDA_TASKS)) {
    const Task t = load_task(d);
    // References link what the flavour gives references (cuBLAS).
    std::vector<std::string> ref_link;
    for (const auto& a : c.flavour.reference_link) ref_link.push_back(a.substr(2));
    todo.push_back({t.name + "/reference", cpu::compiled_source(t, t.reference_source), ref_link});
    todo.push_back({t.name + "/seed", cpu::compiled_source(t, t.seed_source), {}});
    // Library baselines that ship as sources, with their libraries.
    for (const auto& b : t.source_baselines)
      todo.push_back({t.name + "/baseline " + b.name, cpu::compiled_source(t, b.source), b.link});
  }
  auto start = [&](const Todo& w) {
    sandbox::Spec s;
    s.argv = {c.compiler};
    s.argv.insert(s.argv.end(), c.flags.begin(), c.flags.end());
    s.argv.insert(s.argv.end(), c.flavour.link_flags.begin(), c.flavour.link_flags.end());
    for (const auto& l : w.link) s.argv.push_back("-l" + l);
    for (const std::string& a : {std::string("-o"), std::string("kernel.so"), c.flavour.source_file}) s.argv.push_back(a);
    s.files = {{c.flavour.source_file, w.source}};
    s.scratch_base = fs::temp_directory_path();
    s.env = {std::string("PATH=") + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin")};
    s.limits.wall_seconds = 240;
    running.push_back({w.what, runner.start(std::move(s))});
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

// Every point of the bf16 GEMM's search space compiles: its parameters select
// code paths (#if) that the seed point alone does not reach. Points share a few
// translation units, one namespace per point (the function renamed by a
// macro), each body under a #line that names the point, so that an error says
// which point broke; the nvcc command is the backend's.
TEST(CudaTasks, EveryPointOfTheBf16GemmSpaceCompiles) {
  const Task t = load_task(fs::path(KEVO_CUDA_TASKS) / "gemm_bf16_bias_relu");
  const std::vector<Point> points = t.space.enumerate();
  ASSERT_GE(points.size(), 32u);
  // About 0.8 s of nvcc per point: keep the space small enough for CI.
  ASSERT_LE(points.size(), 96u);
  const std::string body = split_params_block(t.seed_source).body;
  // The body's #include lines go first, outside the namespaces: their include
  // guards make the copies inside the namespaces empty.
  std::string includes;
  {
    std::istringstream in(body);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("#include", 0) == 0) includes += line + "\n";
  }
  ASSERT_FALSE(includes.empty());
  constexpr std::size_t kUnits = 4;
  std::vector<std::string> units(kUnits, includes);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string ns = "kevo_point_" + std::to_string(i);
    std::string& u = units[i % kUnits];
    u += "namespace " + ns + " {\n" + t.space.render_block(points[i]);
    u += "#define " + t.function + " " + ns + "_" + t.function + "\n";
    u += "#line 1 \"point " + t.space.key(points[i]) + "\"\n" + body + "\n";
    u += "#undef " + t.function + "\n";
    for (std::size_t k = 0; k < t.space.params().size(); ++k) {
      const Param& p = t.space.params()[k];
      u += "#undef " + p.name + "\n";
      const Value v = t.space.value(points[i], k);
      if (v.kind == Value::Kind::string) u += "#undef " + p.name + "_" + v.s + "\n";
    }
    u += "}  // namespace " + ns + "\n";
  }

  const cpu::CpuOptions c = cuda::to_cpu_options(parse("{}"));
  sandbox::Runner runner;
  std::map<std::uint64_t, std::size_t> unit_of;
  std::size_t next = 0, done = 0;
  while (done < units.size()) {
    while (next < units.size() && runner.running() < 2) {
      sandbox::Spec s;
      s.argv = {c.compiler};
      s.argv.insert(s.argv.end(), c.flags.begin(), c.flags.end());
      s.argv.insert(s.argv.end(), c.flavour.link_flags.begin(), c.flavour.link_flags.end());
      for (const std::string& a : {std::string("-o"), std::string("kernel.so"), c.flavour.source_file})
        s.argv.push_back(a);
      s.files = {{c.flavour.source_file, units[next]}};
      s.scratch_base = fs::temp_directory_path();
      s.env = {std::string("PATH=") + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin")};
      s.limits.wall_seconds = 280;
      unit_of[runner.start(std::move(s))] = next++;
    }
    for (sandbox::Finished& f : runner.poll(std::chrono::milliseconds(500))) {
      ++done;
      const std::string what = "unit " + std::to_string(unit_of[f.id]) + " of " + std::to_string(units.size());
      EXPECT_EQ(f.outcome, sandbox::Outcome::exited) << what;
      EXPECT_EQ(f.exit_code, 0) << what << ":\n" << f.output;
      EXPECT_TRUE(fs::exists(f.scratch.path() / "kernel.so")) << what;
    }
  }
}
