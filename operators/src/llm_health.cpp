#include "kevo/operators/llm_health.hpp"

#include "kevo/core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace kevo::operators::llm {

Health::Health(HealthOptions options, std::vector<Model> models) : options_(options), models_(std::move(models)) {
  options_.window = std::max(1, options_.window);
}

std::string Health::fatal_reason(std::size_t model, int status, const std::string& kind,
                                 const std::string& error) const {
  const Model& m = models_.at(model);
  std::string what;
  if (kind == "auth" || kind == "payment")
    what = m.api_key_env.empty() ? fmt::format("the server wants a key (set llm.models.{}.api_key_env)", model)
                                 : fmt::format("check the key in ${} and the account", m.api_key_env);
  else
    what = "check the model id and base_url";
  return fmt::format("llm: model '{}' ({} at {}) answered HTTP {} ({}), which every request to it would repeat; {}{}",
                     m.name, m.model, m.base_url, status, kind, what, error.empty() ? "" : ": " + error);
}

std::string Health::share_reason(int failures, int window, const std::string& where) const {
  return fmt::format("llm: {} of the last {} LLM requests{} failed, more than llm.max_failure_share {}", failures,
                     window, where, options_.max_failure_share);
}

void Health::trip(std::string reason, int code, double a, double b) {
  if (!reason_.empty()) return;
  reason_ = std::move(reason);
  code_ = code;
  a_ = a;
  b_ = b;
  // Said at once by the rank that saw it (the drain may take a while); the
  // others learn it from a round and leave it to the final line.
  if (code == 0) return;
  std::fprintf(stderr, "kevo: stopping the run: %s\n", sanitize_utf8(reason_, kTerminalText).c_str());
  std::fflush(stderr);
}

void Health::record(std::size_t model, const ChatResult& r) {
  if (!r.ok && r.failure == "budget") return;
  // Failures of the prompt's making (too long for the model, its content
  // refused) say nothing of the model's health, and a candidate whose source
  // or output fills its children's prompts could cause them on purpose and
  // so stop the run (red team 22): not counted.
  if (!r.ok && (r.failure == "prompt_too_long" || r.failure == "refusal")) return;
  if (!r.ok && r.fatal && model < models_.size()) {
    trip(fatal_reason(model, r.http_status, r.failure, r.error), 1, r.http_status, static_cast<double>(model + 1));
    return;
  }
  const std::string kind = r.ok ? std::string() : (r.failure.empty() ? std::string("other") : r.failure);
  window_.push_back(kind);
  if (!r.ok) {
    ++failures_;
    last_error_ = fmt::format("model '{}': {}", r.model, r.error);
  }
  if (static_cast<int>(window_.size()) > options_.window) {
    if (!window_.front().empty()) --failures_;
    window_.pop_front();
  }
  if (static_cast<int>(window_.size()) < options_.window || options_.max_failure_share >= 1.0) return;
  if (static_cast<double>(failures_) <= options_.max_failure_share * static_cast<double>(window_.size())) return;
  std::map<std::string, int> kinds;
  for (const auto& k : window_)
    if (!k.empty()) ++kinds[k];
  std::string by;
  for (const auto& [k, n] : kinds) by += fmt::format("{}{} {}", by.empty() ? "" : ", ", k, n);
  trip(share_reason(failures_, static_cast<int>(window_.size()), "") + fmt::format(" ({}; latest: {})", by, last_error_),
       2, failures_, static_cast<double>(window_.size()));
}

void Health::start_shared(int rank, int ranks) {
  rank_ = rank;
  ranks_ = std::max(1, ranks);
}

void Health::open_round(double* out) {
  std::fill(out, out + width(), 0.0);
  out[3 * rank_] = code_;
  out[3 * rank_ + 1] = a_;
  out[3 * rank_ + 2] = b_;
}

void Health::close_round(const double* sums) {
  if (!reason_.empty()) return;
  for (int r = 0; r < ranks_; ++r) {
    const int code = static_cast<int>(sums[3 * r] + 0.5);
    const double a = sums[3 * r + 1], b = sums[3 * r + 2];
    const std::string where = fmt::format(" on rank {}", r);
    if (code == 1) {
      const auto model = static_cast<std::size_t>(std::max(0.0, b - 1.0 + 0.5));
      const int status = static_cast<int>(a + 0.5);
      if (model < models_.size())
        trip("on rank " + std::to_string(r) + ": " + fatal_reason(model, status, classify_http_failure(status, "").kind, ""),
             0, 0, 0);
      return;
    }
    if (code == 2) {
      trip(share_reason(static_cast<int>(a + 0.5), static_cast<int>(b + 0.5), where), 0, 0, 0);
      return;
    }
  }
}

std::string Health::stop_advice(const std::string& run_dir) const {
  return "fix the cause above, then continue with `kevo resume " + run_dir + "`";
}

}  // namespace kevo::operators::llm
