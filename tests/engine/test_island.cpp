#include "common.hpp"

#include "kevo/engine/run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <set>

namespace kevo::test {
namespace {

struct RunResult {
  std::vector<Candidate> rows;
  engine::IslandSnapshot snap;
};

// `adjust` may change the parsed config (wrap an operator...) before the run.
RunResult run_toy(nlohmann::json doc, const std::function<void(engine::Config&)>& adjust = {}) {
  auto config = engine::parse_config(doc, "conf.json", test_plugins());
  if (adjust) adjust(config);
  auto tasks = engine::load_tasks(config);
  VectorSink sink;
  engine::IslandOptions opts;
  opts.seed = config.seed;
  opts.budget = config.budget;
  opts.island = config.island;
  engine::Island island(opts, tasks, *config.backend, config.operators, sink);
  std::atomic<int> stop{0};
  island.run(stop, {});
  return {sink.rows, island.snapshot()};
}

TEST(Island, BudgetParentsAndCounts) {
  auto r = run_toy(toy_config());
  std::set<std::uint64_t> ids;
  std::int64_t judged = 0;
  for (const auto& c : r.rows) {
    EXPECT_TRUE(ids.insert(c.id).second) << "id reused: " << c.id;
    EXPECT_NE(c.verdict.status, Status::pending);
    if (c.verdict.status != Status::duplicate && c.verdict.status != Status::invalid) ++judged;
  }
  // Every parent was recorded before its child (ids are committed in order).
  std::set<std::uint64_t> before;
  for (const auto& c : r.rows) {
    if (c.parent0 >= 0) EXPECT_TRUE(before.count(c.parent0)) << c.id;
    if (c.parent1 >= 0) EXPECT_TRUE(before.count(c.parent1)) << c.id;
    if (c.op != "seed") EXPECT_GE(c.parent0, 0) << c.id;
    before.insert(c.id);
  }
  EXPECT_EQ(judged, 60);   // exactly the evaluation budget
  EXPECT_EQ(r.snap.evaluations, 60);
  EXPECT_TRUE(r.snap.tasks[0].done);
  EXPECT_GT(r.snap.tasks[0].best_speedup, 1.0);
  EXPECT_GT(r.snap.status[static_cast<int>(Status::wrong_answer)], 0);
}

TEST(Island, SameSeedSameSequence) {
  auto a = run_toy(toy_config());
  auto b = run_toy(toy_config());
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(a.rows[i].id, b.rows[i].id);
    EXPECT_EQ(a.rows[i].hash, b.rows[i].hash) << i;
    EXPECT_EQ(a.rows[i].op, b.rows[i].op) << i;
    EXPECT_EQ(a.rows[i].parent0, b.rows[i].parent0) << i;
    EXPECT_EQ(a.rows[i].verdict.status, b.rows[i].verdict.status) << i;
  }
  auto doc = toy_config();
  doc["seed"] = 8;
  auto c = run_toy(doc);
  bool differs = c.rows.size() != a.rows.size();
  for (std::size_t i = 0; !differs && i < a.rows.size(); ++i) differs = a.rows[i].hash != c.rows[i].hash;
  EXPECT_TRUE(differs) << "another seed should give another sequence";
}

TEST(Island, DuplicatesRecordedNotRejudged) {
  auto doc = toy_config();
  doc["budget"]["evaluations_per_task"] = 400;   // more than the space holds: forces duplicates
  auto r = run_toy(doc);
  std::map<std::uint64_t, std::uint64_t> first;   // hash -> id
  std::int64_t dups = 0;
  for (const auto& c : r.rows) {
    if (c.verdict.status == Status::duplicate) {
      ++dups;
      ASSERT_GE(c.duplicate_of, 0);
      EXPECT_EQ(first.at(c.hash), static_cast<std::uint64_t>(c.duplicate_of));
    } else if (c.verdict.status != Status::invalid) {
      EXPECT_TRUE(first.emplace(c.hash, c.id).second) << "judged twice: " << c.id;
    }
  }
  EXPECT_GT(dups, 0);
  EXPECT_TRUE(r.snap.tasks[0].done);
}

TEST(Island, ParamOperatorsHonourRestrictions) {
  auto r = run_toy(toy_config());
  auto config = engine::parse_config(toy_config(), "conf.json", test_plugins());
  auto tasks = engine::load_tasks(config);
  for (const auto& c : r.rows) {
    if (c.verdict.status == Status::invalid) continue;
    auto p = point_from_source(tasks[0]->space, c.source);
    ASSERT_TRUE(p) << c.source;
    EXPECT_TRUE(tasks[0]->space.valid(*p));
  }
}

TEST(Island, ArrivalOrderingAlsoRespectsBudget) {
  auto doc = toy_config();
  doc["island"]["ordering"] = "arrival";
  auto r = run_toy(doc);
  EXPECT_EQ(r.snap.evaluations, 60);
}

TEST(Island, StopRecordsInFlightAsLost) {
  auto config = engine::parse_config(toy_config(), "conf.json", test_plugins());
  auto tasks = engine::load_tasks(config);
  VectorSink sink;
  engine::IslandOptions opts;
  opts.budget = config.budget;
  opts.island = config.island;
  engine::Island island(opts, tasks, *config.backend, config.operators, sink);
  std::atomic<int> stop{2};   // stopped before it starts: nothing judged is lost, nothing left pending
  island.run(stop, {});
  for (const auto& c : sink.rows) EXPECT_NE(c.verdict.status, Status::pending);
}

// An asynchronous operator whose replies come back in an order chosen by
// `order_seed` (a random subset per poll, shuffled), like LLM replies: it
// wraps a synchronous parameter operator and fails every seventh child.
class ShuffledReplies final : public MutationOperator {
 public:
  ShuffledReplies(std::unique_ptr<MutationOperator> inner, std::uint64_t order_seed)
      : MutationOperator(inner->name(), inner->arity()), inner_(std::move(inner)), order_(order_seed) {}
  bool applicable(const Task& t) const override { return inner_->applicable(t); }
  bool deterministic() const override { return false; }
  std::size_t in_flight() const override { return held_.size(); }

 protected:
  std::optional<OperatorOutcome> do_begin(const OperatorRequest& req) override {
    auto o = inner_->begin(req);
    if (req.id % 7 == 3) o = OperatorOutcome::failed(req.id, "scripted failure");
    held_.push_back(std::move(*o));
    return std::nullopt;
  }
  std::vector<OperatorOutcome> do_poll(std::chrono::milliseconds) override {
    std::shuffle(held_.begin(), held_.end(), order_);
    const auto n = static_cast<std::ptrdiff_t>(order_() % (held_.size() + 1));
    std::vector<OperatorOutcome> out(std::make_move_iterator(held_.end() - n), std::make_move_iterator(held_.end()));
    held_.resize(held_.size() - static_cast<std::size_t>(n));
    return out;
  }

 private:
  std::unique_ptr<MutationOperator> inner_;
  std::mt19937_64 order_;
  std::vector<OperatorOutcome> held_;
};

// Deterministic ordering: the order in which asynchronous outcomes arrive
// (LLM replies; all at once when replayed from the cache) changes nothing in
// the lineage, with a synchronous operator beside them whose duplicate
// avoidance looks at known points, operator failures, and a budget that ends
// while replies are outstanding.
TEST(Island, AsynchronousArrivalOrderChangesNothing) {
  auto run = [](std::uint64_t order_seed) {
    auto doc = toy_config();
    doc["budget"]["evaluations_per_task"] = 40;
    doc["island"]["in_flight"] = 8;
    return run_toy(doc, [order_seed](engine::Config& config) {
             config.operators[0].op = std::make_unique<ShuffledReplies>(std::move(config.operators[0].op), order_seed);
           }).rows;
  };
  const auto a = run(1);
  for (std::uint64_t order : {2, 3, 4}) {
    const auto b = run(order);
    ASSERT_EQ(a.size(), b.size()) << "arrival order " << order;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].id, b[i].id) << i;
      EXPECT_EQ(a[i].op, b[i].op) << i;
      EXPECT_EQ(a[i].hash, b[i].hash) << "arrival order " << order << ", row " << i;
      EXPECT_EQ(a[i].parent0, b[i].parent0) << i;
      EXPECT_EQ(a[i].verdict.status, b[i].verdict.status) << i;
    }
  }
}

// An operator whose proposal throws for every third child, as a parser of a
// parent's texts (which a candidate writes: its compile log, its output)
// threw out of range on a number too long for a long (a red team's
// finding: `#pragma message` in a correct kernel ended the run).
class Throwing final : public MutationOperator {
 public:
  explicit Throwing(std::unique_ptr<MutationOperator> inner)
      : MutationOperator(inner->name(), inner->arity()), inner_(std::move(inner)) {}
  bool applicable(const Task& t) const override { return inner_->applicable(t); }

 protected:
  std::optional<OperatorOutcome> do_begin(const OperatorRequest& req) override {
    if (req.id % 3 == 0) (void)std::stol("99999999999999999999999");   // throws std::out_of_range
    return inner_->begin(req);
  }

 private:
  std::unique_ptr<MutationOperator> inner_;
};

// An exception out of an operator's proposal is that child's operator
// failure, with the reason; the run goes on and spends its budget.
TEST(Island, AnOperatorThatThrowsFailsItsChildOnly) {
  auto doc = toy_config();
  doc["budget"]["evaluations_per_task"] = 30;
  const auto r = run_toy(doc, [](engine::Config& config) {
    config.operators[0].op = std::make_unique<Throwing>(std::move(config.operators[0].op));
  });
  int failed = 0, judged = 0;
  for (const auto& c : r.rows) {
    if (c.verdict.message.find("could not make this child") != std::string::npos) {
      ++failed;
      EXPECT_EQ(c.verdict.status, Status::invalid);
      EXPECT_NE(c.verdict.message.find("stol"), std::string::npos) << c.verdict.message;
      EXPECT_EQ(c.id % 3, 0u) << c.id;
    } else if (c.verdict.status != Status::invalid && c.verdict.status != Status::pending) {
      ++judged;
    }
  }
  EXPECT_GE(failed, 3);
  EXPECT_GE(judged, 10);
}

// Records, at each proposal, how many candidates the island had committed
// (observe() sees every commit) and how many were in flight with it
// (created, the seed included, less committed).
using InFlightLog = std::vector<std::pair<std::int64_t, std::int64_t>>;
class Watching final : public MutationOperator {
 public:
  Watching(std::unique_ptr<MutationOperator> inner, std::shared_ptr<InFlightLog> log)
      : MutationOperator(inner->name(), inner->arity()), inner_(std::move(inner)), log_(std::move(log)) {}
  bool applicable(const Task& t) const override { return inner_->applicable(t); }
  void observe(const Candidate& c) override {
    ++committed_;
    inner_->observe(c);
  }

 protected:
  std::optional<OperatorOutcome> do_begin(const OperatorRequest& req) override {
    ++created_;
    log_->emplace_back(committed_, created_ - committed_);
    return inner_->begin(req);
  }

 private:
  std::unique_ptr<MutationOperator> inner_;
  std::shared_ptr<InFlightLog> log_;
  std::int64_t committed_ = 0, created_ = 1;   // the seed
};

// island.ramp: one candidate in flight after the seed, one more per `ramp`
// commits, up to island.in_flight; with 0 the whole window is proposed
// right after the seed's verdict. The lineage is the same either way in
// kind (the budget is spent exactly).
TEST(Island, RampLetsInFlightGrowWithTheVerdicts) {
  auto run = [](int ramp) {
    auto doc = toy_config();
    doc["budget"]["evaluations_per_task"] = 60;
    doc["island"]["in_flight"] = 8;
    doc["island"]["ramp"] = ramp;
    doc["operators"] = nlohmann::json::parse(R"([{"type": "param_mutation"}])");
    auto log = std::make_shared<InFlightLog>();
    const auto r = run_toy(doc, [log](engine::Config& config) {
      config.operators[0].op = std::make_unique<Watching>(std::move(config.operators[0].op), log);
    });
    EXPECT_EQ(r.snap.evaluations, 60) << "ramp " << ramp;
    return *log;
  };
  const InFlightLog off = run(0);
  ASSERT_GE(off.size(), 8u);
  // Without the ramp: eight proposals right after the seed's verdict.
  for (std::size_t k = 0; k < 8; ++k) EXPECT_EQ(off[k].first, 1) << k;
  EXPECT_EQ(off[7].second, 8);

  for (int ramp : {1, 3}) {
    const InFlightLog on = run(ramp);
    ASSERT_FALSE(on.empty());
    std::int64_t most = 0;
    bool at_limit = false;
    for (const auto& [committed, in_flight] : on) {
      const std::int64_t limit = std::min<std::int64_t>(8, 1 + std::max<std::int64_t>(0, committed - 1) / ramp);
      EXPECT_LE(in_flight, limit) << "ramp " << ramp << ", after " << committed << " commits";
      at_limit = at_limit || (committed > 1 && in_flight == limit && limit > 1);
      most = std::max(most, in_flight);
    }
    EXPECT_EQ(on.front(), std::make_pair(std::int64_t{1}, std::int64_t{1})) << "one in flight after the seed";
    EXPECT_TRUE(at_limit) << "ramp " << ramp << " never let more than one be in flight";
    EXPECT_EQ(most, 8) << "ramp " << ramp << " never reached the window";
  }
}

// Resume (docs/islands.md#checkpoint-and-resume): an island restored from a finished
// session's rows as `kevo resume` restores it, and fed them in commit order
// through replay(), has parameter mutation in the state the first session
// ended in (the same proposals for the same requests), and proposes no point
// judged before. Without the replay the same restore proposes such points
// again, so the check can fail.
TEST(Island, ResumeReplayRebuildsParamMutationState) {
  auto doc = toy_config();
  doc["operators"] = nlohmann::json::parse(R"([{"type": "param_mutation"}])");
  doc["budget"]["evaluations_per_task"] = 100;
  auto first = engine::parse_config(doc, "conf.json", test_plugins());
  const auto tasks = engine::load_tasks(first);
  const Task& task = *tasks.front();
  engine::IslandOptions opts;
  opts.seed = first.seed;
  opts.budget = first.budget;
  opts.island = first.island;
  VectorSink sink1;
  std::atomic<int> stop{0};
  {
    engine::Island island(opts, tasks, *first.backend, first.operators, sink1);
    island.run(stop, {});   // to its budget: nothing is left in flight
  }
  const std::vector<Candidate>& before = sink1.rows;
  std::uint64_t next = 0;
  std::set<std::pair<std::uint64_t, Point>> judged_points;
  std::vector<Candidate> correct;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (const auto& c : before) {
    next = std::max(next, c.id + 1);
    if (c.point) judged_points.emplace(c.body_hash, *c.point);
    seen.emplace_back(c.hash, c.id);
    if (c.verdict.is_correct()) correct.push_back(c);
  }
  std::sort(correct.begin(), correct.end(),
            [](const Candidate& a, const Candidate& b) { return a.fitness() > b.fitness(); });
  correct.resize(std::min<std::size_t>(correct.size(), 8));

  struct Session {
    std::vector<Candidate> rows;
    std::vector<Point> probes;   // proposals for fixed requests, before the run
  };
  // The same requests to any operator: each restored member as parent, a few streams.
  const auto probe = [&](MutationOperator& op) {
    std::vector<Point> out;
    for (const auto& parent : correct)
      for (std::uint64_t s = 0; s < 4; ++s) {
        Rng rng = Rng::derive(99, parent.id * 16 + s);
        OperatorRequest req;
        req.id = 1'000'000 + s;
        req.task = &task;
        req.parents = {&parent};
        req.rng = &rng;
        req.known_point = [&](std::uint64_t body, const Point& p) { return judged_points.count({body, p}) > 0; };
        auto o = op.begin(req);
        EXPECT_TRUE(o && o->proposal && o->proposal->point);
        out.push_back(o && o->proposal && o->proposal->point ? *o->proposal->point : Point{});
      }
    return out;
  };
  const auto resume = [&](bool replay) {
    doc["budget"]["evaluations_per_task"] = 200;
    auto config = engine::parse_config(doc, "conf.json", test_plugins());
    engine::IslandOptions o = opts;
    o.budget = config.budget;
    o.first_id = next;
    VectorSink sink;
    engine::Island island(o, engine::load_tasks(config), *config.backend, config.operators, sink);
    island.restore(0, correct, seen, 100);
    if (replay)
      for (Candidate c : before) {
        c.source.clear();   // the lineage gives back no texts to replay
        island.replay(c, true);
      }
    Session out;
    out.probes = probe(*config.operators.front().op);
    island.run(stop, {});
    out.rows = sink.rows;
    return out;
  };
  const auto again = [&](const Session& s) {
    std::int64_t n = 0;
    for (const auto& c : s.rows) n += c.point && judged_points.count({c.body_hash, *c.point}) ? 1 : 0;
    return n;
  };

  const Session with = resume(true);
  EXPECT_EQ(with.probes, probe(*first.operators.front().op)) << "resumed operator differs from the one that ran";
  EXPECT_EQ(again(with), 0) << "a point judged before the resume was proposed again";
  std::int64_t judged = 0;
  for (const auto& c : with.rows) judged += c.verdict.status != Status::duplicate && c.verdict.status != Status::invalid;
  EXPECT_EQ(judged, 100);

  const Session without = resume(false);
  EXPECT_GT(again(without), 0) << "the scenario does not exercise the replay";
  EXPECT_NE(without.probes, with.probes);
}

}  // namespace
}  // namespace kevo::test
