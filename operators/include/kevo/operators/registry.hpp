// Explicit registration of mutation operators: one builtin table; the
// config's "type" picks the entry (no static self-registration, which static
// libraries silently drop).
#pragma once

#include "kevo/core/mutation_operator.hpp"
#include "kevo/core/strict_json.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kevo::operators {

struct OperatorSpec {
  std::string type;
  double weight = 1.0;
  bool enabled = true;                 // ablations switch operators off
  std::unique_ptr<MutationOperator> op;
  nlohmann::json effective;            // the operator's config with defaults filled in
};

// Builds one operator from its config object ({"type": ..., "weight": ...,
// "enabled": ..., operator keys}). Throws InputError naming file and pointer.
OperatorSpec make_operator(StrictObject& obj);

namespace llm {
class Service;
}
// The same, with the LLM service that LLM operator types (llm_*) share; a
// null service makes them an InputError asking for the "llm" section.
OperatorSpec make_operator(StrictObject& obj, const std::shared_ptr<llm::Service>& llm);

std::vector<std::string> builtin_operator_types();

}  // namespace kevo::operators
