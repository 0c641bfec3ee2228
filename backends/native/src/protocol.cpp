#include "kevo/native/protocol.hpp"

#include <stdexcept>

namespace kevo::native {

namespace {

std::uint64_t to_u64(const nlohmann::json& j, const char* key) {
  // Seeds travel as strings: JSON readers elsewhere may hold numbers as doubles.
  if (j.is_number_unsigned()) return j.get<std::uint64_t>();
  if (j.is_number_integer()) return static_cast<std::uint64_t>(j.get<std::int64_t>());
  if (j.is_string()) return std::stoull(j.get<std::string>());
  throw std::invalid_argument(std::string("field '") + key + "': expected an unsigned integer");
}

// Reads a required or optional field with its type checked and the field
// named in the error.
template <class T>
void read(const nlohmann::json& j, const char* key, T& into, bool required = false) {
  const auto it = j.find(key);
  if (it == j.end()) {
    if (required) throw std::invalid_argument(std::string("field '") + key + "' is missing");
    return;
  }
  try {
    into = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(std::string("field '") + key + "' has the wrong type");
  }
}

}  // namespace

nlohmann::json to_json(const JudgeRequest& r) {
  const TimingRequest& t = r.timing_options;
  return {{"nonce", r.nonce},
          {"mode", r.mode},
          {"null_kind", r.null_kind},
          {"task_dir", r.task_dir},
          {"reference_so", r.reference_so},
          {"candidate_so", r.candidate_so},
          {"seed", std::to_string(r.seed)},
          {"trials", r.trials},
          {"timing", r.timing},
          {"timing_options",
           {{"warmup", t.warmup},
            {"min_repeats", t.min_repeats},
            {"max_repeats", t.max_repeats},
            {"budget_seconds", t.budget_seconds},
            {"flush_bytes", t.flush_bytes},
            {"max_iqr_fraction", t.max_iqr_fraction}}},
          {"judge_threads", r.judge_threads},
          {"wall_seconds", r.wall_seconds},
          {"seccomp", r.seccomp},
          {"policy", r.policy},
          {"namespaces", r.namespaces},
          {"host",
           {{"memory_mb", r.host.memory_mb},
            {"cpu_seconds", r.host.cpu_seconds},
            {"file_mb", r.host.file_mb},
            {"open_files", r.host.open_files}}},
          {"roofline",
           {{"peak_gflops", r.roofline.peak_gflops},
            {"peak_gflops_bf16", r.roofline.peak_gflops_bf16},
            {"peak_gbps", r.roofline.peak_gbps},
            {"floor_fraction", r.roofline.floor_fraction}}},
          {"libraries", r.libraries},
          {"flavour", r.flavour}};
}

JudgeRequest judge_request_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("the request is not a JSON object");
  JudgeRequest r;
  read(j, "nonce", r.nonce, true);
  read(j, "mode", r.mode, true);
  read(j, "null_kind", r.null_kind);
  read(j, "task_dir", r.task_dir, true);
  read(j, "reference_so", r.reference_so, true);
  read(j, "candidate_so", r.candidate_so);
  if (!j.contains("seed")) throw std::invalid_argument("field 'seed' is missing");
  r.seed = to_u64(j.at("seed"), "seed");
  read(j, "trials", r.trials, true);
  read(j, "timing", r.timing);
  if (auto it = j.find("timing_options"); it != j.end()) {
    TimingRequest& t = r.timing_options;
    read(*it, "warmup", t.warmup);
    read(*it, "min_repeats", t.min_repeats);
    read(*it, "max_repeats", t.max_repeats);
    read(*it, "budget_seconds", t.budget_seconds);
    read(*it, "flush_bytes", t.flush_bytes);
    read(*it, "max_iqr_fraction", t.max_iqr_fraction);
  }
  read(j, "judge_threads", r.judge_threads);
  read(j, "wall_seconds", r.wall_seconds);
  read(j, "seccomp", r.seccomp);
  read(j, "policy", r.policy);
  read(j, "namespaces", r.namespaces);
  if (auto it = j.find("host"); it != j.end()) {
    read(*it, "memory_mb", r.host.memory_mb);
    read(*it, "cpu_seconds", r.host.cpu_seconds);
    read(*it, "file_mb", r.host.file_mb);
    read(*it, "open_files", r.host.open_files);
  }
  if (auto it = j.find("roofline"); it != j.end()) {
    read(*it, "peak_gflops", r.roofline.peak_gflops);
    read(*it, "peak_gflops_bf16", r.roofline.peak_gflops_bf16);
    read(*it, "peak_gbps", r.roofline.peak_gbps);
    read(*it, "floor_fraction", r.roofline.floor_fraction);
  }
  read(j, "libraries", r.libraries);
  if (auto it = j.find("flavour"); it != j.end() && it->is_object()) r.flavour = *it;
  if (r.mode != kModeJudge && r.mode != kModeSelfCheck && r.mode != kModeNull)
    throw std::invalid_argument("unknown mode '" + r.mode + "'");
  if (r.mode == kModeNull && r.null_kind.empty()) throw std::invalid_argument("field 'null_kind' is missing");
  if (r.mode != kModeNull && r.candidate_so.empty()) throw std::invalid_argument("field 'candidate_so' is missing");
  if (r.trials < 1) throw std::invalid_argument("trials must be at least 1");
  return r;
}

nlohmann::json to_json(const JudgeResult& r) {
  return {{"event", "result"},
          {"verdict", to_json(r.verdict)},
          {"mismatch_hidden", r.mismatch_hidden},
          {"shape_timings", r.shape_timings},
          {"worker_ns", r.worker_ns},
          {"isolation", r.isolation},
          {"device_error", r.device_error},
          {"flavour", r.flavour}};
}

JudgeResult judge_result_from_json(const nlohmann::json& j) {
  JudgeResult r;
  r.verdict = verdict_from_json(j.at("verdict"));
  read(j, "mismatch_hidden", r.mismatch_hidden);
  if (auto it = j.find("shape_timings"); it != j.end() && it->is_array()) r.shape_timings = *it;
  read(j, "worker_ns", r.worker_ns);
  if (auto it = j.find("isolation"); it != j.end()) r.isolation = *it;
  read(j, "device_error", r.device_error);
  if (auto it = j.find("flavour"); it != j.end() && it->is_object()) r.flavour = *it;
  return r;
}

}  // namespace kevo::native
