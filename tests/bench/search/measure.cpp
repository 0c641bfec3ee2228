#include "measure.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/rng.hpp"
#include "kevo/core/strict_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <deque>
#include <fstream>
#include <limits>
#include <ostream>
#include <set>

namespace kevo::bench {
namespace fs = std::filesystem;
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Enumeration limit: a space this large cannot be measured exhaustively anyway.
constexpr std::uint64_t kEnumerateLimit = 1'000'000;

std::vector<Point> all_points(const Task& task) {
  if (task.space.empty())
    throw Failure(fmt::format("task '{}' has no search space: nothing to enumerate", task.name));
  std::vector<Point> points = task.space.enumerate(kEnumerateLimit);
  if (points.size() >= kEnumerateLimit)
    throw Failure(fmt::format("task '{}': more than {} valid points, too many to measure", task.name, kEnumerateLimit));
  if (points.empty()) throw Failure(fmt::format("task '{}': no valid point in the search space", task.name));
  return points;
}

void write_atomically(const fs::path& path, const nlohmann::json& doc) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw Failure("cannot write " + tmp.string());
    out << doc.dump(1) << '\n';
    out.flush();
    if (!out) throw Failure("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw Failure("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
}

}  // namespace

TaskTable measure_task(Backend& backend, const std::shared_ptr<const Task>& task, const MeasureOptions& options,
                       std::ostream& log) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<Point> points = all_points(*task);
  const std::size_t n = points.size();
  const int rounds = std::max(1, options.rounds);
  backend.prepare(*task);

  std::vector<std::string> keys(n), sources(n);
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = task->space.key(points[i]);
    sources[i] = apply_point(task->space, points[i], task->seed_source);
  }
  std::vector<double> best_ns(n, std::numeric_limits<double>::infinity());
  std::vector<double> worst_ns(n, 0.0);   // for the spread between rounds: how far to trust one figure
  std::vector<std::vector<double>> samples(n);   // every round's median, in round order (seconds)
  std::vector<std::string> bad(n);

  std::uint64_t next_id = 0;
  for (int round = 0; round < rounds; ++round) {
    // A fresh random order every round: a stretch of heavy load on the
    // machine then hits different points each time, and the minimum over
    // rounds filters it out instead of biasing one neighbourhood of the space.
    Rng rng = Rng::derive(options.seed, static_cast<std::uint64_t>(round));
    std::deque<std::size_t> todo;
    {
      std::vector<std::size_t> order(n);
      for (std::size_t i = 0; i < n; ++i) order[i] = i;
      for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
      todo.assign(order.begin(), order.end());
    }
    std::map<std::uint64_t, std::size_t> in_flight;   // request id -> point
    std::vector<int> attempts(n, 0);
    std::size_t done = 0;
    auto last_line = std::chrono::steady_clock::now();
    while (done < n) {
      // wanted() == 0 with nothing in flight would wait forever: submit one.
      while (!todo.empty() && (backend.wanted() > 0 || backend.in_flight() == 0)) {
        const std::size_t i = todo.front();
        todo.pop_front();
        ++attempts[i];
        in_flight[next_id] = i;
        backend.submit(EvalRequest{next_id++, task, sources[i], fnv1a64(keys[i]) ^ options.seed});
      }
      for (EvalResult& r : backend.poll(std::chrono::milliseconds(200))) {
        const auto it = in_flight.find(r.id);
        if (it == in_flight.end()) throw Failure(fmt::format("measurement: unexpected result id {}", r.id));
        const std::size_t i = it->second;
        in_flight.erase(it);
        const Verdict& v = r.verdict;
        // kevo's own failure (worker missing, cache write...) says nothing
        // about the kernel: judge the point again, at the end of the round.
        if (v.status == Status::internal_error && attempts[i] < options.attempts) {
          log << fmt::format("  {}: {}: internal error, judging again: {}\n", task->name, keys[i], v.message);
          todo.push_back(i);
          continue;
        }
        ++done;
        if (v.is_correct() && v.cand_median_ns > 0.0) {
          best_ns[i] = std::min(best_ns[i], v.cand_median_ns);
          worst_ns[i] = std::max(worst_ns[i], v.cand_median_ns);
          samples[i].push_back(v.cand_median_ns * 1e-9);
        } else if (bad[i].empty()) {
          bad[i] = v.is_correct() ? std::string("correct but without a timing")
                                  : fmt::format("{}: {}", to_string(v.status), v.message);
        }
      }
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - last_line).count() >=
          options.progress_seconds) {
        last_line = std::chrono::steady_clock::now();
        log << fmt::format("  {}: round {}/{}: {}/{} points judged, {:.0f} s\n", task->name, round + 1, rounds, done,
                           n, seconds_since(t0))
            << std::flush;
      }
    }
  }

  TaskTable table;
  std::vector<double> spread;
  nlohmann::json per_round = nlohmann::json::object();
  for (std::size_t i = 0; i < n; ++i)
    if (bad[i].empty()) per_round[keys[i]] = samples[i];
  for (std::size_t i = 0; i < n; ++i) {
    if (!bad[i].empty()) {
      table.incorrect[keys[i]] = bad[i];
    } else {
      table.seconds[keys[i]] = best_ns[i] * 1e-9;
      spread.push_back(worst_ns[i] / best_ns[i] - 1.0);
    }
  }
  std::sort(spread.begin(), spread.end());
  auto quantile = [&](double q) {
    return spread.empty() ? 0.0 : spread[static_cast<std::size_t>(q * static_cast<double>(spread.size() - 1))];
  };
  table.info = {{"rounds", rounds},
                {"task_fingerprint", task_fingerprint(*task)},
                // (slowest round / fastest round - 1) over points: 0 with one round.
                {"round_spread_median", quantile(0.5)},
                {"round_spread_p90", quantile(0.9)},
                {"points", n},
                {"measure_seconds", seconds_since(t0)},
                {"measured_at", utc_now()},
                {"backend", backend.name()},
                // Kept so that another estimate (median of rounds...) can be
                // tried without measuring again.
                {"round_seconds", per_round}};
  return table;
}

fs::path meta_path(const fs::path& table) { return table.string() + ".meta.json"; }

TableFile read_table(const fs::path& path) {
  const std::string file = path.string();
  const nlohmann::json doc = read_json_file(file);
  if (!doc.is_object()) throw InputError(file, "", "an object {\"task\": {\"KEY\": seconds, ...}}");
  TableFile out;
  for (const auto& [task, points] : doc.items()) {
    if (!points.is_object()) throw InputError(file, "/" + task, "an object {\"KEY\": seconds, ...}");
    TaskTable& t = out[task];
    for (const auto& [key, value] : points.items()) {
      if (!value.is_number() || !(value.get<double>() > 0.0))
        throw InputError(file, "/" + task + "/" + key, "a positive time in seconds");
      t.seconds[key] = value.get<double>();
    }
  }
  const fs::path mp = meta_path(path);
  if (!fs::exists(mp)) return out;
  const std::string mfile = mp.string();
  const nlohmann::json meta = read_json_file(mfile);
  if (!meta.is_object() || !meta.contains("tasks") || !meta["tasks"].is_object())
    throw InputError(mfile, "/tasks", "an object with one entry per task");
  for (const auto& [task, m] : meta["tasks"].items()) {
    auto it = out.find(task);
    if (it == out.end()) continue;   // the table is the authority; a leftover entry is ignored
    if (!m.is_object()) throw InputError(mfile, "/tasks/" + task, "an object");
    if (m.contains("incorrect")) {
      if (!m["incorrect"].is_object()) throw InputError(mfile, "/tasks/" + task + "/incorrect", "an object");
      for (const auto& [key, why] : m["incorrect"].items())
        it->second.incorrect[key] = why.is_string() ? why.get<std::string>() : why.dump();
    }
    if (m.contains("info")) it->second.info = m["info"];
  }
  return out;
}

void write_table(const fs::path& path, const TableFile& file) {
  nlohmann::json doc = nlohmann::json::object();
  nlohmann::json meta = {{"format", "kevo bench_search timing table sidecar, version 1"},
                         {"tasks", nlohmann::json::object()}};
  for (const auto& [task, t] : file) {
    doc[task] = nlohmann::json::object();
    for (const auto& [key, s] : t.seconds) doc[task][key] = s;
    meta["tasks"][task] = {{"incorrect", t.incorrect}, {"info", t.info}};
  }
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  // Table first: a sidecar never describes a table that is not there.
  write_atomically(path, doc);
  write_atomically(meta_path(path), meta);
}

std::string task_fingerprint(const Task& task) {
  const nlohmann::json& m = task.manifest;
  auto part = [&](const char* key) { return m.contains(key) ? m[key].dump() : std::string(); };
  const std::string visible = m.contains("shapes") && m["shapes"].contains("visible") ? m["shapes"]["visible"].dump() : "";
  return hex64(fnv1a64(task.seed_source + '\0' + part("function") + '\0' + part("args") + '\0' + visible + '\0' +
                       part("search_space")));
}

std::string stale_reason(const Task& task, const TaskTable& table) {
  if (table.info.contains("task_fingerprint") && table.info["task_fingerprint"] != task_fingerprint(task))
    return "the task's seed, arguments, visible shapes or search space changed since it was measured";
  const std::vector<Point> points = all_points(task);
  std::set<std::string> valid;
  for (const auto& p : points) valid.insert(task.space.key(p));
  std::size_t missing = 0, foreign = 0;
  std::string first;
  for (const auto& k : valid) {
    const auto bad = table.incorrect.find(k);
    if (bad != table.incorrect.end() && bad->second.rfind(std::string(to_string(Status::internal_error)), 0) == 0) {
      if (missing++ == 0) first = k + " failed with an internal error";
    } else if (!table.seconds.count(k) && bad == table.incorrect.end() && missing++ == 0) {
      first = "no entry for " + k;
    }
  }
  auto check_known = [&](const std::string& k) {
    if (!valid.count(k) && foreign++ == 0 && first.empty()) first = k + " is not a valid point of the space";
  };
  for (const auto& entry : table.seconds) check_known(entry.first);
  for (const auto& entry : table.incorrect) check_known(entry.first);
  if (missing == 0 && foreign == 0) return {};
  return fmt::format("{} ({} point(s) missing, {} unknown)", first, missing, foreign);
}

}  // namespace kevo::bench
