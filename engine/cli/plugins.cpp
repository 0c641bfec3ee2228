#include "kevo/app/plugins.hpp"

#include "kevo/command/command_backend.hpp"
#include "kevo/core/error.hpp"
#include "kevo/cpu/cpu_backend.hpp"
#ifdef KEVO_HAVE_CUDA
#include "kevo/cuda/baselines.hpp"
#include "kevo/cuda/cuda_backend.hpp"
#endif
#include "kevo/null/null_backend.hpp"
#include "kevo/operators/llm_operators.hpp"
#include "kevo/operators/registry.hpp"
#include "kevo/torch/torch_backend.hpp"

#include <cstdio>
#include <memory>
#include <optional>

namespace kevo::app {

namespace {

std::vector<std::string> all_backend_types() {
  std::vector<std::string> types = {"cpu", "null", "command", "torch"};
#ifdef KEVO_HAVE_CUDA
  types.push_back("cuda");   // built only where the CUDA toolkit was found
#endif
  return types;
}

engine::Plugins make_plugins(const std::vector<std::string>& backend_types, bool start_servers) {
  engine::Plugins p;
  for (const auto& t : backend_types) {
    bool known = t == "cpu" || t == "null" || t == "command" || t == "torch";
#ifdef KEVO_HAVE_CUDA
    known = known || t == "cuda";
#endif
    if (!known) throw Failure("builtin_plugins: this build has no backend type '" + t + "'");
  }
  p.backend_types = backend_types;
  // A command backend names its LLM prompt files in its own config: they
  // reach the LLM service, which is built from the "llm" section after the
  // backend.
  struct PromptFiles {
    std::filesystem::path system, knowledge;
    std::string pointer;
  };
  auto prompt_files = std::make_shared<std::optional<PromptFiles>>();
  // Where a torch backend's candidates run ("cuda" or "cpu"): its prompts
  // describe that device.
  auto torch_device = std::make_shared<std::string>();
  p.make_backend = [prompt_files, torch_device](const std::string& type, StrictObject& options) {
    engine::BuiltBackend b;
    torch_device->clear();
    if (type == "command") {
      auto o = command::parse_command_options(options);
      b.effective = command::to_json(o);
      prompt_files->reset();
      if (!o.system_prompt.empty()) *prompt_files = PromptFiles{o.system_prompt, o.knowledge, o.pointer + "/prompts"};
      b.backend = command::make_command_backend(std::move(o));
    } else if (type == "torch") {
      auto o = torchb::parse_torch_options(options);
      b.effective = torchb::to_json(o);
      prompt_files->reset();
      *torch_device = o.device;
      if (o.baselines)
        b.baselines = [o](const std::vector<std::shared_ptr<const Task>>& tasks, std::uint64_t seed) {
          return torchb::measure_baselines(o, tasks, seed, stderr);
        };
      b.backend = torchb::make_torch_backend(o);
    } else if (type == "cpu") {
      auto o = cpu::parse_cpu_options(options);
      b.effective = cpu::to_json(o);
      b.backend = cpu::make_cpu_backend(std::move(o));
#ifdef KEVO_HAVE_CUDA
    } else if (type == "cuda") {
      // backend.cuda.baselines is read first, so that the backend's own
      // parser knows the key.
      std::optional<StrictObject> bo = options.optional_object("baselines");
      auto bl = cuda::parse_baseline_options(bo ? &*bo : nullptr);
      auto o = cuda::parse_cuda_options(options);
      b.effective = cuda::to_json(o);
      b.effective["baselines"] = cuda::to_json(bl);
      if (bl.enabled)
        b.baselines = [setup = cuda::baseline_setup(bl, o)](const std::vector<std::shared_ptr<const Task>>& tasks,
                                                            std::uint64_t seed) {
          return cuda::measure_baselines(setup, tasks, seed, stderr);
        };
      b.backend = cuda::make_cuda_backend(std::move(o));
#endif
    } else {
      auto o = null_backend::parse_null_options(options);
      b.effective = null_backend::to_json(o);
      b.backend = null_backend::make_null_backend(std::move(o));
    }
    return b;
  };
  // The LLM service (models, HTTP client, budget, cache) is built from the
  // "llm" section and shared by every LLM operator of the config.
  auto llm = std::make_shared<std::shared_ptr<operators::llm::Service>>();
  p.sections = {"llm"};
  p.parse_section = [llm, start_servers, prompt_files, torch_device](const std::string&, StrictObject* section,
                                                                    const std::filesystem::path& base) {
    llm->reset();
    if (!section) return nlohmann::json();
    auto cfg = operators::llm::parse_service_config(*section, base);
    cfg.start_local_server = start_servers;
    nlohmann::json eff = cfg.effective;
    // A check (`kevo campaign plan`, `sbatch` on a login node) reaches no
    // model: the endpoint may answer only where the cells run.
    if (!start_servers) cfg.probe = false;
    *llm = std::make_shared<operators::llm::Service>(std::move(cfg));
    if (*prompt_files)
      (*llm)->set_backend_files("command", (*prompt_files)->system, (*prompt_files)->knowledge, (*prompt_files)->pointer);
    if (!torch_device->empty()) (*llm)->set_device("torch", *torch_device);
    return eff;
  };
  // The LLM token/USD budget is run-wide: the engine shares it between ranks
  // (the aliasing pointer keeps the service alive).
  p.shared_budgets = [llm]() {
    std::vector<std::shared_ptr<SharedBudget>> v;
    if (*llm) v.emplace_back(std::shared_ptr<SharedBudget>(*llm, &(*llm)->client().budget()));
    // The stop rules over the requests' outcomes (docs/llm.md#failures).
    if (*llm) v.emplace_back((*llm)->health());
    return v;
  };
  // The reply cache is the run's record: the verdict record follows its
  // mode (backend.verdicts.mode "auto") and lives in its folder.
  p.run_record = [llm]() {
    engine::Plugins::RunRecord r;
    if (!*llm) return r;
    const auto& cfg = (*llm)->config();
    using operators::llm::CacheMode;
    r.mode = cfg.cache_mode == CacheMode::record ? "record"
             : cfg.cache_mode == CacheMode::off  ? "off"
                                                 : "replay";   // replay, replay_or_call
    r.dir = cfg.cache_dir / "verdicts";
    return r;
  };
  p.run_notes = [llm]() {
    std::vector<std::string> v;
    if (*llm)
      if (auto note = (*llm)->cache_note(); !note.empty()) v.push_back(std::move(note));
    return v;
  };
  p.make_operator = [llm](StrictObject& spec) {
    auto s = operators::make_operator(spec, *llm);
    engine::BuiltOperator b;
    b.type = s.type;
    b.weight = s.weight;
    b.enabled = s.enabled;
    b.op = std::move(s.op);
    b.effective = std::move(s.effective);
    return b;
  };
  return p;
}

}  // namespace

engine::Plugins builtin_plugins() { return make_plugins(all_backend_types(), true); }

engine::Plugins builtin_plugins(const std::vector<std::string>& backend_types) {
  return make_plugins(backend_types, true);
}

engine::Plugins checking_plugins() { return make_plugins(all_backend_types(), false); }

}  // namespace kevo::app
