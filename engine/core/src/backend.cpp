#include "kevo/core/backend.hpp"

#include <map>

#include "kevo/core/error.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <thread>

namespace kevo {

namespace {
std::atomic<int> g_ranks_on_host{1};
}

void set_ranks_on_host(int ranks) { g_ranks_on_host = std::max(ranks, 1); }

int usable_cores() {
  const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max(1, hw / g_ranks_on_host.load());
}

void Backend::prepare(const Task& task, bool checks) {
  prepare_checks_ = checks;
  try {
    do_prepare(task);
  } catch (...) {
    prepare_checks_ = true;
    throw;
  }
  prepare_checks_ = true;
  // Recorded only after success: a task that failed to prepare stays unusable.
  prepared_.insert(task.manifest_path.string());
}

void Backend::submit(EvalRequest request) {
  if (!request.task) throw Failure("backend '" + name_ + "': request " + std::to_string(request.id) + " has no task");
  if (!prepared_.count(request.task->manifest_path.string()))
    throw Failure("backend '" + name_ + "': task '" + request.task->name + "' (" +
                  request.task->manifest_path.string() + ") was not prepared");
  if (in_flight_.count(request.id))
    throw Failure("backend '" + name_ + "': request id " + std::to_string(request.id) + " is in flight already");
  const std::uint64_t id = request.id;
  do_submit(std::move(request));
  // Only once the implementation accepted it: a throwing do_submit leaves
  // nothing in flight that would never come back.
  in_flight_.insert(id);
}

std::vector<EvalResult> Backend::poll(std::chrono::milliseconds max_wait) {
  std::vector<EvalResult> results = do_poll(max_wait);
  for (EvalResult& r : results) {
    // Verdict texts carry candidate output: whatever the backend let
    // through, they leave here safe for JSON, the lineage and terminals.
    sanitize_texts(r.verdict);
    if (r.verdict.status == Status::pending)
      throw Failure("backend '" + name_ + "': returned a pending verdict for request " + std::to_string(r.id));
    // Also catches the same id returned twice.
    if (in_flight_.erase(r.id) == 0)
      throw Failure("backend '" + name_ + "': returned a result for request " + std::to_string(r.id) +
                    ", which is not in flight");
  }
  return results;
}

std::vector<std::uint64_t> Backend::cancel_all() {
  do_cancel_all();
  std::vector<std::uint64_t> dropped(in_flight_.begin(), in_flight_.end());
  in_flight_.clear();
  return dropped;
}

Verdict Backend::evaluate(std::shared_ptr<const Task> task, std::string source, std::uint64_t seed) {
  // With nothing else in flight no other request's result can arrive here
  // and be lost.
  if (!in_flight_.empty())
    throw Failure("backend '" + name_ + "': evaluate() needs an idle backend, " +
                  std::to_string(in_flight_.size()) + " request(s) in flight");
  if (!task) throw Failure("backend '" + name_ + "': evaluate() without a task");
  if (!prepared_.count(task->manifest_path.string())) prepare(*task);
  constexpr std::uint64_t id = std::numeric_limits<std::uint64_t>::max();
  submit(EvalRequest{id, task, std::move(source), seed});
  for (;;) {
    for (EvalResult& r : poll(std::chrono::milliseconds(100)))
      if (r.id == id) return std::move(r.verdict);
  }
}

void Backend::evaluate_all(const std::vector<Candidate>& candidates, std::uint64_t seed,
                           const std::function<void(std::size_t, Verdict)>& done) {
  if (!in_flight_.empty())
    throw Failure("backend '" + name_ + "': evaluate_all() needs an idle backend, " +
                  std::to_string(in_flight_.size()) + " request(s) in flight");
  for (const auto& c : candidates) {
    if (!c.task) throw Failure("backend '" + name_ + "': evaluate_all() without a task");
    if (!prepared_.count(c.task->manifest_path.string())) prepare(*c.task);
  }
  std::map<std::size_t, Verdict> ready;
  std::size_t next_submit = 0, next_done = 0;
  while (next_done < candidates.size()) {
    while (next_submit < candidates.size() && (in_flight_.empty() || wanted() > 0)) {
      submit(EvalRequest{next_submit, candidates[next_submit].task, candidates[next_submit].source, seed});
      ++next_submit;
    }
    for (EvalResult& r : poll(std::chrono::milliseconds(100))) ready.emplace(static_cast<std::size_t>(r.id), std::move(r.verdict));
    for (auto it = ready.find(next_done); it != ready.end(); it = ready.find(next_done)) {
      done(next_done, std::move(it->second));
      ready.erase(it);
      ++next_done;
    }
  }
}

std::vector<BaselineVerdict> Backend::judge_baselines(const Task& task, std::uint64_t seed) {
  if (task.source_baselines.empty()) return {};
  if (!in_flight_.empty())
    throw Failure("backend '" + name_ + "': judge_baselines() needs an idle backend, " +
                  std::to_string(in_flight_.size()) + " request(s) in flight");
  if (!prepared_.count(task.manifest_path.string()))
    throw Failure("backend '" + name_ + "': judge_baselines() of task '" + task.name + "', which was not prepared");
  std::vector<BaselineVerdict> out = do_judge_baselines(task, seed);
  if (!out.empty() && out.size() != task.source_baselines.size())
    throw Failure("backend '" + name_ + "': " + std::to_string(out.size()) + " baseline verdict(s) for the " +
                  std::to_string(task.source_baselines.size()) + " source baseline(s) of task '" + task.name + "'");
  for (auto& b : out) {
    if (b.verdict.status == Status::pending)
      throw Failure("backend '" + name_ + "': a pending verdict for baseline '" + b.name + "'");
    sanitize_texts(b.verdict);
  }
  return out;
}

}  // namespace kevo
