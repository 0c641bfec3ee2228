#include "kevo/engine/config.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/text.hpp"
#include "kevo/engine/verdict_record.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kevo::engine {
namespace fs = std::filesystem;

void apply_override(nlohmann::json& doc, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set", assignment, "KEY=VALUE with a dotted key, e.g. budget.evaluations_per_task=50");
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    // A bare word is a string; it goes into config.json and the lineage.
    if (!is_clean_utf8(text, kStoredText))
      throw InputError("--set", assignment.substr(0, eq), "a value that is valid UTF-8 text without NUL");
    value = text;
  }
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const auto dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (parts.back().empty()) throw InputError("--set", key, "a dotted key without empty parts");
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  // Work on a copy so that a bad key leaves the document untouched.
  nlohmann::json copy = doc;
  nlohmann::json* node = &copy;
  for (const auto& part : parts) {
    if (node->is_array()) {
      std::size_t index = 0;
      try {
        std::size_t used = 0;
        index = std::stoul(part, &used);
        if (used != part.size()) throw std::invalid_argument(part);
      } catch (const std::exception&) {
        throw InputError("--set", key, fmt::format("an array index at '{}'", part));
      }
      if (index >= node->size())
        throw InputError("--set", key, fmt::format("an index below {} at '{}'", node->size(), part));
      node = &(*node)[index];
    } else {
      if (node->is_null()) *node = nlohmann::json::object();
      if (!node->is_object()) throw InputError("--set", key, fmt::format("an object at '{}'", part));
      node = &(*node)[part];
    }
  }
  *node = value;
  doc = std::move(copy);
}

InputError attribute_overrides(const InputError& e, const std::string& file,
                               const std::vector<std::string>& overrides) {
  if (e.file() != file || e.key().empty() || e.key().front() != '/') return e;
  std::vector<std::string> parents;
  // The last override of a key is the one in effect.
  for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
    const auto eq = it->find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string pointer = "/" + it->substr(0, eq);
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    if (e.key() == pointer || e.key().rfind(pointer + "/", 0) == 0)
      return InputError("--set " + *it, e.key(), e.expected());
    if (pointer.rfind(e.key() + "/", 0) == 0) parents.push_back(*it);
  }
  if (parents.empty()) return e;
  std::string with;
  for (auto it = parents.rbegin(); it != parents.rend(); ++it) with += (with.empty() ? "" : ", ") + ("--set " + *it);
  return InputError(e.file(), e.key(), e.expected() + " (with " + with + ")");
}

namespace {

// The "islands" section (read first by the multi-rank run, which binds its
// device from it before anything of the backend exists).
Config::Islands read_islands(StrictObject& root) {
  Config::Islands I;
  if (auto is = root.optional_object("islands")) {
    I.topology = is->choice("topology", {"ring", "bidirectional_ring", "torus", "random", "complete", "none"}, "ring");
    I.degree = static_cast<int>(is->integer("degree", I.degree, 1, 1 << 16));
    if (auto m = is->optional_object("migration")) {
      I.migration.interval = m->integer("interval", I.migration.interval, 1);
      I.migration.count = static_cast<int>(m->integer("count", I.migration.count, 0, 1 << 16));
      I.migration.selection = m->choice("selection", {"best", "tournament"}, "best");
      I.migration.replacement = m->choice("replacement", {"replace_worst", "keep"}, "replace_worst");
      I.migration.mode = m->choice("mode", {"p2p", "broadcast"}, "p2p");
      m->finish();
    }
    I.stats_seconds = is->number("stats_seconds", I.stats_seconds, 0.001, 3600);
    I.poll_seconds = is->number("poll_seconds", I.poll_seconds, 0.0, 10);
    I.heartbeat_seconds = is->number("heartbeat_seconds", I.heartbeat_seconds, 1.0, 86400);
    I.checkpoint_seconds = is->number("checkpoint_seconds", I.checkpoint_seconds, 0.1, 86400);
    I.device_binding = is->choice("device_binding", {"none", "cuda_visible_devices", "index"}, "none");
    I.devices = static_cast<int>(is->integer("devices", I.devices, 0, 1 << 16));
    is->finish();
    if (I.heartbeat_seconds <= 2 * I.stats_seconds)
      throw InputError(root.file(), "/islands/heartbeat_seconds", "more than twice /islands/stats_seconds");
  }
  return I;
}

}  // namespace

Config::Islands parse_islands(const nlohmann::json& doc, const std::string& file) {
  StrictObject root(doc, file, "");
  return read_islands(root);
}

Config parse_config(const nlohmann::json& doc, const std::string& file, const Plugins& plugins) {
  Config c;
  c.source_file = file;
  StrictObject root(doc, file, "");
  c.name = root.string("name", c.name);
  if (c.name.empty() || c.name.find_first_of("/\\ ") != std::string::npos)
    root.fail("name", "a run name without spaces or slashes");
  c.seed = static_cast<std::uint64_t>(root.integer("seed", 1, 0));
  c.out_dir = root.string("out_dir", c.out_dir);

  const fs::path base = file.empty() ? fs::current_path() : fs::absolute(fs::path(file)).parent_path();
  const auto tasks = root.strings("tasks");
  if (tasks.empty()) root.fail("tasks", "a non-empty list of task directories");
  for (const auto& t : tasks) {
    fs::path p(t);
    if (p.is_relative()) p = base / p;
    if (!fs::is_directory(p))
      throw InputError(file, "/tasks", fmt::format("an existing task directory, not '{}'", t));
    c.task_dirs.push_back(fs::weakly_canonical(p));
  }

  if (auto b = root.optional_object("budget")) {
    c.budget.evaluations_per_task = b->integer("evaluations_per_task", c.budget.evaluations_per_task, 1);
    c.budget.wall_seconds = b->number("wall_seconds", c.budget.wall_seconds, 0.0);
    c.budget.max_candidates_per_task = b->integer("max_candidates_per_task", c.budget.max_candidates_per_task, 0);
    c.budget.stagnation = b->integer("stagnation", c.budget.stagnation, 1);
    c.budget.stop_drain_seconds = b->number("stop_drain_seconds", c.budget.stop_drain_seconds, 0.0, 600.0);
    b->finish();
  }
  if (c.budget.max_candidates_per_task == 0) c.budget.max_candidates_per_task = 20 * c.budget.evaluations_per_task;
  if (c.budget.max_candidates_per_task < c.budget.evaluations_per_task)
    throw InputError(file, "/budget/max_candidates_per_task", "a value >= /budget/evaluations_per_task");

  if (auto i = root.optional_object("island")) {
    c.island.population = static_cast<int>(i->integer("population", c.island.population, 1, 1 << 20));
    c.island.elites = static_cast<int>(i->integer("elites", c.island.elites, 0, 1 << 20));
    const auto sel = i->choice("selection", {"tournament", "proportional"}, "tournament");
    c.island.selection = sel == "tournament" ? Selection::tournament : Selection::proportional;
    c.island.tournament_size = static_cast<int>(i->integer("tournament_size", c.island.tournament_size, 1, 1024));
    c.island.in_flight = static_cast<int>(i->integer("in_flight", c.island.in_flight, 0, 1 << 20));
    c.island.ramp = static_cast<int>(i->integer("ramp", c.island.ramp, 0, 1 << 20));
    const auto ord = i->choice("ordering", {"deterministic", "arrival"}, "deterministic");
    c.island.ordering = ord == "deterministic" ? Ordering::deterministic : Ordering::arrival;
    c.island.inspirations = static_cast<int>(i->integer("inspirations", c.island.inspirations, 0, 64));
    i->finish();
    if (c.island.elites > c.island.population)
      throw InputError(file, "/island/elites", fmt::format("at most /island/population ({})", c.island.population));
  }

  c.islands = read_islands(root);

  if (auto l = root.optional_object("lineage")) {
    c.lineage.flush_records = static_cast<int>(l->integer("flush_records", c.lineage.flush_records, 1, 1 << 24));
    c.lineage.flush_seconds = l->number("flush_seconds", c.lineage.flush_seconds, 0.01, 3600);
    l->finish();
  }

  if (auto p = root.optional_object("progress")) {
    const auto mode = p->choice("mode", {"auto", "bar", "lines", "off"}, "auto");
    c.progress.mode = mode == "auto" ? ProgressMode::auto_detect
                      : mode == "bar" ? ProgressMode::bar
                      : mode == "lines" ? ProgressMode::lines : ProgressMode::off;
    c.progress.interval_seconds = p->number("interval_seconds", c.progress.interval_seconds, 0.05, 3600);
    p->finish();
  }

  nlohmann::json backend_eff;
  std::string verdicts_mode = "auto", verdicts_dir;
  {
    StrictObject b = root.object("backend");
    c.backend_type = b.choice("type", plugins.backend_types);
    if (auto v = b.optional_object("verdicts")) {
      verdicts_mode = v->choice("mode", {"auto", "off", "record", "replay", "remeasure"}, "auto");
      verdicts_dir = v->string("dir", "");
      v->finish();
    }
    nlohmann::json empty = nlohmann::json::object();
    const nlohmann::json* inner = b.find(c.backend_type);
    StrictObject opts(inner ? *inner : empty, file, b.pointer(c.backend_type));
    BuiltBackend built = plugins.make_backend(c.backend_type, opts);
    c.backend = std::move(built.backend);
    c.baselines = std::move(built.baselines);
    // Option blocks of the other backend types may stay in the file so that
    // `--set backend.type=...` switches between them; they are not validated.
    for (const auto& t : plugins.backend_types) (void)b.find(t);
    b.finish();
    backend_eff = {{"type", c.backend_type}, {c.backend_type, built.effective}};
  }

  nlohmann::json sections_eff = nlohmann::json::object();
  for (const auto& name : plugins.sections) {
    std::optional<StrictObject> sec = root.optional_object(name);
    nlohmann::json eff = plugins.parse_section(name, sec ? &*sec : nullptr, base);
    if (!eff.is_null()) sections_eff[name] = std::move(eff);
  }

  nlohmann::json ops_eff = nlohmann::json::array();
  {
    const auto& ops = root.at("operators");
    if (!ops.is_array() || ops.empty()) root.fail("operators", "a non-empty list of operator objects");
    double total = 0.0;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      StrictObject o(ops[k], file, fmt::format("/operators/{}", k));
      BuiltOperator built = plugins.make_operator(o);
      if (built.enabled) total += built.weight;
      ops_eff.push_back(built.effective);
      c.operators.push_back(std::move(built));
    }
    if (total <= 0.0) root.fail("operators", "at least one enabled operator with a positive weight");
  }
  root.finish();
  if (plugins.shared_budgets) c.shared_budgets = plugins.shared_budgets();

  // The verdict record (docs/config.md#determinism): "auto" follows the
  // plugins' record (the LLM reply cache), so a recorded run keeps its
  // verdicts and its replay reproduces the selection on a real backend.
  const Plugins::RunRecord followed = plugins.run_record ? plugins.run_record() : Plugins::RunRecord{};
  c.verdicts_mode = verdicts_mode == "auto" ? followed.mode : verdicts_mode;
  c.verdicts_dir = !verdicts_dir.empty()      ? fs::path(verdicts_dir)
                   : !followed.dir.empty()    ? followed.dir
                                              : fs::path("verdict-cache");
  if ((c.verdicts_mode == "replay" || c.verdicts_mode == "remeasure") && !fs::is_directory(c.verdicts_dir))
    throw InputError(file, verdicts_dir.empty() ? "/backend/verdicts/mode" : "/backend/verdicts/dir",
                     fmt::format("an existing verdict record to {} ('{}' is not a folder; record one with mode "
                                 "\"record\", or llm.cache.mode \"record\")",
                                 c.verdicts_mode, c.verdicts_dir.string()));
  std::function<std::string()> verdict_note;
  if (c.verdicts_mode != "off") {
    const VerdictMode m = c.verdicts_mode == "record"   ? VerdictMode::record
                          : c.verdicts_mode == "replay" ? VerdictMode::replay
                                                        : VerdictMode::remeasure;
    auto rec = std::make_unique<VerdictRecord>(std::move(c.backend), m, c.verdicts_dir);
    const VerdictRecord* raw = rec.get();   // owned by c.backend, which outlives the notes' use
    verdict_note = [raw] { return raw->summary(); };
    c.backend = std::move(rec);
  }
  c.run_notes = [notes = plugins.run_notes, verdict_note] {
    std::vector<std::string> out = notes ? notes() : std::vector<std::string>{};
    if (verdict_note) out.push_back(verdict_note());
    return out;
  };
  backend_eff["verdicts"] = {{"mode", verdicts_mode}, {"dir", verdicts_dir}};

  c.effective = {
      {"name", c.name},
      {"seed", c.seed},
      {"tasks", nlohmann::json::array()},
      {"out_dir", c.out_dir},
      {"budget",
       {{"evaluations_per_task", c.budget.evaluations_per_task},
        {"wall_seconds", c.budget.wall_seconds},
        {"max_candidates_per_task", c.budget.max_candidates_per_task},
        {"stagnation", c.budget.stagnation},
        {"stop_drain_seconds", c.budget.stop_drain_seconds}}},
      {"island",
       {{"population", c.island.population},
        {"elites", c.island.elites},
        {"selection", c.island.selection == Selection::tournament ? "tournament" : "proportional"},
        {"tournament_size", c.island.tournament_size},
        {"in_flight", c.island.in_flight},
        {"ramp", c.island.ramp},
        {"ordering", c.island.ordering == Ordering::deterministic ? "deterministic" : "arrival"},
        {"inspirations", c.island.inspirations}}},
      {"islands",
       {{"topology", c.islands.topology},
        {"degree", c.islands.degree},
        {"migration",
         {{"interval", c.islands.migration.interval},
          {"count", c.islands.migration.count},
          {"selection", c.islands.migration.selection},
          {"replacement", c.islands.migration.replacement},
          {"mode", c.islands.migration.mode}}},
        {"stats_seconds", c.islands.stats_seconds},
        {"poll_seconds", c.islands.poll_seconds},
        {"heartbeat_seconds", c.islands.heartbeat_seconds},
        {"checkpoint_seconds", c.islands.checkpoint_seconds},
        {"device_binding", c.islands.device_binding},
        {"devices", c.islands.devices}}},
      {"lineage", {{"flush_records", c.lineage.flush_records}, {"flush_seconds", c.lineage.flush_seconds}}},
      {"progress",
       {{"mode", c.progress.mode == ProgressMode::auto_detect ? "auto"
                 : c.progress.mode == ProgressMode::bar       ? "bar"
                 : c.progress.mode == ProgressMode::lines     ? "lines"
                                                              : "off"},
        {"interval_seconds", c.progress.interval_seconds}}},
      {"backend", backend_eff},
      {"operators", ops_eff},
  };
  for (const auto& d : c.task_dirs) c.effective["tasks"].push_back(d.string());
  for (auto& [name, eff] : sections_eff.items()) c.effective[name] = eff;
  return c;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides, const Plugins& plugins) {
  nlohmann::json doc = read_json_file(path);
  for (const auto& o : overrides) apply_override(doc, o);
  try {
    return parse_config(doc, path, plugins);
  } catch (const InputError& e) {
    throw attribute_overrides(e, path, overrides);
  }
}

}  // namespace kevo::engine
