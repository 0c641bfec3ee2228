#include "kevo/engine/verdict_record.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/engine/run.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace kevo::engine {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::string to_string(VerdictMode m) {
  switch (m) {
    case VerdictMode::off: return "off";
    case VerdictMode::record: return "record";
    case VerdictMode::replay: return "replay";
    case VerdictMode::remeasure: return "remeasure";
  }
  return "off";
}

VerdictRecord::VerdictRecord(std::unique_ptr<Backend> inner, VerdictMode mode, fs::path dir)
    : Backend(inner->name()), inner_(std::move(inner)), mode_(mode), dir_(std::move(dir)) {}

std::string VerdictRecord::key(const EvalRequest& r) const {
  // What decides a verdict, nothing measured: a changed task, reference or
  // candidate is another key (so a stale record is never replayed for it).
  const json k = {{"backend", inner_->name()},
                  {"task", r.task->name},
                  {"manifest", sha256_hex(r.task->manifest.dump())},
                  {"reference", sha256_hex(r.task->reference_source)},
                  {"source", sha256_hex(r.source)},
                  {"seed", r.seed},
                  {"profile", !r.profile.empty()}};
  const std::string text = k.dump();
  return hex64(fnv1a64(text)) + hex64(fnv1a64(text, 0x84222325cbf29ce4ULL));
}

fs::path VerdictRecord::file(const std::string& key) const { return dir_ / key.substr(0, 2) / (key + ".json"); }

std::optional<Verdict> VerdictRecord::load(const std::string& key) const {
  const fs::path f = file(key);
  std::ifstream in(f, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  try {
    if (j.is_discarded() || !j.is_object()) throw std::runtime_error("not a JSON object");
    return verdict_from_json(j.at("verdict"));
  } catch (const std::exception& e) {
    throw Failure(fmt::format("verdict record entry is corrupt: {} ({})", f.string(), e.what()));
  }
}

void VerdictRecord::store(const std::string& key, std::uint64_t id, const Verdict& v) {
  fs::create_directories(file(key).parent_path());
  write_file(file(key), json{{"id", id}, {"verdict", to_json(v)}}.dump(-1, ' ', false, json::error_handler_t::replace));
  ++counts_.stored;
}

void VerdictRecord::do_submit(EvalRequest request) {
  const std::string k = key(request);
  if (mode_ == VerdictMode::replay) {
    if (auto v = load(k)) {
      // As recorded, timings included, so that selection takes the recorded
      // path; marked so that nobody mistakes it for a measurement.
      v->message = kReplayedVerdict + v->message;
      ready_.push_back(EvalResult{request.id, std::move(*v)});
      ++counts_.replayed;
      return;
    }
    ++counts_.unrecorded;
  }
  keys_[request.id] = k;
  inner_->submit(std::move(request));
}

std::vector<EvalResult> VerdictRecord::do_poll(std::chrono::milliseconds max_wait) {
  std::vector<EvalResult> out;
  out.swap(ready_);
  // Replayed verdicts are returned at once; the backend is only waited for
  // when there are none (then it waits as it would undecorated).
  if (!out.empty() && inner_->in_flight() == 0) return out;
  for (EvalResult& r : inner_->poll(out.empty() ? max_wait : std::chrono::milliseconds(0))) {
    auto it = keys_.find(r.id);
    if (it == keys_.end())
      throw Failure(fmt::format("verdict record: backend '{}' returned id {}, which was not submitted", name(), r.id));
    ++counts_.judged;
    if (mode_ == VerdictMode::remeasure) {
      if (auto old = load(it->second)) counts_.differing += old->status != r.verdict.status ? 1 : 0;
      else ++counts_.unrecorded;
    } else {
      store(it->second, r.id, r.verdict);   // record; replay: a candidate the record lacked
    }
    keys_.erase(it);
    out.push_back(std::move(r));
  }
  return out;
}

void VerdictRecord::do_cancel_all() {
  inner_->cancel_all();
  keys_.clear();
  ready_.clear();
}

std::string VerdictRecord::summary() const {
  switch (mode_) {
    case VerdictMode::off: return {};
    case VerdictMode::record:
      return fmt::format("verdict record: {} verdict(s) measured and stored in {}", counts_.stored, dir_.string());
    case VerdictMode::replay:
      return fmt::format("verdict record: {} verdict(s) replayed from {} (not measured in this run); {} judged, "
                         "not in the record",
                         counts_.replayed, dir_.string(), counts_.unrecorded);
    case VerdictMode::remeasure:
      return fmt::format("verdict record: {} verdict(s) measured afresh against {}; {} with another status than "
                         "recorded, {} not in the record",
                         counts_.judged, dir_.string(), counts_.differing, counts_.unrecorded);
  }
  return {};
}

}  // namespace kevo::engine
