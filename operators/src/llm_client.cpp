#include "kevo/operators/llm_client.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/json_text.hpp"
#include "kevo/core/text.hpp"

#include <curl/curl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kevo::operators::llm {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// curl_global_init is not thread-safe and must run once per process.
void global_init() {
  static const bool ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  if (!ok) throw Failure("curl_global_init failed");
}

// One RAII holder per C handle.
struct EasyHandle {
  CURL* h = nullptr;
  EasyHandle() : h(curl_easy_init()) {
    if (!h) throw Failure("curl_easy_init returned null");
  }
  ~EasyHandle() {
    if (h) curl_easy_cleanup(h);
  }
  EasyHandle(const EasyHandle&) = delete;
  EasyHandle& operator=(const EasyHandle&) = delete;
};

struct HeaderList {
  curl_slist* list = nullptr;
  void add(const std::string& line) {
    curl_slist* n = curl_slist_append(list, line.c_str());
    if (!n) throw Failure("curl_slist_append failed");
    list = n;
  }
  ~HeaderList() {
    if (list) curl_slist_free_all(list);
  }
  HeaderList() = default;
  HeaderList(const HeaderList&) = delete;
  HeaderList& operator=(const HeaderList&) = delete;
  HeaderList& operator=(HeaderList&& other) noexcept {
    if (this != &other) {
      if (list) curl_slist_free_all(list);
      list = other.list;
      other.list = nullptr;
    }
    return *this;
  }
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* s = static_cast<std::string*>(user);
  s->append(data, size * n);
  return size * n;
}

// Worst-case token count of a conversation: a BPE token is at least one
// byte, so the byte count bounds the input tokens; a little per message for
// the chat template.
std::int64_t input_bound(const Conversation& c) {
  std::int64_t n = static_cast<std::int64_t>(c.system.size()) + 16;
  for (const auto& m : c.messages) n += static_cast<std::int64_t>(m.content.size()) + 16;
  return n;
}

double cost(const Model& m, std::int64_t in, std::int64_t out) {
  return (static_cast<double>(in) * m.usd_per_mtok_in + static_cast<double>(out) * m.usd_per_mtok_out) / 1e6;
}

// The start of a reply for an error message: one line, whole characters,
// no control bytes.
std::string snippet(const std::string& body) {
  std::string s(utf8_prefix(body, 200));
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return sanitize_utf8(s, kShownText);
}

// A server may quote the key it rejected: the text of an error never
// carries it (it goes to the lineage and the console).
std::string redact_key(std::string text, const Model& m) {
  if (m.api_key.size() < 4) return text;
  for (auto at = text.find(m.api_key); at != std::string::npos; at = text.find(m.api_key, at))
    text.replace(at, m.api_key.size(), "<key>");
  return text;
}

void add_auth_headers(HeaderList& headers, const Model& m) {
  if (m.provider == Provider::openai) {
    if (!m.api_key.empty()) headers.add("Authorization: Bearer " + m.api_key);
  } else {
    if (!m.api_key.empty()) headers.add("x-api-key: " + m.api_key);
    headers.add("anthropic-version: 2023-06-01");
  }
}

// The kind of a 2xx reply that could not be used (ParsedReply::error).
std::string reply_failure_kind(const std::string& error) {
  if (error.rfind("refusal", 0) == 0) return "refusal";
  if (error.rfind("empty", 0) == 0) return "empty";
  return "invalid_reply";
}

// Whether the environment names a proxy that libcurl would consider for an
// http:// or https:// URL (it reads http_proxy, https_proxy, HTTPS_PROXY,
// all_proxy and ALL_PROXY; HTTP_PROXY too, to be safe). Set but empty counts
// as named: then libcurl's own reading decides.
bool proxy_in_environment() {
  for (const char* var : {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"})
    if (std::getenv(var)) return true;
  return false;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

HttpFailure classify_http_failure(int status, const std::string& body) {
  if (status == 401 || status == 403) return {"auth", true};
  if (status == 402) return {"payment", true};
  // No such model, or no such endpoint at base_url: the same for every request.
  if (status == 404 || status == 405 || status == 501) return {"not_found", true};
  // A prompt longer than the model takes: the prompt's, not the model's,
  // failure (a candidate's source or output fills its children's prompts);
  // Health leaves it out of the stop rule.
  if (status == 413) return {"prompt_too_long", false};
  if (status == 400 || status == 422) {
    const std::string b = lower(body);
    for (const char* says : {"context length", "context_length", "context window", "maximum context",
                             "too many tokens", "prompt is too long", "input is too long", "too long for"})
      if (b.find(says) != std::string::npos) return {"prompt_too_long", false};
    const bool about_model = b.find("model") != std::string::npos;
    for (const char* says : {"not found", "does not exist", "not exist", "unknown model", "invalid model",
                             "model_not_found", "no such model", "not supported"})
      if (about_model && b.find(says) != std::string::npos) return {"not_found", true};
    return {"client", false};
  }
  if (status == 408) return {"timeout", false};
  if (status == 429) return {"rate_limit", false};
  if (status >= 500) return {"server", false};
  return {"client", false};
}

CacheMode cache_mode_from_string(const std::string& s) {
  if (s == "off") return CacheMode::off;
  if (s == "record") return CacheMode::record;
  if (s == "replay") return CacheMode::replay;
  if (s == "replay_or_call") return CacheMode::replay_or_call;
  throw std::invalid_argument(s);
}

std::string to_string(CacheMode m) {
  switch (m) {
    case CacheMode::off: return "off";
    case CacheMode::record: return "record";
    case CacheMode::replay: return "replay";
    case CacheMode::replay_or_call: return "replay_or_call";
  }
  return "off";
}

Budget::Budget(BudgetLimits limits) : limits_(limits) {
  limit_[0] = static_cast<double>(limits_.tokens);
  limit_[1] = limits_.usd;
}

Budget::Grant Budget::reserve(std::int64_t tokens, double usd) {
  const double need[kQ] = {static_cast<double>(tokens), usd};
  if (exhausted_) return Grant::refused;
  // Does it fit in what the whole run has left, reservations aside?
  for (int q = 0; q < kQ; ++q)
    if (limited(q) && run_used(q) + need[q] > limit_[q]) {
      exhausted_ = true;
      return Grant::refused;
    }
  // Does it fit in what this rank may hold now?
  bool fits = !round_open_;
  for (int q = 0; q < kQ && fits; ++q) {
    if (!limited(q)) continue;
    const double allowance = shared_ ? cap_[q] : limit_[q] - prior_[q];
    fits = used_[q] + reserved_[q] + need[q] <= allowance;
  }
  if (!fits) {
    if (!wanting_) {
      wanting_ = true;
      demand_[0] = need[0];
      demand_[1] = need[1];
    }
    return Grant::wait;
  }
  reserved_[0] += need[0];
  reserved_[1] += need[1];
  return Grant::ok;
}

void Budget::settle(std::int64_t reserved_tokens, double reserved_usd, std::int64_t used_tokens, double used_usd) {
  reserved_[0] -= static_cast<double>(reserved_tokens);
  reserved_[1] -= reserved_usd;
  used_[0] += static_cast<double>(used_tokens);
  used_[1] += used_usd;
}

// Round layout: used (2), reserved (2), exhausted (1), halted (1), then per
// rank its demand (2): a sum in which each rank fills its own slots is a
// gather.
constexpr std::size_t kFixedSlots = 6;

void Budget::start_shared(int rank, int ranks) {
  shared_ = true;
  rank_ = rank;
  ranks_ = std::max(1, ranks);
  // Before the first round: an even share of what is left.
  for (int q = 0; q < kQ; ++q) cap_[q] = std::max(0.0, limit_[q] - prior_[q]) / ranks_;
}

std::size_t Budget::width() const { return kFixedSlots + 2 * static_cast<std::size_t>(ranks_); }

void Budget::open_round(double* out) {
  std::fill(out, out + width(), 0.0);
  for (int q = 0; q < kQ; ++q) {
    out[q] = used_[q];
    out[2 + q] = reserved_[q];
    used_at_open_[q] = used_[q];
    at_open_[q] = used_[q] + reserved_[q];
  }
  out[4] = exhausted_ ? 1.0 : 0.0;
  out[5] = failure_.empty() ? 0.0 : 1.0;
  if (wanting_) {
    out[kFixedSlots + 2 * rank_] = demand_[0];
    out[kFixedSlots + 2 * rank_ + 1] = demand_[1];
  }
  wanting_ = false;
  round_open_ = true;   // nothing new until the round closes
}

void Budget::close_round(const double* sums) {
  round_open_ = false;
  if (sums[4] > 0.5) exhausted_ = true;
  if (sums[5] > 0.5 && failure_.empty())
    halt("llm: another rank stopped the run with an error (its message and lineage say why)");
  double left[kQ];
  for (int q = 0; q < kQ; ++q) {
    others_used_[q] = std::max(0.0, sums[q] - used_at_open_[q]);
    left[q] = std::max(0.0, limit_[q] - prior_[q] - sums[q] - sums[2 + q]);
  }
  // Waiting requests first, whole, in a rank order that rotates every round
  // (so no rank waits for ever); the rest evenly. Every rank computes the
  // same grants from the same sums.
  const int start = static_cast<int>(rounds_++ % static_cast<std::uint64_t>(ranks_));
  double mine[kQ] = {0.0, 0.0};
  for (int k = 0; k < ranks_; ++k) {
    const int r = (start + k) % ranks_;
    const double* d = sums + kFixedSlots + 2 * r;
    if (d[0] <= 0.0 && d[1] <= 0.0) continue;
    bool fits = true;
    for (int q = 0; q < kQ; ++q) fits = fits && (!limited(q) || d[q] <= left[q]);
    if (!fits) continue;
    for (int q = 0; q < kQ; ++q) {
      left[q] -= d[q];
      if (r == rank_) mine[q] = d[q];
    }
  }
  for (int q = 0; q < kQ; ++q) cap_[q] = at_open_[q] + mine[q] + left[q] / ranks_;
}

void Budget::halt(std::string why) {
  if (failure_.empty()) failure_ = std::move(why);
  exhausted_ = true;
}

std::string Budget::summary() const {
  if (!failure_.empty()) return failure_;
  std::string s = "llm budget";
  if (limited(0)) s += fmt::format(": {} of {} tokens", run_tokens(), limits_.tokens);
  if (limited(1)) s += fmt::format("{} {:.4f} of {:.4f} USD", limited(0) ? "," : ":", run_usd(), limits_.usd);
  if (!limited(0) && !limited(1)) s += ": unlimited";
  return s + (exhausted_ ? " (spent)" : "");
}

void Budget::restore(const std::vector<std::string_view>& records) {
  auto add = [&](const json& r) {
    if (!r.is_object() || r.value("cached", false)) return;   // a replayed reply cost nothing
    prior_[0] += static_cast<double>(r.value("input_tokens", std::int64_t{0}) + r.value("output_tokens", std::int64_t{0}));
    prior_[1] += r.value("cost_usd", 0.0);
  };
  for (const auto text : records) {
    const json j = json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_array())
      for (const auto& r : j) add(r);
    else
      add(j);
  }
}

// ---- wire formats ----------------------------------------------------------

void append_messages(std::string& out, const Conversation& c, bool with_system) {
  namespace jt = json_text;
  out += '[';
  bool first = true;
  auto message = [&](std::string_view role, const std::string& content) {
    out += first ? "{\"content\":" : ",{\"content\":";
    first = false;
    jt::append_string(out, content);
    out += ",\"role\":";
    jt::append_string(out, role);
    out += '}';
  };
  if (with_system && !c.system.empty()) message("system", c.system);
  for (const auto& x : c.messages) message(x.role, x.content);
  out += ']';
}

namespace {

// The body of a request; [*messages_at, *messages_end) is its "messages"
// array.
std::string write_request_body(const Model& m, const Conversation& c, std::size_t* messages_at,
                               std::size_t* messages_end) {
  // Written as a DOM's compact dump would write it (kevo/core/json_text.hpp):
  // members in key order, no copy of the conversation in between.
  namespace jt = json_text;
  std::size_t size = 160 + m.model.size() + c.system.size();
  for (const auto& x : c.messages) size += x.content.size() + 32;
  std::string body;
  body.reserve(size);
  body += "{\"max_tokens\":";
  jt::append_number(body, m.max_tokens);
  body += ",\"messages\":";
  *messages_at = body.size();
  // OpenAI: the system prompt is the first message; Anthropic: a member.
  append_messages(body, c, m.provider == Provider::openai);
  *messages_end = body.size();
  body += ",\"model\":";
  jt::append_string(body, m.model);
  if (m.provider != Provider::openai && !c.system.empty()) {
    body += ",\"system\":";
    jt::append_string(body, c.system);
  }
  body += ",\"temperature\":";
  jt::append_number(body, m.temperature);
  body += '}';
  return body;
}

}  // namespace

std::string request_body(const Model& m, const Conversation& c) {
  std::size_t at = 0, end = 0;
  return write_request_body(m, c, &at, &end);
}

namespace {

// An OpenAI chat completion of the usual layout read without a DOM (the
// reply is a kilobyte or more): its first choice's message content and the
// usage counts, exactly as parse_response's DOM reading would give them.
// False for anything else (not JSON, a refusal, a filtered or empty content,
// a member of an unexpected type, a token count that is not an integer):
// the DOM reading decides those.
bool read_openai_reply(std::string_view body, ParsedReply& r) {
  json_text::Cursor c(body);
  std::string key, key2, content, refusal, finish;
  std::int64_t in = 0, out = 0;
  bool have_choice = false, have_content = false;
  if (!c.enter_object()) return false;
  // Repeated keys: the last one counts, as in a DOM.
  while (c.member(key)) {
    if (key == "usage") {
      in = out = 0;
      if (c.peek() != '{') {
        if (!c.skip()) return false;
        continue;
      }
      c.enter_object();
      while (c.member(key2)) {
        if (key2 == "prompt_tokens") {
          if (!c.integer(in)) return false;
        } else if (key2 == "completion_tokens") {
          if (!c.integer(out)) return false;
        } else if (!c.skip()) {
          return false;
        }
      }
    } else if (key == "choices") {
      have_choice = have_content = false;
      refusal.clear();
      finish.clear();
      if (!c.enter_array()) return false;
      while (c.element()) {
        if (have_choice) {
          if (!c.skip()) return false;
          continue;
        }
        have_choice = true;
        bool have_message = false;
        if (!c.enter_object()) return false;
        while (c.member(key2)) {
          if (key2 == "message") {
            have_message = true;
            have_content = false;
            refusal.clear();
            if (!c.enter_object()) return false;
            std::string key3;
            while (c.member(key3)) {
              if (key3 == "content") {
                if (c.peek() != '"' || !c.string(content)) return false;
                have_content = true;
              } else if (key3 == "refusal") {
                if (c.peek() == '"') {
                  if (!c.string(refusal)) return false;
                } else {
                  refusal.clear();
                  if (!c.skip()) return false;
                }
              } else if (!c.skip()) {
                return false;
              }
            }
          } else if (key2 == "finish_reason") {
            if (c.peek() != '"' || !c.string(finish)) return false;
          } else if (!c.skip()) {
            return false;
          }
        }
        if (!have_message) return false;
      }
      if (!have_choice) return false;
    } else if (!c.skip()) {
      return false;
    }
  }
  if (!c.finish() || !have_choice || !have_content || content.empty() || !refusal.empty() ||
      finish == "content_filter")
    return false;
  r.input_tokens = in;
  r.output_tokens = out;
  r.text = std::move(content);
  return true;
}

}  // namespace

ParsedReply parse_response(Provider p, const std::string& raw_body) {
  ParsedReply r;
  // A server may send bytes that are not UTF-8 (a model's broken token):
  // they become U+FFFD, so the reply is still read (docs/verdicts.md, "Text
  // from candidates").
  std::string fixed;
  if (!is_clean_utf8(raw_body, kStoredText)) fixed = sanitize_utf8(raw_body, kStoredText);
  const std::string& body = fixed.empty() ? raw_body : fixed;
  if (p == Provider::openai && read_openai_reply(body, r)) {
    if (!is_clean_utf8(r.text, kStoredText)) r.text = sanitize_utf8(r.text, kStoredText);
    r.ok = true;
    return r;
  }
  r = ParsedReply{};
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    r.error = "invalid JSON in reply: " + snippet(body);
    return r;
  }
  try {
    if (p == Provider::openai) {
      if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
        r.input_tokens = u->value("prompt_tokens", std::int64_t{0});
        r.output_tokens = u->value("completion_tokens", std::int64_t{0});
      }
      auto ch = j.find("choices");
      if (ch == j.end() || !ch->is_array() || ch->empty()) {
        r.error = "empty choices in reply";
        return r;
      }
      const json& msg = (*ch)[0].at("message");
      if (auto ref = msg.find("refusal"); ref != msg.end() && ref->is_string() && !ref->get<std::string>().empty()) {
        r.error = "refusal: " + snippet(ref->get<std::string>());
        return r;
      }
      if ((*ch)[0].value("finish_reason", std::string()) == "content_filter") {
        r.error = "refusal: content filter";
        return r;
      }
      const auto c = msg.find("content");
      if (c == msg.end() || !c->is_string() || c->get<std::string>().empty()) {
        r.error = "empty reply content";
        return r;
      }
      r.text = c->get<std::string>();
    } else {
      if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
        r.input_tokens = u->value("input_tokens", std::int64_t{0});
        r.output_tokens = u->value("output_tokens", std::int64_t{0});
      }
      if (j.value("stop_reason", std::string()) == "refusal") {
        r.error = "refusal: stop_reason refusal";
        return r;
      }
      auto content = j.find("content");
      if (content == j.end() || !content->is_array() || content->empty()) {
        r.error = "empty content in reply";
        return r;
      }
      for (const auto& part : *content)
        if (part.value("type", std::string()) == "text") r.text += part.value("text", std::string());
      if (r.text.empty()) {
        r.error = "empty reply content";
        return r;
      }
    }
  } catch (const json::exception& e) {
    r.error = std::string("unexpected reply layout: ") + e.what();
    return r;
  }
  // JSON escapes can still carry NUL ("\u0000"): the reply goes into
  // sources and the lineage.
  if (!is_clean_utf8(r.text, kStoredText)) r.text = sanitize_utf8(r.text, kStoredText);
  r.ok = true;
  return r;
}

bool retryable_status(int s) {
  if (s == 408 || s == 409 || s == 425 || s == 429) return true;
  return s >= 500 && s != 501 && s != 505;
}

// ---- reply cache -----------------------------------------------------------

ReplyCache::ReplyCache(CacheMode mode, fs::path dir) : mode_(mode), dir_(std::move(dir)) {}

namespace {

json key_json(const Model& m, const CacheKey& k) {
  return {{"provider", m.provider_label}, {"model", m.model},       {"temperature", m.temperature},
          {"max_tokens", m.max_tokens},   {"task", k.task},         {"id", k.id},
          {"op", k.op},                   {"parents", k.parents},   {"repair_of", k.repair_of},
          {"repair_turn", k.repair_turn}, {"sample", k.sample}};
}

json conversation_json(const Conversation& c) {
  json msgs = json::array();
  for (const auto& x : c.messages) msgs.push_back({{"role", x.role}, {"content", x.content}});
  return {{"system", c.system}, {"messages", msgs}};
}

}  // namespace

std::string describe(const Model& m, const CacheKey& k) {
  std::string parents;
  for (auto p : k.parents) parents += (parents.empty() ? "" : ", ") + std::to_string(p);
  std::string s = fmt::format("task '{}', candidate {}, operator {}, parents [{}]", k.task, k.id, k.op, parents);
  if (k.repair_of >= 0) s += fmt::format(", repair {} of candidate {}", k.repair_turn, k.repair_of);
  return s + fmt::format(", sample {}, model '{}' ({} {}, temperature {}, max_tokens {})", k.sample, m.name,
                         m.provider_label, m.model, m.temperature, m.max_tokens);
}

std::string ReplyCache::key(const Model& m, const CacheKey& k) {
  const std::string text = key_json(m, k).dump(-1, ' ', false, json::error_handler_t::replace);
  // Two independent 64-bit hashes: 128 bits make accidental collisions moot.
  return hex64(fnv1a64(text)) + hex64(fnv1a64(text, 0x84222325cbf29ce4ULL));
}

std::optional<ReplyCache::Entry> ReplyCache::lookup(const std::string& key) const {
  if (mode_ == CacheMode::off || mode_ == CacheMode::record) return std::nullopt;
  const fs::path file = dir_ / key.substr(0, 2) / (key + ".json");
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("text") || !j["text"].is_string())
    throw Failure("reply cache entry is corrupt: " + file.string());
  Entry e;
  e.reply.ok = true;
  e.reply.text = j.at("text").get<std::string>();
  e.reply.input_tokens = j.value("input_tokens", std::int64_t{0});
  e.reply.output_tokens = j.value("output_tokens", std::int64_t{0});
  e.reply.cached = true;
  e.reply.cache_key = key;
  if (const auto p = j.find("prompt"); p != j.end() && p->is_object()) {
    e.prompt.system = p->value("system", "");
    for (const auto& x : p->value("messages", json::array()))
      e.prompt.messages.push_back({x.value("role", ""), x.value("content", "")});
  }
  return e;
}

void ReplyCache::store(const std::string& key, const CacheKey& parts, const Conversation& prompt,
                       const ChatResult& r) const {
  if (mode_ != CacheMode::record && mode_ != CacheMode::replay_or_call) return;
  const fs::path dir = dir_ / key.substr(0, 2);
  fs::create_directories(dir);
  // The key's parts ride along (model, ids) so that a person can tell what
  // an entry answered; the API key is not among them.
  json k = key_json(Model{}, parts);
  for (const char* f : {"provider", "model", "temperature", "max_tokens"}) k.erase(f);
  const json j = {{"text", r.text},     {"input_tokens", r.input_tokens}, {"output_tokens", r.output_tokens},
                  {"model", r.model},   {"key", k},                       {"prompt", conversation_json(prompt)}};
  const fs::path final_path = dir / (key + ".json");
  const fs::path tmp = final_path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << j.dump(-1, ' ', false, json::error_handler_t::replace);
    if (!out) throw Failure("cannot write reply cache entry " + tmp.string());
  }
  fs::rename(tmp, final_path);   // readers never see half an entry
}

// ---- client ----------------------------------------------------------------

struct Client::Job {
  std::size_t model = 0;
  std::int64_t input_bound = 0;   // of the conversation (the budget's reservation)
  Conversation conversation;      // kept for the reply cache only (when one is used)
  std::string body;
  std::size_t prompt_at = 0, prompt_size = 0;   // the messages array in `body` (ChatResult::prompt_json)
  CacheKey key_parts;
  std::string cache_key;
  int attempts = 0;
  double started = 0.0;
  double not_before = 0.0;     // next attempt's earliest start
  bool running = false;
  ChatResult partial;          // usage summed over attempts
};

// One easy handle and what it needs, kept for the next request when a
// transfer ends (a fresh handle per request cost an allocation and clearing
// of libcurl's state, and the headers built again). The multi handle keeps
// the connections either way.
struct Client::Transfer {
  std::uint64_t ticket = 0;
  EasyHandle easy;
  std::size_t model = static_cast<std::size_t>(-1);   // whose URL and headers these are
  std::string url;
  HeaderList headers;
  std::string response;
  std::int64_t reserved_tokens = 0;
  double reserved_usd = 0.0;
};

Client::Client(std::vector<Model> models, ClientOptions options, BudgetLimits budget,
               std::shared_ptr<ReplyCache> cache)
    : models_(std::move(models)), options_(options), budget_(budget), cache_(std::move(cache)) {
  global_init();
  multi_ = curl_multi_init();
  if (!multi_) throw Failure("curl_multi_init returned null");
  active_.assign(models_.size(), 0);
  no_proxy_env_ = !proxy_in_environment();
}

Client::~Client() {
  for (auto& [h, t] : transfers_) curl_multi_remove_handle(static_cast<CURLM*>(multi_), static_cast<CURL*>(h));
  transfers_.clear();
  idle_.clear();
  curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

std::uint64_t Client::submit(std::size_t model, const Conversation& conversation, CacheKey key) {
  if (model >= models_.size()) throw Failure(fmt::format("llm client: no model {}", model));
  const std::uint64_t ticket = next_ticket_++;
  auto job = std::make_unique<Job>();
  job->model = model;
  job->started = now_s();
  job->partial.model = models_[model].name;
  if (cache_ && cache_->mode() != CacheMode::off) job->cache_key = ReplyCache::key(models_[model], key);
  if (cache_ && (cache_->mode() == CacheMode::replay || cache_->mode() == CacheMode::replay_or_call)) {
    if (auto hit = cache_->lookup(job->cache_key)) {
      // The key does not hold the prompt: a prompt that differs from the
      // recorded one (other measured timings in it) still gets the recorded
      // reply, and is counted.
      const bool same = hit->prompt.system == conversation.system &&
                        hit->prompt.messages.size() == conversation.messages.size() &&
                        std::equal(conversation.messages.begin(), conversation.messages.end(),
                                   hit->prompt.messages.begin(), [](const Message& a, const Message& b) {
                                     return a.role == b.role && a.content == b.content;
                                   });
      hit->reply.model = models_[model].name;
      hit->reply.prompt_drifted = !same;
      ++stats_.replayed;
      stats_.drifted += same ? 0 : 1;
      done_.emplace_back(ticket, std::move(hit->reply));
      return ticket;
    }
    if (cache_->mode() == CacheMode::replay) {
      // Never a silent run of failures: the run stops (resumable, e.g. with
      // --set llm.cache.mode=replay_or_call).
      ++stats_.missed;
      ChatResult miss = job->partial;
      miss.error = fmt::format("replay: no cached reply in {} for {} (key {})", cache_->dir().string(),
                               describe(models_[model], key), job->cache_key);
      miss.failure = "replay_miss";
      miss.cache_key = job->cache_key;
      budget_.halt(miss.error + "; the run stops (continue with `kevo resume RUN_DIR --set llm.cache.mode=replay_or_call`"
                                " to ask the model for what the cache lacks)");
      done_.emplace_back(ticket, std::move(miss));
      return ticket;
    }
    ++stats_.called;
  }
  job->key_parts = std::move(key);
  std::size_t messages_end = 0;
  job->body = write_request_body(models_[model], conversation, &job->prompt_at, &messages_end);
  // An OpenAI body's messages are the whole prompt, the system one first:
  // the lineage record's "prompt" (ChatResult::prompt_json).
  if (models_[model].provider == Provider::openai) job->prompt_size = messages_end - job->prompt_at;
  job->input_bound = input_bound(conversation);
  if (!job->cache_key.empty()) job->conversation = conversation;
  jobs_.emplace(ticket, std::move(job));
  return ticket;
}

void Client::end_job(std::uint64_t ticket, ChatResult result) {
  auto it = jobs_.find(ticket);
  result.latency_s = now_s() - it->second->started;
  result.cache_key = it->second->cache_key;
  // The body goes along for the lineage record's prompt (the job ends here).
  if (it->second->prompt_size > 0) {
    result.request_body = std::move(it->second->body);
    result.prompt_at = it->second->prompt_at;
    result.prompt_size = it->second->prompt_size;
  }
  if (result.ok && cache_ && !it->second->cache_key.empty())
    cache_->store(it->second->cache_key, it->second->key_parts, it->second->conversation, result);
  done_.emplace_back(ticket, std::move(result));
  jobs_.erase(it);
}

void Client::start_attempt(std::uint64_t ticket, Job& job, double now) {
  const Model& m = models_[job.model];
  const std::int64_t tokens = job.input_bound + m.max_tokens;
  const double usd = cost(m, job.input_bound, m.max_tokens);
  const auto grant = budget_.reserve(tokens, usd);
  if (grant == Budget::Grant::wait) {
    // Stays queued; asked again in 5 ms (poll() sleeps until then instead
    // of spinning).
    job.not_before = now + 0.005;
    return;
  }
  if (grant == Budget::Grant::refused) {
    ChatResult r = job.partial;
    r.retries = std::max(0, job.attempts - 1);
    r.error = fmt::format("budget exhausted: {} (this request may need {} tokens)", budget_.summary(), tokens);
    r.failure = "budget";
    end_job(ticket, std::move(r));
    return;
  }
  std::unique_ptr<Transfer> t;
  if (idle_.empty()) {
    t = std::make_unique<Transfer>();
    if (no_proxy_env_) {
      // What libcurl would find in the environment for every transfer (no
      // proxy), said once for the handle: it reads five variables per
      // transfer otherwise.
      curl_easy_setopt(t->easy.h, CURLOPT_PROXY, "");
      curl_easy_setopt(t->easy.h, CURLOPT_NOPROXY, "");
    }
  } else {
    t = std::move(idle_.back());
    idle_.pop_back();
  }
  t->ticket = ticket;
  t->reserved_tokens = tokens;
  t->reserved_usd = usd;
  t->response.clear();
  CURL* h = t->easy.h;
  if (t->model != job.model) {
    t->model = job.model;
    // (A handle keeps its connections per socket path: a reused handle of
    // another model's path opens one of its own.)
    curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, m.unix_socket.empty() ? nullptr : m.unix_socket.c_str());
    t->url = m.base_url + (m.provider == Provider::openai ? "/chat/completions" : "/messages");
    t->headers = HeaderList();
    t->headers.add("Content-Type: application/json");
    t->headers.add("Expect:");   // no 100-continue round trip
    add_auth_headers(t->headers, m);
  }
  curl_easy_setopt(h, CURLOPT_URL, t->url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->headers.list);
  // The job's body outlives the transfer: a job ends only after its
  // transfer left the multi handle.
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, job.body.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(job.body.size()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t->response);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_s * 1000));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout_s * 1000));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);       // timeouts without SIGALRM
  curl_easy_setopt(h, CURLOPT_PRIVATE, t.get());
  const CURLMcode rc = curl_multi_add_handle(static_cast<CURLM*>(multi_), h);
  if (rc != CURLM_OK) throw Failure(std::string("curl_multi_add_handle: ") + curl_multi_strerror(rc));
  ++job.attempts;
  job.running = true;
  job.not_before = now;
  ++active_[job.model];
  transfers_.emplace(h, std::move(t));
}

void Client::start_ready(double now) {
  for (auto& [ticket, job] : jobs_) {
    if (job->running || job->not_before > now) continue;
    if (active_[job->model] >= models_[job->model].concurrency) continue;
    start_attempt(ticket, *job, now);
    // end_job may have erased the job (budget); the map iterator of a
    // different element stays valid, but this one does not: restart.
    if (!jobs_.count(ticket)) return start_ready(now);
  }
}

void Client::finish_transfer(Transfer* t, int code) {
  CURL* h = t->easy.h;
  const std::uint64_t ticket = t->ticket;
  Job& job = *jobs_.at(ticket);
  const Model& m = models_[job.model];
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_off_t retry_after = -1;
  curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &retry_after);
  --active_[job.model];
  job.running = false;
  job.partial.http_status = static_cast<int>(status);

  bool retry = false;
  bool ok = false;
  bool fatal = false;
  std::string error, failure;
  ParsedReply parsed;
  if (code != CURLE_OK) {
    error = fmt::format("transport: {} ({}{})", curl_easy_strerror(static_cast<CURLcode>(code)), m.base_url,
                        m.unix_socket.empty() ? "" : " through " + m.unix_socket);
    failure = code == CURLE_OPERATION_TIMEDOUT ? "timeout" : "transport";
    retry = true;   // refused, reset, timed out, truncated: all transient
  } else if (status < 200 || status >= 300) {
    error = fmt::format("http {}: {}", status, snippet(redact_key(t->response, m)));
    retry = retryable_status(static_cast<int>(status));
    const HttpFailure f = classify_http_failure(static_cast<int>(status), t->response);
    failure = f.kind;
    fatal = f.fatal;
  } else {
    parsed = parse_response(m.provider, t->response);
    ok = parsed.ok;
    error = parsed.error;
    if (!ok) failure = reply_failure_kind(parsed.error);
    // A garbled 200 is the server's or the network's fault: try again. An
    // empty or refused answer is the model's: recorded, not retried.
    retry = !ok && parsed.error.rfind("invalid JSON", 0) == 0;
  }
  job.partial.input_tokens += parsed.input_tokens;
  job.partial.output_tokens += parsed.output_tokens;
  const double used = cost(m, parsed.input_tokens, parsed.output_tokens);
  job.partial.cost_usd += used;
  budget_.settle(t->reserved_tokens, t->reserved_usd, parsed.input_tokens + parsed.output_tokens, used);

  curl_multi_remove_handle(static_cast<CURLM*>(multi_), h);
  // Kept for the next request (t stays valid until then).
  const auto kept = transfers_.find(h);
  idle_.push_back(std::move(kept->second));
  transfers_.erase(kept);

  if (ok) {
    ChatResult r = job.partial;
    r.ok = true;
    r.text = std::move(parsed.text);
    r.retries = job.attempts - 1;
    end_job(ticket, std::move(r));
    return;
  }
  if (retry && job.attempts <= options_.max_retries) {
    double delay = std::min(options_.backoff_max_s, options_.backoff_initial_s * std::pow(2.0, job.attempts - 1));
    // Full jitter on the upper half, so that many ranks do not retry in step.
    jitter_state_ = jitter_state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    delay *= 0.5 + 0.5 * static_cast<double>(jitter_state_ >> 11) / 9007199254740992.0;
    if ((status == 429 || status == 503) && retry_after >= 0)
      delay = std::max(delay, std::min(static_cast<double>(retry_after), options_.backoff_max_s));
    job.not_before = now_s() + delay;
    job.partial.error = error;
    return;
  }
  ChatResult r = job.partial;
  r.error = error + (retry ? fmt::format(" (gave up after {} attempts)", job.attempts) : "");
  r.failure = failure;
  r.fatal = fatal;
  r.retries = job.attempts - 1;
  end_job(ticket, std::move(r));
}

std::vector<std::pair<std::uint64_t, ChatResult>> Client::poll(std::chrono::milliseconds max_wait) {
  const double deadline = now_s() + static_cast<double>(max_wait.count()) / 1000.0;
  auto* multi = static_cast<CURLM*>(multi_);
  while (true) {
    start_ready(now_s());
    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      void* priv = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
      finish_transfer(static_cast<Transfer*>(priv), msg->data.result);
    }
    start_ready(now_s());
    if (!done_.empty()) break;
    const double now = now_s();
    if (now >= deadline || jobs_.empty()) break;
    double wait = deadline - now;
    // Wake for a retry's backoff ending. A job that could start now and did
    // not waits for a model's free slot: a transfer ending frees one, and
    // curl_multi_poll wakes for that (a zero wait here spun a core while
    // requests queued beyond a model's concurrency).
    for (const auto& [ticket, job] : jobs_)
      if (!job->running && job->not_before > now) wait = std::min(wait, job->not_before - now);
    int fds = 0;
    curl_multi_poll(multi, nullptr, 0, static_cast<int>(std::ceil(wait * 1000.0)), &fds);
  }
  std::vector<std::pair<std::uint64_t, ChatResult>> out;
  out.swap(done_);
  return out;
}

std::string Client::connect_check(std::size_t model) const {
  const Model& m = models_.at(model);
  EasyHandle e;
  curl_easy_setopt(e.h, CURLOPT_URL, m.base_url.c_str());
  if (!m.unix_socket.empty()) curl_easy_setopt(e.h, CURLOPT_UNIX_SOCKET_PATH, m.unix_socket.c_str());
  curl_easy_setopt(e.h, CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt(e.h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_s * 1000));
  curl_easy_setopt(e.h, CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_easy_perform(e.h);
  if (rc == CURLE_OK) return {};
  return curl_easy_strerror(rc);
}

ModelsProbe Client::probe_models(std::size_t model) const {
  const Model& m = models_.at(model);
  EasyHandle e;
  HeaderList headers;
  add_auth_headers(headers, m);
  ModelsProbe out;
  const std::string url = m.base_url + "/models";
  curl_easy_setopt(e.h, CURLOPT_URL, url.c_str());
  if (!m.unix_socket.empty()) curl_easy_setopt(e.h, CURLOPT_UNIX_SOCKET_PATH, m.unix_socket.c_str());
  curl_easy_setopt(e.h, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(e.h, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(e.h, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(e.h, CURLOPT_WRITEDATA, &out.body);
  curl_easy_setopt(e.h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_s * 1000));
  // A listing is small: it never needs the generation timeout.
  curl_easy_setopt(e.h, CURLOPT_TIMEOUT_MS, static_cast<long>(std::min(options_.timeout_s, 30.0) * 1000));
  curl_easy_setopt(e.h, CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_easy_perform(e.h);
  if (rc != CURLE_OK) {
    out.transport_error = curl_easy_strerror(rc);
    return out;
  }
  long status = 0;
  curl_easy_getinfo(e.h, CURLINFO_RESPONSE_CODE, &status);
  out.http_status = static_cast<int>(status);
  if (out.body.size() > (1u << 20)) out.body.resize(1u << 20);
  out.body = redact_key(std::move(out.body), m);
  return out;
}

}  // namespace kevo::operators::llm
