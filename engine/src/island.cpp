#include "kevo/engine/island.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace kevo::engine {
namespace {

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Streams derived from the run seed: one per candidate id for proposals, a
// different family for replacement decisions at commit time.
constexpr std::uint64_t kCommitStream = 0x9e3779b97f4a7c15ULL;

// Identifies "this body at this point" without building the source.
std::uint64_t variant_key(std::uint64_t body_hash, const Point& p) {
  return fnv1a64(p.data(), p.size() * sizeof(p[0]), body_hash);
}

bool fitter(const Candidate& a, const Candidate& b) {
  if (a.fitness() != b.fitness()) return a.fitness() > b.fitness();
  return a.id < b.id;
}

}  // namespace

Island::Island(IslandOptions options, std::vector<std::shared_ptr<const Task>> tasks, Backend& backend,
               std::vector<BuiltOperator>& operators, LineageSink& sink)
    : options_(std::move(options)), backend_(backend), operators_(operators), sink_(sink) {
  if (tasks.empty()) throw Failure("island needs at least one task");
  for (auto& t : tasks) {
    TaskState s;
    s.progress.name = t->name;
    s.task = std::move(t);
    s.cap = options_.budget.evaluations_per_task;
    tasks_.push_back(std::move(s));
  }
  next_id_ = next_commit_ = options_.first_id;
  if (options_.island.in_flight > 0) {
    window_ = options_.island.in_flight;
  } else {
    const auto needs = backend_.needs();
    window_ = std::max(4, 2 * needs.compile_slots + 2 * needs.eval_slots + 2);
  }
}

double Island::now() const { return unix_now(); }

bool Island::can_propose(const TaskState& t) const {
  if (t.population.empty()) return false;   // nothing to breed from (yet)
  // Under deterministic ordering the claim on the budget changes only at
  // proposals and commits (every uncommitted candidate may still be judged),
  // never when an asynchronous outcome happens to arrive: whether child k is
  // proposed after commit k - in_flight must not depend on reply timing.
  const std::int64_t claimed = deterministic() ? t.judged_committed + t.pending : t.judged_submitted + t.op_pending;
  if (claimed >= t.cap) return false;
  // Slow start (island.ramp): a task's first proposals wait for verdicts,
  // so they are not all drawn knowing only the seed. One candidate is in
  // flight at first, one more per `ramp` commits, up to the window.
  // Pending and committed counts change only at proposals and commits, so
  // determinism holds. A restored task already knows its history.
  if (options_.island.ramp > 0 && !t.restored &&
      t.pending >= 1 + std::max<std::int64_t>(0, t.progress.candidates - 1) / options_.island.ramp)
    return false;
  if (t.proposed >= options_.budget.max_candidates_per_task) return false;
  if (t.unjudged_streak >= options_.budget.stagnation) return false;
  return true;
}

std::optional<std::size_t> Island::pick_task() const {
  // The eligible task with the fewest proposals (ties: lowest index): tasks
  // share the rank evenly, and the choice depends only on committed state.
  std::optional<std::size_t> pick;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    if (!can_propose(tasks_[i])) continue;
    if (!pick || tasks_[i].proposed < tasks_[*pick].proposed) pick = i;
  }
  return pick;
}

std::vector<const Candidate*> Island::select_parents(const TaskState& t, int count, Rng& rng) const {
  std::vector<const Candidate*> out;
  const auto& pop = t.population;
  std::vector<bool> taken(pop.size(), false);
  for (int k = 0; k < count; ++k) {
    // Each turn takes one member not taken before.
    if (static_cast<std::size_t>(k) >= pop.size()) break;
    std::size_t chosen = pop.size();
    if (options_.island.selection == Selection::tournament) {
      for (int r = 0; r < options_.island.tournament_size; ++r) {
        std::size_t i;
        do i = rng.below(pop.size()); while (taken[i]);
        if (chosen == pop.size() || i < chosen) chosen = i;   // population is sorted: lower index is fitter
      }
    } else {
      double total = 0.0;
      for (std::size_t i = 0; i < pop.size(); ++i)
        if (!taken[i]) total += std::max(pop[i]->fitness(), 1e-12);
      double x = rng.uniform() * total;
      for (std::size_t i = 0; i < pop.size(); ++i) {
        if (taken[i]) continue;
        chosen = i;
        x -= std::max(pop[i]->fitness(), 1e-12);
        if (x < 0) break;
      }
    }
    taken[chosen] = true;
    out.push_back(pop[chosen].get());
  }
  // Best first: operators that keep one parent's body keep the fitter one's.
  std::sort(out.begin(), out.end(), [](const Candidate* a, const Candidate* b) { return fitter(*a, *b); });
  return out;
}

std::uint64_t Island::create_direct(std::size_t task, const Candidate& like, const std::string& source,
                                    const std::optional<Point>& point) {
  TaskState& t = tasks_[task];
  Slot slot;
  Candidate& c = slot.c;
  c.id = next_id_;
  next_id_ += options_.id_stride;
  c.task = static_cast<std::uint32_t>(task);
  c.op = like.op;
  c.parent0 = like.parent0;
  c.parent1 = like.parent1;
  c.op_note = like.op_note;
  c.t_created = now();
  ++t.proposed;
  ++t.pending;
  accept_source(slot, source, point);
  const auto id = c.id;
  slots_.emplace(id, std::move(slot));
  return id;
}

void Island::create_seed(std::size_t task) {
  Candidate seed;
  seed.op = "seed";
  create_direct(task, seed, tasks_[task].task->seed_source, tasks_[task].task->seed_point);
}

void Island::create_again(std::size_t task, const Candidate& lost) {
  const std::uint64_t id = create_direct(task, lost, lost.source, lost.point);
  sink_.event(LineageSink::EventKind::note, static_cast<std::int64_t>(id), -1, -1,
              fmt::format("judges again candidate {}, in flight when the run stopped", lost.id));
}

bool Island::propose() {
  const auto pick = pick_task();
  if (!pick) return false;
  TaskState& t = tasks_[*pick];
  const std::uint64_t id = next_id_;
  Rng rng = Rng::derive(options_.seed, id);

  // Operators that apply to this task and have enough parents available.
  double total = 0.0;
  std::vector<BuiltOperator*> usable;
  for (auto& o : operators_) {
    if (!o.enabled || o.weight <= 0.0 || !o.op->applicable(*t.task)) continue;
    if (static_cast<std::size_t>(o.op->arity()) > t.population.size()) continue;
    usable.push_back(&o);
    total += o.weight;
  }

  Slot slot;
  Candidate& c = slot.c;
  c.id = id;
  c.task = static_cast<std::uint32_t>(*pick);
  c.t_created = now();
  next_id_ += options_.id_stride;
  ++t.proposed;
  ++t.pending;

  if (usable.empty()) {
    c.op = "none";
    c.verdict.status = Status::invalid;
    c.verdict.message = "no enabled operator applies to this task with the current population";
    c.op_note = c.verdict.message;
    slot.where = Where::finished;
    if (!deterministic()) ++t.unjudged_streak;   // deterministic: counted at commit
    slots_.emplace(id, std::move(slot));
    return true;
  }
  double x = rng.uniform() * total;
  BuiltOperator* chosen = usable.back();
  for (auto* o : usable) {
    x -= o->weight;
    if (x < 0) {
      chosen = o;
      break;
    }
  }
  c.op = chosen->op->name();
  OperatorRequest req;
  req.id = id;
  req.task = t.task.get();
  req.parents = select_parents(t, chosen->op->arity(), rng);
  if (options_.island.inspirations > 0)
    for (const auto& m : t.population) {
      if (static_cast<int>(req.inspirations.size()) >= options_.island.inspirations) break;   // not the whole population
      if (std::find(req.parents.begin(), req.parents.end(), m.get()) == req.parents.end())
        req.inspirations.push_back(m.get());
    }
  req.feedback = req.parents.front()->verdict.feedback;
  req.rng = &rng;
  req.known_point = [&t](std::uint64_t body_hash, const Point& p) {
    return t.seen_points.count(variant_key(body_hash, p)) > 0;
  };
  if (!req.parents.empty()) c.parent0 = static_cast<std::int64_t>(req.parents[0]->id);
  if (req.parents.size() > 1) c.parent1 = static_cast<std::int64_t>(req.parents[1]->id);
  slot.op = chosen->op.get();
  auto outcome = chosen->op->begin(req);
  slots_.emplace(id, std::move(slot));
  if (outcome) {
    deliver(std::move(*outcome));
    // Deterministic: a synchronous proposal's point is known from now on,
    // even while its acceptance waits behind older asynchronous outcomes
    // (accepted at once, accept_source has recorded it already).
    if (auto h = held_.find(id); h != held_.end() && h->second.proposal) {
      const auto& pr = *h->second.proposal;
      const auto point = pr.point ? pr.point : point_from_source(t.task->space, pr.source);
      if (point) t.seen_points.insert(variant_key(source_hashes(pr.source, t.task->syntax()).body, *point));
    }
  } else {
    Slot& s = slots_.at(id);
    s.async = s.async_made = true;
    ++t.op_pending;
  }
  return true;
}

void Island::deliver(OperatorOutcome outcome) {
  if (options_.island.ordering != Ordering::deterministic) return handle_outcome(std::move(outcome));
  held_.emplace(outcome.id, std::move(outcome));
  for (auto& [id, slot] : slots_) {
    if (slot.where != Where::operator_pending) continue;
    auto h = held_.find(id);
    if (h == held_.end()) break;   // the oldest outstanding outcome has not arrived
    OperatorOutcome next = std::move(h->second);
    held_.erase(h);
    handle_outcome(std::move(next));   // changes slot.where; never erases a slot
  }
}

void Island::handle_outcome(OperatorOutcome outcome) {
  auto it = slots_.find(outcome.id);
  if (it == slots_.end() || it->second.where != Where::operator_pending)
    throw Failure(fmt::format("operator returned an outcome for unknown candidate {}", outcome.id));
  Slot& slot = it->second;
  if (slot.async) {
    slot.async = false;
    --tasks_[slot.c.task].op_pending;
  }
  slot.c.llm = std::move(outcome.llm);
  slot.c.llm_facts = std::move(outcome.llm_facts);
  if (!outcome.proposal) {
    slot.c.verdict.status = Status::invalid;
    slot.c.verdict.message = "operator failed: " + outcome.failure;
    slot.c.op_note = outcome.failure;
    slot.where = Where::finished;
    if (!deterministic()) ++tasks_[slot.c.task].unjudged_streak;   // deterministic: at commit
    return;
  }
  slot.c.op_note = outcome.proposal->note;
  slot.c.profile_request = std::move(outcome.proposal->profile);
  accept_source(slot, std::move(outcome.proposal->source), std::move(outcome.proposal->point));
}

void Island::accept_source(Slot& slot, std::string source, std::optional<Point> point) {
  Candidate& c = slot.c;
  TaskState& t = tasks_[c.task];
  c.source = std::move(source);
  // A torch task's source is Python: C's normalisation would merge programs
  // that differ in indentation or after a `//` (floor division).
  const auto hashes = source_hashes(c.source, t.task->syntax());
  c.hash = hashes.full;
  c.body_hash = hashes.body;
  c.point = std::move(point);
  if (!c.point) c.point = point_from_source(t.task->space, c.source);
  // Deterministic: an asynchronous proposal's point becomes known at its
  // commit (in id order), not when its reply happened to arrive.
  if (c.point && !(deterministic() && slot.async_made)) t.seen_points.insert(variant_key(c.body_hash, *c.point));
  c.params_json = c.point ? t.task->space.to_json(*c.point) : std::string();
  c.eval_seed = Rng::derive(options_.seed, c.id ^ 0x5eedULL).next();
  const auto [seen, fresh] = t.seen.emplace(c.hash, c.id);
  if (!fresh) {
    c.duplicate_of = static_cast<std::int64_t>(seen->second);
    c.verdict.status = Status::duplicate;
    c.verdict.message = fmt::format("same normalised source as candidate {}", seen->second);
    c.t_finished = now();
    slot.where = Where::finished;
    if (!deterministic()) ++t.unjudged_streak;
    return;
  }
  if (!deterministic()) t.unjudged_streak = 0;
  ++t.judged_submitted;
  c.t_submitted = now();
  slot.where = Where::backend;
  backend_.submit(EvalRequest{c.id, t.task, c.source, c.eval_seed, c.profile_request});
}

void Island::insert_member(TaskState& t, const Candidate& c) {
  auto& pop = t.population;
  pop.insert(std::upper_bound(pop.begin(), pop.end(), c,
                              [](const Candidate& a, const auto& b) { return fitter(a, *b); }),
             std::make_unique<const Candidate>(c));
  const auto cap = static_cast<std::size_t>(options_.island.population);
  if (pop.size() <= cap) return;
  // Over capacity: drop the loser of an inverse tournament among the
  // non-elite members, so elites always survive while weaker members keep
  // some diversity.
  const std::size_t elites = std::min<std::size_t>(options_.island.elites, cap);
  Rng rng = Rng::derive(options_.seed ^ kCommitStream, c.id);
  std::size_t loser = elites;
  for (int r = 0; r < options_.island.tournament_size; ++r) {
    const std::size_t i = elites + rng.below(pop.size() - elites);
    loser = std::max(loser, i);   // sorted: higher index is weaker
  }
  pop.erase(pop.begin() + static_cast<std::ptrdiff_t>(loser));
}

void Island::commit(Candidate c) {
  TaskState& t = tasks_[c.task];
  --t.pending;
  if (c.t_finished == 0.0) c.t_finished = now();
  auto& p = t.progress;
  ++p.candidates;
  ++p.status[static_cast<int>(c.verdict.status)];
  ++status_[static_cast<int>(c.verdict.status)];
  ++committed_;
  const bool judged = c.verdict.status != Status::duplicate && c.verdict.status != Status::invalid &&
                      c.verdict.status != Status::lost;
  if (judged) {
    ++p.evaluations;
    ++evaluations_;
    ++t.judged_committed;
  }
  if (deterministic()) t.unjudged_streak = judged ? 0 : t.unjudged_streak + 1;
  if (c.verdict.is_correct()) {
    if (!t.best || c.fitness() > t.best->fitness()) {
      t.best = c;
      p.best_id = static_cast<std::int64_t>(c.id);
      p.best_speedup = c.verdict.speedup;
      p.best_params = c.params_json;
    }
    insert_member(t, c);
  }
  llm_.add_candidate(c.op, c.llm, c.llm_facts);
  for (auto& o : operators_) o.op->observe(c);
  sink_.record_moved(std::move(c));
}

void Island::commit_ready() {
  if (options_.island.ordering == Ordering::deterministic) {
    while (true) {
      auto it = slots_.find(next_commit_);
      if (it == slots_.end() || it->second.where != Where::finished) break;
      if (it->second.async_made && it->second.c.point)
        tasks_[it->second.c.task].seen_points.insert(variant_key(it->second.c.body_hash, *it->second.c.point));
      Candidate c = std::move(it->second.c);
      slots_.erase(it);
      next_commit_ += options_.id_stride;
      commit(std::move(c));
      // Propose exactly up to the window, right after this commit: what the
      // child sees is fixed by the ids committed so far.
      while (!stopping_ && static_cast<std::int64_t>((next_id_ - next_commit_) / options_.id_stride) < window_ &&
             propose()) {
      }
    }
    // Nothing committed but proposals possible again (a restored population
    // before its first proposal, a cap the hook raised): propose up to the
    // window. Without a hook or a restore this finds nothing new to do.
    while (!stopping_ && static_cast<std::int64_t>((next_id_ - next_commit_) / options_.id_stride) < window_ &&
           propose()) {
    }
  } else {
    for (auto it = slots_.begin(); it != slots_.end();) {
      if (it->second.where == Where::finished) {
        Candidate c = std::move(it->second.c);
        it = slots_.erase(it);
        commit(std::move(c));
      } else {
        ++it;
      }
    }
    while (!stopping_ && static_cast<std::int64_t>(slots_.size()) < window_ && backend_.wanted() > 0 && propose()) {
    }
  }
}

void Island::refresh_done(TaskState& t) {
  if (t.progress.done || t.pending > 0 || can_propose(t)) return;
  // Paused at a cap the hook may still raise (a share of a global budget).
  if (!t.cap_final && !t.population.empty() && t.judged_submitted + t.op_pending >= t.cap &&
      t.proposed < options_.budget.max_candidates_per_task && t.unjudged_streak < options_.budget.stagnation)
    return;
  t.progress.done = true;
  if (t.population.empty()) t.progress.done_reason = "no correct candidate to breed from";
  else if (t.judged_submitted >= t.cap) t.progress.done_reason = "evaluation budget used";
  else if (t.proposed >= options_.budget.max_candidates_per_task) t.progress.done_reason = "candidate budget used";
  else t.progress.done_reason = "stagnation: only duplicates or operator failures";
}

bool Island::all_done() const {
  return std::all_of(tasks_.begin(), tasks_.end(), [](const TaskState& t) { return t.progress.done; });
}

IslandSnapshot Island::snapshot() const {
  IslandSnapshot s;
  s.elapsed_seconds = now() - t_start_;
  s.committed = committed_;
  s.evaluations = evaluations_;
  s.in_flight = static_cast<std::int64_t>(slots_.size());
  s.status = status_;
  for (const auto& t : tasks_) s.tasks.push_back(t.progress);
  s.llm = llm_;
  return s;
}

std::optional<Candidate> Island::best(std::size_t task) const { return tasks_.at(task).best; }

void Island::run(const std::atomic<int>& stop, const std::function<void(const IslandSnapshot&)>& on_progress) {
  t_start_ = now();
  const double wall = options_.budget.wall_seconds;
  double drain_deadline = 0.0;
  double last_progress = 0.0;

  for (std::size_t i = 0; i < tasks_.size(); ++i)
    if (!tasks_[i].restored) create_seed(i);
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    for (const auto& lost : tasks_[i].requeue) create_again(i, lost);
    tasks_[i].requeue.clear();
  }
  commit_ready();

  while (true) {
    const double t = now();
    const int level = std::max(stop.load(), options_.hook ? options_.hook->poll(*this) : 0);
    if (!stopping_ && (level > 0 || (wall > 0.0 && t - t_start_ >= wall))) {
      stopping_ = true;
      // A stop request (a signal: a batch system's grace time is short)
      // lets in-flight work finish only briefly; the wall-clock budget, the
      // user's own limit, waits longer for it.
      drain_deadline = t + (level > 0 ? options_.stop_drain_seconds : options_.drain_seconds);
    }
    if (stopping_ && (level > 1 || t >= drain_deadline)) break;

    // Asynchronous operators deliver here. When the backend has nothing to
    // do, the wait happens here instead, so the loop never spins.
    bool waiting_on_backend = backend_.in_flight() > 0;
    const auto op_wait = std::chrono::milliseconds(waiting_on_backend ? 0 : 20);
    for (auto& o : operators_)
      if (o.op->in_flight() > 0)
        for (auto& outcome : o.op->poll(op_wait)) deliver(std::move(outcome));
    waiting_on_backend = backend_.in_flight() > 0;
    if (waiting_on_backend) {
      auto results = backend_.poll(std::chrono::milliseconds(20));
      const double done_at = now();
      for (auto& r : results) {
        auto it = slots_.find(r.id);
        if (it == slots_.end()) throw Failure(fmt::format("backend returned unknown candidate {}", r.id));
        it->second.c.verdict = std::move(r.verdict);
        it->second.c.t_finished = done_at;
        it->second.where = Where::finished;
      }
    }
    commit_ready();
    for (auto& ts : tasks_) refresh_done(ts);
    sink_.tick();

    if (on_progress && (now() - last_progress > 0.1)) {
      last_progress = now();
      on_progress(snapshot());
    }
    if (slots_.empty() && (stopping_ || all_done())) break;
    if (!waiting_on_backend && slots_.empty()) {
      // Nothing in flight and nothing could be proposed: every task is done.
      for (auto& ts : tasks_) refresh_done(ts);
      if (all_done()) break;
      // Paused at a cap the hook may raise: wait without spinning.
      if (options_.hook) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // What is still in flight after a stop is recorded, not dropped.
  if (!slots_.empty()) {
    backend_.cancel_all();
    std::vector<std::uint64_t> ids;
    for (const auto& [id, s] : slots_) ids.push_back(id);
    for (auto id : ids) {
      Slot& s = slots_.at(id);
      if (s.where != Where::finished) {
        s.c.verdict = Verdict{};
        s.c.verdict.status = Status::lost;
        s.c.verdict.message = "in flight when the run stopped";
      }
      Candidate c = std::move(s.c);
      slots_.erase(id);
      commit(std::move(c));
    }
  }
  for (auto& ts : tasks_) {
    if (!ts.progress.done) {
      ts.progress.done = true;
      ts.progress.done_reason = stopping_ ? "stopped" : ts.progress.done_reason;
    }
  }
  sink_.flush();
  if (on_progress) on_progress(snapshot());
}

}  // namespace kevo::engine

namespace kevo::engine {

void Island::set_cap(std::size_t i, std::int64_t cap, bool final) {
  TaskState& t = tasks_.at(i);
  t.cap = std::min(cap, options_.budget.evaluations_per_task);
  t.cap_final = final;
}

std::vector<Candidate> Island::emigrants(std::size_t i, int count, bool tournament, Rng& rng,
                                        const std::function<bool(const Candidate&)>& eligible) const {
  const auto& pop = tasks_.at(i).population;
  // The members that may go (fitness descending, as the population).
  std::vector<std::size_t> pool;
  for (std::size_t k = 0; k < pop.size(); ++k)
    if (!eligible || eligible(*pop[k])) pool.push_back(k);
  std::vector<Candidate> out;
  if (pool.empty() || count <= 0) return out;
  if (!tournament) {
    for (std::size_t k = 0; k < pool.size() && static_cast<int>(out.size()) < count; ++k) out.push_back(*pop[pool[k]]);
    return out;
  }
  std::vector<bool> taken(pool.size(), false);
  for (int k = 0; k < count && k < static_cast<int>(pool.size()); ++k) {
    std::size_t chosen = pool.size();
    for (int r = 0; r < options_.island.tournament_size; ++r) {
      std::size_t j;
      do j = rng.below(pool.size()); while (taken[j]);
      chosen = std::min(chosen, j);   // sorted: lower index is fitter
    }
    taken[chosen] = true;
    out.push_back(*pop[pool[chosen]]);
  }
  return out;
}

bool Island::immigrate(std::size_t i, Candidate c, int origin_rank, bool replace_worst) {
  TaskState& t = tasks_.at(i);
  c.task = static_cast<std::uint32_t>(i);
  sink_.record_migrant(c, origin_rank);
  // Its source now counts as seen: a local child with the same source is a duplicate.
  t.seen.emplace(c.hash, c.id);
  if (c.point) t.seen_points.insert(variant_key(c.body_hash, *c.point));
  if (!c.verdict.is_correct()) return false;
  if (std::any_of(t.population.begin(), t.population.end(), [&](const auto& m) { return m->id == c.id; }))
    return false;   // already here (it came back around the ring)
  const auto cap = static_cast<std::size_t>(options_.island.population);
  if (replace_worst && t.population.size() >= cap && c.fitness() <= t.population.back()->fitness()) return false;
  if (!t.best || c.fitness() > t.best->fitness()) t.best = c;   // progress keeps counting local records only
  if (replace_worst && t.population.size() >= cap) t.population.pop_back();
  insert_member(t, c);
  return true;
}

void Island::restore(std::size_t i, std::vector<Candidate> members,
                     const std::vector<std::pair<std::uint64_t, std::uint64_t>>& seen, std::int64_t spent) {
  TaskState& t = tasks_.at(i);
  for (const auto& [hash, id] : seen) t.seen.emplace(hash, id);
  for (auto& m : members) {
    m.task = static_cast<std::uint32_t>(i);
    // The lineage stores the full hash only; parameter operators ask about
    // known points by the parent's body hash.
    if (!m.source.empty())
      m.body_hash =
          source_hashes(m.source, t.task->syntax()).body;
    if (!t.best || m.fitness() > t.best->fitness()) t.best = m;
    insert_member(t, m);
  }
  t.restored = !t.population.empty();
  t.cap = std::max<std::int64_t>(0, t.cap - spent);
}

void Island::replay(const Candidate& c, bool committed_here) {
  TaskState& t = tasks_.at(c.task);
  if (c.point) t.seen_points.insert(variant_key(c.body_hash, *c.point));
  if (committed_here)
    for (auto& o : operators_) o.op->replay(c);
}

std::vector<std::pair<std::uint64_t, std::uint32_t>> Island::in_flight_ids() const {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> out;
  for (const auto& [id, s] : slots_) out.emplace_back(id, s.c.task);
  return out;
}

}  // namespace kevo::engine
