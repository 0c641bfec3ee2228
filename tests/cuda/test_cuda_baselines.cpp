// Library baselines of the CUDA backend (docs/cuda.md#library-baselines),
// the parts that need neither a GPU nor torch: options, the script's
// request, and a machine without torch (a note, and the run goes on). The
// measuring itself runs on the GPU machine (the lead's commands in
// docs/cuda.md).
#include "kevo/cuda/baselines.hpp"

#include "kevo/core/error.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace kevo::cuda {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::shared_ptr<const Task> bundled(const std::string& name) {
  return std::make_shared<Task>(load_task(fs::path(KEVO_CUDA_TASKS) / name));
}

BaselineSetup setup_for_tests() {
  BaselineSetup s = baseline_setup(BaselineOptions{}, CudaOptions{});
  s.options.script = KEVO_BASELINE_SCRIPT;
  return s;
}

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

// A directory on PYTHONPATH whose `torch` package fails to import: the same
// state as a machine without torch, on every machine (the GPU host has torch).
class NoTorch {
 public:
  explicit NoTorch(const std::string& init = "raise ImportError(\"No module named 'torch' (test)\")\n") {
    std::string tmpl = (fs::temp_directory_path() / "kevo-notorch-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
    dir_ = tmpl;
    fs::create_directories(dir_ / "torch");
    std::ofstream(dir_ / "torch" / "__init__.py") << init;
    const char* old = std::getenv("PYTHONPATH");
    had_ = old != nullptr;
    if (old) old_ = old;
    setenv("PYTHONPATH", dir_.c_str(), 1);
  }
  ~NoTorch() {
    if (had_) setenv("PYTHONPATH", old_.c_str(), 1);
    else unsetenv("PYTHONPATH");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

 private:
  fs::path dir_;
  std::string old_;
  bool had_ = false;
};

TEST(CudaBaselines, OptionsAreStrict) {
  const BaselineOptions d = parse_baseline_options(nullptr);
  EXPECT_TRUE(d.enabled);
  EXPECT_TRUE(d.compile);
  EXPECT_EQ(d.python, "python3");
  const json j = {{"enabled", false}, {"compile", false}, {"python", "/opt/py/bin/python"}, {"wall_seconds", 60}};
  StrictObject o(j, "cfg.json", "/backend/cuda/baselines");
  const BaselineOptions p = parse_baseline_options(&o);
  EXPECT_FALSE(p.enabled);
  EXPECT_FALSE(p.compile);
  EXPECT_EQ(p.python, "/opt/py/bin/python");
  EXPECT_EQ(p.wall_seconds, 60.0);
  EXPECT_EQ(to_json(p).at("wall_seconds"), 60.0);

  const json bad = {{"enabeld", true}};
  StrictObject b(bad, "cfg.json", "/backend/cuda/baselines");
  try {
    parse_baseline_options(&b);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "/backend/cuda/baselines/enabeld");
    EXPECT_NE(std::string(e.what()).find("did you mean 'enabled'?"), std::string::npos) << e.what();
  }
  const json zero = {{"wall_seconds", 0}};
  StrictObject z(zero, "cfg.json", "/backend/cuda/baselines");
  EXPECT_THROW(parse_baseline_options(&z), InputError);
}

TEST(CudaBaselines, RequestResolvesTheVisibleShapes) {
  const auto task = bundled("layernorm");
  const BaselineSetup s = setup_for_tests();
  const json r = baseline_request(*task, s, 7);
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r.at("expr"), task->baselines.at("torch"));
  EXPECT_EQ(r.at("function"), "layernorm");
  EXPECT_EQ(r.at("seed"), 7);
  EXPECT_TRUE(fs::is_regular_file(r.at("reference").get<std::string>()));
  ASSERT_EQ(r.at("shapes").size(), task->visible.size());
  const json& sh = r.at("shapes")[0];
  EXPECT_EQ(sh.at("label"), task->visible[0].label);
  EXPECT_EQ(sh.at("extents").at("X"), json::array({8192, 2048}));
  EXPECT_EQ(sh.at("extents").at("gamma"), json::array({2048}));
  EXPECT_EQ(sh.at("values").at("R"), 8192);
  EXPECT_DOUBLE_EQ(sh.at("values").at("eps").get<double>(), 1e-5);
  EXPECT_EQ(r.at("args")[0].at("dist").at("kind"), task->args[0].dist.kind == Distribution::Kind::normal ? "normal" : "uniform");
  EXPECT_FALSE(r.at("args")[3].contains("dist"));   // Y is an output
  EXPECT_EQ(r.at("tolerance").at("atol"), task->tolerance.atol);
  // The worker's method: its repeats and budget, the backend's nvcc and architecture.
  EXPECT_EQ(r.at("timing").at("min_repeats"), s.timing.min_repeats);
  EXPECT_EQ(r.at("nvcc"), s.nvcc);
  EXPECT_EQ(r.at("nvcc_flags").back(), "-arch=sm_90");

  Task none = *task;
  none.baselines.clear();
  EXPECT_TRUE(baseline_request(none, s, 7).is_null());
}

TEST(CudaBaselines, WithoutTorchTheRunGetsANote) {
  NoTorch no_torch;
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  const json doc = measure_baselines(setup_for_tests(), {bundled("axpy"), bundled("softmax")}, 1, log);
  const std::string printed = read_all(log);
  std::fclose(log);
  EXPECT_EQ(doc.at("format"), "kevo-baselines/1");
  EXPECT_EQ(doc.at("measured"), false);
  EXPECT_TRUE(doc.at("tasks").empty());
  const std::string note = doc.value("note", "");
  EXPECT_NE(note.find("torch is not importable by python3"), std::string::npos) << note;
  EXPECT_NE(note.find("No module named 'torch' (test)"), std::string::npos) << note;
  EXPECT_NE(printed.find("kevo: library baselines: torch is not importable"), std::string::npos) << printed;
}

// The script runs the task's reference (a KernelBench file is someone
// else's code) with the engine's environment: never its secrets (red team
// 22: it had all of it). The fake torch names, in its import error, the
// variables it was given that look like secrets.
TEST(CudaBaselines, TheScriptGetsNoSecretOfTheEngine) {
  NoTorch fake("import os\nraise ImportError('secrets here: [' + ','.join(sorted(k for k in os.environ if 'KEY' in k "
               "or 'TOKEN' in k)) + '] PATH ' + str('PATH' in os.environ))\n");
  setenv("KEVO_TEST_API_KEY", "sk-test-baselines-0123456789", 1);
  setenv("KEVO_TEST_HF_TOKEN", "hf_test0123456789", 1);
  const json doc = measure_baselines(setup_for_tests(), {bundled("axpy")}, 1, nullptr);
  unsetenv("KEVO_TEST_API_KEY");
  unsetenv("KEVO_TEST_HF_TOKEN");
  const std::string note = doc.value("note", "");
  EXPECT_NE(note.find("secrets here: []"), std::string::npos) << note;
  EXPECT_NE(note.find("PATH True"), std::string::npos) << "the rest of the environment passes: " << note;
  EXPECT_EQ(note.find("sk-test"), std::string::npos) << note;
}

TEST(CudaBaselines, MissingPiecesAreNotes) {
  BaselineSetup s = setup_for_tests();
  const std::vector<std::shared_ptr<const Task>> tasks = {bundled("axpy")};
  s.options.python = "/nonexistent/python3";
  EXPECT_NE(measure_baselines(s, tasks, 1, nullptr).value("note", "").find("no '/nonexistent/python3' found"),
            std::string::npos);
  s = setup_for_tests();
  s.options.script = "/nonexistent/kevo_torch_baselines.py";
  EXPECT_NE(measure_baselines(s, tasks, 1, nullptr).value("note", "").find("not found"), std::string::npos);
  // No task names a baseline: nothing to run.
  Task plain = *bundled("axpy");
  plain.baselines.clear();
  const json doc = measure_baselines(setup_for_tests(), {std::make_shared<Task>(plain)}, 1, nullptr);
  EXPECT_NE(doc.value("note", "").find("no task names a library baseline"), std::string::npos);
}

}  // namespace
}  // namespace kevo::cuda
