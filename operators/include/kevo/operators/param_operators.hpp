// Parameter operators: children that differ from their parents only in the
// search-space point written in the params block. They honour the task's
// restrictions (a child is always a valid point) and are deterministic given
// the request's random stream.
#pragma once

#include "kevo/core/mutation_operator.hpp"

#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace kevo::operators {

struct ParamMutationOptions {
  double rate = 0.1;        // chance that each parameter changes (rate moves)
  double step_bias = 0.7;   // chance that a change moves to a neighbouring value (else any value)
  int attempts = 64;        // tries to reach a valid, changed point before failing
  double local = 1.0;       // chance of a neighbourhood move (else a rate move)
  double guided = 1.0;      // chance a neighbourhood move takes the model's best point (else a uniform pick)
  int radius = 0;           // guided moves rank untried points up to this many changes away (0: any)
};

// Mutates the parent's point; never proposes a point the task has already
// seen (judged or in flight) while an unseen one is reachable.
//
// Neighbourhood move (probability `local`): the untried valid points one
// parameter away from the parent (two when all of those are known). With
// probability `guided`, once verdicts are in, the pick is the point an
// additive model of log speedup over the task's correct candidates so far
// predicts fastest, and the candidates include every untried point up to
// `radius` changes away (spaces small enough to enumerate); otherwise a
// uniform pick among the one-parameter neighbours.
//
// Rate move (otherwise, or when nothing untried is near): every parameter
// changes with probability `rate` (at least one always does), to a
// neighbouring value index or, with probability 1 - step_bias, to any value.
//
// The model learns through observe(), which the island calls in commit
// order, so a seed's run is the same on every replay. Everything it knows is
// a function of the candidates observed, in order (when it refits included),
// so replay() of a resumed run's earlier commits rebuilds the very state an
// uninterrupted run has.
class ParamMutation final : public MutationOperator {
 public:
  explicit ParamMutation(ParamMutationOptions options);
  ~ParamMutation() override;
  bool applicable(const Task& task) const override { return !task.space.empty(); }
  // Records the point and speedup of every correct candidate for the model.
  void observe(const Candidate& c) override;
  // Resume: exactly observe().
  void replay(const Candidate& c) override { observe(c); }

 protected:
  std::optional<OperatorOutcome> do_begin(const OperatorRequest& request) override;

 private:
  class Model;
  struct Sample {
    Point point;
    double log_speedup = 0.0;
  };
  // What the operator knows of one island task (index Candidate::task).
  struct TaskMemory {
    std::vector<Sample> samples;     // correct candidates, in commit order
    std::size_t fit_at = 0;          // the model is due on the first fit_at samples (set by observe())
    std::unique_ptr<Model> model;    // fitted on the first fitted_on samples
    std::size_t fitted_on = 0;
    std::int64_t duplicates = 0;     // consecutive duplicates committed
  };
  static constexpr std::int64_t kStuck = 16;
  static constexpr std::uint64_t kMaxEnumerated = 4096;

  std::optional<Point> neighbourhood_move(const OperatorRequest& request, const Point& start);
  std::optional<Point> rate_move(const OperatorRequest& request, const Point& start, double rate);
  const Model& model(const Task& task, std::size_t index);
  // Every valid point of the task's space, or null when it has more than
  // kMaxEnumerated points before restrictions. Computed once per task.
  const std::vector<Point>* enumerated(const Task& task);

  ParamMutationOptions options_;
  std::vector<TaskMemory> tasks_;
  std::map<const Task*, std::optional<std::vector<Point>>> enumerated_;
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
