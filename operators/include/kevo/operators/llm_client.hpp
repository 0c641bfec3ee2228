// The LLM client: chat requests to OpenAI-style (Chat Completions) and
// Anthropic (Messages) endpoints over libcurl's multi interface, so that many
// requests are in flight per rank without blocking the island loop. Retries
// with exponential backoff and jitter (honouring Retry-After on 429 and 503),
// a token and USD budget enforced before every attempt, and a content-addressed
// reply cache for record and replay. Request failures are values
// (ChatResult::ok == false), never exceptions.
#pragma once

#include "kevo/core/shared_budget.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kevo::operators::llm {

enum class Provider { openai, anthropic };   // "openai-compatible" speaks openai

struct Model {
  std::string name;               // label in the config and the lineage
  Provider provider = Provider::openai;
  std::string provider_label = "openai";
  std::string base_url;           // e.g. https://api.openai.com/v1 (no trailing slash)
  // A Unix-domain socket that the HTTP requests go through instead of TCP
  // (a server on this host: vLLM's --uds, llama-server's --host PATH.sock);
  // base_url then gives the scheme, Host header and path. "" = TCP.
  std::string unix_socket;
  std::string model;              // the provider's model id
  std::string api_key_env;        // environment variable holding the key ("" = none)
  double weight = 1.0;
  double usd_per_mtok_in = 0.0;   // price per million input tokens
  double usd_per_mtok_out = 0.0;
  int concurrency = 4;            // requests in flight at once
  double temperature = 0.7;
  int max_tokens = 4096;          // output tokens asked for (and reserved)
  // Read from the environment when the client starts; never logged, never
  // written to the config dump or the lineage.
  std::string api_key;
};

struct Message {
  std::string role;               // "user" or "assistant"
  std::string content;
};

struct Conversation {
  std::string system;
  std::vector<Message> messages;
};

struct ClientOptions {
  double connect_timeout_s = 10.0;
  double timeout_s = 300.0;       // whole request
  int max_retries = 4;            // attempts after the first
  double backoff_initial_s = 1.0;
  double backoff_max_s = 60.0;
};

struct BudgetLimits {
  std::int64_t tokens = 0;        // input + output tokens per run (all ranks); 0 = unlimited
  double usd = 0.0;               // per run (all ranks); 0 = unlimited
  bool stop_when_spent = true;    // "on_exhausted": "stop" the run, or "continue" without LLM requests
};

enum class CacheMode { off, record, replay, replay_or_call };
CacheMode cache_mode_from_string(const std::string& s);   // throws std::invalid_argument
std::string to_string(CacheMode m);

// One finished request: the reply text or why there is none, and what it cost.
struct ChatResult {
  bool ok = false;
  std::string text;               // the reply when ok
  std::string error;              // why not, when !ok ("http 401: ...", "budget exhausted", ...)
  std::string model;              // Model::name
  int http_status = 0;            // of the last attempt (0 = no HTTP answer)
  std::int64_t input_tokens = 0;  // as reported by the server (summed over attempts)
  std::int64_t output_tokens = 0;
  double latency_s = 0.0;         // from the first attempt's start to the end
  int retries = 0;                // attempts after the first
  double cost_usd = 0.0;          // charged to the run's budget
  bool cached = false;            // answered from the reply cache
  std::string cache_key;
  // Replay: the recorded prompt differs from the one this run built (e.g.
  // the parent's measured timings differ); the recorded reply is used anyway.
  bool prompt_drifted = false;
  // When !ok, what kind of failure (docs/llm.md#failures): auth, payment,
  // not_found, client, rate_limit, server, timeout, transport,
  // invalid_reply, empty, refusal, budget, replay_miss.
  std::string failure;
  // The failure will repeat for every request to this model (a rejected key,
  // a model the server does not have): the run stops at once.
  bool fatal = false;
  // The request's body, when one was made (not for a replayed reply), and
  // where in it the prompt is when the body spells the whole prompt as one
  // JSON array of messages, the system prompt first (an OpenAI-style server;
  // an Anthropic body holds the system prompt apart): prompt_json().
  std::string request_body;
  std::size_t prompt_at = 0, prompt_size = 0;
  // That array as a DOM's compact dump writes it (json_text.hpp), or "". The
  // lineage record's "prompt" is these bytes: the operator copies them
  // instead of escaping the prompt a second time.
  std::string_view prompt_json() const { return std::string_view(request_body).substr(prompt_at, prompt_size); }
};

// How a failed HTTP answer is classified (exposed for tests): its kind and
// whether every later request to the model would fail the same way (401,
// 402, 403, 404, 405, 501, and a 400/422 saying the model does not exist).
struct HttpFailure {
  std::string kind;
  bool fatal = false;
};
HttpFailure classify_http_failure(int status, const std::string& body);

// What GET {base_url}/models answered at the start-up probe.
struct ModelsProbe {
  std::string transport_error;    // "" when the server answered
  int http_status = 0;
  std::string body;
};

// Tokens and USD of a run, shared by every rank of a multi-rank run
// (docs/llm.md#budget). Every attempt reserves its worst case (input bytes,
// which bound the token count, plus max_tokens) before it is sent, and the
// reservation is replaced by the usage the server reports.
//
// One rank: an attempt goes when its reservation fits under the limit next to
// what is used and reserved; it waits while only reservations of requests in
// flight are in the way, and is refused (the budget is spent) when it does
// not fit next to what is used.
//
// Several ranks: each statistics round sums every rank's used and reserved
// amounts; what is left of the run's budget is granted to the ranks with a
// waiting request (their first waiting reservation, in a rotating rank
// order), the rest split evenly, and each rank then reserves only within its
// own allowance (what it had at the round plus its grant). While a round is
// open a rank reserves nothing new. The allowances of all ranks add up to the
// limit, so the budget holds strictly; only a server reporting more tokens
// than an attempt reserved can push usage past it, by that excess.
class Budget final : public SharedBudget {
 public:
  enum class Grant { ok, wait, refused };
  explicit Budget(BudgetLimits limits);
  // Reserves `tokens` and `usd` when they fit (ok); wait: not now, ask again
  // later; refused: they do not fit in what the run has left (from then on
  // every request is refused).
  Grant reserve(std::int64_t tokens, double usd);
  // Replaces a reservation with what was actually used.
  void settle(std::int64_t reserved_tokens, double reserved_usd, std::int64_t used_tokens, double used_usd);
  // This rank, this session.
  std::int64_t used_tokens() const { return static_cast<std::int64_t>(used_[0]); }
  double used_usd() const { return used_[1]; }
  // The whole run as this rank knows it (earlier sessions, other ranks at the
  // last round, this rank now).
  std::int64_t run_tokens() const { return static_cast<std::int64_t>(run_used(0)); }
  double run_usd() const { return run_used(1); }
  const BudgetLimits& limits() const { return limits_; }

  // SharedBudget
  std::string name() const override { return "llm"; }
  void start_shared(int rank, int ranks) override;
  std::size_t width() const override;
  void open_round(double* contribution) override;
  void close_round(const double* sums) override;
  bool exhausted() const override { return exhausted_; }
  bool stop_when_exhausted() const override { return limits_.stop_when_spent || !failure_.empty(); }
  std::string summary() const override;
  void restore(const std::vector<std::string_view>& records) override;
  std::string failure() const override { return failure_; }

  // Stops the run with an error (a replay missed a recorded reply): every
  // later request is refused, the stop travels to the other ranks with the
  // next round, and the run exits non-zero with `why`.
  void halt(std::string why);
  std::string stop_advice(const std::string& run_dir) const override {
    if (!failure_.empty())
      return "continue with `kevo resume " + run_dir + " --set llm.cache.mode=replay_or_call` to ask the model for what the cache lacks";
    return "raise the budget and continue with `kevo resume " + run_dir + " --set llm.budget.tokens=...`";
  }

 private:
  static constexpr int kQ = 2;   // quantities: tokens, USD
  bool limited(int q) const { return limit_[q] > 0.0; }
  double run_used(int q) const { return prior_[q] + others_used_[q] + used_[q]; }
  BudgetLimits limits_;
  double limit_[kQ] = {0, 0};
  double used_[kQ] = {0, 0}, reserved_[kQ] = {0, 0};
  double prior_[kQ] = {0, 0};          // earlier sessions (resume)
  double others_used_[kQ] = {0, 0};    // other ranks, at the last round
  double cap_[kQ] = {0, 0};            // shared: this rank's allowance (used + reserved)
  double at_open_[kQ] = {0, 0};        // used + reserved when the round opened
  double used_at_open_[kQ] = {0, 0};
  double demand_[kQ] = {0, 0};         // first waiting reservation since the last round
  bool wanting_ = false, exhausted_ = false, shared_ = false, round_open_ = false;
  std::string failure_;                // halt(): why the run stops with an error
  int rank_ = 0, ranks_ = 1;
  std::uint64_t rounds_ = 0;
};

// What a recorded reply is found by (docs/llm.md#record-and-replay): who
// asked for it, never what the prompt says, so measured values that enter a
// prompt (the parent's timings) do not change the key. With the model's
// provider, id, temperature and max_tokens.
struct CacheKey {
  std::string task;                    // the task's name
  std::uint64_t id = 0;                // the child the request is made for
  std::string op;                      // the operator's name
  std::vector<std::uint64_t> parents;  // the child's parents' ids, in order
  std::int64_t repair_of = -1;         // llm_fix: the repaired candidate (-1: none)
  int repair_turn = 0;                 // llm_fix: 1 for the first repair of a conversation
  int sample = 0;                      // the request's index within the child (llm_analyst: 0 review, 1 rewrite)
};
// "task 'x', candidate 12, operator llm_rewrite, parents [3], sample 0, model 'm'" (for errors).
std::string describe(const Model& m, const CacheKey& k);

// Replay counts of one client (one rank).
struct CacheStats {
  std::int64_t replayed = 0;           // requests answered from the cache
  std::int64_t drifted = 0;            // of them: the recorded prompt differed from the new one
  std::int64_t missed = 0;             // replay: requests the cache had no reply for
  std::int64_t called = 0;             // replay_or_call: misses sent to the model
};

// The reply cache: one JSON file per reply, named by a hash of the CacheKey
// and the model; it holds the reply and the prompt it answered, so that a
// replay can tell a drifted prompt.
class ReplyCache {
 public:
  ReplyCache(CacheMode mode, std::filesystem::path dir);
  CacheMode mode() const { return mode_; }
  const std::filesystem::path& dir() const { return dir_; }
  static std::string key(const Model& m, const CacheKey& k);
  struct Entry {
    ChatResult reply;
    Conversation prompt;               // what the reply answered
  };
  std::optional<Entry> lookup(const std::string& key) const;
  void store(const std::string& key, const CacheKey& parts, const Conversation& prompt, const ChatResult& r) const;

 private:
  CacheMode mode_;
  std::filesystem::path dir_;
};

// Builds the HTTP body of a request (exposed for tests).
std::string request_body(const Model& m, const Conversation& c);
// Appends the conversation's messages as a JSON array of {"content", "role"}
// objects, the system prompt first when `with_system` and it is not empty,
// as a DOM's compact dump writes it (an OpenAI body's "messages", a lineage
// record's "prompt").
void append_messages(std::string& out, const Conversation& c, bool with_system);
// Parses a 2xx body: text and usage, or an error ("invalid JSON", "empty
// choices", "refusal: ..."). Exposed for tests.
struct ParsedReply {
  bool ok = false;
  std::string text, error;
  std::int64_t input_tokens = 0, output_tokens = 0;
};
ParsedReply parse_response(Provider p, const std::string& body);
// True for HTTP statuses worth retrying (408, 409, 425, 429, 5xx but 501/505).
bool retryable_status(int status);

class Client {
 public:
  Client(std::vector<Model> models, ClientOptions options, BudgetLimits budget,
         std::shared_ptr<ReplyCache> cache = nullptr);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::vector<Model>& models() const { return models_; }
  const Budget& budget() const { return budget_; }
  Budget& budget() { return budget_; }

  // Queues a request; returns its ticket. Never blocks. `key` finds its
  // reply in the cache (record and replay modes). A replay that misses
  // halts the budget: the run stops with an error naming the cache folder
  // and the key.
  std::uint64_t submit(std::size_t model, const Conversation& conversation, CacheKey key = {});
  const CacheStats& cache_stats() const { return stats_; }
  const ReplyCache* cache() const { return cache_.get(); }
  // Drives the transfers for up to max_wait; returns the requests that ended.
  std::vector<std::pair<std::uint64_t, ChatResult>> poll(std::chrono::milliseconds max_wait);
  std::size_t in_flight() const { return jobs_.size() + done_.size(); }

  // A TCP connect to the model's host (no request, no key used): "" when it
  // answers, else the reason.
  std::string connect_check(std::size_t model) const;
  // One authenticated GET {base_url}/models (OpenAI, Anthropic and the
  // OpenAI-compatible servers list their models there; no tokens are spent).
  ModelsProbe probe_models(std::size_t model) const;

 private:
  struct Job;
  struct Transfer;
  void start_ready(double now);
  void start_attempt(std::uint64_t ticket, Job& job, double now);
  void finish_transfer(Transfer* t, int curl_code);
  void end_job(std::uint64_t ticket, ChatResult result);

  std::vector<Model> models_;
  ClientOptions options_;
  Budget budget_;
  std::shared_ptr<ReplyCache> cache_;
  void* multi_ = nullptr;                      // CURLM*
  std::uint64_t next_ticket_ = 1;
  std::map<std::uint64_t, std::unique_ptr<Job>> jobs_;
  std::map<void*, std::unique_ptr<Transfer>> transfers_;   // CURL* -> transfer
  std::vector<std::unique_ptr<Transfer>> idle_;            // ended transfers, kept for the next request
  std::vector<int> active_;                    // per model
  std::vector<std::pair<std::uint64_t, ChatResult>> done_;
  CacheStats stats_;
  std::uint64_t jitter_state_ = 0x9e3779b97f4a7c15ULL;
  // No proxy variable in the environment: every transfer is told so, and
  // libcurl does not read the environment again for each one.
  bool no_proxy_env_ = false;
};

}  // namespace kevo::operators::llm
