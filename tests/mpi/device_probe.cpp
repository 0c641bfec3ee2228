// `kevo run` with a recording backend, for the device-binding test
// (mpi_device_binding_np2, tests/mpi/mpi_islands.py case device_binding).
//
//   KEVO_PROBE_OUT=DIR mpiexec -np N kevo_device_probe run CONFIG --out RUN_DIR [--set KEY=VALUE ...]
//
// The config's backend is the null backend wrapped in a probe that appends,
// at each stage where a real backend starts processes (built, prepare of
// each task, source baselines, first submit), the device environment it
// sees to DIR/rank-R.jsonl: one JSON object per line with "stage",
// "CUDA_VISIBLE_DEVICES" and "KEVO_DEVICE_INDEX" (null when unset). The test
// asserts from those files that every stage of every rank ran on that
// rank's device.
#include "kevo/app/plugins.hpp"
#include "kevo/core/backend.hpp"
#include "kevo/core/error.hpp"
#include "kevo/mpi/mpi.hpp"
#include "kevo/mpi/run_islands.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace {

class ProbeBackend final : public kevo::Backend {
 public:
  explicit ProbeBackend(std::unique_ptr<kevo::Backend> inner) : Backend(inner->name()), inner_(std::move(inner)) {
    record("construct", "");
  }

 protected:
  kevo::BackendNeeds do_needs() const override { return inner_->needs(); }
  void do_prepare(const kevo::Task& task) override {
    record("prepare", task.name);
    inner_->prepare(task);
  }
  std::size_t do_wanted() const override { return inner_->wanted(); }
  void do_submit(kevo::EvalRequest request) override {
    if (!submitted_) record("submit", request.task->name);
    submitted_ = true;
    inner_->submit(std::move(request));
  }
  std::vector<kevo::EvalResult> do_poll(std::chrono::milliseconds max_wait) override { return inner_->poll(max_wait); }
  void do_cancel_all() override { inner_->cancel_all(); }
  std::vector<kevo::BaselineVerdict> do_judge_baselines(const kevo::Task& task, std::uint64_t seed) override {
    record("baselines", task.name);
    return inner_->judge_baselines(task, seed);
  }

 private:
  static nlohmann::json env(const char* name) {
    const char* v = std::getenv(name);
    return v ? nlohmann::json(v) : nlohmann::json(nullptr);
  }
  void record(const std::string& stage, const std::string& task) const {
    const char* dir = std::getenv("KEVO_PROBE_OUT");
    if (!dir || !*dir) throw kevo::Failure("kevo_device_probe: KEVO_PROBE_OUT is not set");
    std::filesystem::create_directories(dir);
    const int rank = kevo::mpi::Comm::world().rank();
    std::ofstream out(std::filesystem::path(dir) / fmt::format("rank-{}.jsonl", rank), std::ios::app);
    out << nlohmann::json{{"stage", stage},
                          {"task", task},
                          {"rank", rank},
                          {"CUDA_VISIBLE_DEVICES", env("CUDA_VISIBLE_DEVICES")},
                          {"KEVO_DEVICE_INDEX", env("KEVO_DEVICE_INDEX")}}
               .dump()
        << "\n";
    if (!out) throw kevo::Failure("kevo_device_probe: cannot write to " + std::string(dir));
  }

  std::unique_ptr<kevo::Backend> inner_;
  bool submitted_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kevo run with a backend that records the device environment of each stage"};
  app.require_subcommand(1);
  kevo::mpi::IslandsRunArgs args;
  auto* run = app.add_subcommand("run", "Run a search (null backend, recorded)");
  run->add_option("config", args.config)->required();
  run->add_option("--set", args.overrides)->take_all();
  run->add_option("--out", args.out);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    kevo::engine::Plugins plugins = kevo::app::builtin_plugins({"null"});
    plugins.make_backend = [inner = plugins.make_backend](const std::string& type, kevo::StrictObject& options) {
      kevo::engine::BuiltBackend b = inner(type, options);
      b.backend = std::make_unique<ProbeBackend>(std::move(b.backend));
      return b;
    };
    kevo::mpi::Environment env(nullptr, nullptr);
    const std::atomic<int> stop{0};
    return kevo::mpi::run_islands(env, plugins, args, stop);
  } catch (const kevo::InputError& e) {
    fmt::print(stderr, "kevo: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kevo: failure: {}\n", e.what());
    return 1;
  }
}
