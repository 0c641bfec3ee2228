// The torch backend's C++ side (docs/torch.md): the task kind's strict
// manifest, the backend's options (the interpreter checked when the config
// is read), and the baselines a run measures when it starts.
#include "kevo/command/command_backend.hpp"
#include "kevo/core/error.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/core/task.hpp"
#include "kevo/torch/torch_backend.hpp"

#include "../core/test_util.hpp"

#include <gtest/gtest.h>
#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace kevo {
namespace {

namespace fs = std::filesystem;

const char* kReference =
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
    "n = 64\n\n\ndef get_inputs():\n    return [torch.rand(n)]\n\n\ndef get_init_inputs():\n    return []\n";
const char* kSeed = "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x * 2\n";

const char* kManifest = R"({
  "name": "double", "description": "y = 2x", "backend": "torch", "reference": "reference.py", "seed": "seed.py",
  "torch": {"sizes": ["n"], "inputs": {"signed": [0]}, "allow": ["aten::mul"],
            "stress": [{"name": "large", "scale": 2, "shift": 50}]},
  "shapes": {"visible": [{"n": 64}], "hidden": [{"n": 3}]},
  "flops": "n", "bytes": "8*n"
})";

// A task folder holding the manifest with `key` (a JSON pointer's last part
// at the top level or under "torch") replaced or added.
std::filesystem::path task_with(const test::TempDir& d, const std::string& edit_path, const nlohmann::json& value,
                                const std::string& reference = kReference, const std::string& seed = kSeed) {
  nlohmann::json m = nlohmann::json::parse(kManifest);
  if (!edit_path.empty()) m[nlohmann::json::json_pointer(edit_path)] = value;
  d.write("t/task.json", m.dump());
  d.write("t/reference.py", reference);
  d.write("t/seed.py", seed);
  return d.path() / "t";
}

void expect_error_at(const std::filesystem::path& dir, const std::string& pointer, const std::string& text) {
  try {
    load_task(dir);
    FAIL() << "loaded; expected an error at " << pointer;
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(": " + pointer + ": "), std::string::npos) << what;
    EXPECT_NE(what.find(text), std::string::npos) << what;
  }
}

TEST(TorchTask, AManifestLoadsWithItsTorchSection) {
  test::TempDir d;
  const Task t = load_task(task_with(d, "", nullptr));
  ASSERT_TRUE(t.is_torch());
  EXPECT_EQ(t.backend, "torch");
  EXPECT_EQ(t.function, "ModelNew");
  EXPECT_EQ(t.dims, std::vector<std::string>{"n"});
  EXPECT_FALSE(t.torch->signed_all);
  EXPECT_EQ(t.torch->signed_inputs, std::vector<int>{0});
  EXPECT_EQ(t.torch->allow, std::vector<std::string>{"aten::mul"});
  ASSERT_EQ(t.torch->stress.size(), 1u);
  EXPECT_EQ(t.torch->stress[0].shift, 50.0);
  EXPECT_EQ(t.visible.at(0).label, "n=64");
  EXPECT_EQ(t.hidden.at(0).dims.at("n"), 3);
  EXPECT_EQ(t.source_extension(), ".py");
  EXPECT_TRUE(t.args.empty());
}

TEST(TorchTask, CKeysAndBadValuesNameTheirKey) {
  test::TempDir d;
  expect_error_at(task_with(d, "/function", "f"), "/function", "no \"function\" key in a torch task");
  expect_error_at(task_with(d, "/args", nlohmann::json::array()), "/args", "torch task");
  expect_error_at(task_with(d, "/torch/sizes", {"n", "2bad"}), "/torch/sizes", "Python identifiers");
  expect_error_at(task_with(d, "/torch/sizes", {"n", "n"}), "/torch/sizes", "twice");
  expect_error_at(task_with(d, "/torch/allow", {"mm"}), "/torch/allow", "aten::mm");
  expect_error_at(task_with(d, "/torch/languages", {"rust"}), "/torch/languages", "\"cuda\"");
  expect_error_at(task_with(d, "/torch/inputs/signed", "yes"), "/torch/inputs/signed", "true, false, or a list");
  expect_error_at(task_with(d, "/torch/stress/0/name", "Big"), "/torch/stress/0/name", "lower-case");
  expect_error_at(task_with(d, "/torch/colour", 1), "/torch/colour", "unknown key");
  expect_error_at(task_with(d, "/shapes/visible/0/m", 3), "/shapes/visible/0/m", "unknown key");
  expect_error_at(task_with(d, "/reference", "reference.txt"), "/reference", "a Python file name");
  expect_error_at(task_with(d, "", nullptr, "class Model:\n    pass\n"), "/reference", "def get_inputs");
  expect_error_at(task_with(d, "", nullptr, kReference, "class Model:\n    pass\n"), "/seed", "class ModelNew");
}

// A torch task's search space: module-level constants in a "# kevo:params"
// block of the seed (docs/tasks.md#search_space).
TEST(TorchTask, ASearchSpaceIsReadFromThePythonBlockOfTheSeed) {
  test::TempDir d;
  const std::string seed = std::string("# kevo:params begin\nSCALE = 2\nMODE = \"mul\"\n# kevo:params end\n") + kSeed;
  const nlohmann::json space = {{"params", {{{"name", "SCALE"}, {"values", {1, 2, 4}}},
                                            {{"name", "MODE"}, {"values", {"mul", "add"}}}}}};
  const Task t = load_task(task_with(d, "/search_space", space, kReference, seed));
  EXPECT_EQ(t.space.syntax(), SourceSyntax::python);
  ASSERT_TRUE(t.seed_point.has_value());
  EXPECT_EQ(t.space.key(*t.seed_point), "SCALE=2,MODE=mul");

  nlohmann::json with_point = space;
  with_point["seed_point"] = {{"SCALE", 4}, {"MODE", "mul"}};
  expect_error_at(task_with(d, "/search_space", with_point, kReference, seed), "/search_space/seed_point",
                  "the point of the params block in seed.py (SCALE=2,MODE=mul)");
  expect_error_at(task_with(d, "/search_space", space), "/search_space/seed_point",
                  "'# kevo:params begin' ... '# kevo:params end' block in seed.py");
  const std::string odd = std::string("# kevo:params begin\nSCALE = 3\nMODE = 'mul'\n# kevo:params end\n") + kSeed;
  expect_error_at(task_with(d, "/search_space", space, kReference, odd), "/search_space/seed_point",
                  "SCALE = 3 is not one of: 1, 2, 4");
  for (const char* name : {"class", "2x", "ModelNew", "get_inputs", "torch", "n"}) {
    nlohmann::json bad = space;
    bad["params"][0]["name"] = name;
    expect_error_at(task_with(d, "/search_space", bad, kReference, seed), "/search_space/params/0/name",
                    std::string(name) == "class" || std::string(name) == "2x" ? "a Python identifier"
                                                                               : "does not bind otherwise");
  }
}

TEST(TorchTask, ATorchSectionInACTaskIsAnError) {
  test::TempDir d;
  d.write("c/task.json", R"({"name": "c", "backend": "cpu", "function": "f",
    "args": [{"name": "y", "dtype": "float32", "role": "out", "shape": ["N"]}],
    "shapes": {"visible": [{"N": 4}]}, "reference": "r.cpp", "seed": "r.cpp", "torch": {}})");
  d.write("c/r.cpp", "extern \"C\" void f(float* y) {}\n");
  expect_error_at(d.path() / "c", "/torch", "only \"backend\": \"torch\" tasks");
}

nlohmann::json options(std::initializer_list<std::pair<const char*, nlohmann::json>> kv) {
  nlohmann::json o = {{"python", KEVO_TORCH_PYTHON}, {"device", "cpu"}, {"scripts", KEVO_TORCH_SCRIPTS},
                      {"pyhost", KEVO_TORCH_PYHOST}};
  for (const auto& [k, v] : kv) o[k] = v;
  return o;
}

void expect_option_error(const nlohmann::json& o, const std::string& pointer, const std::string& text) {
  nlohmann::json copy = o;
  StrictObject obj(copy, "run.json", "/backend/torch");
  try {
    torchb::parse_torch_options(obj);
    FAIL() << "parsed; expected an error at " << pointer;
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/backend/torch/" + pointer + ": "), std::string::npos) << what;
    EXPECT_NE(what.find(text), std::string::npos) << what;
  }
}

bool have_torch() { return std::system((std::string(KEVO_TORCH_PYTHON) + " -c 'import torch' 2>/dev/null").c_str()) == 0; }

TEST(TorchOptions, TheInterpreterAndTheDeviceAreCheckedWhenTheConfigIsRead) {
  expect_option_error(options({{"python", "kevo-no-such-python"}}), "python", "not in PATH");
  expect_option_error(options({{"arch", "sm_90"}}), "arch", "compute capability");
  expect_option_error(options({{"devise", "cpu"}}), "devise", "unknown key");
  expect_option_error(options({{"pyhost", "/nonexistent/libkevo_pyhost.so"}}), "pyhost", "sandbox library");
  if (!have_torch()) GTEST_SKIP() << KEVO_TORCH_PYTHON << " has no torch";
  // This machine's torch sees no GPU (CI): "cuda" is refused, naming the key.
  if (std::system((std::string(KEVO_TORCH_PYTHON) + " -c 'import torch, sys; sys.exit(torch.cuda.is_available())'").c_str()) == 0)
    expect_option_error(options({{"device", "cuda"}}), "device", "sees no GPU");
  nlohmann::json ok = options({});
  StrictObject obj(ok, "run.json", "/backend/torch");
  const auto o = torchb::parse_torch_options(obj);
  EXPECT_EQ(o.device, "cpu");
  const auto c = torchb::command_options(o);
  EXPECT_EQ(c.backend_name, "torch");
  EXPECT_TRUE(c.bundled);
  EXPECT_TRUE(c.run.persistent);
  EXPECT_EQ(c.run.restart_on, kevo::command::RunStage::Restart::breach);
  EXPECT_FALSE(c.run.accelerator);
  EXPECT_EQ(c.source_file, "candidate.py");
}

// The precompiled <torch/extension.h> lives in the object cache: on by
// default, off with build.pch false (the build is told --no-pch), and a
// value that is not a boolean is refused naming the key.
TEST(TorchOptions, ThePrecompiledHeaderIsOnByDefaultAndBuildPchFalseTurnsItOff) {
  if (!have_torch()) GTEST_SKIP() << KEVO_TORCH_PYTHON << " has no torch";
  test::TempDir d;
  const std::string cache = (d.path() / "cache").string();
  expect_option_error(options({{"build", {{"pch", "yes"}}}}), "build/pch", "true or false");
  const auto argv_of = [](nlohmann::json j) {
    StrictObject obj(j, "run.json", "/backend/torch");
    return torchb::command_options(torchb::parse_torch_options(obj)).compile->argv;
  };
  const auto has = [](const std::vector<std::string>& v, const std::string& a) {
    return std::find(v.begin(), v.end(), a) != v.end();
  };
  const auto on = argv_of(options({{"cache_dir", cache}}));
  EXPECT_TRUE(has(on, "--objects"));
  EXPECT_FALSE(has(on, "--no-pch"));
  const auto off = argv_of(options({{"cache_dir", cache}, {"build", {{"pch", false}}}}));
  EXPECT_TRUE(has(off, "--objects"));
  EXPECT_TRUE(has(off, "--no-pch"));
}

// A timing is unstable when a side's median is not known to +-5% (its 95%
// interval), not when its IQR is wide: on the GPU the IQR is about 30% of
// the median for every candidate. The IQR rule is off unless asked for; both
// are sent to the judge, and a negative share is refused naming the key.
TEST(TorchOptions, TheStabilityRuleIsTheMediansIntervalUnlessAnIqrShareIsAskedFor) {
  if (!have_torch()) GTEST_SKIP() << KEVO_TORCH_PYTHON << " has no torch";
  const auto timing_of = [](nlohmann::json j) {
    StrictObject obj(j, "run.json", "/backend/torch");
    return torchb::command_options(torchb::parse_torch_options(obj)).timing;
  };
  const auto d = timing_of(options({}));
  EXPECT_DOUBLE_EQ(d.max_ci_fraction, 0.05);
  EXPECT_DOUBLE_EQ(d.max_iqr_fraction, 0.0);
  const auto partial = timing_of(options({{"timing", {{"budget_seconds", 1.0}}}}));
  EXPECT_DOUBLE_EQ(partial.max_ci_fraction, 0.05);
  EXPECT_DOUBLE_EQ(partial.max_iqr_fraction, 0.0);
  const auto set = timing_of(options({{"timing", {{"max_ci_fraction", 0.02}, {"max_iqr_fraction", 0.3}}}}));
  EXPECT_DOUBLE_EQ(set.max_ci_fraction, 0.02);
  EXPECT_DOUBLE_EQ(set.max_iqr_fraction, 0.3);
  expect_option_error(options({{"timing", {{"max_ci_fraction", -0.1}}}}), "timing/max_ci_fraction", "");
}

// The interpreter probe (an `import torch`, about 4 s of every kevo start on
// the H200) is remembered in the cache when it passed, and run again when
// torch's version.py changes; a probe that failed is never remembered.
TEST(TorchOptions, AProbeThatPassedIsRememberedUntilTorchsVersionFileChanges) {
  if (!have_torch()) GTEST_SKIP() << KEVO_TORCH_PYTHON << " has no torch";
  test::TempDir d;
  const auto wrapper = [&](const std::string& name, const std::string& body) {
    const fs::path p = d.path() / name;
    std::ofstream(p) << "#!/bin/sh\necho run >> '" << (d.path() / (name + ".count")).string() << "'\n" << body << "\n";
    fs::permissions(p, fs::perms::owner_all);
    return p.string();
  };
  const auto runs = [&](const std::string& name) {
    std::ifstream f(d.path() / (name + ".count"));
    int n = 0;
    for (std::string line; std::getline(f, line);) ++n;
    return n;
  };
  const std::string py = wrapper("py", std::string("exec ") + KEVO_TORCH_PYTHON + " \"$@\"");
  const std::string cache = (d.path() / "cache").string();
  const auto parse = [&](const std::string& python) {
    nlohmann::json j = options({{"python", python}, {"cache_dir", cache}});
    StrictObject obj(j, "run.json", "/backend/torch");
    return torchb::parse_torch_options(obj);
  };
  parse(py);
  parse(py);
  EXPECT_EQ(runs("py"), 1);
  // The memo names torch's version.py with its size and mtime: pointed at a
  // file of ours, it holds while the file is unchanged.
  std::vector<fs::path> memos;
  for (const auto& e : fs::directory_iterator(fs::path(cache) / "torch-probe")) memos.push_back(e.path());
  ASSERT_EQ(memos.size(), 1u);
  nlohmann::json memo = nlohmann::json::parse(std::ifstream(memos[0]));
  const fs::path version = d.path() / "version.py";
  std::ofstream(version) << "__version__ = 'a'\n";
  memo["torch_version_file"] = version.string();
  memo["torch_version_stamp"] = std::to_string(fs::file_size(version)) + ":" +
                                std::to_string(fs::last_write_time(version).time_since_epoch().count());
  std::ofstream(memos[0]) << memo.dump();
  parse(py);
  EXPECT_EQ(runs("py"), 1);
  std::ofstream(version) << "__version__ = 'torch upgraded in place'\n";
  parse(py);
  EXPECT_EQ(runs("py"), 2);
  // A probe that failed: asked again every time.
  const std::string broken = wrapper("broken", "echo '{\"torch\": null, \"error\": \"no torch here\"}'; exit 1");
  EXPECT_THROW(parse(broken), InputError);
  EXPECT_THROW(parse(broken), InputError);
  EXPECT_EQ(runs("broken"), 2);
}

// KEVO_TORCH_MASK (the GPU input mask's design, for benchmarks) is the
// judge's to check: a value it does not know is refused when the config is
// read, with the variable and the values it takes, on the CPU too.
TEST(TorchOptions, AnInputMaskTheJudgeDoesNotKnowIsRefusedNamingIt) {
  if (!have_torch()) GTEST_SKIP() << KEVO_TORCH_PYTHON << " has no torch";
  test::TempDir d;
  const auto parse = [&] {
    nlohmann::json j = options({{"cache_dir", (d.path() / "cache").string()}});
    StrictObject obj(j, "run.json", "/backend/torch");
    return torchb::parse_torch_options(obj);
  };
  ::setenv("KEVO_TORCH_MASK", "philox", 1);
  try {
    parse();
    ADD_FAILURE() << "KEVO_TORCH_MASK=philox was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("KEVO_TORCH_MASK is 'philox'"), std::string::npos) << what;
    EXPECT_NE(what.find("fused, generator"), std::string::npos) << what;
  }
  ::setenv("KEVO_TORCH_MASK", "generator", 1);
  EXPECT_NO_THROW(parse());
  ::unsetenv("KEVO_TORCH_MASK");
  EXPECT_NO_THROW(parse());
}

// torch eager (and torch.compile where torch has it) of a bundled task,
// timed by the judge when a run starts.
TEST(TorchBaselines, EagerIsTimedAndCompileIsTimedOrSaysWhyNot) {
  if (!have_torch()) GTEST_SKIP() << KEVO_TORCH_PYTHON << " has no torch";
  test::TempDir d;
  nlohmann::json j = options({{"cache_dir", d.path().string()}, {"timing", {{"budget_seconds", 0.05}, {"min_repeats", 3}}}});
  StrictObject obj(j, "run.json", "/backend/torch");
  const auto o = torchb::parse_torch_options(obj);
  auto task = std::make_shared<const Task>(load_task(std::filesystem::path(KEVO_TORCH_TASKS) / "torch_scale_bias_relu"));
  const nlohmann::json doc = torchb::measure_baselines(o, {task}, 7, stdout);
  SCOPED_TRACE(doc.dump());
  EXPECT_EQ(doc.at("format"), "kevo-baselines/1");
  EXPECT_TRUE(doc.at("measured").get<bool>());
  const auto& e = doc.at("tasks").at("torch_scale_bias_relu");
  ASSERT_TRUE(e.contains("eager")) << e.dump();
  EXPECT_GT(e.at("eager").at("median_ms").get<double>(), 0.0);
  EXPECT_EQ(e.at("eager").at("check"), "ok");
  ASSERT_TRUE(e.contains("compile") || e.contains("error")) << e.dump();
  if (e.contains("compile") && !e.at("compile").contains("error")) {
    EXPECT_GT(e.at("compile").at("median_ms").get<double>(), 0.0);
  }
}

// A reference that raises when its module loads is the task's fault: the
// prepare names the manifest's /reference and shows the traceback, never
// asking for "an evaluator that answers kevo's protocol" (the torch judge
// is kevo's own).
TEST(TorchPrepare, AReferenceThatFailsToLoadIsRefusedNamingIt) {
  if (!have_torch()) GTEST_SKIP() << KEVO_TORCH_PYTHON << " has no torch";
  test::TempDir d;
  const std::string broken = std::string(kReference) + "\nraise RuntimeError('kevo-test: this reference cannot load')\n";
  auto task = std::make_shared<const Task>(load_task(task_with(d, "", nullptr, broken)));
  nlohmann::json j = options({{"cache_dir", (d.path() / "cache").string()}});
  StrictObject obj(j, "run.json", "/backend/torch");
  auto backend = torchb::make_torch_backend(torchb::parse_torch_options(obj));
  try {
    backend->prepare(*task);
    FAIL() << "prepared a task whose reference raises at load";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("task.json"), std::string::npos) << what;
    EXPECT_NE(what.find("/reference"), std::string::npos) << what;
    EXPECT_NE(what.find("this reference cannot load"), std::string::npos) << what;
    EXPECT_EQ(what.find("answers kevo's protocol"), std::string::npos) << what;
  }
}

// The judge's zygote runs no candidate code, so a wrong answer or a crash
// does not cost the next candidate a fresh process (and import of torch).
TEST(TorchJudge, AWrongAnswerOrACrashKeepsTheZygote) {
  if (!have_torch()) GTEST_SKIP() << KEVO_TORCH_PYTHON << " has no torch";
  test::TempDir d;
  auto task = std::make_shared<const Task>(load_task(task_with(d, "", nullptr)));
  nlohmann::json j = options({{"cache_dir", (d.path() / "cache").string()}});
  StrictObject obj(j, "run.json", "/backend/torch");
  auto backend = torchb::make_torch_backend(torchb::parse_torch_options(obj));
  backend->prepare(*task);
  const auto starts = command::command_stats(*backend).evaluator_starts;
  const std::string wrong = "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x * 3\n";
  const std::string crash = "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        raise ValueError('no')\n";
  const Verdict w = backend->evaluate(task, wrong, 11);
  EXPECT_EQ(w.status, Status::wrong_answer) << w.message;
  const Verdict c = backend->evaluate(task, crash, 12);
  EXPECT_EQ(c.status, Status::runtime_error) << c.message;
  const Verdict ok = backend->evaluate(task, kSeed, 13);
  EXPECT_EQ(ok.status, Status::correct) << ok.message;
  EXPECT_EQ(command::command_stats(*backend).evaluator_starts, starts);
}

}  // namespace
}  // namespace kevo
