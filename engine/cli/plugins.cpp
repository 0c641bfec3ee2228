#include "plugins.hpp"

#include "kevo/cpu/cpu_backend.hpp"
#ifdef KEVO_HAVE_CUDA
#include "kevo/cuda/cuda_backend.hpp"
#endif
#include "kevo/null/null_backend.hpp"
#include "kevo/operators/llm_operators.hpp"
#include "kevo/operators/registry.hpp"

#include <memory>

namespace kevo::app {

engine::Plugins builtin_plugins() {
  engine::Plugins p;
  p.backend_types = {"cpu", "null"};
#ifdef KEVO_HAVE_CUDA
  p.backend_types.push_back("cuda");   // built only where the CUDA toolkit was found
#endif
  p.make_backend = [](const std::string& type, StrictObject& options) {
    engine::BuiltBackend b;
    if (type == "cpu") {
      auto o = cpu::parse_cpu_options(options);
      b.effective = cpu::to_json(o);
      b.backend = cpu::make_cpu_backend(std::move(o));
#ifdef KEVO_HAVE_CUDA
    } else if (type == "cuda") {
      auto o = cuda::parse_cuda_options(options);
      b.effective = cuda::to_json(o);
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
  p.parse_section = [llm](const std::string&, StrictObject* section, const std::filesystem::path& base) {
    llm->reset();
    if (!section) return nlohmann::json();
    auto cfg = operators::llm::parse_service_config(*section, base);
    nlohmann::json eff = cfg.effective;
    *llm = std::make_shared<operators::llm::Service>(std::move(cfg));
    return eff;
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

}  // namespace kevo::app
