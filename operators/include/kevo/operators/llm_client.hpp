// The LLM client: chat requests to OpenAI-style (Chat Completions) and
// Anthropic (Messages) endpoints over libcurl's multi interface, so that many
// requests are in flight per rank without blocking the island loop. Retries
// with exponential backoff and jitter (honouring Retry-After on 429 and 503),
// a token and USD budget enforced before every attempt, and a content-addressed
// reply cache for record and replay. Request failures are values
// (ChatResult::ok == false), never exceptions.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kevo::operators::llm {

enum class Provider { openai, anthropic };   // "openai-compatible" speaks openai

struct Model {
  std::string name;               // label in the config and the lineage
  Provider provider = Provider::openai;
  std::string provider_label = "openai";
  std::string base_url;           // e.g. https://api.openai.com/v1 (no trailing slash)
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
  std::int64_t tokens = 0;        // input + output tokens per run; 0 = unlimited
  double usd = 0.0;               // per run; 0 = unlimited
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
};

// Tokens and USD of a run. Every attempt reserves its worst case (input
// bytes, which bound the token count, plus max_tokens) before it is sent; the
// attempt is refused when the reservation does not fit, so the limits hold
// whatever the server answers, retries included.
class Budget {
 public:
  explicit Budget(BudgetLimits limits) : limits_(limits) {}
  // Reserves `tokens` and `usd`; false (and nothing reserved) when they would
  // not fit under the limits.
  bool reserve(std::int64_t tokens, double usd);
  // Replaces a reservation with what was actually used.
  void settle(std::int64_t reserved_tokens, double reserved_usd, std::int64_t used_tokens, double used_usd);
  std::int64_t used_tokens() const { return used_tokens_; }
  double used_usd() const { return used_usd_; }
  const BudgetLimits& limits() const { return limits_; }

 private:
  BudgetLimits limits_;
  std::int64_t used_tokens_ = 0, reserved_tokens_ = 0;
  double used_usd_ = 0.0, reserved_usd_ = 0.0;
};

// Content-addressed reply cache: one JSON file per reply, named by a hash of
// model, parameters, the conversation and the sample index.
class ReplyCache {
 public:
  ReplyCache(CacheMode mode, std::filesystem::path dir);
  CacheMode mode() const { return mode_; }
  static std::string key(const Model& m, const Conversation& c, std::uint64_t sample);
  std::optional<ChatResult> lookup(const std::string& key) const;
  void store(const std::string& key, const ChatResult& r) const;

 private:
  CacheMode mode_;
  std::filesystem::path dir_;
};

// Builds the HTTP body of a request (exposed for tests).
std::string request_body(const Model& m, const Conversation& c);
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

  // Queues a request; returns its ticket. Never blocks.
  std::uint64_t submit(std::size_t model, Conversation conversation, std::uint64_t sample = 0);
  // Drives the transfers for up to max_wait; returns the requests that ended.
  std::vector<std::pair<std::uint64_t, ChatResult>> poll(std::chrono::milliseconds max_wait);
  std::size_t in_flight() const { return jobs_.size() + done_.size(); }

  // A TCP connect to the model's host (no request, no key used): "" when it
  // answers, else the reason.
  std::string connect_check(std::size_t model) const;

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
  std::vector<int> active_;                    // per model
  std::vector<std::pair<std::uint64_t, ChatResult>> done_;
  std::uint64_t jitter_state_ = 0x9e3779b97f4a7c15ULL;
};

}  // namespace kevo::operators::llm
