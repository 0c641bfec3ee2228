#include "kevo/operators/param_operators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace kevo::operators {

std::optional<Point> parent_point(const Task& task, const Candidate& parent) {
  if (parent.point && task.space.valid(*parent.point)) return parent.point;
  return point_from_source(task.space, parent.source);
}

namespace {

bool fits(const std::vector<Param>& params, const Point& p) {
  if (p.size() != params.size()) return false;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] >= params[i].values.size()) return false;
  return true;
}

}  // namespace

// An additive model of log speedup over one-hot parameter values, mu + sum_i
// effect[i][value_i], fitted by weighted, ridge-regularised backfitting. A
// value never observed predicts the (weighted) mean, so untried values are
// neither favoured nor shunned. Samples more than kClip (log units) below the
// best seen count as kClip below it: on these spaces a few points are many
// times slower (two threads on a loaded machine, libm exp, no vectors) and
// without the clip they dominate the fit of a parameter whose other values
// are the fastest. Each sample weighs exp(-(best - its value) / kScale): the
// model only has to rank the points near the top, and a value that is slow
// on average but part of the fastest combinations (an interaction the
// additive form cannot express, such as a vector width that pays only with a
// wide tile and one loop order) is then judged by those combinations rather
// than by its average over the slow ones (docs/benchmarks.md#search-efficiency).
// Fitted on at most the last kWindow samples, with per-sample predictions
// kept up to date, so a fit costs O(sweeps x params x window), microseconds
// however long the run (the engine-overhead budget is 100 us per candidate).
class ParamMutation::Model {
 public:
  static constexpr std::size_t kWindow = 256;
  static constexpr double kClip = 1.2;    // 3.3x slower than the best
  static constexpr double kScale = 0.3;   // a sample 1.35x slower than the best weighs 1/e
  static constexpr double kRidge = 1.0;   // shrinks effects seen on little weight towards 0
  static constexpr int kSweeps = 8;

  // Fitted on the first `prefix` of `all`.
  Model(const SearchSpace& space, const std::vector<Sample>& all, std::size_t prefix) {
    const auto& params = space.params();
    effect_.resize(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) effect_[i].assign(params[i].values.size(), 0.0);
    // The last kWindow of those samples whose point fits this space (an operator may
    // have recorded a point of another shape: it is ignored, not indexed).
    std::vector<const Sample*> use;
    for (auto it = all.rend() - static_cast<std::ptrdiff_t>(prefix); it != all.rend() && use.size() < kWindow; ++it)
      if (fits(params, it->point)) use.push_back(&*it);
    const std::size_t n = use.size();
    if (n == 0) return;
    double top = use.front()->log_speedup;
    for (const auto* x : use) top = std::max(top, x->log_speedup);
    std::vector<double> y(n), w(n);
    double total = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
      y[k] = std::max(use[k]->log_speedup, top - kClip);
      w[k] = std::exp(-(top - y[k]) / kScale);
      mu_ += w[k] * y[k];
      total += w[k];
    }
    mu_ /= total;   // the best sample weighs 1, so total >= 1
    std::vector<double> pred(n, mu_), sum, count, old;
    for (int sweep = 0; sweep < kSweeps; ++sweep) {
      for (std::size_t i = 0; i < params.size(); ++i) {
        auto& e = effect_[i];
        sum.assign(e.size(), 0.0);
        count.assign(e.size(), 0.0);
        for (std::size_t k = 0; k < n; ++k) {
          const auto v = use[k]->point[i];
          sum[v] += w[k] * (y[k] - (pred[k] - e[v]));
          count[v] += w[k];
        }
        old = e;
        for (std::size_t v = 0; v < e.size(); ++v) e[v] = sum[v] / (count[v] + kRidge);
        for (std::size_t k = 0; k < n; ++k) {
          const auto v = use[k]->point[i];
          pred[k] += e[v] - old[v];
        }
      }
    }
  }

  double predict(const Point& p) const {
    double y = mu_;
    for (std::size_t i = 0; i < effect_.size(); ++i) y += effect_[i][p[i]];
    return y;
  }

 private:
  double mu_ = 0.0;
  std::vector<std::vector<double>> effect_;
};

ParamMutation::ParamMutation(ParamMutationOptions options)
    : MutationOperator("param_mutation", 1), options_(options) {}

ParamMutation::~ParamMutation() = default;

void ParamMutation::observe(const Candidate& c) {
  if (tasks_.size() <= c.task) tasks_.resize(c.task + 1);
  TaskMemory& m = tasks_[c.task];
  if (c.verdict.status == Status::duplicate) ++m.duplicates;
  else if (c.verdict.status != Status::invalid && c.verdict.status != Status::lost) m.duplicates = 0;
  if (!c.verdict.is_correct() || !c.point || !(c.verdict.speedup > 0.0) || !std::isfinite(c.verdict.speedup)) return;
  m.samples.push_back(Sample{*c.point, std::log(c.verdict.speedup)});
  // The refit schedule: every sample up to 64, then after every 1/16 more
  // (a fit per commit would cost the null-backend engine more than its
  // 100 us budget per candidate; one more sample among hundreds barely
  // moves the effects). Advanced here, per sample, rather than when a
  // proposal asks for the model, so that which samples the model is fitted
  // on depends only on the candidates observed: a resumed run that replays
  // them gets the same model as the uninterrupted run (docs/config.md).
  const std::size_t n = m.samples.size();
  if (n < 64 || n >= m.fit_at + m.fit_at / 16) m.fit_at = n;
}

const ParamMutation::Model& ParamMutation::model(const Task& task, std::size_t index) {
  TaskMemory& m = tasks_.at(index);
  // Fitted lazily, once per schedule step: proposals between two commits
  // see the same samples.
  if (!m.model || m.fitted_on != m.fit_at) {
    m.model = std::make_unique<Model>(task.space, m.samples, m.fit_at);
    m.fitted_on = m.fit_at;
  }
  return *m.model;
}

const std::vector<Point>* ParamMutation::enumerated(const Task& task) {
  auto it = enumerated_.find(&task);
  if (it == enumerated_.end()) {
    std::optional<std::vector<Point>> all;
    if (task.space.cardinality() <= kMaxEnumerated) all = task.space.enumerate(kMaxEnumerated);
    it = enumerated_.emplace(&task, std::move(all)).first;
  }
  return it->second ? &*it->second : nullptr;
}

std::optional<Point> ParamMutation::neighbourhood_move(const OperatorRequest& request, const Point& start) {
  const Task& task = *request.task;
  const Candidate& parent = *request.parents.front();
  const auto& params = task.space.params();
  Rng& rng = *request.rng;
  const auto known = [&](const Point& q) { return request.known_point && request.known_point(parent.body_hash, q); };
  const bool guided = parent.task < tasks_.size() && !tasks_[parent.task].samples.empty() && rng.chance(options_.guided);
  const Model* m = guided ? &model(task, parent.task) : nullptr;

  // The first valid point of `options` (all untried) in the order of the
  // pick: the model's ranking, else a uniform draw. Validity (the
  // restrictions) is checked lazily, in that order: evaluating them for a
  // whole neighbourhood would dominate the cost of a proposal.
  struct Option {
    Point point;
    bool valid_known = false;   // already known to be valid (enumerated)
  };
  const auto pick = [&](std::vector<Option>& options) -> std::optional<Point> {
    if (m) {
      // Ties (values the model has no data on) go to a random one of them,
      // not to the first parameter in the list.
      std::vector<std::pair<double, std::size_t>> order;
      order.reserve(options.size());
      for (std::size_t k = 0; k < options.size(); ++k)
        order.emplace_back(m->predict(options[k].point) + 1e-9 * rng.uniform(), k);
      // Best first, lazily: usually the first one or few are valid, so a
      // heap beats sorting every option (the same order as a full sort:
      // the scores are distinct).
      const auto lower = [](const auto& a, const auto& b) { return a.first < b.first; };
      std::make_heap(order.begin(), order.end(), lower);
      for (auto end = order.end(); end != order.begin(); --end) {
        std::pop_heap(order.begin(), end, lower);
        const std::size_t k = (end - 1)->second;
        if (options[k].valid_known || task.space.valid(options[k].point)) return std::move(options[k].point);
      }
      return std::nullopt;
    }
    for (std::size_t left = options.size(); left > 0; --left) {
      const std::size_t k = rng.below(left);
      if (options[k].valid_known || task.space.valid(options[k].point)) return std::move(options[k].point);
      std::swap(options[k], options[left - 1]);
    }
    return std::nullopt;
  };

  // Untried points one parameter away; for a guided move also every untried
  // valid point more than one and at most `radius` (0: any number of)
  // parameters away, in spaces of up to kMaxEnumerated points: once the
  // model has seen each parameter's effect it combines several good changes
  // in one step instead of walking there one parameter at a time, which
  // matters most when many children are in flight and each step waits for
  // its verdicts.
  std::vector<Option> options;
  for (std::size_t i = 0; i < params.size(); ++i)
    for (std::uint32_t v = 0; v < params[i].values.size(); ++v) {
      if (v == start[i]) continue;
      Point q = start;
      q[i] = v;
      if (!known(q)) options.push_back({std::move(q), false});
    }
  if (m && options_.radius != 1) {
    if (const auto* all = enumerated(task)) {
      const std::size_t limit = options_.radius > 0 ? static_cast<std::size_t>(options_.radius) : params.size();
      for (const Point& q : *all) {
        std::size_t d = 0;
        for (std::size_t i = 0; i < q.size(); ++i) d += q[i] != start[i] ? 1 : 0;
        if (d > 1 && d <= limit && !known(q)) options.push_back({q, true});
      }
    }
  }
  if (auto child = pick(options)) return child;
  // None: a local optimum whose neighbourhood is spent, or restrictions that
  // need two changes at once to move. Two parameters away.
  options.clear();
  for (std::size_t i = 0; i < params.size(); ++i)
    for (std::size_t j = i + 1; j < params.size(); ++j)
      for (std::uint32_t vi = 0; vi < params[i].values.size(); ++vi)
        for (std::uint32_t vj = 0; vj < params[j].values.size(); ++vj) {
          if (vi == start[i] || vj == start[j]) continue;
          Point q = start;
          q[i] = vi;
          q[j] = vj;
          if (!known(q)) options.push_back({std::move(q), false});
        }
  return pick(options);
}

std::optional<Point> ParamMutation::rate_move(const OperatorRequest& request, const Point& start, double rate) {
  const Task& task = *request.task;
  const Candidate& parent = *request.parents.front();
  Rng& rng = *request.rng;
  const auto& params = task.space.params();
  for (int attempt = 0; attempt < options_.attempts; ++attempt) {
    Point child = start;
    bool changed = false;
    // One parameter always changes; the others with probability `rate`.
    const std::size_t forced = rng.below(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const auto n = static_cast<std::int64_t>(params[i].values.size());
      if (n < 2 || (i != forced && !rng.chance(rate))) continue;
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
    if (changed && child != start && task.space.valid(child)) {
      // Prefer a point nobody proposed yet; the last attempt takes any.
      if (attempt + 1 < options_.attempts && request.known_point && request.known_point(parent.body_hash, child))
        continue;
      return child;
    }
  }
  return std::nullopt;
}

std::optional<OperatorOutcome> ParamMutation::do_begin(const OperatorRequest& request) {
  const Task& task = *request.task;
  const Candidate& parent = *request.parents.front();
  const auto start = parent_point(task, parent);
  if (!start)
    return OperatorOutcome::failed(request.id, fmt::format("parent {} has no valid parameter block", parent.id));
  // A run of duplicates means the children keep landing on judged points
  // (rate moves' and crossovers' last tries, repeats the known points do
  // not catch): jump further with rate moves at rate 0.5 until something
  // new is judged.
  const bool stuck = parent.task < tasks_.size() && tasks_[parent.task].duplicates >= kStuck;
  std::optional<Point> child;
  if (!stuck && request.rng->chance(options_.local)) child = neighbourhood_move(request, *start);
  if (!child) child = rate_move(request, *start, stuck ? std::max(options_.rate, 0.5) : options_.rate);
  if (!child)
    return OperatorOutcome::failed(
        request.id, fmt::format("no valid mutation of parent {} in {} attempts", parent.id, options_.attempts));
  Proposal p;
  p.source = apply_point(task.space, *child, parent.source);
  p.point = std::move(child);
  return OperatorOutcome::ok(request.id, std::move(p));
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
    // The known-point lookup first: it is a hash probe, validity evaluates
    // the restrictions.
    if (child == *pa || child == *pb) continue;
    if (attempt + 1 < options_.attempts && request.known_point && request.known_point(a.body_hash, child)) continue;
    if (task.space.valid(child)) {
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
