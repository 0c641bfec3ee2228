#include "kevo/operators/registry.hpp"

#include "kevo/operators/param_operators.hpp"

#include <fmt/format.h>

#include <map>

namespace kevo::operators {
namespace {

using Factory = std::function<std::unique_ptr<MutationOperator>(StrictObject&, nlohmann::json&)>;

const std::map<std::string, Factory>& builtins() {
  static const std::map<std::string, Factory> table = {
      {"param_mutation",
       [](StrictObject& o, nlohmann::json& eff) {
         ParamMutationOptions opt;
         opt.rate = o.number("rate", opt.rate, 0.0, 1.0);
         opt.step_bias = o.number("step_bias", opt.step_bias, 0.0, 1.0);
         opt.attempts = static_cast<int>(o.integer("attempts", opt.attempts, 1, 100000));
         eff["rate"] = opt.rate;
         eff["step_bias"] = opt.step_bias;
         eff["attempts"] = opt.attempts;
         return std::make_unique<ParamMutation>(opt);
       }},
      {"param_crossover",
       [](StrictObject& o, nlohmann::json& eff) {
         ParamCrossoverOptions opt;
         opt.attempts = static_cast<int>(o.integer("attempts", opt.attempts, 1, 100000));
         eff["attempts"] = opt.attempts;
         return std::make_unique<ParamCrossover>(opt);
       }},
  };
  return table;
}

}  // namespace

std::vector<std::string> builtin_operator_types() {
  std::vector<std::string> out;
  for (const auto& [name, f] : builtins()) out.push_back(name);
  return out;
}

OperatorSpec make_operator(StrictObject& obj) {
  OperatorSpec spec;
  spec.type = obj.choice("type", builtin_operator_types());
  spec.weight = obj.number("weight", 1.0, 0.0, 1e9);
  spec.enabled = obj.boolean("enabled", true);
  spec.effective = {{"type", spec.type}, {"weight", spec.weight}, {"enabled", spec.enabled}};
  spec.op = builtins().at(spec.type)(obj, spec.effective);
  obj.finish();
  return spec;
}

}  // namespace kevo::operators
