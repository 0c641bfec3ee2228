#include "kevo/operators/param_operators.hpp"

#include <fmt/format.h>

namespace kevo::operators {

std::optional<Point> parent_point(const Task& task, const Candidate& parent) {
  if (parent.point && task.space.valid(*parent.point)) return parent.point;
  return point_from_source(task.space, parent.source);
}

ParamMutation::ParamMutation(ParamMutationOptions options)
    : MutationOperator("param_mutation", 1), options_(options) {}

std::optional<OperatorOutcome> ParamMutation::do_begin(const OperatorRequest& request) {
  const Task& task = *request.task;
  const Candidate& parent = *request.parents.front();
  const auto start = parent_point(task, parent);
  if (!start)
    return OperatorOutcome::failed(request.id, fmt::format("parent {} has no valid parameter block", parent.id));
  Rng& rng = *request.rng;
  const auto& params = task.space.params();
  for (int attempt = 0; attempt < options_.attempts; ++attempt) {
    Point child = *start;
    bool changed = false;
    // One parameter always changes; the others with probability `rate`.
    const std::size_t forced = rng.below(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const auto n = static_cast<std::int64_t>(params[i].values.size());
      if (n < 2 || (i != forced && !rng.chance(options_.rate))) continue;
      std::int64_t next;
      if (rng.chance(options_.step_bias)) {
        const std::int64_t cur = child[i];
        next = cur == 0 ? 1 : cur == n - 1 ? n - 2 : cur + (rng.chance(0.5) ? 1 : -1);
      } else {
        next = rng.range(0, n - 2);
        if (next >= child[i]) ++next;   // any value but the current one
      }
      child[i] = static_cast<std::uint32_t>(next);
      changed = true;
    }
    if (changed && child != *start && task.space.valid(child)) {
      // Prefer a point nobody proposed yet; the last attempt takes any.
      if (attempt + 1 < options_.attempts && request.known_point && request.known_point(parent.body_hash, child))
        continue;
      Proposal p;
      p.source = apply_point(task.space, child, parent.source);
      p.point = child;
      return OperatorOutcome::ok(request.id, std::move(p));
    }
  }
  return OperatorOutcome::failed(
      request.id, fmt::format("no valid mutation of parent {} in {} attempts", parent.id, options_.attempts));
}

ParamCrossover::ParamCrossover(ParamCrossoverOptions options)
    : MutationOperator("param_crossover", 2), options_(options) {}

std::optional<OperatorOutcome> ParamCrossover::do_begin(const OperatorRequest& request) {
  const Task& task = *request.task;
  const Candidate& a = *request.parents[0];
  const Candidate& b = *request.parents[1];
  const auto pa = parent_point(task, a);
  const auto pb = parent_point(task, b);
  if (!pa || !pb)
    return OperatorOutcome::failed(request.id, fmt::format("parent {} has no valid parameter block", !pa ? a.id : b.id));
  if (*pa == *pb) return OperatorOutcome::failed(request.id, "parents share one point: nothing to cross");
  Rng& rng = *request.rng;
  for (int attempt = 0; attempt < options_.attempts; ++attempt) {
    Point child = *pa;
    for (std::size_t i = 0; i < child.size(); ++i)
      if (rng.chance(0.5)) child[i] = (*pb)[i];
    if (child != *pa && child != *pb && task.space.valid(child)) {
      if (attempt + 1 < options_.attempts && request.known_point && request.known_point(a.body_hash, child)) continue;
      Proposal p;
      // The body comes from the first (fitter) parent.
      p.source = apply_point(task.space, child, a.source);
      p.point = child;
      return OperatorOutcome::ok(request.id, std::move(p));
    }
  }
  return OperatorOutcome::failed(
      request.id, fmt::format("no valid crossover of {} and {} in {} attempts", a.id, b.id, options_.attempts));
}

}  // namespace kevo::operators
