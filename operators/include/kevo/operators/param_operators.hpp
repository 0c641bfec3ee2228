// Parameter operators: children that differ from their parents only in the
// search-space point written in the params block. They honour the task's
// restrictions (a child is always a valid point) and are deterministic given
// the request's random stream.
#pragma once

#include "kevo/core/mutation_operator.hpp"

namespace kevo::operators {

struct ParamMutationOptions {
  double rate = 0.3;        // chance that each parameter changes
  double step_bias = 0.7;   // chance that a change moves to a neighbouring value (else any value)
  int attempts = 64;        // tries to reach a valid, changed point before failing
};

// Mutates the parent's point: every parameter changes with probability
// `rate` (at least one always does), to a neighbouring value index or, with
// probability 1 - step_bias, to any value.
class ParamMutation final : public MutationOperator {
 public:
  explicit ParamMutation(ParamMutationOptions options);
  bool applicable(const Task& task) const override { return !task.space.empty(); }

 protected:
  std::optional<OperatorOutcome> do_begin(const OperatorRequest& request) override;

 private:
  ParamMutationOptions options_;
};

struct ParamCrossoverOptions {
  int attempts = 64;
};

// Uniform crossover of two parents' points: each parameter from either
// parent with equal chance; a child identical to a parent is retried.
class ParamCrossover final : public MutationOperator {
 public:
  explicit ParamCrossover(ParamCrossoverOptions options);
  bool applicable(const Task& task) const override { return !task.space.empty(); }

 protected:
  std::optional<OperatorOutcome> do_begin(const OperatorRequest& request) override;

 private:
  ParamCrossoverOptions options_;
};

// The point of a parent: its recorded point, else the one its source's
// params block names.
std::optional<Point> parent_point(const Task& task, const Candidate& parent);

}  // namespace kevo::operators
