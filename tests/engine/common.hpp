// Helpers shared by the engine tests.
#pragma once

#include "kevo/app/plugins.hpp"
#include "kevo/core/task.hpp"
#include "kevo/engine/config.hpp"
#include "kevo/engine/island.hpp"

#include <memory>
#include <vector>

namespace kevo::test {

// The application's plugin table with only the null backend.
inline engine::Plugins test_plugins() { return app::builtin_plugins({"null"}); }

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
