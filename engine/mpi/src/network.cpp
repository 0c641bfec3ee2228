#include "kevo/mpi/network.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/rng.hpp"
#include "kevo/lineage/reader.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include <time.h>

namespace kevo::mpi {
namespace {

constexpr int kMigrantTag = 17;

double cpu_now(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double mono_now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}


// Layout of the summed vector: fixed counters, then the status counts, then
// per global task (submitted, evaluations, candidates, not finished).
enum SumSlot { s_active, s_sent, s_received, s_alive, s_committed, s_evaluations, s_in_flight, s_fixed };
constexpr int kPerTaskSum = 4;
// Maximum vector: stop level, elapsed, then per task the best speedup.
enum MaxSlot { m_stop, m_elapsed, m_fixed };

}  // namespace

std::string encode_migrants(int global_task, int origin_rank, const std::vector<Candidate>& cs,
                            const std::vector<int>& origins) {
  nlohmann::json j;
  j["t"] = global_task;
  j["from"] = origin_rank;
  auto& arr = j["c"] = nlohmann::json::array();
  for (std::size_t k = 0; k < cs.size(); ++k) {
    const Candidate& c = cs[k];
    nlohmann::json x = {{"id", c.id},           {"p0", c.parent0},         {"p1", c.parent1},
                        {"op", c.op},           {"src", c.source},         {"h", c.hash},
                        {"bh", c.body_hash},    {"params", c.params_json}, {"es", c.eval_seed},
                        {"dup", c.duplicate_of}, {"note", c.op_note},      {"v", to_json(c.verdict)},
                        {"tc", c.t_created},    {"ts", c.t_submitted},     {"tf", c.t_finished},
                        {"origin", origins.at(k)}};
    if (c.point) x["pt"] = *c.point;
    arr.push_back(std::move(x));
  }
  const auto bytes = nlohmann::json::to_msgpack(j);
  return std::string(bytes.begin(), bytes.end());
}

DecodedMigrants decode_migrants(const std::string& bytes) {
  const auto j = nlohmann::json::from_msgpack(bytes);
  DecodedMigrants d;
  d.global_task = j.at("t").get<int>();
  d.from_rank = j.at("from").get<int>();
  for (const auto& x : j.at("c")) {
    Candidate c;
    c.id = x.at("id").get<std::uint64_t>();
    c.parent0 = x.at("p0").get<std::int64_t>();
    c.parent1 = x.at("p1").get<std::int64_t>();
    c.op = x.at("op").get<std::string>();
    c.source = x.at("src").get<std::string>();
    c.hash = x.at("h").get<std::uint64_t>();
    c.body_hash = x.at("bh").get<std::uint64_t>();
    c.params_json = x.at("params").get<std::string>();
    c.eval_seed = x.at("es").get<std::uint64_t>();
    c.duplicate_of = x.at("dup").get<std::int64_t>();
    c.op_note = x.at("note").get<std::string>();
    c.verdict = verdict_from_json(x.at("v"));
    c.t_created = x.at("tc").get<double>();
    c.t_submitted = x.at("ts").get<double>();
    c.t_finished = x.at("tf").get<double>();
    if (x.contains("pt")) c.point = x.at("pt").get<Point>();
    d.origins.push_back(x.at("origin").get<int>());
    d.candidates.push_back(std::move(c));
  }
  return d;
}

IslandNetwork::IslandNetwork(const Comm& world, const Comm& group, NetworkOptions options,
                             const std::atomic<int>& stop)
    : world_(world), group_(group), o_(std::move(options)), stop_(stop) {
  world_rank_ = world_.rank();
  world_size_ = world_.size();
  reached_ = std::move(o_.history.reached);
  origin_ = std::move(o_.history.origins);
  recorded_ = std::move(o_.history.recorded);
  group_rank_ = group_.rank();
  group_size_ = group_.size();
  // Setup only (not the island loop): which world rank each group rank is.
  group_to_world_.assign(static_cast<std::size_t>(group_size_), 0);
  check(MPI_Allgather(&world_rank_, 1, MPI_INT, group_to_world_.data(), 1, MPI_INT, group_.get()), "Allgather");
  // Statistics rounds get their own communicator so that they can never
  // match another collective.
  stats_comm_ = world_.dup();
  const auto topo = parse_topology(o_.islands.topology);
  out_ = mpi::out_neighbours(topo, group_size_, group_rank_, o_.islands.degree, o_.seed);
  const std::size_t tasks = o_.all_tasks.size();
  o_.spent.resize(tasks, 0);
  budget_base_ = s_fixed + kStatusCount + kPerTaskSum * tasks;
  std::size_t budget_slots = 0;
  for (auto* b : o_.budgets) {
    b->start_shared(world_rank_, world_size_);
    budget_slots += b->width();
  }
  sum_in_.assign(budget_base_ + budget_slots, 0.0);
  sum_out_ = sum_in_;
  max_in_.assign(m_fixed + tasks, 0.0);
  max_out_ = max_in_;
  my_submitted_at_round_.assign(tasks, 0);
  task_done_at_round_.assign(tasks, false);
  global_.ranks = world_size_;
  for (const auto& name : o_.all_tasks) {
    engine::TaskProgress p;
    p.name = name;
    global_.tasks.push_back(p);
  }
}

IslandNetwork::~IslandNetwork() = default;

void IslandNetwork::fail(const std::string& why) {
  if (fault_) return;
  fault_ = true;
  fault_message_ = why;
  global_stop_ = 2;
  fmt::print(stderr, "kevo: rank {}: {}; flushing and stopping\n", world_rank_, why);
}

void IslandNetwork::start(engine::Island& island) {
  t_start_ = mono_now();
  cpu_start_ = cpu_now(CLOCK_PROCESS_CPUTIME_ID);
  // Before any round: an even share of what is left of each task's budget.
  for (std::size_t i = 0; i < island.task_count(); ++i) {
    const int g = o_.local_to_global.at(i);
    const std::int64_t left = std::max<std::int64_t>(0, o_.budget - o_.spent[static_cast<std::size_t>(g)]);
    const std::int64_t share = left / group_size_ + (group_rank_ < left % group_size_ ? 1 : 0);
    island.set_cap(i, share, left == 0);
  }
}

void IslandNetwork::receive(engine::Island& island) {
  while (true) {
    int flag = 0;
    MPI_Status st;
    check(MPI_Iprobe(MPI_ANY_SOURCE, kMigrantTag, group_.get(), &flag, &st), "Iprobe");
    if (!flag) return;
    int count = 0;
    check(MPI_Get_count(&st, MPI_BYTE, &count), "Get_count");
    std::string buf(static_cast<std::size_t>(count), '\0');
    check(MPI_Recv(buf.data(), count, MPI_BYTE, st.MPI_SOURCE, kMigrantTag, group_.get(), MPI_STATUS_IGNORE), "Recv");
    ++received_;
    ++costs_.messages_received;
    DecodedMigrants d;
    try {
      d = decode_migrants(buf);
    } catch (const std::exception& e) {
      throw Failure(fmt::format("rank {}: undecodable migrant message from group rank {}: {}", world_rank_,
                                st.MPI_SOURCE, e.what()));
    }
    const auto it = std::find(o_.local_to_global.begin(), o_.local_to_global.end(), d.global_task);
    if (it == o_.local_to_global.end()) continue;   // cannot happen inside a task group
    const auto local = static_cast<std::size_t>(it - o_.local_to_global.begin());
    const bool replace_worst = o_.islands.migration.replacement == "replace_worst";
    for (std::size_t k = 0; k < d.candidates.size(); ++k) {
      const auto id = d.candidates[k].id;
      const int origin = d.origins[k];
      reached_.emplace(id, d.from_rank);   // the sender has it: never sent back there
      // Back at its origin, or a second arrival (two senders that cannot
      // know of each other's sends): this rank's file has its row already,
      // so the arrival is an event, not a row.
      const char* why = origin == world_rank_ ? "back at its origin"
                        : recorded_.count(id) ? "already recorded here"
                                              : "";
      island.record_event(engine::LineageSink::EventKind::migration_in, static_cast<std::int64_t>(id), d.from_rank,
                          world_rank_, why);
      if (*why) continue;
      recorded_.insert(id);
      origin_.emplace(id, origin);
      island.immigrate(local, std::move(d.candidates[k]), origin, replace_worst);
      ++costs_.migrants_received;
    }
  }
}

void IslandNetwork::emigrate(engine::Island& island) {
  if (out_.empty() || o_.islands.migration.count <= 0) return;
  const auto snap_evals = [&] {
    std::int64_t n = 0;
    for (std::size_t i = 0; i < island.task_count(); ++i) n += island.judged_submitted(i);
    return n;
  }();
  if (snap_evals - evals_at_last_emigration_ < o_.islands.migration.interval) return;
  evals_at_last_emigration_ = snap_evals;
  std::vector<int> dests;
  if (o_.islands.migration.mode == "broadcast") {
    dests = out_;
  } else {
    dests.push_back(out_[next_out_ % out_.size()]);
    ++next_out_;
  }
  Rng rng = Rng::derive(o_.seed ^ 0x6d16ULL, static_cast<std::uint64_t>(world_rank_) * 1000003ULL + costs_.messages_sent);
  const bool tournament = o_.islands.migration.selection == "tournament";
  for (std::size_t i = 0; i < island.task_count(); ++i) {
    for (int dest : dests) {
      const int dest_world = group_to_world_.at(static_cast<std::size_t>(dest));
      const auto origin_of = [&](const Candidate& c) {
        const auto o = origin_.find(c.id);
        return o == origin_.end() ? world_rank_ : o->second;
      };
      // Only members the destination does not have: not made there, not
      // sent there before (this session or, from the lineage, an earlier
      // one), not received from there.
      const auto batch = island.emigrants(i, o_.islands.migration.count, tournament, rng, [&](const Candidate& c) {
        return origin_of(c) != dest_world && !reached_.count({c.id, dest_world});
      });
      std::vector<int> origins;
      for (const auto& c : batch) {
        reached_.emplace(c.id, dest_world);
        origins.push_back(origin_of(c));
      }
      if (batch.empty()) continue;
      Pending p;
      p.buffer = encode_migrants(o_.local_to_global.at(i), world_rank_, batch, origins);
      sends_.push_back(std::move(p));
      auto& q = sends_.back();
      check(MPI_Isend(q.buffer.data(), static_cast<int>(q.buffer.size()), MPI_BYTE, dest, kMigrantTag, group_.get(),
                      q.request.out()),
            "Isend");
      ++sent_;
      ++costs_.messages_sent;
      for (const auto& c : batch) {
        island.record_event(engine::LineageSink::EventKind::migration_out, static_cast<std::int64_t>(c.id), world_rank_,
                            dest_world, "");
        ++costs_.migrants_sent;
      }
    }
  }
}

void IslandNetwork::round(engine::Island& island, bool active) {
  const double t = mono_now();
  if (round_open_) {
    const bool done = sum_req_.test() && max_req_.test();
    if (done) {
      round_open_ = false;
      last_round_end_ = t;
      ++costs_.rounds;
      apply_round(island);
    } else if (t - round_started_ > o_.islands.heartbeat_seconds) {
      fail(fmt::format("no statistics round completed for {:.0f} s: a rank was lost", t - round_started_));
    }
    return;
  }
  // While finishing, rounds follow each other at once: the last ones only
  // establish that every rank is done, and a stop has to be quick.
  if (active && t - last_round_end_ < o_.islands.stats_seconds) return;
  // Contribute this rank's counters.
  const auto snap = island.snapshot();
  global_.llm = snap.llm;   // the progress view's LLM failures: this rank's (docs/llm.md#what-a-run-reports)
  std::fill(sum_in_.begin(), sum_in_.end(), 0.0);
  std::fill(max_in_.begin(), max_in_.end(), 0.0);
  sum_in_[s_active] = active ? 1 : 0;
  sum_in_[s_sent] = static_cast<double>(sent_);
  sum_in_[s_received] = static_cast<double>(received_);
  sum_in_[s_alive] = 1;
  sum_in_[s_committed] = static_cast<double>(snap.committed);
  sum_in_[s_evaluations] = static_cast<double>(snap.evaluations);
  sum_in_[s_in_flight] = static_cast<double>(snap.in_flight);
  for (int k = 0; k < kStatusCount; ++k) sum_in_[s_fixed + k] = static_cast<double>(snap.status[k]);
  max_in_[m_stop] = std::max(stop_.load(), global_stop_);
  max_in_[m_elapsed] = t - t_start_;
  std::fill(my_submitted_at_round_.begin(), my_submitted_at_round_.end(), 0);
  for (std::size_t i = 0; i < island.task_count(); ++i) {
    const auto g = static_cast<std::size_t>(o_.local_to_global.at(i));
    const auto& tp = snap.tasks.at(i);
    const std::size_t base = s_fixed + kStatusCount + kPerTaskSum * g;
    my_submitted_at_round_[g] = std::max(island.cap(i), island.judged_submitted(i));
    task_done_at_round_[g] = tp.done;
    // The budget counts allowances granted (caps), so that evaluations a
    // rank may still make under an older share are never given out twice;
    // a finished task counts what it used.
    sum_in_[base + 0] = static_cast<double>(tp.done ? island.judged_submitted(i)
                                                    : std::max(island.cap(i), island.judged_submitted(i)));
    sum_in_[base + 1] = static_cast<double>(tp.evaluations);
    sum_in_[base + 2] = static_cast<double>(tp.candidates);
    sum_in_[base + 3] = (active && !tp.done) ? 1 : 0;
    if (tp.best_id >= 0) max_in_[m_fixed + g] = tp.best_speedup;
  }
  for (std::size_t k = 0, at = budget_base_; k < o_.budgets.size(); at += o_.budgets[k]->width(), ++k)
    o_.budgets[k]->open_round(&sum_in_[at]);
  active_at_round_ = active;
  check(MPI_Iallreduce(sum_in_.data(), sum_out_.data(), static_cast<int>(sum_in_.size()), MPI_DOUBLE, MPI_SUM,
                       stats_comm_.get(), sum_req_.out()),
        "Iallreduce");
  check(MPI_Iallreduce(max_in_.data(), max_out_.data(), static_cast<int>(max_in_.size()), MPI_DOUBLE, MPI_MAX,
                       stats_comm_.get(), max_req_.out()),
        "Iallreduce");
  round_open_ = true;
  round_started_ = t;
}

void IslandNetwork::apply_round(engine::Island& island) {
  auto as_int = [](double x) { return static_cast<std::int64_t>(std::llround(x)); };
  global_stop_ = std::max(global_stop_, static_cast<int>(max_out_[m_stop]));
  for (std::size_t k = 0, at = budget_base_; k < o_.budgets.size(); at += o_.budgets[k]->width(), ++k)
    o_.budgets[k]->close_round(&sum_out_[at]);
  all_inactive_ = sum_out_[s_active] < 0.5;
  delivered_ = as_int(sum_out_[s_sent]) == as_int(sum_out_[s_received]);
  // The global view (rank 0 prints it).
  global_.elapsed_seconds = max_out_[m_elapsed];
  global_.ranks = static_cast<int>(as_int(sum_out_[s_alive]));
  global_.committed = as_int(sum_out_[s_committed]);
  global_.evaluations = as_int(sum_out_[s_evaluations]);
  global_.in_flight = as_int(sum_out_[s_in_flight]);
  for (int k = 0; k < kStatusCount; ++k) global_.status[k] = as_int(sum_out_[s_fixed + k]);
  for (std::size_t g = 0; g < o_.all_tasks.size(); ++g) {
    const std::size_t base = s_fixed + kStatusCount + kPerTaskSum * g;
    auto& tp = global_.tasks[g];
    tp.evaluations = as_int(sum_out_[base + 1]);
    tp.candidates = as_int(sum_out_[base + 2]);
    tp.done = sum_out_[base + 3] < 0.5;
    if (max_out_[m_fixed + g] > 0) {
      tp.best_speedup = max_out_[m_fixed + g];
      tp.best_id = 0;
    }
  }
  if (o_.view) o_.view->update(global_);
  // New shares of the global budget: what is left, split over the ranks
  // still working on the task (rounded up: at most ranks - 1 over).
  if (!active_at_round_) return;
  for (std::size_t i = 0; i < island.task_count(); ++i) {
    const auto g = static_cast<std::size_t>(o_.local_to_global.at(i));
    const std::size_t base = s_fixed + kStatusCount + kPerTaskSum * g;
    const std::int64_t used = o_.spent[g] + as_int(sum_out_[base + 0]);
    const std::int64_t left = std::max<std::int64_t>(0, o_.budget - used);
    const std::int64_t workers = std::max<std::int64_t>(1, as_int(sum_out_[base + 3]));
    const std::int64_t share = (left + workers - 1) / workers;
    island.set_cap(i, my_submitted_at_round_[g] + share, left == 0);
  }
}

int IslandNetwork::poll(engine::Island& island) {
  if (fault_) return 2;
  const double t0 = mono_now();
  // MPI at most every poll_seconds: migrants and rounds do not need the
  // loop's full rate, and each MPI progress call costs microseconds.
  if (t0 - last_poll_ < o_.islands.poll_seconds) return global_stop_;
  last_poll_ = t0;
  const double c0 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
  try {
    receive(island);
    emigrate(island);
    for (auto it = sends_.begin(); it != sends_.end();) it = it->request.test() ? sends_.erase(it) : std::next(it);
    round(island, true);
  } catch (const Failure& e) {
    fail(e.what());
  }
  costs_.poll_seconds += mono_now() - t0;
  costs_.poll_cpu_seconds += cpu_now(CLOCK_THREAD_CPUTIME_ID) - c0;
  ++costs_.polls;
  return std::max(global_stop_, 0);
}

bool IslandNetwork::finish(engine::Island& island) {
  // Keep serving until a round in which no rank is active and every message
  // sent has been received (an inactive rank sends nothing more, so such a
  // round means the exchange is over), then wait for our own sends.
  const double t0 = mono_now();
  costs_.loop_cpu_seconds = cpu_now(CLOCK_PROCESS_CPUTIME_ID) - cpu_start_;
  try {
    bool seen_inactive_round = false;
    while (!fault_) {
      receive(island);
      for (auto it = sends_.begin(); it != sends_.end();) it = it->request.test() ? sends_.erase(it) : std::next(it);
      const bool was_open = round_open_;
      round(island, false);
      if (was_open && !round_open_ && !fault_) {
        // A round completed in which this rank reported inactive.
        // Decided from the global view only, so every rank leaves in the same round.
        if (all_inactive_ && delivered_ && seen_inactive_round) break;
        if (all_inactive_) seen_inactive_round = true;
      }
      if (!fault_ && stop_.load() > 1) global_stop_ = std::max(global_stop_, 2);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    // Every message is delivered: our sends complete locally at once.
    const double until = mono_now() + o_.islands.heartbeat_seconds;
    while (!fault_ && !sends_.empty() && mono_now() < until)
      for (auto it = sends_.begin(); it != sends_.end();) it = it->request.test() ? sends_.erase(it) : std::next(it);
  } catch (const Failure& e) {
    fail(e.what());
  }
  costs_.finish_seconds += mono_now() - t0;
  if (o_.view) o_.view->finish(global_);
  return !fault_;
}

}  // namespace kevo::mpi
