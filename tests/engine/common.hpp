// Helpers shared by the engine tests.
#pragma once

#include "kevo/core/task.hpp"
#include "kevo/engine/config.hpp"
#include "kevo/engine/island.hpp"
#include "kevo/null/null_backend.hpp"
#include "kevo/operators/registry.hpp"

#include <memory>
#include <vector>

namespace kevo::test {

inline engine::Plugins test_plugins() {
  engine::Plugins p;
  p.backend_types = {"null"};
  p.make_backend = [](const std::string&, StrictObject& o) {
    auto opt = null_backend::parse_null_options(o);
    engine::BuiltBackend b;
    b.effective = null_backend::to_json(opt);
    b.backend = null_backend::make_null_backend(opt);
    return b;
  };
  p.make_operator = [](StrictObject& spec) {
    auto s = operators::make_operator(spec);
    engine::BuiltOperator b;
    b.type = s.type;
    b.weight = s.weight;
    b.enabled = s.enabled;
    b.op = std::move(s.op);
    b.effective = s.effective;
    return b;
  };
  return p;
}

class VectorSink final : public engine::LineageSink {
 public:
  void record(const Candidate& c) override { rows.push_back(c); }
  std::vector<Candidate> rows;
};

inline nlohmann::json toy_config() {
  return nlohmann::json::parse(R"({
    "name": "toy", "seed": 7, "tasks": [")" KEVO_TEST_DATA R"(/toy"],
    "budget": {"evaluations_per_task": 60},
    "island": {"population": 8, "elites": 2, "in_flight": 6},
    "operators": [{"type": "param_mutation", "weight": 0.7}, {"type": "param_crossover", "weight": 0.3}],
    "backend": {"type": "null", "null": {"wrong_fraction": 0.1}},
    "progress": {"mode": "off"}
  })");
}

}  // namespace kevo::test
