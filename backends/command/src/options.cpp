// The command backend's config block (docs/command-backend.md#config).
#include "kevo/command/command_backend.hpp"

#include "kevo/core/backend.hpp"
#include "kevo/core/error.hpp"
#include "kevo/core/process.hpp"
#include "kevo/sandbox/runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace kevo::command {

namespace fs = std::filesystem;

namespace {

// argv: a non-empty list of strings whose placeholders are the documented
// ones; argv[0] (after {config_dir}) must be a command this machine has.
std::vector<std::string> read_argv(StrictObject& o, const std::string& key, const fs::path& config_dir,
                                   const std::vector<std::string>& allowed) {
  std::vector<std::string> argv = o.strings(key);
  if (argv.empty()) o.fail(key, "a non-empty list of strings: the program and its arguments (no shell)");
  for (const auto& a : argv)
    for (std::size_t p = a.find('{'); p != std::string::npos; p = a.find('{', p + 1)) {
      const std::size_t q = a.find('}', p);
      const std::string name = q == std::string::npos ? a.substr(p) : a.substr(p, q - p + 1);
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string list;
        for (const auto& s : allowed) list += (list.empty() ? "" : ", ") + s;
        o.fail(key, "arguments whose placeholders are " + list + "; \"" + a + "\" has " + name);
      }
    }
  std::string prog = argv[0];
  for (std::size_t p = prog.find("{config_dir}"); p != std::string::npos; p = prog.find("{config_dir}"))
    prog.replace(p, 12, config_dir.string());
  if (prog.find('{') != std::string::npos) o.fail(key, "a program name without placeholders other than {config_dir}");
  const std::string found = sandbox::find_in_path(prog);
  if (found.empty() || ::access(found.c_str(), X_OK) != 0 || !fs::is_regular_file(found))
    o.fail(key, "a command this machine has: '" + prog +
                    (prog.find('/') == std::string::npos ? "' is not in PATH" : "' is not an executable file"));
  return argv;
}

bool is_env_name(const std::string& n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

fs::path readable_file(StrictObject& o, const std::string& key, const fs::path& config_dir) {
  const std::string rel = o.string(key);
  const fs::path p = fs::absolute(config_dir / rel).lexically_normal();
  std::error_code ec;
  if (!fs::is_regular_file(p, ec) || !std::ifstream(p)) o.fail(key, "a readable file relative to the config file (" + p.string() + ")");
  return p;
}

std::string default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "kevo").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "kevo").string();
  return "";
}

}  // namespace

CommandOptions parse_command_options(StrictObject& obj) {
  CommandOptions o;
  o.config_file = obj.file();
  o.pointer = obj.pointer();
  const fs::path parent = fs::path(obj.file()).parent_path();   // "" for a config named without a folder
  o.config_dir = (parent.empty() ? fs::current_path() : fs::absolute(parent)).lexically_normal();
  o.source_file = obj.string("source_file", o.source_file);
  if (o.source_file.empty() || o.source_file.find('/') != std::string::npos || o.source_file == "." ||
      o.source_file == "..")
    obj.fail("source_file", "a bare file name such as \"kernel.cl\", got \"" + o.source_file + "\"");

  if (auto c = obj.optional_object("compile")) {
    CompileStage cs;
    cs.argv = read_argv(*c, "argv", o.config_dir, {"{source}", "{out_dir}", "{task_dir}", "{scratch}", "{config_dir}"});
    if (c->has("version_argv")) cs.version_argv = read_argv(*c, "version_argv", o.config_dir, {"{config_dir}", "{scratch}"});
    else c->allow("version_argv");
    cs.wall_seconds = c->number("wall_seconds", cs.wall_seconds, 0.1, 86400);
    cs.jobs = static_cast<int>(c->integer("jobs", 0, 0, 1024));
    cs.cache = c->boolean("cache", true);
    c->finish();
    o.compile = std::move(cs);
  }
  {
    StrictObject r = obj.object("run");
    o.run.argv = read_argv(r, "argv", o.config_dir, {"{task_dir}", "{scratch}", "{config_dir}"});
    o.run.wall_seconds = r.number("wall_seconds", o.run.wall_seconds, 0.1, 86400);
    o.run.accelerator = r.boolean("accelerator", false);
    o.run.jobs = static_cast<int>(r.integer("jobs", 1, 1, 1024));
    if (o.run.accelerator && o.run.jobs != 1)
      r.fail("jobs", "1 when \"accelerator\" is true: the device is timed by one evaluator at a time");
    o.run.persistent = r.boolean("persistent", false);
    o.run.max_requests = static_cast<int>(r.integer("max_requests", 100, 1, 1000000));
    const std::string restart = r.string("restart_on", "hidden");
    if (restart != "hidden" && restart != "failure" && restart != "breach")
      r.fail("restart_on",
             "\"hidden\" (a persistent evaluator is restarted after every verdict but correct and after every "
             "candidate of a task with hidden shapes), \"failure\" (after every verdict but correct) or \"breach\" "
             "(only after a breach, a timeout, too much output or an evaluator failure), got \"" + restart + "\"");
    o.run.restart_on = restart == "breach"   ? RunStage::Restart::breach
                       : restart == "hidden" ? RunStage::Restart::hidden
                                             : RunStage::Restart::failure;
    o.run.lock_dir = r.string("lock_dir", "");
    if (!o.run.lock_dir.empty() && !fs::is_directory(o.run.lock_dir))
      r.fail("lock_dir", "an existing folder for the accelerator's lock files, got \"" + o.run.lock_dir + "\"");
    r.finish();
  }
  if (const nlohmann::json* env = obj.find("env")) {
    if (!env->is_object()) obj.fail("env", "an object of variable names to string values");
    for (const auto& [k, v] : env->items()) {
      if (!is_env_name(k)) obj.fail("env", "variable names of letters, digits and '_', got \"" + k + "\"");
      if (!v.is_string()) obj.fail("env", "string values (\"" + k + "\" is " + json_type_name(v) + ")");
      if (looks_secret(k))
        obj.fail("env", "no secrets: \"" + k + "\" looks like one, and keys never reach an evaluator");
      o.env[k] = v.get<std::string>();
    }
  }
  o.pass_env = obj.strings("pass_env", std::vector<std::string>{});
  for (const auto& n : o.pass_env) {
    if (!is_env_name(n)) obj.fail("pass_env", "variable names of letters, digits and '_', got \"" + n + "\"");
    if (looks_secret(n))
      obj.fail("pass_env", "names that do not look like secrets: \"" + n +
                               "\" contains KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL, and API keys never reach an evaluator");
  }
  if (auto l = obj.optional_object("limits")) {
    o.output_kb = l->integer("output_kb", o.output_kb, 1, std::int64_t{1} << 30);
    o.memory_mb = l->integer("memory_mb", 0, 0, std::int64_t{1} << 40);
    l->finish();
  }
  if (auto r = obj.optional_object("roofline")) {
    o.peak_gflops = r->number("peak_gflops", 0.0, 0, 1e12);
    o.peak_gbps = r->number("peak_gbps", 0.0, 0, 1e12);
    o.floor_fraction = r->number("floor_fraction", 0.9, 0, 1);
    r->finish();
  }
  if (auto p = obj.optional_object("prompts")) {
    o.system_prompt = readable_file(*p, "system", o.config_dir);
    o.knowledge = readable_file(*p, "knowledge", o.config_dir);
    p->finish();
  }
  o.trials = static_cast<int>(obj.integer("trials", 3, 1, 1000));
  o.kevo_judges = obj.choice("judge", {"evaluator", "kevo"}, "evaluator") == "kevo";
  if (auto t = obj.optional_object("timing")) {
    o.timing.warmup = static_cast<int>(t->integer("warmup", 1, 0, 1000));
    o.timing.min_repeats = static_cast<int>(t->integer("min_repeats", 5, 1, 100000));
    o.timing.max_repeats = static_cast<int>(t->integer("max_repeats", 100, 1, 1000000));
    if (o.timing.max_repeats < o.timing.min_repeats) t->fail("max_repeats", "at least min_repeats");
    o.timing.budget_seconds = t->number("budget_seconds", 0.25, 0, 3600);
    o.timing.max_iqr_fraction = t->number("max_iqr_fraction", 0.25, 0, 100);
    t->finish();
  }
  if (const nlohmann::json* c = obj.find("confine")) {
    if (c->is_boolean()) {
      o.confine.on = c->get<bool>();
    } else if (c->is_object()) {
      o.confine.on = true;
      StrictObject co = obj.object("confine");
      const auto paths = [&](const char* key) {
        std::vector<std::string> out;
        for (std::string a : co.strings(key, std::vector<std::string>{})) {
          for (std::size_t p = a.find("{config_dir}"); p != std::string::npos; p = a.find("{config_dir}"))
            a.replace(p, 12, o.config_dir.string());
          std::error_code ec;
          if (a.empty() || a[0] != '/' || !fs::exists(a, ec))
            co.fail(key, "existing absolute files or folders ({config_dir} allowed), got \"" + a + "\"");
          out.push_back(fs::path(a).lexically_normal().string());
        }
        return out;
      };
      o.confine.read = paths("read");
      o.confine.write = paths("write");
      co.finish();
    } else {
      obj.fail("confine", "true, false, or an object {\"read\": [paths], \"write\": [paths]} (true with more paths)");
    }
  }
  o.cache_dir = obj.string("cache_dir", default_cache_dir());   // "" turns the cache off
  o.scratch_dir = obj.string("scratch_dir", "");
  if (!o.scratch_dir.empty() && !fs::is_directory(o.scratch_dir))
    obj.fail("scratch_dir", "an existing folder, got \"" + o.scratch_dir + "\"");
  obj.finish();
  if (o.compile && o.compile->jobs <= 0) o.compile->jobs = usable_cores();
  return o;
}

const char* to_string(RunStage::Restart r) {
  switch (r) {
    case RunStage::Restart::failure: return "failure";
    case RunStage::Restart::hidden: return "hidden";
    case RunStage::Restart::breach: return "breach";
  }
  return "?";
}

nlohmann::json to_json(const CommandOptions& o) {
  nlohmann::json j;
  j["source_file"] = o.source_file;
  if (o.compile)
    j["compile"] = {{"argv", o.compile->argv},           {"version_argv", o.compile->version_argv},
                    {"wall_seconds", o.compile->wall_seconds}, {"jobs", o.compile->jobs},
                    {"cache", o.compile->cache}};
  j["run"] = {{"argv", o.run.argv},         {"wall_seconds", o.run.wall_seconds},
              {"jobs", o.run.jobs},         {"accelerator", o.run.accelerator},
              {"persistent", o.run.persistent}, {"max_requests", o.run.max_requests},
              {"restart_on", to_string(o.run.restart_on)},
              {"lock_dir", o.run.lock_dir}};
  j["env"] = o.env;
  j["pass_env"] = o.pass_env;
  j["limits"] = {{"output_kb", o.output_kb}, {"memory_mb", o.memory_mb}};
  j["roofline"] = {{"peak_gflops", o.peak_gflops}, {"peak_gbps", o.peak_gbps}, {"floor_fraction", o.floor_fraction}};
  if (!o.system_prompt.empty())
    j["prompts"] = {{"system", o.system_prompt.string()}, {"knowledge", o.knowledge.string()}};
  j["trials"] = o.trials;
  j["judge"] = o.kevo_judges ? "kevo" : "evaluator";
  j["timing"] = {{"warmup", o.timing.warmup},
                 {"min_repeats", o.timing.min_repeats},
                 {"max_repeats", o.timing.max_repeats},
                 {"budget_seconds", o.timing.budget_seconds},
                 {"max_iqr_fraction", o.timing.max_iqr_fraction}};
  j["confine"] = o.confine.on ? nlohmann::json{{"read", o.confine.read}, {"write", o.confine.write}} : nlohmann::json(false);
  j["cache_dir"] = o.cache_dir;
  j["scratch_dir"] = o.scratch_dir;
  j["config_dir"] = o.config_dir.string();
  return j;
}

}  // namespace kevo::command
