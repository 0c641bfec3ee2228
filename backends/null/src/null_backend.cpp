#include "kevo/null/null_backend.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/search_space.hpp"

#include <fmt/format.h>

#include <cmath>
#include <deque>
#include <fstream>

namespace kevo::null_backend {
namespace {

class NullBackend final : public Backend {
 public:
  explicit NullBackend(NullOptions options) : Backend("null"), options_(std::move(options)) {
    if (!options_.table.empty()) {
      std::ifstream in(options_.table);
      if (!in) throw InputError(options_.table, "", "a readable timing table (JSON)");
      try {
        table_ = nlohmann::json::parse(in);
      } catch (const std::exception& e) {
        throw InputError(options_.table, "", std::string("valid JSON: ") + e.what());
      }
    }
  }

 protected:
  BackendNeeds do_needs() const override { return {false, 0, options_.slots}; }
  void do_prepare(const Task& task) override {
    if (!table_.is_null() && !table_.contains(task.name))
      throw InputError(options_.table, "/" + task.name, "timings for task '" + task.name + "'");
  }
  std::size_t do_wanted() const override {
    return queue_.size() >= static_cast<std::size_t>(options_.slots) ? 0 : options_.slots - queue_.size();
  }
  void do_submit(EvalRequest request) override { queue_.push_back(std::move(request)); }
  std::vector<EvalResult> do_poll(std::chrono::milliseconds) override {
    std::vector<EvalResult> out;
    out.reserve(queue_.size());
    for (auto& r : queue_) out.push_back({r.id, judge(*r.task, r.source)});
    queue_.clear();
    return out;
  }
  void do_cancel_all() override { queue_.clear(); }

 private:
  Verdict judge(const Task& task, const std::string& source) const {
    Verdict v;
    v.stage = Stage::done;
    const std::uint64_t h = fnv1a64(source);   // any stable hash will do here
    if (options_.wrong_fraction > 0.0 &&
        static_cast<double>(h % 1000000) / 1e6 < options_.wrong_fraction) {
      v.status = Status::wrong_answer;
      v.stage = Stage::correctness;
      v.message = "null backend: judged wrong by hash";
      return v;
    }
    const auto point = point_from_source(task.space, source);
    double speedup = 1.0;
    if (point) {
      if (!table_.is_null()) {
        const auto& t = table_.at(task.name);
        const auto key = task.space.key(*point);
        if (!t.contains(key)) {
          v.status = Status::internal_error;
          v.message = "null backend: no timing for point " + key;
          return v;
        }
        const double seed_time = task.seed_point ? t.value(task.space.key(*task.seed_point), 1.0) : 1.0;
        speedup = seed_time / t.at(key).get<double>();
      } else {
        speedup = synthetic_speedup(task, *point);
      }
    }
    v.status = Status::correct;
    v.ref_median_ns = 1e6;
    v.cand_median_ns = 1e6 / speedup;
    v.speedup = speedup;
    v.repeats = 1;
    return v;
  }

  NullOptions options_;
  nlohmann::json table_;
  std::deque<EvalRequest> queue_;
};

}  // namespace

double synthetic_speedup(const Task& task, const Point& point) {
  // A smooth landscape with one optimum per task: each parameter has a
  // preferred index drawn from the task name; the speedup decays with the
  // distance from it. Deterministic, so tests can assert on it.
  std::uint64_t h = fnv1a64(task.name);
  double distance = 0.0;
  for (std::size_t i = 0; i < point.size(); ++i) {
    const auto n = task.space.params()[i].values.size();
    h = fnv1a64(&h, sizeof h);
    const double best = static_cast<double>(h % n);
    const double d = (static_cast<double>(point[i]) - best) / static_cast<double>(std::max<std::size_t>(n, 2) - 1);
    distance += d * d;
  }
  return 1.0 + 9.0 * std::exp(-3.0 * distance);
}

NullOptions parse_null_options(StrictObject& obj) {
  NullOptions o;
  o.wrong_fraction = obj.number("wrong_fraction", o.wrong_fraction, 0.0, 1.0);
  o.table = obj.string("table", o.table);
  o.slots = static_cast<int>(obj.integer("slots", o.slots, 1, 1 << 20));
  obj.finish();
  return o;
}

nlohmann::json to_json(const NullOptions& o) {
  return {{"wrong_fraction", o.wrong_fraction}, {"table", o.table}, {"slots", o.slots}};
}

std::unique_ptr<Backend> make_null_backend(NullOptions options) {
  return std::make_unique<NullBackend>(std::move(options));
}

}  // namespace kevo::null_backend
