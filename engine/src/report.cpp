#include "kevo/engine/report.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/json_text.hpp"
#include "kevo/lineage/reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <unordered_map>

namespace kevo::engine {

// ---- LLM requests ----------------------------------------------------------

namespace {

// What a tally reads of one request record: the members named in
// kTallied, each read as below whatever the record's other members are
// (a string "model", else "?"; numbers, else 0; booleans true only when
// the member is true; a string "failure", else "").
using RequestFacts = LlmRequestFacts;

constexpr std::string_view kTallied[] = {"model",  "retries",  "input_tokens", "output_tokens", "cost_usd",
                                         "cached", "rejected", "ok",           "failure",       "http_status"};

void set_fact(RequestFacts& f, std::string_view key, const nlohmann::json& v) {
  const auto number = [&] { return v.is_number() ? v.get<std::int64_t>() : std::int64_t{0}; };
  const bool yes = v.is_boolean() && v.get<bool>();
  if (key == "model") f.model = v.is_string() ? v.get<std::string>() : std::string("?");
  else if (key == "retries") f.retries = number();
  else if (key == "input_tokens") f.input_tokens = number();
  else if (key == "output_tokens") f.output_tokens = number();
  else if (key == "http_status") f.http_status = number();
  else if (key == "cost_usd") f.usd = v.is_number() ? v.get<double>() : 0.0;
  else if (key == "cached") f.cached = yes;
  else if (key == "rejected") f.rejected = yes;
  else if (key == "ok") f.ok = yes;
  else if (key == "failure") f.failure = v.is_string() ? v.get<std::string>() : std::string();
}

RequestFacts facts_of(const nlohmann::json& r) {
  RequestFacts f;
  for (const std::string_view key : kTallied)
    if (const auto it = r.find(key); it != r.end()) set_fact(f, key, *it);
  return f;
}

// From a canonical record's members (kevo/core/json_text.hpp): only the
// tallied members' texts are read, as scalars, not the prompt and reply
// that are most of a record's bytes.
RequestFacts facts_of(const std::vector<json_text::Member>& members) {
  RequestFacts f;
  for (const auto& [key, value] : members)
    if (std::find(std::begin(kTallied), std::end(kTallied), key) != std::end(kTallied))
      set_fact(f, key, json_text::value_of(value));
  return f;
}

void tally(LlmTally& t, const RequestFacts& f) {
  ++t.requests;
  t.retries += f.retries;
  t.input_tokens += f.input_tokens;
  t.output_tokens += f.output_tokens;
  t.usd += f.usd;
  if (f.cached) ++t.cached;
  if (f.rejected) ++t.rejected;
  if (f.ok) return;
  ++t.failures;
  // Records written before failures had kinds: the HTTP status says most.
  std::string kind = "other";
  if (!f.failure.empty()) kind = f.failure;
  else if (f.http_status > 0) kind = fmt::format("http {}", f.http_status);
  ++t.failures_by_kind[kind];
}

void add_facts(LlmSummary& s, const std::string& op, const RequestFacts& f) {
  tally(s.total, f);
  tally(s.by_model[f.model], f);
  tally(s.by_operator[op], f);
  tally(s.by_operator_model[op + "/" + f.model], f);
}

nlohmann::json tally_json(const LlmTally& t) {
  return {{"requests", t.requests},         {"failures", t.failures},
          {"failures_by_kind", t.failures_by_kind}, {"rejected", t.rejected},
          {"retries", t.retries},           {"cached", t.cached},
          {"input_tokens", t.input_tokens}, {"output_tokens", t.output_tokens},
          {"usd", t.usd}};
}

std::string kinds_text(const LlmTally& t) {
  std::string s;
  for (const auto& [k, n] : t.failures_by_kind) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k, n);
  return s;
}

}  // namespace

void LlmSummary::add(const std::string& op, const nlohmann::json& record) {
  if (!record.is_object()) return;
  add_facts(*this, op, facts_of(record));
}

void LlmSummary::add_record(const std::string& op, std::string_view record) {
  // What the operators write is canonical (kevo/core/json_text.hpp): the
  // members a tally reads are taken from the record's text, not from a DOM.
  std::vector<json_text::Member> members;
  if (!json_text::canonical_object(record, members)) return add(op, nlohmann::json::parse(record, nullptr, false));
  add_facts(*this, op, facts_of(members));
}

void LlmSummary::add_candidate(const std::string& op, const std::string& llm_text,
                               const std::vector<LlmRequestFacts>& facts) {
  if (facts.empty()) return add_candidate(op, llm_text);
  for (const auto& f : facts) add_facts(*this, op, f);
}

void LlmSummary::add_candidate(const std::string& op, const std::string& llm_text) {
  if (llm_text.empty()) return;
  std::vector<std::vector<json_text::Member>> records;
  if (json_text::canonical_objects(llm_text, records)) {
    for (const auto& members : records) add_facts(*this, op, facts_of(members));
    return;
  }
  std::vector<std::string_view> texts;
  if (json_text::canonical_array(llm_text, texts)) {
    for (const std::string_view r : texts) add_record(op, r);
    return;
  }
  const auto turns = nlohmann::json::parse(llm_text, nullptr, false);
  if (!turns.is_array()) return;
  for (const auto& t : turns) add(op, t);
}

nlohmann::json to_json(const LlmSummary& s) {
  nlohmann::json j = tally_json(s.total);
  j["by_model"] = nlohmann::json::object();
  for (const auto& [k, t] : s.by_model) j["by_model"][k] = tally_json(t);
  j["by_operator"] = nlohmann::json::object();
  for (const auto& [k, t] : s.by_operator) j["by_operator"][k] = tally_json(t);
  return j;
}

std::string format_llm(const LlmSummary& s) {
  const char* head = "{:<24} {:>8} {:>8} {:>8} {:>7} {:>10} {:>10} {:>10}  {}\n";
  std::string out = fmt::format(fmt::runtime(head), "llm", "requests", "failed", "rejected", "retries", "tokens in",
                                "tokens out", "USD", "failures by kind");
  auto line = [&](const std::string& label, const LlmTally& t) {
    out += fmt::format(fmt::runtime(head), label, t.requests, t.failures, t.rejected, t.retries, t.input_tokens,
                       t.output_tokens, fmt::format("{:.4f}", t.usd), kinds_text(t));
  };
  for (const auto& [k, t] : s.by_model) line("model " + k, t);
  for (const auto& [k, t] : s.by_operator) line("operator " + k, t);
  line("total", s.total);
  return out;
}

std::string llm_failure_line(const LlmSummary& s) {
  std::string out;
  for (const auto& [k, t] : s.by_operator_model)
    if (t.failures > 0) out += fmt::format("{}{} {} of {}", out.empty() ? "llm failed " : ", ", k, t.failures, t.requests);
  return out;
}

RunReport read_report(const std::filesystem::path& run_dir) {
  return read_report(run_dir, lineage::read_run_dir(run_dir));
}

RunReport read_report(const std::filesystem::path& run_dir, const std::vector<lineage::LineageReader>& readers) {
  RunReport r;
  r.run_dir = run_dir;
  // A merged file (kevo merge, rank attribute -1) stands for nranks rank files.
  r.ranks = 0;
  for (const auto& reader : readers) r.ranks += reader.run().rank < 0 ? reader.run().nranks : 1;
  std::map<std::string, TaskRow> by_task;
  std::map<std::string, EvolvedRow> evolved;
  std::vector<std::string> order;
  for (const auto& reader : readers) {
    r.seed = reader.run().seed;
    r.host = reader.run().host;
    const auto& names = reader.run().tasks;
    for (const auto& name : names)
      if (!by_task.count(name)) {
        by_task[name].task = name;
        order.push_back(name);
      }
    // Best rows per task: their params text is fetched in one visit below.
    std::map<std::string, const lineage::Row*> best;
    for (const auto& row : reader.rows()) {
      if (!row.written()) continue;
      // A migrant appears in its origin's file and in every receiver's; count
      // it once, where it was created.
      if (row.origin_rank != row.rank) continue;
      const std::string name = row.task < names.size() ? names[row.task] : fmt::format("task{}", row.task);
      TaskRow& t = by_task[name];
      if (t.task.empty()) {
        t.task = name;
        order.push_back(name);
      }
      ++r.records;
      ++t.candidates;
      ++t.status[static_cast<int>(row.status)];
      if (row.status != Status::duplicate && row.status != Status::invalid && row.status != Status::lost)
        ++t.evaluations;
      if (row.status == Status::correct && row.speedup > t.best_speedup) {
        t.best_speedup = row.speedup;
        t.best_id = static_cast<std::int64_t>(row.id);
        t.best_ms = row.cand_median_ns > 0 ? row.cand_median_ns / 1e6 : -1.0;
        t.ref_ms = row.ref_median_ns > 0 ? row.ref_median_ns / 1e6 : -1.0;
        best[name] = &row;
      }
    }
    for (const auto& [name, row] : best) by_task[name].best_params = reader.text(row->params);
    // Beyond the seed, and where wrong answers were caught.
    for (const auto& row : reader.rows()) {
      if (!row.written() || row.origin_rank != row.rank) continue;
      const std::string name = row.task < names.size() ? names[row.task] : fmt::format("task{}", row.task);
      EvolvedRow& e = evolved[name];
      e.task = name;
      if (row.status == Status::correct && row.op_name() != "seed" && row.speedup > e.speedup) {
        e.speedup = row.speedup;
        e.best_id = static_cast<std::int64_t>(row.id);
        e.best_ms = row.cand_median_ns > 0 ? row.cand_median_ns / 1e6 : -1.0;
      }
      if (row.status != Status::wrong_answer) continue;
      const auto m = row.mismatch == lineage::kNoText ? nlohmann::json()
                                                      : nlohmann::json::parse(reader.text(row.mismatch), nullptr, false);
      const std::string shape = m.is_object() && m.contains("shape") && m["shape"].is_string() ? m["shape"].get<std::string>() : "";
      if (shape.empty()) ++e.wrong_other;
      else if (shape.rfind("hidden", 0) == 0) ++e.wrong_hidden;
      else if (shape.rfind("drawn", 0) == 0) ++e.wrong_drawn;
      else ++e.wrong_visible;
    }
    // LLM requests: one `llm` event each, written with its candidate (a
    // migrant's copy brings none), named by the candidate's operator.
    std::unordered_map<std::uint64_t, std::string> op_of;
    for (const auto& row : reader.rows())
      if (row.written() && row.origin_rank == row.rank) op_of[row.id] = std::string(row.op_name());
    for (const auto& e : reader.events()) {
      if (e.kind != lineage::EventKind::llm) continue;
      const auto op = e.id >= 0 ? op_of.find(static_cast<std::uint64_t>(e.id)) : op_of.end();
      r.llm.add_record(op == op_of.end() ? std::string("?") : op->second, e.text);
    }
  }
  for (const auto& name : order) {
    r.rows.push_back(by_task[name]);
    EvolvedRow e = evolved[name];
    e.task = name;
    r.evolved.push_back(e);
  }
  r.baselines = read_baselines(run_dir);
  return r;
}

FastP fast_p(const std::vector<double>& speedups) {
  FastP f;
  f.tasks = static_cast<std::int64_t>(speedups.size());
  double log_sum = 0.0;
  for (double s : speedups)
    if (s > 0) {
      ++f.correct;
      log_sum += std::log(s);
    }
  for (double p : kFastP) {
    std::int64_t n = 0;
    for (double s : speedups) n += s > 0 && s > p;
    f.share.push_back(f.tasks ? static_cast<double>(n) / static_cast<double>(f.tasks) : 0.0);
  }
  f.geomean = f.correct ? std::exp(log_sum / static_cast<double>(f.correct)) : 0.0;
  return f;
}

namespace {

// The evolved speedups against the reference, and against the faster of
// torch eager and torch.compile (empty when the run has neither).
std::pair<std::vector<double>, std::vector<double>> evolved_speedups(const RunReport& r) {
  std::vector<double> vs_ref, vs_torch;
  bool any_torch = false;
  for (const auto& e : r.evolved) {
    vs_ref.push_back(e.speedup);
    const auto [lib_ms, lib] = fastest_baseline(r.baselines, e.task);
    const bool torch_lib = lib == "torch eager" || lib == "torch.compile";
    any_torch = any_torch || torch_lib;
    vs_torch.push_back(torch_lib && e.best_ms > 0 && e.speedup > 0 ? lib_ms / e.best_ms : 0.0);
  }
  if (!any_torch) vs_torch.clear();
  return {vs_ref, vs_torch};
}

}  // namespace

std::string format_fast_p(const RunReport& r) {
  if (r.evolved.empty()) return "";
  const auto [vs_ref, vs_torch] = evolved_speedups(r);
  std::string out = "fast_p over " + std::to_string(vs_ref.size()) +
                    " task(s) (the share with a correct candidate beyond the seed whose speedup is over p):\n";
  std::string head = fmt::format("{:<22}", "");
  for (double p : kFastP) head += fmt::format(" {:>7}", fmt::format("p={:g}", p));
  out += head + fmt::format(" {:>9}\n", "geomean");
  auto line = [&](const char* label, const std::vector<double>& s) {
    const FastP f = fast_p(s);
    std::string l = fmt::format("{:<22}", label);
    for (double v : f.share) l += fmt::format(" {:>7.2f}", v);
    return l + (f.correct ? fmt::format(" {:>8.2f}x\n", f.geomean) : fmt::format(" {:>9}\n", "-"));
  };
  out += line("vs the reference", vs_ref);
  if (!vs_torch.empty()) out += line("vs best PyTorch", vs_torch);
  std::int64_t v = 0, h = 0, d = 0, o = 0;
  for (const auto& e : r.evolved) {
    v += e.wrong_visible;
    h += e.wrong_hidden;
    d += e.wrong_drawn;
    o += e.wrong_other;
  }
  out += fmt::format("wrong answers caught at visible shapes {}, hidden shapes {}, drawn shapes {}, other checks {}\n",
                     v, h, d, o);
  return out;
}

nlohmann::json fast_p_json(const RunReport& r) {
  const auto [vs_ref, vs_torch] = evolved_speedups(r);
  auto one = [](const std::vector<double>& s) {
    const FastP f = fast_p(s);
    nlohmann::json shares = nlohmann::json::object();
    for (std::size_t i = 0; i < f.share.size(); ++i) shares[fmt::format("{:g}", kFastP[i])] = f.share[i];
    return nlohmann::json{{"fast_p", shares}, {"geomean", f.geomean}, {"tasks", f.tasks}, {"correct", f.correct}};
  };
  nlohmann::json tasks = nlohmann::json::array();
  for (const auto& e : r.evolved)
    tasks.push_back({{"task", e.task}, {"best_id", e.best_id}, {"speedup", e.speedup}, {"best_ms", e.best_ms},
                     {"wrong_visible", e.wrong_visible}, {"wrong_hidden", e.wrong_hidden},
                     {"wrong_drawn", e.wrong_drawn}, {"wrong_other", e.wrong_other}});
  nlohmann::json j = {{"vs_reference", one(vs_ref)}, {"tasks", tasks}};
  if (!vs_torch.empty()) j["vs_best_pytorch"] = one(vs_torch);
  return j;
}

nlohmann::json to_json(const RunReport& r) {
  nlohmann::json j = {{"run_dir", r.run_dir.string()}, {"ranks", r.ranks},   {"records", r.records},
                      {"seed", r.seed},                {"host", r.host},     {"tasks", rows_to_json(r.rows)}};
  if (!r.baselines.is_null()) j["baselines"] = r.baselines;
  if (!r.llm.empty()) j["llm"] = to_json(r.llm);
  if (!r.evolved.empty()) j["evolved"] = fast_p_json(r);
  return j;
}

nlohmann::json read_baselines(const std::filesystem::path& run_dir) {
  const auto file = run_dir / "baselines.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return nullptr;
  std::ifstream in(file, std::ios::binary);
  auto doc = nlohmann::json::parse(in, nullptr, false);
  if (!doc.is_object())
    return {{"format", "kevo-baselines/1"}, {"measured", false}, {"note", file.string() + " is not a JSON object"},
            {"tasks", nlohmann::json::object()}};
  return doc;
}

namespace {

// The task's entry of baselines.json, or null.
const nlohmann::json* baseline_entry(const nlohmann::json& baselines, const std::string& task) {
  if (!baselines.is_object()) return nullptr;
  const auto tasks = baselines.find("tasks");
  if (tasks == baselines.end() || !tasks->is_object()) return nullptr;
  const auto it = tasks->find(task);
  return it == tasks->end() || !it->is_object() ? nullptr : &*it;
}

// One measured baseline ("eager", "compile") of a task entry, or null.
const nlohmann::json* measured(const nlohmann::json* entry, const char* key) {
  if (!entry) return nullptr;
  const auto it = entry->find(key);
  if (it == entry->end() || !it->is_object() || it->contains("error")) return nullptr;
  const auto ms = it->find("median_ms");
  return ms != it->end() && ms->is_number() && ms->get<double>() > 0 ? &*it : nullptr;
}

bool passed(const nlohmann::json& b) {
  const auto c = b.find("check");
  return c == b.end() || (c->is_string() && c->get<std::string>() == "ok");
}

std::string str(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

constexpr std::pair<const char*, const char*> kKinds[] = {{"eager", "torch eager"}, {"compile", "torch.compile"}};

// The task's source baselines (tasks[name]["sources"]: name -> record), or null.
const nlohmann::json* sources_of(const nlohmann::json* entry) {
  if (!entry) return nullptr;
  const auto it = entry->find("sources");
  return it == entry->end() || !it->is_object() ? nullptr : &*it;
}

// Source baseline names over the rows' tasks, for the table's columns.
std::vector<std::string> source_names(const std::vector<TaskRow>& rows, const nlohmann::json& baselines) {
  std::vector<std::string> names;
  for (const auto& r : rows)
    if (const nlohmann::json* s = sources_of(baseline_entry(baselines, r.task)))
      for (const auto& [name, b] : s->items())
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  return names;
}

}  // namespace

std::pair<double, std::string> fastest_baseline(const nlohmann::json& baselines, const std::string& task) {
  std::pair<double, std::string> best{-1.0, ""};
  const nlohmann::json* e = baseline_entry(baselines, task);
  for (const auto& [key, label] : kKinds) {
    const nlohmann::json* b = measured(e, key);
    if (!b || !passed(*b)) continue;   // a wrong baseline is no yardstick
    const double ms = b->at("median_ms").get<double>();
    if (best.first < 0 || ms < best.first) best = {ms, label};
  }
  // Source baselines are judged like candidates: a failed one has an error.
  if (const nlohmann::json* s = sources_of(e))
    for (const auto& [name, b] : s->items()) {
      const nlohmann::json* m = measured(s, name.c_str());
      if (!m) continue;
      const double ms = m->at("median_ms").get<double>();
      if (best.first < 0 || ms < best.first) best = {ms, name};
    }
  return best;
}

std::string format_baselines(const std::vector<TaskRow>& rows, const nlohmann::json& baselines) {
  auto ms = [](double v) { return v > 0 ? fmt::format("{:.4f}", v) : std::string("-"); };
  // One column per source baseline name (cublas, cub...), after torch's.
  const std::vector<std::string> src_names = source_names(rows, baselines);
  std::string src_head;
  for (const auto& n : src_names) src_head += fmt::format(" {:>{}}", n + " ms", std::max<std::size_t>(10, n.size() + 3));
  std::string out = fmt::format("{:<14} {:>10} {:>10} {:>10} {:>11}{} {:>8} {:>8}  {}\n", "task", "best ms", "ref ms",
                                "torch ms", "compile ms", src_head, "vs ref", "vs lib", "fastest library");
  std::vector<std::string> notes;
  bool flagged = false;
  for (const auto& r : rows) {
    const nlohmann::json* e = baseline_entry(baselines, r.task);
    std::vector<std::string> cell;   // torch eager, torch.compile
    for (int k = 0; k < 2; ++k) {
      const nlohmann::json* b = measured(e, kKinds[k].first);
      cell.push_back(b ? ms(b->at("median_ms").get<double>()) : std::string("-"));
      if (!b) continue;
      if (!passed(*b)) {
        cell[k] += "*";   // measured, but its output is outside the task's tolerance
        flagged = true;
        notes.push_back(fmt::format("{}: {} output {}", r.task, kKinds[k].second, str(*b, "check")));
      }
    }
    const nlohmann::json* srcs = sources_of(e);
    std::string src_cells;
    for (const auto& n : src_names) {
      const nlohmann::json* b = measured(srcs, n.c_str());
      src_cells += fmt::format(" {:>{}}", b ? ms(b->at("median_ms").get<double>()) : std::string("-"),
                               std::max<std::size_t>(10, n.size() + 3));
    }
    if (srcs)
      for (const auto& [n, b] : srcs->items())
        if (b.is_object() && b.contains("error")) notes.push_back(fmt::format("{}: {} failed: {}", r.task, n, str(b, "error")));
    const auto [lib_ms, lib] = fastest_baseline(baselines, r.task);
    const bool best = r.best_id >= 0;
    out += fmt::format("{:<14} {:>10} {:>10} {:>10} {:>11}{} {:>8} {:>8}  {}\n", r.task, best ? ms(r.best_ms) : "-",
                       best ? ms(r.ref_ms) : "-", cell[0], cell[1], src_cells,
                       best ? fmt::format("{:.2f}x", r.best_speedup) : std::string("-"),
                       best && lib_ms > 0 && r.best_ms > 0 ? fmt::format("{:.2f}x", lib_ms / r.best_ms) : std::string("-"),
                       lib_ms > 0 ? lib : std::string("-"));
    if (e) {
      if (const std::string err = str(*e, "error"); !err.empty()) notes.push_back(fmt::format("{}: failed: {}", r.task, err));
      for (const auto& [key, label] : kKinds) {
        const auto it = e->find(key);
        if (it != e->end() && it->is_object() && it->contains("error"))
          notes.push_back(fmt::format("{}: {} failed: {}", r.task, label, str(*it, "error")));
      }
      if (const nlohmann::json* c = measured(e, "compile"); c && c->contains("compile_seconds"))
        notes.push_back(fmt::format("{}: torch.compile took {:.1f} s to compile (not in its time)", r.task,
                                    c->at("compile_seconds").get<double>()));
    }
  }
  if (flagged) out += "* output outside the task's tolerance against its reference: not used for 'vs lib'\n";
  if (baselines.is_object()) {
    if (const std::string note = str(baselines, "note"); !note.empty()) out += "library baselines: " + note + "\n";
    else if (const std::string torch = str(baselines, "torch"); !torch.empty())
      out += fmt::format("library baselines: torch {} on {}, measured when the run started\n", torch,
                         str(baselines, "device_name"));
  }
  for (const auto& n : notes) out += "  " + n + "\n";
  return out;
}

std::vector<std::string> baseline_notes(const nlohmann::json& baselines) {
  std::vector<std::string> lines;
  if (!baselines.is_object()) return lines;
  if (const std::string note = str(baselines, "note"); !note.empty()) lines.push_back("library baselines: " + note);
  const auto tasks = baselines.find("tasks");
  if (tasks == baselines.end() || !tasks->is_object()) return lines;
  for (const auto& [task, e] : tasks->items()) {
    std::string line = "library baseline " + task + ":";
    if (const std::string err = str(e, "error"); !err.empty()) line += " failed: " + err;
    for (const auto& [key, label] : kKinds)
      if (const nlohmann::json* b = measured(&e, key))
        line += fmt::format(" {} {:.4f} ms (IQR {:.4f}, check {})", label, b->at("median_ms").get<double>(),
                            b->value("iqr_ms", 0.0), str(*b, "check").empty() ? "ok" : str(*b, "check"));
    if (const nlohmann::json* s = sources_of(&e))
      for (const auto& [name, b] : s->items()) {
        if (const nlohmann::json* m = measured(s, name.c_str()))
          line += fmt::format(" {} {:.4f} ms (IQR {:.4f}, judged correct)", name, m->at("median_ms").get<double>(),
                              m->value("iqr_ms", 0.0));
        else if (b.is_object())
          line += fmt::format(" {} failed: {}", name, str(b, "error"));
      }
    lines.push_back(line);
  }
  return lines;
}

std::vector<AncestryStep> ancestry(const std::filesystem::path& run_dir, std::uint64_t id) {
  auto readers = lineage::read_run_dir(run_dir);
  struct Found {
    const lineage::LineageReader* reader;
    const lineage::Row* row;
  };
  std::unordered_map<std::uint64_t, Found> index;
  for (const auto& reader : readers)
    for (const auto& row : reader.rows())
      if (row.written() && (!index.count(row.id) || row.origin_rank == row.rank)) index[row.id] = {&reader, &row};
  if (!index.count(id))
    throw InputError(run_dir.string(), fmt::format("candidate {}", id), "the id of a candidate in this run");
  std::vector<AncestryStep> chain;
  std::int64_t cur = static_cast<std::int64_t>(id);
  while (cur >= 0 && index.count(static_cast<std::uint64_t>(cur)) && chain.size() < 100000) {
    const auto& f = index.at(static_cast<std::uint64_t>(cur));
    AncestryStep s;
    s.id = f.row->id;
    const auto& names = f.reader->run().tasks;
    s.task = f.row->task < names.size() ? names[f.row->task] : "";
    s.op = std::string(f.row->op_name());
    s.status = std::string(to_string(f.row->status));
    s.params = f.reader->text(f.row->params);
    s.speedup = f.row->speedup;
    s.parent0 = f.row->parent0;
    s.parent1 = f.row->parent1;
    s.rank = f.row->rank;
    chain.push_back(s);
    cur = f.row->parent0;
  }
  return chain;
}

}  // namespace kevo::engine
