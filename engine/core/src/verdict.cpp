#include "kevo/core/verdict.hpp"

#include "kevo/core/text.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kevo {
namespace {

constexpr std::array<std::string_view, kStatusCount> kStatusNames = {
    "pending",       "correct", "wrong_answer", "compile_error", "runtime_error", "timeout",
    "memory_limit",  "output_limit", "duplicate", "invalid", "lost", "internal_error", "forbidden"};
constexpr std::array<std::string_view, 5> kStageNames = {"none", "compile", "correctness", "timing", "done"};

// JSON has no inf/nan; keep them as strings so that a round trip is exact
// (a speedup of inf or an error of nan must not turn into 0 or null).
nlohmann::json real(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double get_real(const nlohmann::json& j, const char* key, double def = 0.0) {
  auto it = j.find(key);
  if (it == j.end()) return def;
  if (it->is_string()) {
    const auto s = it->get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw std::invalid_argument(std::string("verdict field '") + key + "': expected a number, got \"" + s + "\"");
  }
  if (!it->is_number()) throw std::invalid_argument(std::string("verdict field '") + key + "': expected a number");
  return it->get<double>();
}

template <class T>
T get(const nlohmann::json& j, const char* key, T def) {
  auto it = j.find(key);
  if (it == j.end()) return def;
  return it->get<T>();   // throws nlohmann::json::type_error on a wrong type
}

}  // namespace

std::string_view to_string(Status s) {
  const auto i = static_cast<std::size_t>(s);
  return i < kStatusNames.size() ? kStatusNames[i] : "unknown";
}

std::string_view to_string(Stage s) {
  const auto i = static_cast<std::size_t>(s);
  return i < kStageNames.size() ? kStageNames[i] : "unknown";
}

std::optional<Status> status_from_string(std::string_view text) {
  for (std::size_t i = 0; i < kStatusNames.size(); ++i)
    if (kStatusNames[i] == text) return static_cast<Status>(i);
  return std::nullopt;
}

std::optional<Stage> stage_from_string(std::string_view text) {
  for (std::size_t i = 0; i < kStageNames.size(); ++i)
    if (kStageNames[i] == text) return static_cast<Stage>(i);
  return std::nullopt;
}

nlohmann::json to_json(const Verdict& v) {
  nlohmann::json j;
  j["status"] = std::string(to_string(v.status));
  j["stage"] = std::string(to_string(v.stage));
  j["message"] = v.message;
  j["compile_seconds"] = real(v.compile_seconds);
  j["compile_cached"] = v.compile_cached;
  j["compile_log"] = v.compile_log;
  j["max_abs_error"] = real(v.max_abs_error);
  j["rel_l2_error"] = real(v.rel_l2_error);
  if (v.mismatch) {
    const Mismatch& m = *v.mismatch;
    j["mismatch"] = {{"arg", m.arg},
                     {"shape", m.shape},
                     {"trial", m.trial},
                     {"flat_index", m.flat_index},
                     {"index", m.index},
                     {"expected", real(m.expected)},
                     {"got", real(m.got)}};
  } else {
    j["mismatch"] = nullptr;
  }
  j["cand_median_ns"] = real(v.cand_median_ns);
  j["cand_iqr_ns"] = real(v.cand_iqr_ns);
  j["ref_median_ns"] = real(v.ref_median_ns);
  j["ref_iqr_ns"] = real(v.ref_iqr_ns);
  j["repeats"] = v.repeats;
  j["speedup"] = real(v.speedup);
  j["worker_seconds"] = real(v.worker_seconds);
  j["slot_seconds"] = real(v.slot_seconds);
  j["exit_code"] = v.exit_code;
  j["signal"] = v.signal;
  j["max_rss_kb"] = v.max_rss_kb;
  j["output_tail"] = v.output_tail;
  j["feedback"] = v.feedback;
  j["profile"] = v.profile;
  j["device"] = v.device;
  return j;
}

void sanitize_texts(Verdict& v) {
  for (std::string* t : {&v.message, &v.compile_log, &v.output_tail, &v.feedback, &v.profile, &v.device})
    if (!is_clean_utf8(*t, kShownText)) *t = sanitize_utf8(*t, kShownText);
  if (v.mismatch)
    for (std::string* t : {&v.mismatch->arg, &v.mismatch->shape, &v.mismatch->trial, &v.mismatch->index})
      if (!is_clean_utf8(*t, kShownText)) *t = sanitize_utf8(*t, kShownText);
}

Verdict verdict_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("verdict: expected a JSON object");
  Verdict v;
  // status and stage are required: a verdict without them means nothing.
  const auto status = status_from_string(j.at("status").get<std::string>());
  if (!status) throw std::invalid_argument("verdict: unknown status \"" + j.at("status").get<std::string>() + "\"");
  v.status = *status;
  const auto stage = stage_from_string(j.at("stage").get<std::string>());
  if (!stage) throw std::invalid_argument("verdict: unknown stage \"" + j.at("stage").get<std::string>() + "\"");
  v.stage = *stage;
  v.message = get<std::string>(j, "message", "");
  v.compile_seconds = get_real(j, "compile_seconds");
  v.compile_cached = get<bool>(j, "compile_cached", false);
  v.compile_log = get<std::string>(j, "compile_log", "");
  v.max_abs_error = get_real(j, "max_abs_error");
  v.rel_l2_error = get_real(j, "rel_l2_error");
  if (auto it = j.find("mismatch"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) throw std::invalid_argument("verdict field 'mismatch': expected an object or null");
    Mismatch m;
    m.arg = get<std::string>(*it, "arg", "");
    m.shape = get<std::string>(*it, "shape", "");
    m.trial = get<std::string>(*it, "trial", "");
    m.flat_index = get<std::int64_t>(*it, "flat_index", -1);
    m.index = get<std::string>(*it, "index", "");
    m.expected = get_real(*it, "expected");
    m.got = get_real(*it, "got");
    v.mismatch = m;
  }
  v.cand_median_ns = get_real(j, "cand_median_ns");
  v.cand_iqr_ns = get_real(j, "cand_iqr_ns");
  v.ref_median_ns = get_real(j, "ref_median_ns");
  v.ref_iqr_ns = get_real(j, "ref_iqr_ns");
  v.repeats = get<std::int32_t>(j, "repeats", 0);
  v.speedup = get_real(j, "speedup");
  v.worker_seconds = get_real(j, "worker_seconds");
  v.slot_seconds = get_real(j, "slot_seconds");
  v.exit_code = get<std::int32_t>(j, "exit_code", 0);
  v.signal = get<std::int32_t>(j, "signal", 0);
  v.max_rss_kb = get<std::int64_t>(j, "max_rss_kb", 0);
  v.output_tail = get<std::string>(j, "output_tail", "");
  v.feedback = get<std::string>(j, "feedback", "");
  v.profile = get<std::string>(j, "profile", "");
  v.device = get<std::string>(j, "device", "");
  return v;
}

}  // namespace kevo
