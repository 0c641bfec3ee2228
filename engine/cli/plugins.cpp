#include "plugins.hpp"

#include "kevo/cpu/cpu_backend.hpp"
#include "kevo/null/null_backend.hpp"
#include "kevo/operators/registry.hpp"

namespace kevo::app {

engine::Plugins builtin_plugins() {
  engine::Plugins p;
  p.backend_types = {"cpu", "null"};
  p.make_backend = [](const std::string& type, StrictObject& options) {
    engine::BuiltBackend b;
    if (type == "cpu") {
      auto o = cpu::parse_cpu_options(options);
      b.effective = cpu::to_json(o);
      b.backend = cpu::make_cpu_backend(std::move(o));
    } else {
      auto o = null_backend::parse_null_options(options);
      b.effective = null_backend::to_json(o);
      b.backend = null_backend::make_null_backend(std::move(o));
    }
    return b;
  };
  p.make_operator = [](StrictObject& spec) {
    auto s = operators::make_operator(spec);
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
