// The command protocol, kevo's side: the request it writes and the checks of
// every answer line (docs/command-backend.md, docs/schemas/).
#include "kevo/command/command_backend.hpp"

#include "kevo/core/ncu_summary.hpp"
#include "kevo/core/verdict_text.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace kevo::command {

namespace {

nlohmann::json to_json(const Distribution& d) {
  switch (d.kind) {
    case Distribution::Kind::uniform: return {{"kind", "uniform"}, {"low", d.a}, {"high", d.b}};
    case Distribution::Kind::normal: return {{"kind", "normal"}, {"mean", d.a}, {"stddev", d.b}};
    case Distribution::Kind::constant: return {{"kind", "constant"}, {"value", d.a}};
    case Distribution::Kind::integers:
      return {{"kind", "integers"}, {"low", static_cast<std::int64_t>(d.a)}, {"high", static_cast<std::int64_t>(d.b)}};
  }
  return nullptr;
}

nlohmann::json value_json(const Value& v) {
  if (v.kind == Value::Kind::integer) return v.i;
  return v.as_double();
}

// An expression of the task evaluated at a shape, or null when absent.
nlohmann::json count_at(const Expr& e, const Shape& s) {
  if (e.empty()) return nullptr;
  try {
    return e.eval(s.env()).as_double();
  } catch (const std::exception&) {
    return nullptr;
  }
}

std::string cut(std::string_view s, std::size_t n = 200) {
  std::string out = clean_text(s.substr(0, n));
  if (s.size() > n) out += "...";
  return out;
}

// A JSON number kevo accepts from an evaluator: finite, not a boolean; in
// the verdict's error fields also kevo's own spellings of non-finite values.
std::optional<double> number_of(const nlohmann::json& v, bool non_finite_text) {
  if (v.is_number()) {
    const double d = v.get<double>();
    if (std::isfinite(d)) return d;
    return std::nullopt;
  }
  if (non_finite_text && v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

struct Breach : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

std::vector<RequestShape> request_shapes(const Task& task, std::uint64_t seed) {
  std::vector<RequestShape> out;
  for (const auto& s : task.visible) out.push_back({s.label, "visible", s});
  for (const auto& s : task.hidden) out.push_back({"hidden " + s.label, "hidden", s});
  for (auto& s : draw_shapes(task, seed)) out.push_back({s.label, "drawn", s});
  return out;
}

nlohmann::json make_request(const Task& task, const std::vector<RequestShape>& shapes, const RequestInfo& info) {
  nlohmann::json args = nlohmann::json::array();
  for (const auto& a : task.args) {
    nlohmann::json j = {{"name", a.name}, {"dtype", std::string(to_string(a.dtype))}, {"role", std::string(to_string(a.role))}};
    if (a.is_input()) j["distribution"] = to_json(a.dist);
    args.push_back(std::move(j));
  }
  nlohmann::json sh = nlohmann::json::array();
  for (const auto& rs : shapes) {
    nlohmann::json per = nlohmann::json::object();
    for (const auto& a : task.args) {
      if (a.is_buffer()) per[a.name] = {{"extents", task.extents(a, rs.shape)}};
      else per[a.name] = {{"value", value_json(task.scalar_value(a, rs.shape))}};
    }
    nlohmann::json j = {{"label", rs.label}, {"kind", rs.kind}, {"dims", rs.shape.dims}, {"args", std::move(per)}};
    if (auto f = count_at(task.flops, rs.shape); !f.is_null()) j["flops"] = f;
    if (auto b = count_at(task.bytes, rs.shape); !b.is_null()) j["bytes"] = b;
    sh.push_back(std::move(j));
  }
  nlohmann::json stress = nlohmann::json::array();
  for (const auto& st : task.stress) {
    nlohmann::json in = nlohmann::json::object();
    for (const auto& [k, d] : st.inputs) in[task.args[k].name] = to_json(d);
    stress.push_back({{"name", st.name}, {"inputs", std::move(in)}});
  }
  nlohmann::json t = {{"name", task.name},
                      {"function", task.function},
                      {"signature", task.c_signature()},
                      {"dir", task.dir.string()},
                      {"tolerance", {{"atol", task.tolerance.atol}, {"rtol", task.tolerance.rtol}, {"rel_l2", task.tolerance.rel_l2}}},
                      {"args", std::move(args)},
                      {"shapes", std::move(sh)},
                      {"stress", std::move(stress)}};
  auto side = [](const std::filesystem::path& src, const std::filesystem::path& build) {
    return nlohmann::json{{"source", src.string()}, {"build", build.empty() ? nlohmann::json() : nlohmann::json(build.string())}};
  };
  nlohmann::json r = {{"protocol", kProtocolVersion},
                      {"nonce", info.nonce},
                      {"mode", info.mode},
                      {"seed", info.seed},
                      {"trials", info.trials},
                      {"timing", info.timing},
                      {"timing_options",
                       {{"warmup", info.timing_options.warmup},
                        {"min_repeats", info.timing_options.min_repeats},
                        {"max_repeats", info.timing_options.max_repeats},
                        {"budget_seconds", info.timing_options.budget_seconds},
                        {"max_iqr_fraction", info.timing_options.max_iqr_fraction},
                        {"max_ci_fraction", info.timing_options.max_ci_fraction}}},
                      {"wall_seconds", info.wall_seconds},
                      {"task", std::move(t)},
                      {"reference", side(info.reference_source, info.reference_build)},
                      {"profile", info.profile}};
  if (info.mode == "null") r["null_kind"] = info.null_kind;
  if (info.mode == "run") {
    r["program"] = info.program;
    r["files"] = info.files;
    r["calls"] = info.calls;
  }
  if (!info.candidate_source.empty()) r["candidate"] = side(info.candidate_source, info.candidate_build);
  return r;
}

AnswerRules answer_rules(const Task& task, const std::vector<RequestShape>& shapes, const std::string& nonce,
                         bool timing, const CommandOptions& options) {
  AnswerRules r;
  r.nonce = nonce;
  r.timing = timing;
  r.floor_fraction = options.floor_fraction;
  for (const auto& a : task.args)
    if (a.is_output()) r.outputs.insert(a.name);
  for (const auto& rs : shapes) {
    r.all.insert(rs.label);
    if (rs.kind == "hidden") r.hidden.insert(rs.label);
    if (rs.kind != "visible") continue;
    r.visible.push_back(rs.label);
    double floor_s = 0.0;
    if (options.peak_gflops > 0)
      if (auto f = count_at(task.flops, rs.shape); !f.is_null()) floor_s = std::max(floor_s, f.get<double>() / (options.peak_gflops * 1e9));
    if (options.peak_gbps > 0)
      if (auto b = count_at(task.bytes, rs.shape); !b.is_null()) floor_s = std::max(floor_s, b.get<double>() / (options.peak_gbps * 1e9));
    if (floor_s > 0) r.floor_ns[rs.label] = floor_s * 1e9;
  }
  return r;
}

void AnswerReader::feed(std::string_view chunk) {
  partial_.append(chunk);
  std::size_t start = 0;
  for (std::size_t nl = partial_.find('\n'); nl != std::string::npos; nl = partial_.find('\n', start)) {
    if (!complete() || saw_result_) line(std::string_view(partial_).substr(start, nl - start));
    start = nl + 1;
  }
  partial_.erase(0, start);
}

void AnswerReader::end() {
  if (!partial_.empty()) line(partial_);
  partial_.clear();
}

void AnswerReader::line(std::string_view text) {
  ++lines_;
  if (text.find_first_not_of(" \t\r") == std::string_view::npos) return;
  if (!breach_.empty()) return;
  const std::string where = "stdout line " + std::to_string(lines_);
  if (saw_result_ || fatal_) {
    breach_ = where + " comes after the result: " + cut(text);
    verdict_.reset();
    return;
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    breach_ = where + " is not a JSON object (stdout is the protocol's channel; logs go to stderr): " + cut(text);
    return;
  }
  if (!j.contains("nonce") || !j["nonce"].is_string()) {
    breach_ = where + " has no nonce: " + cut(text);
    return;
  }
  if (j["nonce"].get<std::string>() != rules_.nonce) {
    if (rules_.stale_nonces.count(j["nonce"].get<std::string>()) && !saw_result_ && last_stage_.empty()) {
      stale_ = true;
      return;
    }
    breach_ = where + " carries another request's nonce: " + cut(text);
    return;
  }
  const std::string event = j.contains("event") && j["event"].is_string() ? j["event"].get<std::string>() : "";
  if (event == "stage") {
    if (!j.contains("stage") || !j["stage"].is_string()) {
      breach_ = where + ": a stage event without a stage: " + cut(text);
      return;
    }
    const std::string st = j["stage"].get<std::string>();
    if (st != "compile" && st != "correctness" && st != "timing") {
      breach_ = where + ": unknown stage \"" + cut(st, 40) + "\" (compile, correctness, timing)";
      return;
    }
    last_stage_ = st;
  } else if (event == "call") {
    // The candidate is about to run at this shape (an evaluator tells at
    // least the first hidden one): from then on, the feedback of any
    // failure is withheld as a hidden shape's, even one whose evaluator is
    // killed before its result (a timeout, an output flood).
    if (!j.contains("shape") || !j["shape"].is_string()) {
      breach_ = where + ": a call event without a shape: " + cut(text);
      return;
    }
    const std::string label = j["shape"].get<std::string>();
    if (!rules_.all.count(label)) {
      breach_ = where + ": a call event at \"" + cut(label, 80) + "\", not a shape of the request";
      return;
    }
    if (rules_.hidden.count(label) && after_hidden_.empty()) after_hidden_ = label;
  } else if (event == "fatal") {
    fatal_ = true;
    fatal_message_ = j.contains("message") && j["message"].is_string() ? cut(j["message"].get<std::string>(), 2000) : "";
  } else if (event == "result") {
    saw_result_ = true;
    try {
      result(j);
    } catch (const Breach& b) {
      breach_ = where + ": " + b.what();
      verdict_.reset();
    }
  } else {
    breach_ = where + ": unknown event \"" + cut(event, 40) + "\" (stage, call, result, fatal): " + cut(text);
  }
}

void AnswerReader::result(const nlohmann::json& j) {
  for (const auto& [k, v] : j.items())
    if (k != "nonce" && k != "event" && k != "verdict" && k != "shape_timings" && k != "isolation")
      throw Breach("the result has an unknown key \"" + cut(k, 60) + "\" (verdict, shape_timings, isolation)");
  if (j.contains("isolation")) {
    if (!j["isolation"].is_object()) throw Breach("the result's isolation is not an object");
    isolation_ = j["isolation"];
  }
  if (!j.contains("verdict") || !j["verdict"].is_object()) throw Breach("the result has no verdict object");
  const nlohmann::json& vj = j["verdict"];
  static const std::set<std::string> keys = {"status",  "stage",         "message",  "feedback", "compile_log", "max_abs_error",
                                             "rel_l2_error", "mismatch", "speedup", "profile",  "device", "failed_shape",
                                             "profile_ncu_csv"};
  for (const auto& [k, v] : vj.items())
    if (!keys.count(k)) throw Breach("the verdict has a key an evaluator may not set: \"" + cut(k, 60) + "\"");
  Verdict v;
  if (!vj.contains("status") || !vj["status"].is_string()) throw Breach("the verdict has no status");
  const auto st = status_from_string(vj["status"].get<std::string>());
  static const std::set<Status> allowed = {Status::correct,       Status::wrong_answer, Status::compile_error,
                                           Status::runtime_error, Status::timeout,      Status::memory_limit,
                                           Status::output_limit,  Status::forbidden};
  if (!st || !allowed.count(*st))
    throw Breach("status \"" + cut(vj["status"].get<std::string>(), 40) +
                 "\" is not one an evaluator gives (correct, wrong_answer, compile_error, runtime_error, timeout, "
                 "memory_limit, output_limit, forbidden)");
  v.status = *st;
  v.stage = v.status == Status::correct ? Stage::done : v.status == Status::compile_error ? Stage::compile : Stage::correctness;
  if (vj.contains("stage")) {
    const auto sg = vj["stage"].is_string() ? stage_from_string(vj["stage"].get<std::string>()) : std::nullopt;
    if (!sg) throw Breach("the verdict's stage is not one of none, compile, correctness, timing, done");
    v.stage = *sg;
  }
  auto text = [&](const char* k, std::string& into) {
    if (!vj.contains(k)) return;
    if (!vj[k].is_string()) throw Breach(std::string("the verdict's ") + k + " is not a string");
    into = vj[k].get<std::string>();
  };
  text("message", v.message);
  text("feedback", v.feedback);
  text("compile_log", v.compile_log);
  text("profile", v.profile);
  // ncu's raw CSV page: condensed by kevo (kevo/core/ncu_summary.hpp),
  // which keeps numbers and up to three kernel names of it.
  if (vj.contains("profile_ncu_csv")) {
    if (!vj["profile_ncu_csv"].is_string()) throw Breach("the verdict's profile_ncu_csv is not a string");
    v.profile = ncu_summary(vj["profile_ncu_csv"].get<std::string>());
  }
  text("device", v.device);
  const bool wrong = v.status != Status::correct;
  for (const char* k : {"max_abs_error", "rel_l2_error"}) {
    if (!vj.contains(k)) continue;
    const auto d = number_of(vj[k], wrong);
    if (!d || *d < 0) throw Breach(std::string("the verdict's ") + k + " is not a finite number >= 0");
    (std::string(k) == "max_abs_error" ? v.max_abs_error : v.rel_l2_error) = *d;
  }
  if (vj.contains("failed_shape")) {
    // The shape the candidate failed on, for failures that name no
    // mismatch: at a hidden one the feedback says only that.
    const auto& fs = vj["failed_shape"];
    if (!fs.is_string()) throw Breach("the verdict's failed_shape is not a string");
    const std::string label = fs.get<std::string>();
    if (!rules_.all.count(label)) throw Breach("failed_shape \"" + cut(label, 80) + "\" is not a shape of the request");
    if (v.status == Status::correct) throw Breach("a correct verdict names a failed_shape");
    if (rules_.hidden.count(label)) hidden_label_ = label;
  }
  if (vj.contains("mismatch")) {
    const auto& m = vj["mismatch"];
    if (!m.is_object()) throw Breach("the verdict's mismatch is not an object");
    Mismatch mm;
    for (const auto& [k, x] : m.items()) {
      if (k == "arg" || k == "shape" || k == "trial" || k == "index") {
        if (!x.is_string()) throw Breach("mismatch." + k + " is not a string");
        const std::string s = x.get<std::string>();
        (k == "arg" ? mm.arg : k == "shape" ? mm.shape : k == "trial" ? mm.trial : mm.index) = s;
      } else if (k == "flat_index") {
        if (!x.is_number_integer()) throw Breach("mismatch.flat_index is not an integer");
        mm.flat_index = x.get<std::int64_t>();
      } else if (k == "expected" || k == "got") {
        const auto d = number_of(x, true);
        if (!d) throw Breach("mismatch." + k + " is not a number (or \"nan\", \"inf\", \"-inf\")");
        (k == "expected" ? mm.expected : mm.got) = *d;
      } else {
        throw Breach("mismatch has an unknown key \"" + cut(k, 60) + "\"");
      }
    }
    const bool numbered = rules_.outputs.empty() && mm.arg.rfind("output ", 0) == 0 && mm.arg.size() > 7 &&
                          mm.arg.find_first_not_of("0123456789", 7) == std::string::npos;
    if (!mm.arg.empty() && !rules_.outputs.count(mm.arg) && !numbered)
      throw Breach("mismatch.arg \"" + cut(mm.arg, 60) + "\" is not an output of the task");
    if (!mm.shape.empty() && !rules_.all.count(mm.shape))
      throw Breach("mismatch.shape \"" + cut(mm.shape, 80) + "\" is not a shape of the request");
    if (rules_.hidden.count(mm.shape)) hidden_label_ = mm.shape;
    v.mismatch = std::move(mm);
  }
  std::optional<double> claimed;
  if (vj.contains("speedup")) {
    claimed = number_of(vj["speedup"], false);
    if (!claimed || *claimed < 0) throw Breach("the verdict's speedup is not a finite number >= 0");
  }

  // Timings: kevo sums, takes the smallest repeat count and the geometric
  // mean of the per-shape ratios itself.
  const bool need_times = v.status == Status::correct && rules_.timing;
  if (j.contains("shape_timings")) {
    const auto& st_j = j["shape_timings"];
    if (!st_j.is_array()) throw Breach("shape_timings is not an array");
    if (!need_times && !st_j.empty()) throw Breach("shape_timings in an answer that is not a correct timed verdict");
  } else if (need_times) {
    throw Breach("a correct verdict of a timed request without shape_timings");
  }
  if (need_times) {
    std::map<std::string, nlohmann::json> seen;
    for (const auto& e : j["shape_timings"]) {
      if (!e.is_object()) throw Breach("a shape_timings entry is not an object");
      for (const auto& [k, x] : e.items())
        if (k != "shape" && k != "cand_median_ns" && k != "cand_iqr_ns" && k != "ref_median_ns" && k != "ref_iqr_ns" &&
            k != "repeats" && k != "unstable")
          throw Breach("a shape_timings entry has an unknown key \"" + cut(k, 60) + "\"");
      if (!e.contains("shape") || !e["shape"].is_string()) throw Breach("a shape_timings entry has no shape");
      const std::string s = e["shape"].get<std::string>();
      if (std::find(rules_.visible.begin(), rules_.visible.end(), s) == rules_.visible.end())
        throw Breach("shape_timings names \"" + cut(s, 80) + "\", which is not a visible shape of the request");
      if (seen.count(s)) throw Breach("shape_timings names \"" + cut(s, 80) + "\" twice");
      seen[s] = e;
    }
    if (seen.size() != rules_.visible.size())
      throw Breach("shape_timings has " + std::to_string(seen.size()) + " of the " + std::to_string(rules_.visible.size()) +
                   " visible shapes");
    double log_sum = 0.0;
    int min_rep = std::numeric_limits<int>::max();
    for (const auto& label : rules_.visible) {
      const auto& e = seen[label];
      auto num = [&](const char* k, bool positive) {
        if (!e.contains(k)) throw Breach("shape_timings for \"" + cut(label, 80) + "\" has no " + k);
        const auto d = number_of(e[k], false);
        if (!d || *d < 0 || (positive && *d <= 0))
          throw Breach(std::string(k) + " of \"" + cut(label, 80) + "\" is not a finite number " + (positive ? "> 0" : ">= 0"));
        return *d;
      };
      const double c = num("cand_median_ns", true), r = num("ref_median_ns", true);
      v.cand_median_ns += c;
      v.ref_median_ns += r;
      v.cand_iqr_ns += num("cand_iqr_ns", false);
      v.ref_iqr_ns += num("ref_iqr_ns", false);
      if (!e.contains("repeats") || !e["repeats"].is_number_integer() || e["repeats"].get<std::int64_t>() < 1)
        throw Breach("repeats of \"" + cut(label, 80) + "\" is not an integer >= 1");
      min_rep = std::min<int>(min_rep, static_cast<int>(std::min<std::int64_t>(e["repeats"].get<std::int64_t>(), 1 << 30)));
      if (e.contains("unstable") && !e["unstable"].is_boolean()) throw Breach("unstable of \"" + cut(label, 80) + "\" is not a boolean");
      log_sum += std::log(r / c);
      if (auto f = rules_.floor_ns.find(label); f != rules_.floor_ns.end() && c < rules_.floor_fraction * f->second) {
        v.status = Status::runtime_error;
        v.stage = Stage::timing;
        v.message = "the time of shape " + label + " (" + short_number(c) + " ns) is under the roofline floor (" +
                    short_number(rules_.floor_fraction) + " x " + short_number(f->second) +
                    " ns from the task's flops and bytes and backend.command.roofline): an error, not a speedup";
      }
    }
    v.repeats = min_rep;
    v.speedup = std::exp(log_sum / static_cast<double>(rules_.visible.size()));
    if (claimed && std::fabs(*claimed - v.speedup) > 1e-6 * std::max(v.speedup, 1e-300))
      throw Breach("the verdict's speedup " + short_number(*claimed, 8) + " does not follow from its times (" +
                   short_number(v.speedup, 8) + ", the geometric mean of reference / candidate medians)");
    shape_timings_ = j["shape_timings"];
  } else if (claimed && v.status == Status::correct && *claimed != 0) {
    throw Breach("a speedup without shape_timings");
  }
  verdict_ = std::move(v);
}

}  // namespace kevo::command
