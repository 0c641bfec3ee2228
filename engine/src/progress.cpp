#include "kevo/engine/progress.hpp"

#include "kevo/core/text.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>

namespace kevo::engine {
namespace {

double mono_now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::int64_t count(const std::array<std::int64_t, kStatusCount>& s, Status st) { return s[static_cast<int>(st)]; }

}  // namespace

ProgressView::ProgressView(ProgressMode mode, double interval_seconds, std::FILE* out)
    : out_(out), interval_(interval_seconds) {
  const bool tty = isatty(fileno(out)) != 0;
  off_ = mode == ProgressMode::off;
  refreshing_ = mode == ProgressMode::bar || (mode == ProgressMode::auto_detect && tty);
  if (refreshing_) interval_ = 0.25;
}

std::string ProgressView::line(const IslandSnapshot& s) const {
  const double rate = s.elapsed_seconds > 0 ? static_cast<double>(s.evaluations) / s.elapsed_seconds : 0.0;
  std::string text = fmt::format(
      "[{:7.1f}s] evals {} ({:.1f}/s) in-flight {} | ok {} wrong {} cerr {} rerr {} tout {} mem {} out {} dup {}",
      s.elapsed_seconds, s.evaluations, rate, s.in_flight, count(s.status, Status::correct),
      count(s.status, Status::wrong_answer), count(s.status, Status::compile_error),
      count(s.status, Status::runtime_error), count(s.status, Status::timeout), count(s.status, Status::memory_limit),
      count(s.status, Status::output_limit), count(s.status, Status::duplicate));
  text += " | best";
  for (const auto& t : s.tasks) {
    if (t.best_id >= 0) text += fmt::format(" {} {:.2f}x", t.name, t.best_speedup);
    else text += fmt::format(" {} -", t.name);
    if (t.done) text += "*";
  }
  if (s.ranks > 1) text += fmt::format(" | ranks {}", s.ranks);   // a multi-rank run's global view
  // Failing LLM requests per operator and model, so a broken server shows.
  if (const std::string llm = llm_failure_line(s.llm); !llm.empty()) text += " | " + llm;
  return text;
}

void ProgressView::update(const IslandSnapshot& s) {
  if (off_) return;
  const double t = mono_now();
  if (t - last_ < interval_) return;
  last_ = t;
  // Task names are validated, but the line goes to a terminal.
  const std::string text = sanitize_utf8(line(s), kTerminalText);
  if (refreshing_) {
    // Overwrite the previous line; pad to clear leftovers of a longer one.
    std::string padded = text;
    if (padded.size() < last_width_) padded.append(last_width_ - padded.size(), ' ');
    last_width_ = text.size();
    fmt::print(out_, "\r{}", padded);
  } else {
    fmt::print(out_, "{}\n", text);
  }
  std::fflush(out_);
}

void ProgressView::finish(const IslandSnapshot& s) {
  if (off_) return;
  last_ = -1e9;
  update(s);
  if (refreshing_) fmt::print(out_, "\n");
  std::fflush(out_);
}

std::vector<TaskRow> rows_from_snapshot(const IslandSnapshot& s) {
  std::vector<TaskRow> rows;
  for (const auto& t : s.tasks) {
    TaskRow r;
    r.task = t.name;
    r.candidates = t.candidates;
    r.evaluations = t.evaluations;
    r.status = t.status;
    r.best_id = t.best_id;
    r.best_speedup = t.best_speedup;
    r.best_params = t.best_params;
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string format_table(const std::vector<TaskRow>& rows) {
  std::string out = fmt::format("{:<14} {:>6} {:>6} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>9} {:>7}  {}\n",
                                "task", "cands", "evals", "ok", "wrong", "cerr", "rerr", "tout", "limit", "dup",
                                "speedup", "best", "best parameters");
  for (const auto& r : rows) {
    const auto limits = count(r.status, Status::memory_limit) + count(r.status, Status::output_limit);
    out += fmt::format("{:<14} {:>6} {:>6} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>9} {:>7}  {}\n", r.task,
                       r.candidates, r.evaluations, count(r.status, Status::correct),
                       count(r.status, Status::wrong_answer), count(r.status, Status::compile_error),
                       count(r.status, Status::runtime_error), count(r.status, Status::timeout), limits,
                       count(r.status, Status::duplicate),
                       r.best_id >= 0 ? fmt::format("{:.2f}x", r.best_speedup) : std::string("-"),
                       r.best_id >= 0 ? fmt::format("#{}", r.best_id) : std::string("-"), r.best_params);
  }
  return out;
}

nlohmann::json params_to_json(const std::string& text) {
  if (text.empty()) return nullptr;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json(text) : j;
}

nlohmann::json rows_to_json(const std::vector<TaskRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json counts = nlohmann::json::object();
    for (int i = 1; i < kStatusCount; ++i) counts[std::string(to_string(static_cast<Status>(i)))] = r.status[i];
    out.push_back({{"task", r.task},
                   {"candidates", r.candidates},
                   {"evaluations", r.evaluations},
                   {"status", counts},
                   {"best_id", r.best_id >= 0 ? nlohmann::json(r.best_id) : nlohmann::json()},
                   {"best_speedup", r.best_id >= 0 ? nlohmann::json(r.best_speedup) : nlohmann::json()},
                   {"best_params", params_to_json(r.best_params)},
                   {"best_ms", r.best_ms >= 0 ? nlohmann::json(r.best_ms) : nlohmann::json()},
                   {"ref_ms", r.ref_ms >= 0 ? nlohmann::json(r.ref_ms) : nlohmann::json()}});
  }
  return out;
}

}  // namespace kevo::engine
