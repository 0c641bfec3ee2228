#include "kevo/operators/registry.hpp"

#include "kevo/operators/llm_operators.hpp"
#include "kevo/operators/param_operators.hpp"

#include <fmt/format.h>

#include <map>

namespace kevo::operators {
namespace {

using Factory = std::function<std::unique_ptr<MutationOperator>(StrictObject&, nlohmann::json&,
                                                                  const std::shared_ptr<llm::Service>&)>;

// An LLM operator type: the kind plus its options.
Factory llm_factory(llm::Kind kind) {
  return [kind](StrictObject& o, nlohmann::json& eff, const std::shared_ptr<llm::Service>& service) {
    llm::LlmOperatorOptions opt;
    opt.kind = kind;
    opt.inspirations = static_cast<int>(o.integer("inspirations", opt.inspirations, 0, 64));
    eff["inspirations"] = opt.inspirations;
    if (kind == llm::Kind::fix) {
      opt.max_turns = static_cast<int>(o.integer("max_turns", opt.max_turns, 1, 100));
      eff["max_turns"] = opt.max_turns;
    }
    if (kind == llm::Kind::analyst) {
      opt.slow_below = o.number("slow_below", 1e9, 0.0);
      eff["slow_below"] = opt.slow_below;
    }
    const std::string type = eff.at("type").get<std::string>();
    if (!service) o.fail("type", fmt::format("'{}' only with a top-level \"llm\" section listing models", type));
    auto op = std::make_unique<llm::LlmOperator>(type, service, opt);
    // An enabled LLM operator needs its models now, not an hour into the run.
    if (eff.value("enabled", true)) service->probe();
    if (kind == llm::Kind::analyst && eff.value("enabled", true) && eff.value("weight", 1.0) > 0.0)
      service->set_analyst_enabled();
    return op;
  };
}

const std::map<std::string, Factory>& builtins() {
  static const std::map<std::string, Factory> table = {
      {"param_mutation",
       [](StrictObject& o, nlohmann::json& eff, const std::shared_ptr<llm::Service>&) {
         ParamMutationOptions opt;
         opt.rate = o.number("rate", opt.rate, 0.0, 1.0);
         opt.step_bias = o.number("step_bias", opt.step_bias, 0.0, 1.0);
         opt.attempts = static_cast<int>(o.integer("attempts", opt.attempts, 1, 100000));
         opt.local = o.number("local", opt.local, 0.0, 1.0);
         opt.guided = o.number("guided", opt.guided, 0.0, 1.0);
         opt.radius = static_cast<int>(o.integer("radius", opt.radius, 0, 1 << 20));
         eff["rate"] = opt.rate;
         eff["step_bias"] = opt.step_bias;
         eff["attempts"] = opt.attempts;
         eff["local"] = opt.local;
         eff["guided"] = opt.guided;
         eff["radius"] = opt.radius;
         return std::make_unique<ParamMutation>(opt);
       }},
      {"param_crossover",
       [](StrictObject& o, nlohmann::json& eff, const std::shared_ptr<llm::Service>&) {
         ParamCrossoverOptions opt;
         opt.attempts = static_cast<int>(o.integer("attempts", opt.attempts, 1, 100000));
         eff["attempts"] = opt.attempts;
         return std::make_unique<ParamCrossover>(opt);
       }},
      {"llm_rewrite", llm_factory(llm::Kind::rewrite)},
      {"llm_diff", llm_factory(llm::Kind::diff)},
      {"llm_crossover", llm_factory(llm::Kind::crossover)},
      {"llm_analyst", llm_factory(llm::Kind::analyst)},
      {"llm_param_hint", llm_factory(llm::Kind::param_hint)},
      {"llm_fix", llm_factory(llm::Kind::fix)},
  };
  return table;
}

}  // namespace

std::vector<std::string> builtin_operator_types() {
  std::vector<std::string> out;
  for (const auto& [name, f] : builtins()) out.push_back(name);
  return out;
}

OperatorSpec make_operator(StrictObject& obj) { return make_operator(obj, nullptr); }

OperatorSpec make_operator(StrictObject& obj, const std::shared_ptr<llm::Service>& llm) {
  OperatorSpec spec;
  spec.type = obj.choice("type", builtin_operator_types());
  spec.weight = obj.number("weight", 1.0, 0.0, 1e9);
  spec.enabled = obj.boolean("enabled", true);
  spec.effective = {{"type", spec.type}, {"weight", spec.weight}, {"enabled", spec.enabled}};
  spec.op = builtins().at(spec.type)(obj, spec.effective, llm);
  obj.finish();
  return spec;
}

}  // namespace kevo::operators
