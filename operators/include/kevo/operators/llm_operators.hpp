// LLM mutation operators and the service they share: the "llm" config
// section (models, budget, cache, prompts, knowledge), prompt templates with
// named slots, knowledge retrieval (BM25 over snippets), and the operators
// llm_rewrite, llm_diff, llm_crossover, llm_analyst and llm_param_hint.
// Operators never run candidate code; they only make sources.
#pragma once

#include "kevo/operators/llm_local_server.hpp"

#include "kevo/core/mutation_operator.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/operators/llm_client.hpp"
#include "kevo/operators/llm_health.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <deque>
#include <initializer_list>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kevo::operators::llm {

// Knowledge snippets of one backend: a markdown file whose "## " headings
// start snippets. retrieve() ranks them by BM25 against a query (the task
// description and the current feedback, e.g. a compiler error) and returns
// the best ones that fit in `max_tokens` (4 bytes a token).
class Knowledge {
 public:
  struct Snippet {
    std::string title, text;
  };
  void add_file(const std::filesystem::path& file);
  void add(Snippet s);
  // Snippets whose title starts with `skip_title` (when not empty) are left out.
  std::vector<const Snippet*> retrieve(const std::string& query, std::size_t max_tokens,
                                       const std::string& skip_title = "") const;
  std::size_t size() const { return snippets_.size(); }

 private:
  std::vector<Snippet> snippets_;
  std::vector<std::map<std::string, int>> tf_;
  std::vector<std::size_t> len_;
};

std::vector<std::string> tokenize(const std::string& text);

// The names a template may use, in the order of Slot.
const std::vector<std::string>& template_slots();
enum class Slot : std::size_t {
  task_name, task_description, signature, visible_shapes, parent_source, parent_verdict, parent2_source,
  parent2_verdict, feedback, inspirations, hardware, knowledge, recommendations, search_space, backend, profile,
  roofline, libraries, reference_source, sizes
};
inline constexpr std::size_t kSlotCount = 20;

// The values of a prompt's slots: one text per name of template_slots(), ""
// for a slot never set (rendered as nothing). A fixed table, not a map: a
// prompt fills every slot, several times a candidate.
class Slots {
 public:
  Slots() = default;
  Slots(std::initializer_list<std::pair<std::string_view, std::string>> values);
  std::string& operator[](Slot s) { return values_[static_cast<std::size_t>(s)]; }
  const std::string& operator[](Slot s) const { return values_[static_cast<std::size_t>(s)]; }
  // By name; throws std::invalid_argument for a name not in template_slots().
  std::string& operator[](std::string_view name) { return values_[index(name)]; }
  static std::size_t index(std::string_view name);

 private:
  std::array<std::string, kSlotCount> values_;
};

// Prompt templates: text with {{slot}} names. Unknown slots are an input error
// when the template is loaded, so a typo never sends "{{parnet_source}}".
// A slot alone in a fenced block (a line of three or more backticks before
// it, the closing run right after it: "```cpp\n{{parent_source}}```") gets
// fences longer than any run of backticks in its value, so that a source
// holding a fence cannot close the block and write text of the prompt's own
// shape after it (red team 22).
class Template {
 public:
  static Template load(const std::filesystem::path& file);
  static Template from_text(std::string text, std::string origin);
  std::string render(const Slots& slots) const;

 private:
  struct Part {
    std::size_t at, end;   // "{{slot}}" spans [at, end) of text_
    std::size_t slot;      // its index in template_slots()
    // Fenced: the opening run of backticks at [open, open + fence) of
    // text_ and the closing one at [end, end + fence); fence 0: not fenced.
    std::size_t open = 0, fence = 0;
  };
  std::string text_, origin_;
  std::vector<Part> parts_;
};

struct ServiceConfig {
  std::vector<Model> models;
  ClientOptions client;
  BudgetLimits budget;
  CacheMode cache_mode = CacheMode::off;
  std::filesystem::path cache_dir;
  std::filesystem::path prompts_dir;
  std::filesystem::path knowledge_dir;
  std::size_t knowledge_tokens = 600;
  std::size_t inspiration_chars = 6000;   // of inspiration sources per prompt
  std::string hardware;                   // "" = described from this machine
  bool probe = true;                      // authenticated GET {base_url}/models at start
  HealthOptions health;                   // max_failure_share, failure_window
  // A server kevo starts itself; models whose base_url is "local" talk to it.
  std::optional<LocalServerConfig> local_server;
  // false: a config only being checked (kevo campaign plan): the local
  // server is not started (its models get a placeholder URL, as in a replay).
  bool start_local_server = true;
  nlohmann::json effective;
  // Where the section is, for errors about the files it points at.
  std::string source_file;                // the config file
  std::string pointer;                    // the section's JSON pointer ("/llm")
};

// Parses the "llm" section. `base` anchors relative paths (the config
// file's folder). Throws InputError.
ServiceConfig parse_service_config(StrictObject& o, const std::filesystem::path& base);

// What the LLM operators share: one client (one curl multi handle), the
// budget, the cache, templates and knowledge. Results are routed to the
// operator that asked.
class Service {
 public:
  // Starts the local server first when the config has one (not in replay).
  explicit Service(ServiceConfig config);
  // The local server kevo started, if any.
  const LocalServer* local_server() const { return local_server_.get(); }
  const ServiceConfig& config() const { return config_; }
  Client& client() { return *client_; }

  // Checks once, before anything is written, that every model with a
  // positive weight answers GET {base_url}/models and accepts its key:
  // unreachable is a Failure naming the model and URL, HTTP 401/403 an
  // InputError naming the key's variable; where the server cannot say (no
  // listing, a 5xx) a note on stderr says the key is checked by the first
  // request (docs/llm.md#start-up-probe).
  void probe();
  // The run-wide stop rules over the requests' outcomes (a SharedBudget).
  const std::shared_ptr<Health>& health() const { return health_; }

  std::size_t pick_model(Rng& rng) const;
  std::uint64_t submit(const void* owner, std::size_t model, const Conversation& c, CacheKey key);
  std::vector<std::pair<std::uint64_t, ChatResult>> poll(const void* owner, std::chrono::milliseconds max_wait);
  std::size_t in_flight(const void* owner) const;
  // What the reply cache did in this run, for the lineage and the console
  // at the end ("" when the cache is off): replies replayed, prompts that
  // drifted from the recorded ones, misses.
  std::string cache_note() const;

  const Template& prompt(const std::string& name);   // loads <prompts_dir>/<name>.md once
  // An operator template for tasks of `backend`: <name>_<backend>.md where
  // the prompts folder has one, else the shared <name>.md.
  const Template& prompt(const std::string& name, const std::string& backend);
  const Knowledge& knowledge(const std::string& backend);
  // The `knowledge` slot for a candidate of `task` judged `status` with
  // `feedback`: the snippets that BM25 ranks best within knowledge_tokens,
  // each as "### title", or "(none)". A compile error is looked up by the
  // compiler's text alone (the task's description would outweigh it); other
  // feedback with the task's description, leaving out the "Compile error"
  // snippets, which cannot apply to a kernel that compiled.
  std::string knowledge_text(const Task& task, const std::string& feedback, Status status);
  // Loads what the operators need for tasks of `backend`: the system prompt
  // <prompts_dir>/system_<backend>.md, the operator templates `templates`
  // (their <name>_<backend>.md where there is one) and, unless
  // knowledge_tokens is 0, the knowledge <knowledge_dir>/<backend>.md. Throws
  // InputError naming the config file, /llm/prompts_dir or /llm/knowledge_dir
  // and the missing or unreadable file, or the template with a bad slot.
  void prepare_backend(const std::string& backend, const std::vector<std::string>& templates = {});
  // The system prompt and knowledge files of tasks of `backend` named by the
  // backend's own config (a command backend: backend.command.prompts, paths
  // checked when that config was read) in place of the folders' files;
  // `pointer` is the key prepare_backend's errors then name.
  void set_backend_files(const std::string& backend, std::filesystem::path system_prompt,
                         std::filesystem::path knowledge, std::string pointer);
  // The `hardware` slot: the config's `hardware` text, else described for
  // the backend (hardware_text: a CUDA parent's GPU by the verdict's
  // `device`, the CPU of this machine otherwise).
  // Described once per backend, device and the backend's device.
  const std::string& hardware(const std::string& backend, const std::string& device) const;
  // Where the candidates of tasks of `backend` run, when its config says
  // (the torch backend: backend.torch.device, "cuda" or "cpu"): the
  // `hardware` and `roofline` slots describe that device. "" when unknown.
  void set_device(const std::string& backend, std::string device);
  std::string device(const std::string& backend) const;
  // Whether an enabled llm_analyst with a positive weight is in the config:
  // then profiler data goes to the analyst's review, else into the feedback
  // of the generation prompts.
  bool analyst_enabled() const { return analyst_enabled_; }
  void set_analyst_enabled() { analyst_enabled_ = true; }
  // The prompt texts that depend on the task alone (its signature, visible
  // shapes, libraries, sizes, search space; the roofline's counts per GPU),
  // made once per task object: a task does not change while a run prompts
  // for it. prompt_slots copies them.
  struct TaskTexts;
  TaskTexts& task_texts(const Task& task);

 private:
  std::unique_ptr<LocalServer> local_server_;   // first member: stopped last
  ServiceConfig config_;
  std::unique_ptr<Client> client_;
  std::shared_ptr<Health> health_;
  std::map<std::uint64_t, const void*> owner_of_;
  std::map<const void*, std::vector<std::pair<std::uint64_t, ChatResult>>> ready_;
  std::map<std::string, Template> prompts_;
  struct BackendFiles {
    std::filesystem::path system_prompt, knowledge;
    std::string pointer;
  };
  std::map<std::string, BackendFiles> backend_files_;   // backend -> files of its config
  std::map<std::string, std::string> template_of_;   // "<name>_<backend>" -> the template that serves it
  std::map<std::string, Knowledge> knowledge_;
  std::unordered_map<std::string, std::string> retrieved_;   // knowledge_text: backend, kind, query -> text
  // backend '\0' device '\0' the backend's device -> the `hardware` slot
  mutable std::map<std::string, std::string> hardware_;
  std::map<std::string, std::string> devices_;   // backend -> where its candidates run (set_device)
  bool probed_ = false;
  bool analyst_enabled_ = false;
  std::unordered_map<const Task*, std::shared_ptr<TaskTexts>> task_texts_;
};

enum class Kind { rewrite, diff, crossover, analyst, param_hint, fix };
// The operator templates a kind renders ("analyst": the review, then "rewrite").
const std::vector<std::string>& templates_of(Kind kind);

struct LlmOperatorOptions {
  Kind kind = Kind::rewrite;
  int inspirations = 2;          // inspiration sources in the prompt
  double slow_below = 1e300;     // analyst: only for parents under this speedup (else plain rewrite)
  int max_turns = 3;             // fix: repair turns per conversation
  std::size_t queue = 64;        // fix: failed candidates waiting for repair (oldest dropped)
};

// Builds every slot of the generation prompts for a request (exposed for
// tests: hidden shapes must never appear). The parent's profile appears once:
// in `profile` for the analyst's review (and then not in `feedback`), or, with
// no analyst enabled, in `feedback`; a CUDA parent without a profile gets its
// compiler register report in `feedback`.
Slots prompt_slots(const OperatorRequest& request, Service& service, std::size_t inspirations);

// Whether an analyst's reply asks for the profile of the kernel it leads to:
// a line "PROFILE: yes" (case, spaces and Markdown emphasis ignored).
bool asks_for_profile(const std::string& reply);

class LlmOperator final : public MutationOperator {
 public:
  LlmOperator(std::string name, std::shared_ptr<Service> service, LlmOperatorOptions options);
  ~LlmOperator() override;
  bool applicable(const Task& task) const override;
  bool deterministic() const override { return false; }
  std::size_t in_flight() const override { return service_->in_flight(this); }
  // fix: LLM-made candidates that failed to compile or gave wrong answers
  // are queued for repair; of a torch task also those that raised
  // (runtime_error, with the candidate's traceback) or were forbidden.
  void observe(const Candidate& c) override;

 protected:
  // The system prompt, the backend's own versions of this kind's templates
  // and the knowledge of the task's backend (Service::prepare_backend).
  void do_prepare(const Task& task) override;
  std::optional<OperatorOutcome> do_begin(const OperatorRequest& request) override;
  std::vector<OperatorOutcome> do_poll(std::chrono::milliseconds max_wait) override;

 private:
  struct Job;
  // The outcome, or nullopt when the conversation continues with job.conv.
  std::optional<OperatorOutcome> finish(Job& job, const ChatResult& r);
  void send(Job& job, std::uint64_t key);

  std::shared_ptr<Service> service_;
  LlmOperatorOptions options_;
  std::map<std::uint64_t, std::unique_ptr<Job>> jobs_;   // client ticket -> job
  struct Repair {
    std::uint32_t task = 0;
    std::uint64_t id = 0;        // the failed candidate
    int turn = 0;                // repair turns already in its conversation
    Conversation conv;           // up to and including its reply
    std::string feedback;
    Status status = Status::compile_error;   // its verdict
    std::string source;
  };
  std::deque<Repair> repairs_;
  // The tasks (by index) this operator was asked for that are torch tasks:
  // observe() sees candidates, not tasks.
  std::set<std::uint32_t> torch_tasks_;
};

}  // namespace kevo::operators::llm
