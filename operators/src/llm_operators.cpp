#include "kevo/operators/llm_operators.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/json_text.hpp"
#include "kevo/core/rng.hpp"
#include "kevo/core/search_space.hpp"
#include "kevo/core/text.hpp"
#include "kevo/operators/llm_prompt_facts.hpp"
#include "kevo/operators/llm_reply.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace kevo::operators::llm {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string read_text(const fs::path& p, const std::string& what) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(p.string(), "", fmt::format("a readable {} file", what));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `x` with `digits` decimals, as fmt's {:.Nf} writes it (std::to_chars:
// three of these per candidate in every prompt cost a tenth of the prompt's
// making through fmt).
void append_fixed(std::string& s, double x, int digits) {
  char buf[400];   // the widest double in fixed notation, with decimals
  const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, digits);
  s.append(buf, r.ec == std::errc() ? r.ptr : buf);
}

// Appends the verdict line of a parent or an inspiration to `s`.
void append_verdict_text(std::string& s, const Candidate& c) {
  const auto& v = c.verdict;
  s += "status ";
  s += to_string(v.status);
  if (v.is_correct()) {
    s.reserve(s.size() + 128 + c.params_json.size());
    s += ", speedup ";
    append_fixed(s, v.speedup, 3);
    s += "x over the reference (median ";
    append_fixed(s, v.cand_median_ns / 1e3, 1);
    s += " us, reference ";
    append_fixed(s, v.ref_median_ns / 1e3, 1);
    s += " us, IQR ";
    append_fixed(s, v.cand_iqr_ns / 1e3, 1);
    s += " us)";
  }
  if (!c.params_json.empty()) {
    s += "; parameters ";
    s += c.params_json;
  }
}

// The feedback without the profile the backend quoted in it
// ("...\nProfile:\n" + profile), so that prompts place the profile themselves.
std::string without_profile(std::string feedback, const std::string& profile) {
  const auto at = profile.empty() ? std::string::npos : feedback.find(profile);
  if (at == std::string::npos) return feedback;
  std::size_t from = at;
  const std::string heading = "Profile:\n";
  if (from >= heading.size() && feedback.compare(from - heading.size(), heading.size(), heading) == 0)
    from -= heading.size();
  while (from > 0 && feedback[from - 1] == '\n') --from;
  feedback.erase(from, at + profile.size() - from);
  return feedback;
}

std::string space_text(const SearchSpace& space) {
  std::string s;
  for (const auto& p : space.params()) {
    s += "- " + p.name + ": [";
    for (std::size_t k = 0; k < p.values.size(); ++k) s += (k ? ", " : "") + p.values[k].to_string();
    s += "]\n";
  }
  for (const auto& r : space.restrictions()) s += "- restriction: " + r.text() + "\n";
  return s;
}

}  // namespace

// ---- knowledge -------------------------------------------------------------

std::vector<std::string> tokenize(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '_') {
      cur += static_cast<char>(std::tolower(c));
    } else if (!cur.empty()) {
      if (cur.size() > 1) out.push_back(cur);
      cur.clear();
    }
  }
  if (cur.size() > 1) out.push_back(cur);
  return out;
}

void Knowledge::add(Snippet s) {
  std::map<std::string, int> tf;
  const auto toks = tokenize(s.title + " " + s.text);
  for (const auto& t : toks) ++tf[t];
  tf_.push_back(std::move(tf));
  len_.push_back(toks.size());
  snippets_.push_back(std::move(s));
}

void Knowledge::add_file(const fs::path& file) {
  const std::string text = read_text(file, "knowledge");
  Snippet cur;
  bool open = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      if (open) add(std::move(cur));
      cur = {line.substr(3), {}};
      open = true;
    } else if (open) {
      cur.text += line + "\n";
    }
  }
  if (open) add(std::move(cur));
}

std::vector<const Knowledge::Snippet*> Knowledge::retrieve(const std::string& query, std::size_t max_tokens,
                                                          const std::string& skip_title) const {
  if (snippets_.empty()) return {};
  // BM25 with the usual k1 = 1.2, b = 0.75.
  const double n = static_cast<double>(snippets_.size());
  double avg = 0.0;
  for (auto l : len_) avg += static_cast<double>(l);
  avg = std::max(1.0, avg / n);
  std::set<std::string> terms;
  for (auto& t : tokenize(query)) terms.insert(t);
  std::vector<std::pair<double, std::size_t>> scored;
  for (std::size_t d = 0; d < snippets_.size(); ++d) {
    if (!skip_title.empty() && snippets_[d].title.rfind(skip_title, 0) == 0) continue;
    double score = 0.0;
    for (const auto& t : terms) {
      auto it = tf_[d].find(t);
      if (it == tf_[d].end()) continue;
      double df = 0;
      for (const auto& m : tf_) df += m.count(t) ? 1 : 0;
      const double idf = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
      const double f = it->second;
      score += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * static_cast<double>(len_[d]) / avg));
    }
    if (score > 0.0) scored.emplace_back(score, d);
  }
  std::stable_sort(scored.begin(), scored.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<const Snippet*> out;
  std::size_t used = 0;
  for (const auto& [s, d] : scored) {
    const std::size_t cost = (snippets_[d].title.size() + snippets_[d].text.size()) / 4 + 1;
    if (used + cost > max_tokens) continue;
    used += cost;
    out.push_back(&snippets_[d]);
  }
  return out;
}

// ---- templates -------------------------------------------------------------

namespace {

// In the order of Slot.
constexpr std::array<std::string_view, kSlotCount> kSlotNames = {
    "task_name", "task_description", "signature", "visible_shapes", "parent_source", "parent_verdict",
    "parent2_source", "parent2_verdict", "feedback", "inspirations", "hardware", "knowledge",
    "recommendations", "search_space", "backend", "profile", "roofline", "libraries", "reference_source", "sizes"};
static_assert(static_cast<std::size_t>(Slot::sizes) + 1 == kSlotCount);

}  // namespace

const std::vector<std::string>& template_slots() {
  static const std::vector<std::string> slots(kSlotNames.begin(), kSlotNames.end());
  return slots;
}

Slots::Slots(std::initializer_list<std::pair<std::string_view, std::string>> values) {
  for (const auto& [name, value] : values) (*this)[name] = value;
}

std::size_t Slots::index(std::string_view name) {
  for (std::size_t k = 0; k < kSlotNames.size(); ++k)
    if (kSlotNames[k] == name) return k;
  throw std::invalid_argument("no prompt slot named " + std::string(name));
}

Template Template::from_text(std::string text, std::string origin) {
  const auto& known = template_slots();
  for (std::size_t pos = text.find("{{"); pos != std::string::npos; pos = text.find("{{", pos + 2)) {
    const auto end = text.find("}}", pos);
    if (end == std::string::npos) throw InputError(origin, "", "every {{ closed by }}");
    const std::string name = text.substr(pos + 2, end - pos - 2);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw InputError(origin, "{{" + name + "}}", "a known slot (" + list + ")");
    }
  }
  Template t;
  for (std::size_t pos = text.find("{{"); pos != std::string::npos; pos = text.find("{{", pos + 2)) {
    const auto end = text.find("}}", pos);
    Part part{pos, end + 2, Slots::index(std::string_view(text).substr(pos + 2, end - pos - 2))};
    // Fenced: the line before the slot opens with a run of backticks and
    // the slot is followed by a run of the same length.
    if (pos > 0 && text[pos - 1] == '\n') {
      const std::size_t line = pos >= 2 ? text.rfind('\n', pos - 2) : std::string::npos;
      const std::size_t open = line == std::string::npos ? 0 : line + 1;
      const std::size_t stop = text.find_first_not_of('`', open);
      const std::size_t run = stop == std::string::npos ? 0 : stop - open;
      const std::size_t after = part.end;
      const bool own_line = t.parts_.empty() || t.parts_.back().end <= open;   // no slot on the fence's line
      if (own_line && run >= 3 && text.compare(after, run, std::string(run, '`')) == 0 &&
          (after + run == text.size() || text[after + run] != '`')) {
        part.open = open;
        part.fence = run;
      }
    }
    t.parts_.push_back(part);
    pos = end;
  }
  t.text_ = std::move(text);
  t.origin_ = std::move(origin);
  return t;
}

Template Template::load(const fs::path& file) { return from_text(read_text(file, "prompt template"), file.string()); }

namespace {

// The longest run of backticks in `s`.
std::size_t longest_backtick_run(std::string_view s) {
  std::size_t best = 0, run = 0;
  for (const char c : s) {
    run = c == '`' ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

}  // namespace

std::string Template::render(const Slots& slots) const {
  // The text between slots and the slots' places, found once (from_text).
  std::size_t size = text_.size();
  for (const Part& p : parts_) size += slots[static_cast<Slot>(p.slot)].size();
  std::string out;
  out.reserve(size);
  std::size_t at = 0;
  for (const Part& p : parts_) {
    const std::string& value = slots[static_cast<Slot>(p.slot)];
    const std::size_t need = p.fence ? longest_backtick_run(value) + 1 : 0;
    if (need > p.fence) {
      // A longer fence on both sides: the template's own runs replaced.
      out.append(text_, at, p.open - at);
      out.append(need, '`');
      out.append(text_, p.open + p.fence, p.at - p.open - p.fence);
      out += value;
      out.append(need, '`');
      at = p.end + p.fence;
      continue;
    }
    out.append(text_, at, p.at - at);
    out += value;
    at = p.end;
  }
  out.append(text_, at, std::string::npos);
  return out;
}

// ---- config ----------------------------------------------------------------

ServiceConfig parse_service_config(StrictObject& o, const fs::path& base) {
  ServiceConfig c;
  c.local_server = parse_local_server(o, base);
  const auto& models = o.at("models");
  if (!models.is_array() || models.empty()) o.fail("models", "a non-empty list of model objects");
  json models_eff = json::array();
  std::set<std::string> names;
  for (std::size_t k = 0; k < models.size(); ++k) {
    StrictObject m(models[k], o.file(), fmt::format("{}/models/{}", o.pointer(), k));
    Model x;
    x.provider_label = m.choice("provider", {"openai", "anthropic", "openai-compatible"});
    x.provider = x.provider_label == "anthropic" ? Provider::anthropic : Provider::openai;
    x.base_url = m.string("base_url");
    while (!x.base_url.empty() && x.base_url.back() == '/') x.base_url.pop_back();
    if (x.base_url == "local" && !c.local_server)
      m.fail("base_url", "a URL (\"local\" names the server of llm.local_server, which this config has not)");
    if (x.base_url != "local" && x.base_url.rfind("http://", 0) != 0 && x.base_url.rfind("https://", 0) != 0)
      m.fail("base_url", "an http:// or https:// URL, or \"local\" (llm.local_server)");
    x.unix_socket = m.string("unix_socket", "");
    if (!x.unix_socket.empty()) {
      // sockaddr_un's sun_path holds 108 bytes with its terminating NUL.
      if (x.unix_socket.front() != '/' || x.unix_socket.size() > 107)
        m.fail("unix_socket", "an absolute path of at most 107 bytes (the server's Unix-domain socket), or \"\" for TCP");
      if (x.base_url == "local")
        m.fail("unix_socket", "\"\" for base_url \"local\" (llm.local_server's server listens on TCP)");
    }
    x.model = m.string("model");
    x.name = m.string("name", x.model);
    if (!names.insert(x.name).second) m.fail("name", "a model name unique in the list");
    x.api_key_env = m.string("api_key_env", "");
    x.weight = m.number("weight", 1.0, 0.0, 1e9);
    x.usd_per_mtok_in = m.number("usd_per_mtok_in", 0.0, 0.0, 1e6);
    x.usd_per_mtok_out = m.number("usd_per_mtok_out", 0.0, 0.0, 1e6);
    x.concurrency = static_cast<int>(m.integer("concurrency", 4, 1, 4096));
    x.temperature = m.number("temperature", 0.7, 0.0, 2.0);
    x.max_tokens = static_cast<int>(m.integer("max_tokens", 4096, 1, 1 << 20));
    m.finish();
    // The key itself is never part of the effective config.
    models_eff.push_back({{"name", x.name}, {"provider", x.provider_label}, {"base_url", x.base_url},
                          {"unix_socket", x.unix_socket}, {"model", x.model}, {"api_key_env", x.api_key_env}, {"weight", x.weight},
                          {"usd_per_mtok_in", x.usd_per_mtok_in}, {"usd_per_mtok_out", x.usd_per_mtok_out},
                          {"concurrency", x.concurrency}, {"temperature", x.temperature},
                          {"max_tokens", x.max_tokens}});
    c.models.push_back(std::move(x));
  }
  double wsum = 0;
  for (const auto& m : c.models) wsum += m.weight;
  if (wsum <= 0) o.fail("models", "at least one model with a positive weight");
  if (auto b = o.optional_object("budget")) {
    c.budget.tokens = b->integer("tokens", 0, 0);
    c.budget.usd = b->number("usd", 0.0, 0.0);
    c.budget.stop_when_spent = b->choice("on_exhausted", {"stop", "continue"}, "stop") == "stop";
    b->finish();
  }
  if (auto k = o.optional_object("client")) {
    c.client.connect_timeout_s = k->number("connect_timeout_s", c.client.connect_timeout_s, 0.001, 3600);
    c.client.timeout_s = k->number("timeout_s", c.client.timeout_s, 0.001, 86400);
    c.client.max_retries = static_cast<int>(k->integer("max_retries", c.client.max_retries, 0, 100));
    c.client.backoff_initial_s = k->number("backoff_initial_s", c.client.backoff_initial_s, 0.0, 3600);
    c.client.backoff_max_s = k->number("backoff_max_s", c.client.backoff_max_s, 0.0, 86400);
    k->finish();
  }
  std::string cache_dir = "llm-cache";
  if (auto k = o.optional_object("cache")) {
    c.cache_mode = cache_mode_from_string(k->choice("mode", {"off", "record", "replay", "replay_or_call"}, "off"));
    cache_dir = k->string("dir", cache_dir);
    k->finish();
  }
  c.cache_dir = cache_dir;   // relative to the working directory, like out_dir
  // A replay answers only from the cache: without one every request would
  // miss, so say so before the run starts.
  if (c.cache_mode == CacheMode::replay && !fs::is_directory(c.cache_dir))
    throw InputError(o.file(), o.pointer() + "/cache/dir",
                     fmt::format("an existing folder of recorded replies for cache.mode \"replay\" ('{}' is not a "
                                 "folder; record one with cache.mode \"record\")",
                                 cache_dir));
  auto rel = [&](const std::string& p) { return fs::path(p).is_relative() ? base / p : fs::path(p); };
  const std::string prompts = o.string("prompts_dir", "prompts");
  const std::string knowledge = o.string("knowledge_dir", "knowledge");
  c.prompts_dir = rel(prompts);
  c.knowledge_dir = rel(knowledge);
  if (!fs::is_directory(c.prompts_dir)) o.fail("prompts_dir", "an existing folder of prompt templates");
  if (!fs::is_directory(c.knowledge_dir)) o.fail("knowledge_dir", "an existing folder of knowledge files");
  c.knowledge_tokens = static_cast<std::size_t>(o.integer("knowledge_tokens", 600, 0, 1 << 20));
  c.inspiration_chars = static_cast<std::size_t>(o.integer("inspiration_chars", 6000, 0, 1 << 24));
  c.hardware = o.string("hardware", "");
  c.probe = o.boolean("probe", true);
  c.health.max_failure_share = o.number("max_failure_share", c.health.max_failure_share, 0.01, 1.0);
  c.health.window = static_cast<int>(o.integer("failure_window", c.health.window, 1, 1 << 20));
  o.finish();
  c.source_file = o.file();
  c.pointer = o.pointer();
  c.effective = {{"models", models_eff},
                 {"budget",
                  {{"tokens", c.budget.tokens},
                   {"usd", c.budget.usd},
                   {"on_exhausted", c.budget.stop_when_spent ? "stop" : "continue"}}},
                 {"client",
                  {{"connect_timeout_s", c.client.connect_timeout_s}, {"timeout_s", c.client.timeout_s},
                   {"max_retries", c.client.max_retries}, {"backoff_initial_s", c.client.backoff_initial_s},
                   {"backoff_max_s", c.client.backoff_max_s}}},
                 {"cache", {{"mode", to_string(c.cache_mode)}, {"dir", cache_dir}}},
                 {"prompts_dir", c.prompts_dir.string()},
                 {"knowledge_dir", c.knowledge_dir.string()},
                 {"knowledge_tokens", c.knowledge_tokens},
                 {"inspiration_chars", c.inspiration_chars},
                 {"hardware", c.hardware},
                 {"probe", c.probe},
                 {"max_failure_share", c.health.max_failure_share},
                 {"failure_window", c.health.window}};
  if (c.local_server) c.effective["local_server"] = to_json(*c.local_server);
  return c;
}

// ---- service ---------------------------------------------------------------

Service::Service(ServiceConfig config) : config_(std::move(config)) {
  // The local server is up before the probe and the first request; a replay
  // calls nobody.
  if (config_.local_server) {
    std::string url = "http://127.0.0.1:9/v1";
    if (config_.cache_mode != CacheMode::replay && config_.start_local_server) {
      local_server_ = std::make_unique<LocalServer>(*config_.local_server);
      url = local_server_->base_url();
    }
    for (auto& m : config_.models)
      if (m.base_url == "local") m.base_url = url;
  }
  std::shared_ptr<ReplyCache> cache;
  if (config_.cache_mode != CacheMode::off) cache = std::make_shared<ReplyCache>(config_.cache_mode, config_.cache_dir);
  for (auto& m : config_.models) {
    // A model with weight 0 is listed but switched off: its key is not needed.
    if (m.api_key_env.empty() || m.weight <= 0.0 || config_.cache_mode == CacheMode::replay) continue;
    const char* key = std::getenv(m.api_key_env.c_str());
    if (!key || !*key)
      throw InputError("environment", m.api_key_env,
                       fmt::format("the API key of model '{}' (or api_key_env \"\" for a server without keys)", m.name));
    m.api_key = key;
  }
  client_ = std::make_unique<Client>(config_.models, config_.client, config_.budget, std::move(cache));
  health_ = std::make_shared<Health>(config_.health, config_.models);
}

namespace {

// Notes of the probe go to stderr once per run: from the first process of an
// MPI launch (every rank probes), or from a process that was not launched so.
bool first_process() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var); v && *v) return std::string(v) == "0";
  return true;
}

void probe_note(const std::string& text) {
  if (!first_process()) return;
  std::fprintf(stderr, "kevo: note: %s\n", sanitize_utf8(text, kTerminalText).c_str());
  std::fflush(stderr);
}

// The model ids of a /models listing (OpenAI and Anthropic: {"data": [{"id": ...}]}).
std::vector<std::string> listed_models(const std::string& body) {
  std::vector<std::string> ids;
  const json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) return ids;
  for (const auto& m : j["data"])
    if (m.is_object() && m.contains("id") && m["id"].is_string()) ids.push_back(m["id"].get<std::string>());
  return ids;
}

}  // namespace

void Service::probe() {
  if (probed_ || !config_.probe || config_.cache_mode == CacheMode::replay) return;
  probed_ = true;
  for (std::size_t k = 0; k < config_.models.size(); ++k) {
    const Model& m = config_.models[k];
    if (m.weight <= 0.0) continue;
    const ModelsProbe p = client_->probe_models(k);
    if (!p.transport_error.empty())
      throw Failure(fmt::format("LLM model '{}' is not reachable at {}{}: {} (start the server, fix llm.models[{}].{},"
                                " or set llm.probe=false)",
                                m.name, m.base_url, m.unix_socket.empty() ? "" : " through " + m.unix_socket,
                                p.transport_error, k, m.unix_socket.empty() ? "base_url" : "unix_socket"));
    const std::string answer = fmt::format("GET {}/models answered HTTP {}", m.base_url, p.http_status);
    if (p.http_status == 401 || p.http_status == 403) {
      std::string body(utf8_prefix(p.body, 200));
      std::replace(body.begin(), body.end(), '\n', ' ');
      if (m.api_key_env.empty())
        throw InputError(config_.source_file, fmt::format("{}/models/{}/api_key_env", config_.pointer, k),
                         fmt::format("the name of the variable holding the key of model '{}': {} without one ({})",
                                     m.name, answer, body));
      throw InputError("environment", m.api_key_env,
                       fmt::format("a key that model '{}' at {} accepts: {} ({})", m.name, m.base_url, answer, body));
    }
    if (p.http_status < 200 || p.http_status >= 300) {
      probe_note(fmt::format("cannot check the key of LLM model '{}': {}; the first request will (a rejected key "
                             "then stops the run, exit 3)",
                             m.name, answer));
      continue;
    }
    const auto ids = listed_models(p.body);
    if (!ids.empty() && std::find(ids.begin(), ids.end(), m.model) == ids.end())
      probe_note(fmt::format("LLM model '{}': the server at {} does not list model id '{}' ({} listed, e.g. '{}'); "
                             "a request that names an unknown model stops the run",
                             m.name, m.base_url, m.model, ids.size(), ids.front()));
  }
}

std::size_t Service::pick_model(Rng& rng) const {
  double total = 0;
  for (const auto& m : config_.models) total += m.weight;
  double x = rng.uniform() * total;
  for (std::size_t k = 0; k < config_.models.size(); ++k) {
    x -= config_.models[k].weight;
    if (x < 0 && config_.models[k].weight > 0) return k;
  }
  return config_.models.size() - 1;
}

std::string Service::cache_note() const {
  const ReplyCache* cache = client_->cache();
  if (!cache || cache->mode() == CacheMode::off) return {};
  const CacheStats& st = client_->cache_stats();
  if (cache->mode() == CacheMode::record)
    return fmt::format("llm cache record: replies stored in {}", cache->dir().string());
  std::string s = fmt::format("llm cache {}: {} repl{} from {}, {} of them for a prompt that differs from the recorded one",
                              to_string(cache->mode()), st.replayed, st.replayed == 1 ? "y" : "ies",
                              cache->dir().string(), st.drifted);
  if (cache->mode() == CacheMode::replay_or_call) s += fmt::format("; {} not in the cache, asked of the model", st.called);
  else s += fmt::format("; {} missed", st.missed);
  return s;
}

std::uint64_t Service::submit(const void* owner, std::size_t model, const Conversation& c, CacheKey key) {
  const auto ticket = client_->submit(model, c, std::move(key));
  owner_of_[ticket] = owner;
  return ticket;
}

std::vector<std::pair<std::uint64_t, ChatResult>> Service::poll(const void* owner, std::chrono::milliseconds max_wait) {
  auto& mine = ready_[owner];
  if (mine.empty()) {
    for (auto& [ticket, r] : client_->poll(max_wait)) {
      for (std::size_t k = 0; k < config_.models.size(); ++k)
        if (config_.models[k].name == r.model) health_->record(k, r);
      auto it = owner_of_.find(ticket);
      const void* who = it->second;
      owner_of_.erase(it);
      ready_[who].emplace_back(ticket, std::move(r));
    }
  }
  std::vector<std::pair<std::uint64_t, ChatResult>> out;
  out.swap(ready_[owner]);
  return out;
}

std::size_t Service::in_flight(const void* owner) const {
  std::size_t n = 0;
  for (const auto& [t, o] : owner_of_) n += o == owner;
  if (auto it = ready_.find(owner); it != ready_.end()) n += it->second.size();
  return n;
}

const Template& Service::prompt(const std::string& name) {
  auto it = prompts_.find(name);
  if (it == prompts_.end()) {
    fs::path file = config_.prompts_dir / (name + ".md");
    for (const auto& [backend, f] : backend_files_)
      if (name == "system_" + backend) file = f.system_prompt;
    it = prompts_.emplace(name, Template::load(file)).first;
  }
  return it->second;
}

void Service::set_backend_files(const std::string& backend, fs::path system_prompt, fs::path knowledge,
                                std::string pointer) {
  prompts_.erase("system_" + backend);
  knowledge_.erase(backend);
  retrieved_.clear();
  backend_files_[backend] = {std::move(system_prompt), std::move(knowledge), std::move(pointer)};
}

const Template& Service::prompt(const std::string& name, const std::string& backend) {
  const std::string own = name + "_" + backend;
  auto it = template_of_.find(own);   // looked for once per run
  if (it == template_of_.end())
    it = template_of_.emplace(own, fs::exists(config_.prompts_dir / (own + ".md")) ? own : name).first;
  return prompt(it->second);
}

const Knowledge& Service::knowledge(const std::string& backend) {
  auto it = knowledge_.find(backend);
  if (it == knowledge_.end()) {
    Knowledge k;
    const auto own = backend_files_.find(backend);
    const fs::path f = own != backend_files_.end() ? own->second.knowledge : config_.knowledge_dir / (backend + ".md");
    if (fs::exists(f)) k.add_file(f);
    it = knowledge_.emplace(backend, std::move(k)).first;
  }
  return it->second;
}

std::string Service::knowledge_text(const Task& task, const std::string& feedback, Status status) {
  const bool compile_error = status == Status::compile_error;
  const std::string query = compile_error ? feedback : task.description + "\n" + feedback;
  // Retrieval is a function of the backend's snippets and the query: asked
  // again for the same feedback (most prompts), it is looked up.
  std::string key = task.backend;
  key += '\0';
  key += compile_error ? 'e' : 'o';
  key += '\0';
  key += query;
  if (const auto hit = retrieved_.find(key); hit != retrieved_.end()) return hit->second;
  const std::string skip = compile_error ? "" : "Compile error";
  std::string know;
  for (const auto* sn : knowledge(task.backend).retrieve(query, config_.knowledge_tokens, skip))
    know += "### " + sn->title + "\n" + sn->text + "\n";
  if (know.empty()) know = "(none)";
  if (retrieved_.size() >= 256) retrieved_.clear();   // bounded: feedback texts vary without end
  retrieved_.emplace(std::move(key), know);
  return know;
}

namespace {

// Why `file` cannot be read as a text file ("" when it can).
std::string unreadable(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return "does not exist";
  if (!fs::is_regular_file(file, ec)) return "is not a regular file";
  std::ifstream in(file, std::ios::binary);
  if (!in) return "cannot be opened for reading";
  return "";
}

}  // namespace

void Service::prepare_backend(const std::string& backend, const std::vector<std::string>& templates) {
  const std::string system_name = "system_" + backend;
  if (const auto own = backend_files_.find(backend); own != backend_files_.end()) {
    // The backend's config named them: it checked they are readable files.
    for (const fs::path& f : {own->second.system_prompt, own->second.knowledge})
      if (const std::string why = unreadable(f); !why.empty())
        throw InputError(config_.source_file, own->second.pointer, f.string() + " " + why);
    prompt(system_name);
    for (const auto& name : templates) prompt(name, backend);
    if (config_.knowledge_tokens > 0) knowledge(backend);
    return;
  }
  const fs::path system_file = config_.prompts_dir / (system_name + ".md");
  if (const std::string why = unreadable(system_file); !why.empty())
    throw InputError(config_.source_file, config_.pointer + "/prompts_dir",
                     fmt::format("a folder holding a readable {}.md, the system prompt for tasks of backend '{}' "
                                 "({} {})",
                                 system_name, backend, system_file.string(), why));
  prompt(system_name);   // parsed now: an unknown slot is an input error too
  for (const auto& name : templates) prompt(name, backend);   // and the backend's own templates
  if (config_.knowledge_tokens == 0) return;
  const fs::path knowledge_file = config_.knowledge_dir / (backend + ".md");
  if (const std::string why = unreadable(knowledge_file); !why.empty())
    throw InputError(config_.source_file, config_.pointer + "/knowledge_dir",
                     fmt::format("a folder holding a readable {}.md, the knowledge for tasks of backend '{}', one "
                                 "snippet per '## ' heading ({} {}; {}/knowledge_tokens 0 runs without knowledge)",
                                 backend, backend, knowledge_file.string(), why, config_.pointer));
  knowledge(backend);
}

const std::string& Service::hardware(const std::string& backend, const std::string& device) const {
  if (!config_.hardware.empty()) return config_.hardware;
  // Described once per backend and device: the CPU's description reads
  // /proc/cpuinfo, a tenth of an LLM candidate's cost when read per prompt.
  const std::string where = this->device(backend);
  std::string key = backend;
  key += '\0';
  key += device;
  key += '\0';
  key += where;
  auto it = hardware_.find(key);
  if (it == hardware_.end()) it = hardware_.emplace(std::move(key), hardware_text(backend, device, where)).first;
  return it->second;
}

void Service::set_device(const std::string& backend, std::string device) { devices_[backend] = std::move(device); }

std::string Service::device(const std::string& backend) const {
  const auto it = devices_.find(backend);
  return it == devices_.end() ? std::string() : it->second;
}

// ---- prompts ---------------------------------------------------------------

struct Service::TaskTexts {
  std::string name;                 // with the manifest: which task these are (an address can be reused)
  std::filesystem::path manifest;
  std::string signature, visible_shapes, libraries, sizes, search_space;
  std::vector<std::pair<const GpuFacts*, RooflineCounts>> roofline;   // per GPU the prompts name (nullptr: none)

  const RooflineCounts& roofline_for(const Task& task, const GpuFacts* gpu) {
    for (const auto& [g, counts] : roofline)
      if (g == gpu) return counts;
    return roofline.emplace_back(gpu, roofline_counts(task, gpu)).second;
  }
};

Service::TaskTexts& Service::task_texts(const Task& task) {
  auto& texts = task_texts_[&task];
  if (texts && texts->name == task.name && texts->manifest == task.manifest_path) return *texts;
  texts = std::make_shared<TaskTexts>();
  texts->name = task.name;
  texts->manifest = task.manifest_path;
  texts->signature = task.c_signature();
  // Only the visible shapes: hidden ones are the held-out correctness check.
  for (const auto& v : task.visible) texts->visible_shapes += "- " + v.label + "\n";
  texts->libraries = libraries_text(task);
  texts->sizes = sizes_text(task);
  texts->search_space = task.space.empty() ? "(no parameters)" : space_text(task.space);
  return *texts;
}

Slots prompt_slots(const OperatorRequest& req, Service& service, std::size_t inspirations) {
  const Task& task = *req.task;
  const Candidate& p = *req.parents.front();
  auto& texts = service.task_texts(task);
  Slots s;
  s[Slot::task_name] = task.name;
  s[Slot::task_description] = task.description;
  s[Slot::signature] = texts.signature;
  s[Slot::backend] = task.backend;
  s[Slot::visible_shapes] = texts.visible_shapes;
  s[Slot::parent_source] = p.source;
  append_verdict_text(s[Slot::parent_verdict], p);
  if (req.parents.size() > 1) {
    s[Slot::parent2_source] = req.parents[1]->source;
    append_verdict_text(s[Slot::parent2_verdict], *req.parents[1]);
  }
  // The engine's feedback has hidden shapes redacted already. The parent's
  // profiler summary (CUDA: ncu), which the backend quotes in it, feeds the
  // analyst's review; with no enabled analyst, generation prompts get it
  // with the feedback. Either way it appears once.
  std::string& feedback = s[Slot::feedback];
  feedback = without_profile(req.feedback, p.verdict.profile);
  if (feedback.empty()) feedback = "(none)";
  s[Slot::profile] = p.verdict.profile.empty() ? "(no profiler data)" : p.verdict.profile;
  if (!p.verdict.profile.empty() && !service.analyst_enabled())
    feedback += "\n\nProfiler summary of this kernel:\n" + p.verdict.profile;
  // Without a profile (which quotes them), the compiler's registers and
  // spills per kernel (nvcc -Xptxas=-v; none for g++).
  if (p.verdict.profile.empty() && p.verdict.status != Status::compile_error)
    if (const std::string regs = register_report(p.verdict.compile_log); !regs.empty())
      feedback += "\n\nRegisters per kernel (ptxas):\n" + regs;
  std::string& insp = s[Slot::inspirations];
  std::size_t used = 0;
  for (std::size_t k = 0; k < req.inspirations.size() && k < inspirations; ++k) {
    const Candidate& c = *req.inspirations[k];
    if (used + c.source.size() > service.config().inspiration_chars) break;
    used += c.source.size();
    insp.reserve(insp.size() + c.source.size() + 192 + c.params_json.size());
    insp += "Candidate ";
    char id[24];
    insp.append(id, std::to_chars(id, id + sizeof id, c.id).ptr);
    insp += " (";
    append_verdict_text(insp, c);
    insp += "):\n```";
    insp += task.is_torch() ? "python" : "cpp";
    insp += '\n';
    insp += c.source;
    insp += "```\n\n";
  }
  if (insp.empty()) insp = "(none)";
  s[Slot::hardware] = service.hardware(task.backend, p.verdict.device);
  s[Slot::roofline] = roofline_text(
      texts.roofline_for(task, prompt_gpu(task.backend, p.verdict.device, service.device(task.backend))),
      p.verdict.is_correct() ? p.verdict.cand_median_ns : 0.0);
  s[Slot::libraries] = texts.libraries;
  s[Slot::sizes] = texts.sizes;
  s[Slot::reference_source] = task.reference_source;
  s[Slot::knowledge] = service.knowledge_text(task, req.feedback, p.verdict.status);
  s[Slot::search_space] = texts.search_space;
  s[Slot::recommendations] = "(none)";
  return s;
}

// ---- operators -------------------------------------------------------------

bool asks_for_profile(const std::string& reply) {
  std::istringstream in(reply);
  for (std::string line; std::getline(in, line);) {
    std::string t;   // the line without spaces and Markdown emphasis, lower-case
    for (char c : line) {
      const auto u = static_cast<unsigned char>(c);
      if (!std::isspace(u) && c != '*' && c != '`') t += static_cast<char>(std::tolower(u));
    }
    if (t == "profile:yes") return true;
  }
  return false;
}

struct LlmOperator::Job {
  std::uint64_t id = 0;
  const Task* task = nullptr;
  std::string parent_source;
  std::optional<Point> parent_point;
  Slots slots;
  Conversation conv;
  std::size_t model = 0;
  int step = 0;                  // analyst: 0 = analysis, 1 = generation
  CacheKey key;                  // finds the reply in the cache: fixed at begin(), the sample at each send
  std::string profile_request;   // analyst: why its child should be profiled ("" = no request)
  std::int64_t repair_of = -1;   // fix: the failed candidate this repairs
  int repair_turn = 0;           // fix: 1 for the first repair of a conversation
  // Lineage records, one per request, as JSON text (kevo/core/json_text.hpp:
  // the bytes a DOM's dump would have): each record's members before
  // "rejected" and after it, which the last record gets when it is done.
  struct Turn {
    std::string head, tail;
    LlmRequestFacts facts;   // what a tally reads of the record (set "rejected" at the end)
  };
  std::vector<Turn> turns;
};

namespace {

// A failed request's kind as its record says it: "other" when it has none.
std::string_view failure_kind(const ChatResult& r) {
  return r.failure.empty() ? std::string_view("other") : std::string_view(r.failure);
}

// What write_turn's record of `r` holds for a tally: its members of those names.
LlmRequestFacts request_facts(const ChatResult& r) {
  LlmRequestFacts f;
  f.model = r.model;
  f.retries = r.retries;
  f.input_tokens = r.input_tokens;
  f.output_tokens = r.output_tokens;
  f.http_status = r.http_status;
  f.usd = r.cost_usd;
  f.cached = r.cached;
  f.ok = r.ok;
  if (!r.ok) f.failure = failure_kind(r);
  return f;
}

// One request's lineage record as a DOM's compact dump writes it: members in
// key order, the prompt as the conversation that was sent.
void write_turn(std::string& head, std::string& tail, std::size_t turn, const std::string& purpose,
                const Conversation& conv, const ChatResult& r, std::int64_t repair_of, int repair_turn) {
  namespace jt = json_text;
  std::size_t size = 256 + conv.system.size() + r.text.size() + r.error.size();
  for (const auto& m : conv.messages) size += m.content.size() + 32;
  head.clear();
  head.reserve(size);
  head += "{\"cached\":";
  jt::append_bool(head, r.cached);
  head += ",\"cost_usd\":";
  jt::append_number(head, r.cost_usd);
  head += ",\"error\":";
  jt::append_string(head, r.error);
  if (!r.ok) {
    head += ",\"failure\":";
    jt::append_string(head, failure_kind(r));
  }
  head += ",\"http_status\":";
  jt::append_number(head, r.http_status);
  head += ",\"input_tokens\":";
  jt::append_number(head, r.input_tokens);
  head += ",\"latency_s\":";
  jt::append_number(head, r.latency_s);
  head += ",\"model\":";
  jt::append_string(head, r.model);
  head += ",\"ok\":";
  jt::append_bool(head, r.ok);
  head += ",\"output_tokens\":";
  jt::append_number(head, r.output_tokens);
  head += ",\"prompt\":";
  if (const std::string_view sent = r.prompt_json(); !sent.empty())
    head += sent;   // the same bytes, as the request's body has them
  else
    append_messages(head, conv, true);
  if (r.cached) {
    head += ",\"prompt_drifted\":";
    jt::append_bool(head, r.prompt_drifted);
  }
  head += ",\"purpose\":";
  jt::append_string(head, purpose);
  tail.clear();
  tail.reserve(r.text.size() + 96);
  if (repair_of >= 0) {
    tail += ",\"repair_of\":";
    jt::append_number(tail, repair_of);
    tail += ",\"repair_turn\":";
    jt::append_number(tail, repair_turn);
  }
  tail += ",\"reply\":";
  jt::append_string(tail, r.text);
  tail += ",\"retries\":";
  jt::append_number(tail, r.retries);
  tail += ",\"turn\":";
  jt::append_number(tail, static_cast<std::uint64_t>(turn));
  tail += '}';
}

}  // namespace

LlmOperator::LlmOperator(std::string name, std::shared_ptr<Service> service, LlmOperatorOptions options)
    : MutationOperator(std::move(name), options.kind == Kind::crossover ? 2 : 1),
      service_(std::move(service)),
      options_(options) {
  // Load the templates now, so that a missing or broken one is an input
  // error before the run starts (a backend's own ones: do_prepare).
  for (const auto& t : templates_of(options_.kind)) service_->prompt(t);
}

const std::vector<std::string>& templates_of(Kind kind) {
  static const std::map<Kind, std::vector<std::string>> table = {
      {Kind::rewrite, {"rewrite"}},           {Kind::diff, {"diff"}},
      {Kind::crossover, {"crossover"}},       {Kind::analyst, {"analyst", "rewrite"}},
      {Kind::param_hint, {"param_hint"}},     {Kind::fix, {"fix", "rewrite"}}};
  return table.at(kind);
}

void LlmOperator::observe(const Candidate& c) {
  if (options_.kind != Kind::fix || c.llm.empty() || c.source.empty()) return;
  // A torch task's judge reports Python tracebacks (runtime_error) and calls
  // of the reference's own operations (forbidden) in words a model can act
  // on: those are repaired too.
  const bool torch_failure = (c.verdict.status == Status::runtime_error || c.verdict.status == Status::forbidden) &&
                             torch_tasks_.count(c.task);
  if (c.verdict.status != Status::compile_error && c.verdict.status != Status::wrong_answer && !torch_failure) return;
  const auto turns = json::parse(c.llm, nullptr, false);
  if (!turns.is_array() || turns.empty()) return;
  const json& last = turns.back();
  const int turn = last.value("repair_turn", 0);
  if (turn >= options_.max_turns || !last.value("ok", false)) return;
  // The conversation that made the candidate, its reply included: the repair
  // continues it, so the model sees what it wrote and what went wrong.
  Repair r;
  r.task = c.task;
  r.id = c.id;
  r.turn = turn;
  r.feedback = c.verdict.feedback.empty() ? std::string(to_string(c.verdict.status)) : c.verdict.feedback;
  r.status = c.verdict.status;
  r.source = c.source;
  for (const auto& m : last.at("prompt")) {
    if (m.value("role", "") == "system") r.conv.system = m.value("content", "");
    else r.conv.messages.push_back({m.value("role", ""), m.value("content", "")});
  }
  r.conv.messages.push_back({"assistant", last.value("reply", "")});
  repairs_.push_back(std::move(r));
  if (repairs_.size() > options_.queue) repairs_.pop_front();
}

LlmOperator::~LlmOperator() = default;

void LlmOperator::do_prepare(const Task& task) { service_->prepare_backend(task.backend, templates_of(options_.kind)); }

bool LlmOperator::applicable(const Task& task) const {
  return options_.kind != Kind::param_hint || !task.space.empty();
}

void LlmOperator::send(Job& job, std::uint64_t) {
  // The cache key names the child, the operator, the parents and the
  // request's place in the child's conversation, never the prompt text: a
  // replay finds its replies although the parents' measured timings in the
  // prompts differ (docs/llm.md#record-and-replay).
  job.key.sample = static_cast<int>(job.turns.size());
  const auto ticket = service_->submit(this, job.model, job.conv, job.key);
  jobs_[ticket].reset(&job);   // owned from here on
}

std::optional<OperatorOutcome> LlmOperator::do_begin(const OperatorRequest& req) {
  if (req.task->is_torch()) torch_tasks_.insert(req.parents.front()->task);
  auto job = std::make_unique<Job>();
  job->id = req.id;
  job->task = req.task;
  job->parent_source = req.parents.front()->source;
  job->parent_point = req.parents.front()->point;
  job->slots = prompt_slots(req, *service_, static_cast<std::size_t>(options_.inspirations));
  job->model = service_->pick_model(*req.rng);
  job->key.task = req.task->name;
  job->key.id = req.id;
  job->key.op = name();
  for (const Candidate* p : req.parents) job->key.parents.push_back(p->id);
  std::string system_name = "system_" + req.task->backend;
  job->conv.system = service_->prompt(system_name).render(job->slots);
  if (options_.kind == Kind::fix) {
    const auto task_index = req.parents.front()->task;
    auto it = std::find_if(repairs_.begin(), repairs_.end(), [&](const Repair& r) { return r.task == task_index; });
    if (it != repairs_.end()) {
      job->conv = std::move(it->conv);
      job->repair_of = static_cast<std::int64_t>(it->id);
      job->repair_turn = it->turn + 1;
      job->parent_source = it->source;
      job->slots[Slot::feedback] = it->feedback;
      // Knowledge retrieved for this failure (e.g. the compiler's error text).
      job->slots[Slot::knowledge] = service_->knowledge_text(*req.task, it->feedback, it->status);
      repairs_.erase(it);
      job->conv.messages.push_back({"user", service_->prompt("fix", req.task->backend).render(job->slots)});
      job->key.repair_of = job->repair_of;
      job->key.repair_turn = job->repair_turn;
      Job* raw = job.release();
      send(*raw, 0);
      return std::nullopt;
    }
    // Nothing to repair for this task: a plain rewrite of the parent.
  }
  std::string tmpl;
  switch (options_.kind) {
    case Kind::fix:
    case Kind::rewrite: tmpl = "rewrite"; break;
    case Kind::diff: tmpl = "diff"; break;
    case Kind::crossover: tmpl = "crossover"; break;
    case Kind::param_hint: tmpl = "param_hint"; break;
    case Kind::analyst:
      // The analyst speaks only about correct but slow candidates; others
      // get a plain rewrite prompt.
      if (req.parents.front()->verdict.is_correct() && req.parents.front()->verdict.speedup < options_.slow_below) {
        tmpl = "analyst";
        // An analysis without profiler data: the child is profiled, so the
        // next analysis along this lineage has figures to work from.
        if (req.parents.front()->verdict.profile.empty())
          job->profile_request = fmt::format("{}: parent {} has no profile", name(), req.parents.front()->id);
      } else {
        tmpl = "rewrite";
        job->step = 1;
      }
      break;
  }
  job->conv.messages.push_back({"user", service_->prompt(tmpl, req.task->backend).render(job->slots)});
  Job* raw = job.release();
  send(*raw, 0);
  return std::nullopt;
}

std::optional<OperatorOutcome> LlmOperator::finish(Job& job, const ChatResult& r) {
  const std::string purpose = options_.kind == Kind::analyst && job.step == 0 ? "analyse"
                              : job.repair_of >= 0                         ? "repair"
                                                                           : "generate";
  auto& turn = job.turns.emplace_back();
  write_turn(turn.head, turn.tail, job.turns.size() - 1, purpose, job.conv, r, job.repair_of, job.repair_turn);
  turn.facts = request_facts(r);
  auto done = [&](OperatorOutcome o) {
    // A reply that came but could not be used (no code, a diff that does
    // not apply...): counted as rejected in the report.
    const bool rejected = r.ok && !o.proposal;
    std::size_t size = 2 + (rejected ? 16 : 0);
    for (const auto& t : job.turns) size += t.head.size() + t.tail.size() + 1;
    o.llm.reserve(size);
    o.llm += '[';
    for (std::size_t k = 0; k < job.turns.size(); ++k) {
      if (k) o.llm += ',';
      o.llm += job.turns[k].head;
      if (rejected && k + 1 == job.turns.size()) o.llm += ",\"rejected\":true";
      o.llm += job.turns[k].tail;
    }
    o.llm += ']';
    o.llm_facts.reserve(job.turns.size());
    for (const auto& t : job.turns) o.llm_facts.push_back(t.facts);
    if (rejected) o.llm_facts.back().rejected = true;
    return o;
  };
  if (!r.ok) return done(OperatorOutcome::failed(job.id, "llm: " + r.error));
  const Task& task = *job.task;
  switch (options_.kind) {
    case Kind::rewrite:
    case Kind::crossover:
    case Kind::fix: {
      auto p = parse_code_reply(r.text, task);
      if (!p.source) return done(OperatorOutcome::failed(job.id, "reply rejected: " + p.error));
      std::string note = "model " + r.model;
      if (job.repair_of >= 0) note += fmt::format(", repair {} of candidate {}", job.repair_turn, job.repair_of);
      return done(OperatorOutcome::ok(job.id, Proposal{std::move(*p.source), std::nullopt, note}));
    }
    case Kind::diff: {
      auto d = parse_diff_blocks(r.text);
      if (!d.error.empty()) return done(OperatorOutcome::failed(job.id, "reply rejected: " + d.error));
      auto applied = apply_diff(job.parent_source, d.blocks,
                                task.is_torch() ? Indentation::significant : Indentation::free);
      if (!applied.source) return done(OperatorOutcome::failed(job.id, "diff failed: " + applied.error));
      if (auto why = check_signature(*applied.source, task); !why.empty())
        return done(OperatorOutcome::failed(job.id, "reply rejected: " + why));
      return done(OperatorOutcome::ok(
          job.id, Proposal{std::move(*applied.source), std::nullopt,
                           fmt::format("model {}: {} diff blocks applied", r.model, d.blocks.size())}));
    }
    case Kind::analyst: {
      if (job.step == 1) {
        auto p = parse_code_reply(r.text, task);
        if (!p.source) return done(OperatorOutcome::failed(job.id, "reply rejected: " + p.error));
        std::string note = "model " + r.model + ", after performance analysis";
        if (!job.profile_request.empty()) note += "; profile requested (" + job.profile_request + ")";
        return done(OperatorOutcome::ok(
            job.id, Proposal{std::move(*p.source), std::nullopt, std::move(note), job.profile_request}));
      }
      // The analysis may ask for the profile of the version it leads to.
      if (job.profile_request.empty() && asks_for_profile(r.text))
        job.profile_request = name() + ": its analysis asked for the profile of the rewritten kernel";
      // Step 0 answered: the recommendations go into a generation prompt.
      job.step = 1;
      job.slots[Slot::recommendations] = r.text;
      job.conv.messages.assign(1, {"user", service_->prompt("rewrite", task.backend).render(job.slots)});
      return std::nullopt;   // the conversation continues (see do_poll)
    }
    case Kind::param_hint: {
      const SearchSpace& space = task.space;
      std::string why;
      std::optional<Point> point;
      const std::string text = extract_json_object(r.text);
      if (text.empty()) {
        why = "no JSON object in the reply";
      } else {
        json j = json::parse(text);
        const json& values = j.contains("values") ? j["values"] : j;
        std::vector<std::pair<std::string, std::string>> assign;
        if (!values.is_object()) why = "\"values\" is not an object";
        for (auto it = values.begin(); why.empty() && it != values.end(); ++it)
          assign.emplace_back(it.key(), it->is_string() ? it->get<std::string>() : it->dump());
        // Parameters the reply leaves out keep the parent's value.
        if (why.empty() && job.parent_point)
          for (std::size_t k = 0; k < space.params().size(); ++k)
            if (!values.contains(space.params()[k].name))
              assign.emplace_back(space.params()[k].name, space.value(*job.parent_point, k).to_string());
        if (why.empty()) {
          point = space.find(assign);
          if (!point) why = "unknown parameter or value in " + text.substr(0, 200);
          else if (!space.valid(*point)) {
            why = "point violates the restrictions: " + space.key(*point);
            point.reset();
          }
        }
      }
      if (!point) {
        // Invalid hints fall back to the baseline (the task's seed point).
        if (!task.seed_point) return done(OperatorOutcome::failed(job.id, "invalid parameter hint: " + why));
        return done(OperatorOutcome::ok(job.id, Proposal{apply_point(space, *task.seed_point, job.parent_source),
                                                         task.seed_point,
                                                         "invalid parameter hint (" + why + "); baseline point"}));
      }
      return done(OperatorOutcome::ok(job.id, Proposal{apply_point(space, *point, job.parent_source), point,
                                                       "model " + r.model + " hint " + space.key(*point)}));
    }
  }
  return done(OperatorOutcome::failed(job.id, "unknown operator kind"));
}

std::vector<OperatorOutcome> LlmOperator::do_poll(std::chrono::milliseconds max_wait) {
  std::vector<OperatorOutcome> out;
  for (auto& [ticket, r] : service_->poll(this, max_wait)) {
    auto it = jobs_.find(ticket);
    if (it == jobs_.end()) throw Failure(fmt::format("llm operator {}: result for unknown ticket {}", name(), ticket));
    std::unique_ptr<Job> job = std::move(it->second);
    jobs_.erase(it);
    auto o = finish(*job, r);
    if (!o) {
      send(*job.release(), 0);   // the next turn of the same conversation
      continue;
    }
    out.push_back(std::move(*o));
  }
  return out;
}

}  // namespace kevo::operators::llm
