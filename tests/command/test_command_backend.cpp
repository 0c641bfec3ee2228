// The command backend driven against tests/command/scripted_evaluator.py:
// the config's checks, the conformance check of prepare(), every kind of
// evaluator misbehaviour (each a verdict, the backend still working), the
// compile stage and its cache, persistent evaluators and their restarts,
// and what a request carries (docs/command-backend.md).
#include "kevo/command/command_backend.hpp"
#include "kevo/core/error.hpp"
#include "kevo/core/task.hpp"
#include "kevo/sandbox/isolation.hpp"

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace kevo;
using kevo::command::CommandOptions;

namespace {

const fs::path kDir = KEVO_COMMAND_TEST_DIR;
const std::string kPython = KEVO_TEST_PYTHON;
const std::string kScript = (kDir / "scripted_evaluator.py").string();

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "kevo-cmd-test-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The backend's config object as a config file would hold it.
nlohmann::json base_config(const std::string& behaviour, const fs::path& log, bool persistent = false) {
  std::vector<std::string> argv = {kPython, kScript, "--behaviour", behaviour, "--log", log.string()};
  if (persistent) argv.push_back("--serve");
  return {{"source_file", "kernel.txt"},
          {"run", {{"argv", argv}, {"wall_seconds", 20}, {"persistent", persistent}}},
          {"cache_dir", ""},
          {"trials", 3}};
}

CommandOptions options_of(const nlohmann::json& j, const fs::path& dir) {
  StrictObject o(j, (dir / "config.json").string(), "/backend/command");
  return command::parse_command_options(o);
}

std::string input_error(const nlohmann::json& j, const fs::path& dir) {
  try {
    options_of(j, dir);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::shared_ptr<const Task> task() {
  static auto t = std::make_shared<const Task>(load_task(kDir / "task"));
  return t;
}

const std::string kSig = "kernel vadd(in a, in b, out out, int n)\n";

Verdict judge(Backend& b, const std::string& body, std::uint64_t seed = 7) {
  return b.evaluate(task(), kSig + body, seed);
}

std::vector<nlohmann::json> log_lines(const fs::path& log, const std::string& event) {
  std::vector<nlohmann::json> out;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("event", "") == event) out.push_back(std::move(j));
  }
  return out;
}

struct Fixture : ::testing::Test {
  TempDir tmp;
  fs::path log() const { return tmp.path / "log.jsonl"; }
  std::unique_ptr<Backend> make(const nlohmann::json& cfg) {
    auto b = command::make_command_backend(options_of(cfg, tmp.path));
    return b;
  }
  std::unique_ptr<Backend> prepared(const std::string& behaviour, bool persistent = false) {
    auto b = make(base_config(behaviour, log(), persistent));
    b->prepare(*task());
    return b;
  }
};

}  // namespace

// ---- config ----------------------------------------------------------------

TEST_F(Fixture, ConfigNamesAMissingCommandWithItsKey) {
  auto cfg = base_config("honest", log());
  cfg["run"]["argv"] = {"kevo-no-such-evaluator-anywhere"};
  const std::string e = input_error(cfg, tmp.path);
  EXPECT_NE(e.find("/backend/command/run/argv"), std::string::npos) << e;
  EXPECT_NE(e.find("not in PATH"), std::string::npos) << e;
}

TEST_F(Fixture, ConfigRefusesUnknownPlaceholdersKeysAndSecrets) {
  auto cfg = base_config("honest", log());
  cfg["run"]["argv"].push_back("{source}");   // a run has no {source}: the request names it
  EXPECT_NE(input_error(cfg, tmp.path).find("placeholders"), std::string::npos);
  cfg = base_config("honest", log());
  cfg["pass_env"] = {"OPENAI_API_KEY"};
  EXPECT_NE(input_error(cfg, tmp.path).find("/backend/command/pass_env"), std::string::npos);
  cfg = base_config("honest", log());
  cfg["env"] = {{"MY_TOKEN", "x"}};
  EXPECT_NE(input_error(cfg, tmp.path).find("/backend/command/env"), std::string::npos);
  cfg = base_config("honest", log());
  cfg["rn"] = {};
  EXPECT_NE(input_error(cfg, tmp.path).find("/backend/command/rn"), std::string::npos);
  cfg = base_config("honest", log());
  cfg["prompts"] = {{"system", "no-such-prompt.md"}, {"knowledge", "no-such-knowledge.md"}};
  EXPECT_NE(input_error(cfg, tmp.path).find("/backend/command/prompts/system"), std::string::npos);
  cfg = base_config("honest", log());
  cfg["run"]["accelerator"] = true;
  cfg["run"]["jobs"] = 2;
  EXPECT_NE(input_error(cfg, tmp.path).find("/backend/command/run/jobs"), std::string::npos);
}

TEST_F(Fixture, ConfineTakesABooleanOrExistingAbsolutePaths) {
  auto cfg = base_config("honest", log());
  EXPECT_FALSE(options_of(cfg, tmp.path).confine.on) << "off unless asked for";
  cfg["confine"] = true;
  EXPECT_TRUE(options_of(cfg, tmp.path).confine.on);
  cfg["confine"] = {{"read", {"{config_dir}"}}, {"write", {tmp.path.string()}}};
  const CommandOptions o = options_of(cfg, tmp.path);
  EXPECT_TRUE(o.confine.on);
  EXPECT_EQ(o.confine.read, std::vector<std::string>{tmp.path.string()});
  cfg["confine"] = {{"read", {"relative/path"}}};
  EXPECT_NE(input_error(cfg, tmp.path).find("/backend/command/confine/read"), std::string::npos);
  cfg["confine"] = {{"read", {(tmp.path / "no-such-folder").string()}}};
  EXPECT_NE(input_error(cfg, tmp.path).find("existing absolute"), std::string::npos);
  cfg["confine"] = {{"reed", {"/usr"}}};
  EXPECT_NE(input_error(cfg, tmp.path).find("/backend/command/confine/reed"), std::string::npos);
  cfg["confine"] = "yes";
  EXPECT_NE(input_error(cfg, tmp.path).find("/backend/command/confine"), std::string::npos);
}

// "confine": the evaluator (and so a candidate that it compiles or runs,
// e.g. an OpenCL kernel's #include) reads the system's trees and kevo's
// folders, not a file of the user's, the task's folder or the engine's
// /proc files; unconfined it reads them all (so the test can fail). The
// engine is not dumpable either way: its /proc/PID/environ (API keys) is
// out of reach of every process of the same user but root.
TEST_F(Fixture, AConfinedEvaluatorReadsNoFileOfTheUsersNorTheTasks) {
  {
    std::string why;
    const int fd = sandbox::make_ruleset({tmp.path.string()}, {"/usr"}, why);
    if (fd < 0) GTEST_SKIP() << "no Landlock here: " << why;
    ::close(fd);
  }
  TempDir home;
  const fs::path secret = home.path / "secret.txt";
  std::ofstream(secret) << "sk-not-a-real-key\n";
  const std::string engine_environ = "/proc/" + std::to_string(::getpid()) + "/environ";
  const std::vector<std::string> probes = {secret.string(), (kDir / "task" / "task.json").string(),
                                           engine_environ, "/usr/lib/os-release", "/etc/ld.so.cache"};
  std::string joined;
  for (const auto& p : probes) joined += (joined.empty() ? "" : ":") + p;
  for (const bool confined : {false, true}) {
    SCOPED_TRACE(confined ? "confined" : "unconfined");
    fs::remove(log());
    auto cfg = base_config("honest", log(), true);
    cfg["env"] = {{"KEVO_TEST_PROBE_READ", joined}};
    if (confined) cfg["confine"] = {{"write", {tmp.path.string()}}};
    auto b = make(cfg);
    b->prepare(*task());
    const Verdict v = judge(*b, "KEVO_TEST_CORRECT\n");
    EXPECT_EQ(v.status, Status::correct) << v.message;
    const auto lines = log_lines(log(), "request");
    ASSERT_FALSE(lines.empty());
    const nlohmann::json& r = lines.back().at("readable");
    EXPECT_EQ(r.at(secret.string()).get<bool>(), !confined);
    EXPECT_EQ(r.at((kDir / "task" / "task.json").string()).get<bool>(), !confined);
    EXPECT_TRUE(r.at("/etc/ld.so.cache").get<bool>());
    if (::geteuid() != 0) {
      EXPECT_FALSE(r.at(engine_environ).get<bool>()) << "the engine is not dumpable";
    }
    if (confined) {
      EXPECT_FALSE(r.at(engine_environ).get<bool>());
    }
  }
}

namespace {
std::atomic<int> g_urgent_signals{0};
void count_urgent_signal(int) { g_urgent_signals.fetch_add(1); }
}  // namespace

TEST_F(Fixture, AConfinedEvaluatorCannotSignalTheEngine) {
  // The attack: an evaluator (or a candidate's code that took over one, as
  // an OpenCL kernel's wild pointers could) signals the engine: SIGURG
  // here, counted; a SIGSTOP or SIGKILL would stop or end the run.
  // Unconfined it arrives; confined, Landlock's signal scope refuses it
  // (Linux 6.12+, Landlock ABI 6).
  struct sigaction on{}, before{};
  on.sa_handler = count_urgent_signal;
  sigemptyset(&on.sa_mask);
  ASSERT_EQ(::sigaction(SIGURG, &on, &before), 0);
  const int abi = sandbox::landlock_abi();
  for (const bool confined : {false, true}) {
    SCOPED_TRACE(confined ? "confined" : "unconfined");
    if (confined && abi < 6) {
      std::cout << "[ skipped ] confined: Landlock ABI " << abi << " has no signal scope\n";
      continue;
    }
    fs::remove(log());
    auto cfg = base_config("honest", log(), true);
    cfg["env"] = {{"KEVO_TEST_PROBE_SIGNAL", std::to_string(::getpid())}};
    if (confined) cfg["confine"] = {{"write", {tmp.path.string()}}};
    const int seen = g_urgent_signals.load();
    auto b = make(cfg);
    b->prepare(*task());
    const Verdict v = judge(*b, "KEVO_TEST_CORRECT\n");
    EXPECT_EQ(v.status, Status::correct) << v.message;
    const auto lines = log_lines(log(), "request");
    ASSERT_FALSE(lines.empty());
    const std::string outcome = lines.back().at("signalled").get<std::string>();
    if (confined) {
      EXPECT_EQ(outcome, "EPERM");
      EXPECT_EQ(g_urgent_signals.load(), seen) << "a confined evaluator's signal reached the engine";
    } else {
      EXPECT_EQ(outcome, "sent");
      for (int k = 0; k < 200 && g_urgent_signals.load() == seen; ++k) ::usleep(10000);
      EXPECT_GT(g_urgent_signals.load(), seen) << "the control: an unconfined evaluator's signal arrives";
    }
  }
  ::sigaction(SIGURG, &before, nullptr);
}

TEST(CommandTask, SignatureIsRequiredAndChecked) {
  TempDir tmp;
  fs::copy(kDir / "task", tmp.path / "t");
  auto manifest = nlohmann::json::parse(std::ifstream(tmp.path / "t" / "task.json"));
  manifest.erase("signature");
  std::ofstream(tmp.path / "t" / "task.json") << manifest.dump();
  try {
    load_task(tmp.path / "t");
    FAIL() << "a command task without a signature loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/signature"), std::string::npos) << e.what();
  }
  manifest["signature"] = "kernel vadd(in a, in b, out out, int64 n)";   // not in the sources
  std::ofstream(tmp.path / "t" / "task.json") << manifest.dump();
  try {
    load_task(tmp.path / "t");
    FAIL() << "sources without the signature loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/reference"), std::string::npos) << e.what();
  }
}

// ---- honest evaluator ------------------------------------------------------

TEST_F(Fixture, HonestEvaluatorJudgesAndKevoRecomputesTheSpeedup) {
  auto b = prepared("honest");
  Verdict v = judge(*b, "KEVO_TEST_CORRECT KEVO_TEST_NS=500\n");
  ASSERT_EQ(v.status, Status::correct) << v.message << v.feedback;
  EXPECT_NEAR(v.speedup, 4.0, 1e-9);                 // 2000 / 500 on both visible shapes
  EXPECT_DOUBLE_EQ(v.cand_median_ns, 1000.0);        // summed over the two visible shapes
  EXPECT_DOUBLE_EQ(v.ref_median_ns, 4000.0);
  EXPECT_GE(v.repeats, 1);
  EXPECT_NE(v.feedback.find("speedup 4x"), std::string::npos) << v.feedback;

  EXPECT_EQ(judge(*b, "KEVO_TEST_WRONG\n").status, Status::wrong_answer);
  EXPECT_EQ(judge(*b, "KEVO_TEST_CRASH\n").status, Status::runtime_error);
  EXPECT_EQ(judge(*b, "no marker at all\n").status, Status::compile_error);
}

// A profile: asked for by an operator (EvalRequest::profile) or picked by
// profile_every; the evaluator answers ncu's raw page (profile_ncu_csv) and
// kevo condenses it, headed by why it was taken (the torch judge's ncu
// profiles take this path: docs/torch.md#profiler).
Verdict judge_request(Backend& b, EvalRequest r) {
  const std::uint64_t id = r.id;
  b.submit(std::move(r));
  for (int i = 0; i < 600; ++i)
    for (auto& res : b.poll(std::chrono::milliseconds(100)))
      if (res.id == id) return res.verdict;
  ADD_FAILURE() << "no verdict for request " << id;
  return {};
}

TEST_F(Fixture, AProfileAskedForIsNcusPageCondensedAndSaysWhyItWasTaken) {
  auto b = prepared("honest");
  EvalRequest r{1, task(), kSig + "KEVO_TEST_CORRECT\n", 7, "llm_analyst: parent 3 has no profile"};
  Verdict v = judge_request(*b, r);
  ASSERT_EQ(v.status, Status::correct) << v.message;
  EXPECT_EQ(v.profile.rfind("[profiled: requested by llm_analyst: parent 3 has no profile]\n"
                            "kernel scripted_kernel(float*, int) grid (64, 1, 1) block (256, 1, 1): 12.3 us; "
                            "DRAM 81.5% of peak, SM 20.1% of peak; 32 registers/thread",
                            0),
            0u)
      << v.profile;
  // Not asked: no profile.
  EXPECT_EQ(judge_request(*b, {2, task(), kSig + "KEVO_TEST_CORRECT\n", 7, ""}).profile, "");

  // profile_on_request off: asking gets nothing; profile_every 2: every
  // second candidate is profiled, asked or not.
  auto opts = options_of(base_config("honest", log()), tmp.path);
  opts.profile_on_request = false;
  opts.profile_every = 2;
  auto c = command::make_command_backend(opts);
  c->prepare(*task());
  EXPECT_EQ(judge_request(*c, {3, task(), kSig + "KEVO_TEST_CORRECT\n", 7, "llm_analyst: asked"}).profile, "");
  const Verdict second = judge_request(*c, {4, task(), kSig + "KEVO_TEST_CORRECT\n", 7, ""});
  EXPECT_EQ(second.profile.rfind("[profiled: every 2-th timed candidate (profile.every)]\nkernel scripted_kernel", 0), 0u)
      << second.profile;
}

TEST_F(Fixture, HiddenShapeNamedByTheEvaluatorStaysOutOfFeedback) {
  auto b = prepared("leak_hidden");
  Verdict v = judge(*b, "KEVO_TEST_WRONG_HIDDEN\n");
  ASSERT_EQ(v.status, Status::wrong_answer) << v.message;
  ASSERT_TRUE(v.mismatch.has_value());
  EXPECT_EQ(v.mismatch->shape.rfind("hidden ", 0), 0u) << v.mismatch->shape;   // the lineage keeps it
  EXPECT_EQ(v.feedback.find("N=1"), std::string::npos) << v.feedback;          // the prompt does not
  EXPECT_EQ(v.message.find("N=1"), std::string::npos) << v.message;
  EXPECT_NE(v.feedback.find("a hidden test shape"), std::string::npos) << v.feedback;
}

TEST_F(Fixture, AFailureAtAHiddenShapeGivesNoneOfItsTextToTheFeedback) {
  // What a candidate's traceback carries at a hidden shape (its sizes) stays
  // in the verdict's message for the lineage; the feedback (the next
  // prompt) says only the status and that the shape was hidden.
  auto b = prepared("honest");
  const Verdict v = judge(*b, "KEVO_TEST_CRASH_HIDDEN\n");
  ASSERT_EQ(v.status, Status::runtime_error) << v.message;
  EXPECT_NE(v.message.find("called with N "), std::string::npos) << v.message;
  EXPECT_EQ(v.feedback.find("called with"), std::string::npos) << v.feedback;
  EXPECT_EQ(v.feedback.find("ValueError"), std::string::npos) << v.feedback;
  EXPECT_NE(v.feedback.find("Failed (runtime_error) on a hidden test shape"), std::string::npos) << v.feedback;
  // The same crash at a visible shape keeps its words.
  const Verdict w = judge(*b, "KEVO_TEST_CRASH\n");
  EXPECT_NE(w.feedback.find("candidate crashed (scripted)"), std::string::npos) << w.feedback;
}

TEST_F(Fixture, AfterACallAtAHiddenShapeAKilledEvaluatorsOutputStaysOutOfFeedback) {
  // The evaluator said the candidate ran at a hidden shape (a call event),
  // then the candidate printed the sizes and hung: the process is killed
  // with no result, and the feedback (the next prompt) must not quote what
  // it printed (the thirteenth session's red team: an OpenCL kernel's
  // printf, then a spin at a later shape).
  auto cfg = base_config("honest", log(), true);
  cfg["run"]["wall_seconds"] = 2;
  auto b = make(cfg);
  b->prepare(*task());
  const Verdict v = judge(*b, "KEVO_TEST_CORRECT KEVO_TEST_ECHO_HIDDEN_HANG\n");
  EXPECT_EQ(v.status, Status::timeout) << v.message;
  EXPECT_NE(v.output_tail.find("called with N "), std::string::npos) << v.output_tail;   // the lineage keeps it
  EXPECT_EQ(v.feedback.find("called with"), std::string::npos) << v.feedback;
  EXPECT_NE(v.feedback.find("on a hidden test shape, or after one had run"), std::string::npos) << v.feedback;
  // Without the call event, a hang at a visible shape keeps its words.
  const Verdict w = judge(*b, "KEVO_TEST_CORRECT KEVO_TEST_SLEEP=30\n");
  EXPECT_EQ(w.status, Status::timeout) << w.message;
  EXPECT_EQ(w.feedback.find("hidden test shape"), std::string::npos) << w.feedback;
}

TEST_F(Fixture, ACompileErrorAfterAHiddenShapeIsWithheldToo) {
  // An evaluator that compiles per shape (NKI's classifies an exception
  // that says "compil" as a compile error) reports compile_error at a
  // hidden shape, its message and compile log the candidate's own text:
  // they spelled the sizes in the feedback, which withheld every status
  // after a hidden shape but compile_error (the fourteenth session's red
  // team). The lineage keeps them.
  auto b = make(base_config("honest", log(), true));
  b->prepare(*task());
  const Verdict v = judge(*b, "KEVO_TEST_CORRECT KEVO_TEST_COMPILE_ERROR_HIDDEN\n");
  EXPECT_EQ(v.status, Status::compile_error) << v.message;
  EXPECT_NE(v.message.find("compilation failed at N "), std::string::npos) << v.message;
  EXPECT_EQ(v.feedback.find("compilation failed at"), std::string::npos) << v.feedback;
  EXPECT_NE(v.feedback.find("on a hidden test shape, or after one had run"), std::string::npos) << v.feedback;
}

TEST(CommandProtocol, ACallEventNamesAShapeOfTheRequest) {
  const auto rules = [&] {
    command::AnswerRules r;
    r.nonce = "n1";
    r.all = {"N=8", "hidden N=3"};
    r.hidden = {"hidden N=3"};
    return r;
  };
  command::AnswerReader ok(rules());
  ok.feed("{\"nonce\": \"n1\", \"event\": \"call\", \"shape\": \"N=8\"}\n");
  EXPECT_TRUE(ok.after_hidden().empty());
  ok.feed("{\"nonce\": \"n1\", \"event\": \"call\", \"shape\": \"hidden N=3\"}\n");
  EXPECT_EQ(ok.after_hidden(), "hidden N=3");
  EXPECT_TRUE(ok.breach().empty()) << ok.breach();
  command::AnswerReader bad(rules());
  bad.feed("{\"nonce\": \"n1\", \"event\": \"call\", \"shape\": \"N=5\"}\n");
  EXPECT_NE(bad.breach().find("not a shape of the request"), std::string::npos) << bad.breach();
  command::AnswerReader none(rules());
  none.feed("{\"nonce\": \"n1\", \"event\": \"call\"}\n");
  EXPECT_NE(none.breach().find("a call event without a shape"), std::string::npos) << none.breach();
}

TEST_F(Fixture, RequestsCarryTheResolvedTaskFreshNoncesAndNoSecrets) {
  ::setenv("KEVO_TEST_SECRET_API_KEY", "sk-should-never-leave", 1);
  auto b = prepared("honest");
  judge(*b, "KEVO_TEST_CORRECT\n");
  ::unsetenv("KEVO_TEST_SECRET_API_KEY");
  const auto reqs = log_lines(log(), "request");
  ASSERT_EQ(reqs.size(), 7u);   // self_check, three nulls, the probe, the seed, the candidate
  std::set<std::string> nonces, modes, kinds;
  for (const auto& r : reqs) {
    const auto& q = r["request"];
    nonces.insert(q["nonce"].get<std::string>());
    modes.insert(q["mode"].get<std::string>() + (q.contains("null_kind") ? ":" + q["null_kind"].get<std::string>() : ""));
    for (const auto& s : q["task"]["shapes"]) kinds.insert(s["kind"].get<std::string>());
    EXPECT_EQ(q["protocol"], 1);
    EXPECT_EQ(r["stdin"], "socket");
    for (const auto& n : r["env_names"]) EXPECT_EQ(n.get<std::string>().find("SECRET"), std::string::npos) << n;
    if (!r["schema_errors"].is_null()) {
      EXPECT_TRUE(r["schema_errors"].empty()) << r["schema_errors"].dump();
    }
  }
  EXPECT_EQ(nonces.size(), reqs.size());
  EXPECT_EQ(modes, (std::set<std::string>{"self_check", "null:zeros", "null:copy", "null:other_seed", "judge"}));
  EXPECT_EQ(kinds, (std::set<std::string>{"visible", "hidden", "drawn"}));
  const auto& last = reqs.back()["request"];
  EXPECT_TRUE(last["timing"].get<bool>());
  EXPECT_EQ(last["task"]["shapes"][0]["args"]["n"]["value"], 4096);
  EXPECT_EQ(last["task"]["shapes"][0]["args"]["a"]["extents"], nlohmann::json::array({4096}));
  EXPECT_EQ(last["task"]["stress"][0]["name"], "large");
  // Drawn shapes are new with every seed.
  judge(*b, "KEVO_TEST_CORRECT\n", 8);
  const auto again = log_lines(log(), "request").back()["request"]["task"]["shapes"];
  EXPECT_NE(again.back()["label"], last["task"]["shapes"].back()["label"]);
}

// ---- conformance -----------------------------------------------------------

TEST_F(Fixture, ConformanceRefusesAnEvaluatorThatCallsEverythingCorrect) {
  for (const std::string beh : {"all_correct", "null_correct", "probe_correct"}) {
    auto b = make(base_config(beh, log()));
    try {
      b->prepare(*task());
      ADD_FAILURE() << beh << ": prepare accepted the evaluator";
    } catch (const InputError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("/backend/command/run"), std::string::npos) << beh << ": " << m;
      EXPECT_NE(m.find(beh == "probe_correct" ? "probe" : "null"), std::string::npos) << beh << ": " << m;
    }
  }
}

TEST_F(Fixture, ConformanceNamesAFatalEvaluator) {
  auto b = make(base_config("fatal", log()));
  try {
    b->prepare(*task());
    FAIL() << "prepare accepted a fatal evaluator";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("internal_error"), std::string::npos) << e.what();
  }
}

// ---- misbehaviour: every one a verdict, the backend still judging -----------

struct Bad {
  const char* behaviour;
  Status status;
  const char* says;   // in the message
};

class Misbehaviour : public Fixture, public ::testing::WithParamInterface<Bad> {};

TEST_P(Misbehaviour, IsAVerdictAndTheNextCandidateIsJudged) {
  const Bad& bad = GetParam();
  for (bool persistent : {false, true}) {
    // A persistent evaluator's second result may come after kevo took the
    // first: PersistentEvaluatorWritingAfterItsResultIsReplaced.
    if (persistent && std::string(bad.behaviour) == "two_results") continue;
    auto cfg = base_config(bad.behaviour, log(), persistent);
    cfg["run"]["wall_seconds"] = 3;
    auto b = make(cfg);
    b->prepare(*task());
    const Verdict v = judge(*b, "KEVO_TEST_CORRECT KEVO_TEST_NS=500\n");
    EXPECT_EQ(v.status, bad.status) << bad.behaviour << (persistent ? " (persistent): " : ": ") << v.message;
    EXPECT_NE(v.message.find(bad.says), std::string::npos) << bad.behaviour << ": " << v.message;
    // The probe-like candidate is not affected by "judge" misbehaviours:
    // the backend still gives honest verdicts afterwards.
    EXPECT_EQ(judge(*b, "no marker\n").status, Status::compile_error) << bad.behaviour;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Evaluators, Misbehaviour,
    ::testing::Values(Bad{"garbage", Status::runtime_error, "protocol breach: stdout line"},
                      Bad{"no_nonce", Status::runtime_error, "has no nonce"},
                      Bad{"wrong_nonce", Status::runtime_error, "another request's nonce"},
                      Bad{"exit_without_verdict", Status::runtime_error, "no result"},
                      Bad{"two_results", Status::runtime_error, "after the result"},
                      Bad{"bad_verdict", Status::runtime_error, "no verdict object"},
                      Bad{"bad_verdict=status", Status::runtime_error, "is not one an evaluator gives"},
                      Bad{"bad_verdict=pending", Status::runtime_error, "is not one an evaluator gives"},
                      Bad{"unknown_key", Status::runtime_error, "secret_sauce"},
                      Bad{"unknown_shape", Status::runtime_error, "is not a shape of the request"},
                      Bad{"unknown_failed_shape", Status::runtime_error, "failed_shape \"no such shape"},
                      Bad{"nan_time", Status::runtime_error, "protocol breach"},
                      Bad{"nan_time=string", Status::runtime_error, "cand_median_ns"},
                      Bad{"negative_time", Status::runtime_error, "cand_median_ns"},
                      Bad{"wrong_speedup", Status::runtime_error, "does not follow from its times"},
                      Bad{"missing_shape_timings", Status::runtime_error, "without shape_timings"},
                      Bad{"hang", Status::timeout, "run.wall_seconds"},
                      Bad{"flood_stdout", Status::output_limit, "limits.output_kb"},
                      Bad{"flood_stderr", Status::output_limit, "limits.output_kb"}),
    [](const auto& info) {
      std::string n = info.param.behaviour;
      for (char& c : n)
        if (c == '=') c = '_';
      return n;
    });

TEST_F(Fixture, ExitStatusAfterTheResultIsABreachInOneShotMode) {
  auto b = prepared("exit_nonzero_after_result");
  const Verdict v = judge(*b, "KEVO_TEST_CORRECT\n");
  EXPECT_EQ(v.status, Status::runtime_error);
  EXPECT_NE(v.message.find("exited with 5 after its result"), std::string::npos) << v.message;
}

TEST_F(Fixture, TimeUnderTheRooflineFloorIsAnError) {
  auto cfg = base_config("under_roofline", log());
  cfg["roofline"] = {{"peak_gflops", 1000}, {"peak_gbps", 1000}};
  auto b = make(cfg);
  b->prepare(*task());
  const Verdict v = judge(*b, "KEVO_TEST_CORRECT\n");
  EXPECT_EQ(v.status, Status::runtime_error);
  EXPECT_NE(v.message.find("roofline floor"), std::string::npos) << v.message;
}

// ---- compile stage ---------------------------------------------------------

TEST_F(Fixture, CompileStageBuildsCachesAndReportsErrors) {
  auto cfg = base_config("honest", log());
  cfg["cache_dir"] = (tmp.path / "cache").string();
  cfg["compile"] = {{"argv", {kPython, kScript, "--compile", "{source}", "--out", "{out_dir}", "--log", log().string()}},
                    {"version_argv", {kPython, kScript, "--version"}},
                    {"jobs", 2}};
  {
    auto b = make(cfg);
    b->prepare(*task());
    Verdict v = judge(*b, "KEVO_TEST_CORRECT\n");
    ASSERT_EQ(v.status, Status::correct) << v.message;
    EXPECT_FALSE(v.compile_cached);
    v = judge(*b, "KEVO_TEST_NOCOMPILE KEVO_TEST_CORRECT\n");
    EXPECT_EQ(v.status, Status::compile_error);
    EXPECT_NE(v.compile_log.find("error: KEVO_TEST_NOCOMPILE"), std::string::npos) << v.compile_log;
    EXPECT_NE(v.feedback.find("KEVO_TEST_NOCOMPILE"), std::string::npos) << v.feedback;
    const auto s = command::command_stats(*b);
    EXPECT_EQ(s.compiles, 5u);   // reference, the probe, seed, candidate, the broken one
  }
  // A second backend (a resumed run) finds the builds in the cache.
  auto b = make(cfg);
  b->prepare(*task());
  const Verdict v = judge(*b, "KEVO_TEST_CORRECT\n");
  ASSERT_EQ(v.status, Status::correct) << v.message;
  EXPECT_TRUE(v.compile_cached);
  EXPECT_EQ(command::command_stats(*b).compiles, 1u);   // the probe only: a new text every time
  // A reference that does not build is the task's input error.
  cfg["compile"]["argv"] = {kPython, kScript, "--compile", "{source}", "--out", "{out_dir}"};
  TempDir t2;
  fs::copy(kDir / "task", t2.path / "t");
  std::ofstream(t2.path / "t" / "reference.txt") << kSig << "KEVO_TEST_NOCOMPILE KEVO_TEST_CORRECT\n";
  const Task broken = load_task(t2.path / "t");
  auto b2 = make(cfg);
  try {
    b2->prepare(broken);
    FAIL() << "a reference that does not build was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/reference"), std::string::npos) << e.what();
  }
}

// ---- persistent evaluators -------------------------------------------------

TEST_F(Fixture, PersistentEvaluatorServesManyAndIsRestartedAfterAFailure) {
  auto cfg = base_config("honest", log(), true);
  cfg["run"]["restart_on"] = "failure";   // the test task has hidden shapes ("hidden" restarts after each)
  auto b = make(cfg);
  b->prepare(*task());
  const auto after_prepare = command::command_stats(*b).evaluator_starts;
  for (int i = 0; i < 4; ++i) ASSERT_EQ(judge(*b, "KEVO_TEST_CORRECT\n", 10 + i).status, Status::correct);
  EXPECT_EQ(command::command_stats(*b).evaluator_starts, after_prepare);   // one process for all four
  EXPECT_EQ(judge(*b, "KEVO_TEST_WRONG\n").status, Status::wrong_answer);
  EXPECT_EQ(judge(*b, "KEVO_TEST_CORRECT\n").status, Status::correct);
  EXPECT_EQ(command::command_stats(*b).evaluator_starts, after_prepare + 1);   // restarted after the wrong one
  std::set<int> pids;
  for (const auto& r : log_lines(log(), "request")) pids.insert(r["pid"].get<int>());
  EXPECT_GE(pids.size(), 2u);
}

// restart_on "hidden" (the default): a candidate of a task with hidden
// shapes ran in the evaluator's process, which is then replaced, so that
// what it left there (PoCL's __local memory: tests/command/adversarial/
// local_leak.cl) is not the next candidate's to read; the reference's and
// the null candidates' requests of prepare() keep it.
TEST_F(Fixture, PersistentEvaluatorIsReplacedAfterEachCandidateOfATaskWithHiddenShapes) {
  ASSERT_FALSE(task()->hidden.empty());
  auto b = prepared("honest", true);
  const auto after_prepare = command::command_stats(*b).evaluator_starts;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(judge(*b, "KEVO_TEST_CORRECT\n", 20 + i).status, Status::correct);
  // One process per candidate (prepare() ends with the seed's judgement,
  // so the first of the three starts one too).
  EXPECT_EQ(command::command_stats(*b).evaluator_starts, after_prepare + 3);
  std::vector<int> judged;   // the evaluator's pid for each candidate's request, in order
  for (const auto& r : log_lines(log(), "request"))
    if (r["request"].is_object() && r["request"].value("mode", std::string()) == "judge") judged.push_back(r["pid"].get<int>());
  ASSERT_GE(judged.size(), 3u);
  const std::set<int> last3(judged.end() - 3, judged.end());
  EXPECT_EQ(last3.size(), 3u) << "two of the three candidates shared an evaluator process";
}

// restart_on "breach": wrong answers and failed candidates keep the process
// (the evaluator runs candidates elsewhere); a breach, a timeout or an
// evaluator failure still replace it.
TEST_F(Fixture, PersistentEvaluatorRestartedOnBreachOnlyKeepsItsProcessAfterWrongAnswers) {
  auto cfg = base_config("honest", log(), true);
  cfg["run"]["restart_on"] = "breach";
  cfg["run"]["wall_seconds"] = 2;
  auto b = make(cfg);
  b->prepare(*task());
  const auto after_prepare = command::command_stats(*b).evaluator_starts;
  EXPECT_EQ(judge(*b, "KEVO_TEST_WRONG\n", 40).status, Status::wrong_answer);
  EXPECT_EQ(judge(*b, "KEVO_TEST_CORRECT\n", 41).status, Status::correct);
  EXPECT_EQ(judge(*b, "KEVO_TEST_WRONG\n", 42).status, Status::wrong_answer);
  EXPECT_EQ(command::command_stats(*b).evaluator_starts, after_prepare);   // one process for all three
  const Verdict slow = judge(*b, "KEVO_TEST_CORRECT KEVO_TEST_SLEEP=30\n", 43);
  EXPECT_EQ(slow.status, Status::timeout) << slow.message;
  EXPECT_EQ(judge(*b, "KEVO_TEST_CORRECT\n", 44).status, Status::correct);
  EXPECT_EQ(command::command_stats(*b).evaluator_starts, after_prepare + 1);   // replaced after the timeout

  // A breach (a verdict with a key the protocol does not have) is not kept.
  auto breach = base_config("unknown_key", log(), true);
  breach["run"]["restart_on"] = "breach";
  auto k = make(breach);
  k->prepare(*task());
  const auto before = command::command_stats(*k).evaluator_starts;
  EXPECT_EQ(judge(*k, "KEVO_TEST_CRASH KEVO_TEST_HONEST\n", 46).status, Status::runtime_error);
  EXPECT_EQ(command::command_stats(*k).evaluator_starts, before);   // the candidate's crash, not the evaluator's
  const Verdict bad_key = judge(*k, "KEVO_TEST_CORRECT\n", 47);
  EXPECT_EQ(bad_key.status, Status::runtime_error);
  EXPECT_NE(bad_key.message.find("protocol breach"), std::string::npos) << bad_key.message;
  EXPECT_EQ(judge(*k, "KEVO_TEST_CORRECT KEVO_TEST_HONEST\n", 48).status, Status::correct);
  EXPECT_EQ(command::command_stats(*k).evaluator_starts, before + 1);

  auto bad = base_config("honest", log(), true);
  bad["run"]["restart_on"] = "wrong";
  const std::string e = input_error(bad, tmp.path);
  EXPECT_NE(e.find("/backend/command/run/restart_on"), std::string::npos) << e;
  EXPECT_NE(e.find("\"breach\""), std::string::npos) << e;
}

TEST_F(Fixture, PersistentEvaluatorThatDiesOrHangsCostsOneVerdict) {
  // A process that exits between requests is replaced before the next one.
  auto cfg = base_config("die_after=1", log(), true);
  auto b = make(cfg);
  b->prepare(*task());
  const auto starts = command::command_stats(*b).evaluator_starts;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(judge(*b, "KEVO_TEST_CORRECT\n", 30 + i).status, Status::correct) << i;
  EXPECT_EQ(command::command_stats(*b).evaluator_starts, starts + 3);
  // One that exits in the middle of a request costs that request only.
  auto mid = make(base_config("exit_without_verdict", log(), true));
  mid->prepare(*task());
  const Verdict dead = judge(*mid, "KEVO_TEST_CORRECT\n");
  EXPECT_EQ(dead.status, Status::runtime_error) << dead.message;
  EXPECT_NE(dead.message.find("no result"), std::string::npos) << dead.message;
  EXPECT_EQ(judge(*mid, "KEVO_TEST_CORRECT KEVO_TEST_HONEST\n").status, Status::correct);

  auto hang = base_config("honest", log(), true);
  hang["run"]["wall_seconds"] = 2;
  auto h = make(hang);
  h->prepare(*task());
  const Verdict slow = judge(*h, "KEVO_TEST_CORRECT KEVO_TEST_SLEEP=30\n");
  EXPECT_EQ(slow.status, Status::timeout) << slow.message;
  EXPECT_NE(slow.message.find("correctness"), std::string::npos) << slow.message;   // its last stage
  EXPECT_EQ(judge(*h, "KEVO_TEST_CORRECT\n").status, Status::correct);
}

TEST_F(Fixture, PersistentEvaluatorIsRestartedAfterMaxRequests) {
  auto cfg = base_config("honest", log(), true);
  cfg["run"]["max_requests"] = 2;
  auto b = make(cfg);
  b->prepare(*task());
  for (int i = 0; i < 5; ++i) ASSERT_EQ(judge(*b, "KEVO_TEST_CORRECT\n", 20 + i).status, Status::correct);
  std::map<int, int> served;   // pid -> requests
  for (const auto& r : log_lines(log(), "request")) ++served[r["pid"].get<int>()];
  int total = 0;
  for (const auto& [pid, n] : served) {
    EXPECT_LE(n, 2) << "process " << pid << " served more than run.max_requests";
    total += n;
  }
  EXPECT_EQ(total, 11);   // 6 of the conformance check, 5 candidates
}

TEST_F(Fixture, PersistentEvaluatorWritingAfterItsResultIsReplaced) {
  auto b = prepared("two_results", true);
  // Read with the first (one chunk), the second result is a breach; read
  // later, the first counts and the second is late output.
  const Verdict first = judge(*b, "KEVO_TEST_CORRECT\n");
  if (first.status != Status::correct) {
    EXPECT_EQ(first.status, Status::runtime_error);
    EXPECT_NE(first.message.find("after the result"), std::string::npos) << first.message;
  }
  const auto starts = command::command_stats(*b).evaluator_starts;
  // Either way that process does not judge the next candidate: a fresh one
  // does (the late line of a replaced process reaches nobody).
  const Verdict next = judge(*b, "KEVO_TEST_CORRECT KEVO_TEST_HONEST\n");
  EXPECT_EQ(next.status, Status::correct) << next.message;
  EXPECT_EQ(command::command_stats(*b).evaluator_starts, starts + 1);
}

TEST_F(Fixture, ManyCandidatesInFlightAllComeBack) {
  auto cfg = base_config("honest", log(), true);
  cfg["run"]["jobs"] = 2;
  auto b = make(cfg);
  b->prepare(*task());
  for (std::uint64_t i = 1; i <= 6; ++i)
    b->submit(EvalRequest{i, task(), kSig + (i % 3 == 0 ? "KEVO_TEST_WRONG\n" : "KEVO_TEST_CORRECT\n"), 100 + i, ""});
  std::map<std::uint64_t, Status> got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (got.size() < 6 && std::chrono::steady_clock::now() < until)
    for (auto& r : b->poll(std::chrono::milliseconds(100))) got[r.id] = r.verdict.status;
  ASSERT_EQ(got.size(), 6u);
  for (const auto& [id, st] : got) EXPECT_EQ(st, id % 3 == 0 ? Status::wrong_answer : Status::correct) << id;
}

TEST_F(Fixture, AnAcceleratorJudgesOneRequestAtATimeAcrossBackends) {
  // Two backends (as two ranks or two runs on one host) with the same
  // device: their requests never overlap.
  std::vector<std::unique_ptr<Backend>> bs;
  for (int k = 0; k < 2; ++k) {
    auto cfg = base_config("honest", log(), k == 1);
    cfg["run"]["accelerator"] = true;
    cfg["run"]["lock_dir"] = tmp.path.string();
    bs.push_back(make(cfg));
    bs.back()->prepare(*task());
  }
  const auto before = log_lines(log(), "request").size();
  for (std::uint64_t i = 1; i <= 3; ++i)
    for (auto& b : bs) b->submit(EvalRequest{i, task(), kSig + "KEVO_TEST_CORRECT KEVO_TEST_SLEEP=0.3\n", 40 + i, ""});
  int done = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (done < 6 && std::chrono::steady_clock::now() < until)
    for (auto& b : bs)
      for (auto& r : b->poll(std::chrono::milliseconds(20))) {
        EXPECT_EQ(r.verdict.status, Status::correct) << r.verdict.message;
        ++done;
      }
  ASSERT_EQ(done, 6);
  const auto reqs = log_lines(log(), "request");
  ASSERT_EQ(reqs.size(), before + 6);
  std::vector<double> at;
  for (std::size_t i = before; i < reqs.size(); ++i) at.push_back(reqs[i]["time"].get<double>());
  std::sort(at.begin(), at.end());
  for (std::size_t i = 1; i < at.size(); ++i)
    EXPECT_GE(at[i] - at[i - 1], 0.28) << "requests " << i - 1 << " and " << i << " overlapped on the device";
}

// ---- judge = "kevo": kevo draws the inputs and compares ---------------------

namespace {

nlohmann::json kevo_config(const std::string& behaviour, const fs::path& log, bool persistent = false) {
  auto cfg = base_config(behaviour, log, persistent);
  cfg["judge"] = "kevo";
  return cfg;
}

}  // namespace

TEST_F(Fixture, KevoJudgedModeRunsTheReferenceThenTheCandidateOnKevosFiles) {
  auto b = make(kevo_config("honest", log()));
  b->prepare(*task());
  std::filesystem::remove(log());
  Verdict v = judge(*b, "KEVO_TEST_CORRECT KEVO_TEST_NS=500\n");
  ASSERT_EQ(v.status, Status::correct) << v.message << v.feedback;
  EXPECT_NEAR(v.speedup, 4.0, 1e-9);
  const auto reqs = log_lines(log(), "request");
  const auto runs = log_lines(log(), "run");
  ASSERT_EQ(reqs.size(), 2u);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(reqs[0]["request"]["mode"], "run");
  EXPECT_EQ(reqs[0]["request"]["program"], "reference");
  EXPECT_FALSE(reqs[0]["request"]["timing"].get<bool>());
  EXPECT_EQ(reqs[1]["request"]["program"], "candidate");
  EXPECT_TRUE(reqs[1]["request"]["timing"].get<bool>());
  for (const auto& r : reqs) EXPECT_TRUE(r["schema_errors"].is_null() || r["schema_errors"].empty()) << r["schema_errors"];
  // Every shape (2 visible, 2 hidden, 4 drawn) in 3 trials and 1 stress
  // trial; the candidate sees the same inputs as the reference; time only on
  // the visible shapes' first trial, in the candidate's request.
  const auto& rc = runs[0]["calls"];
  const auto& cc = runs[1]["calls"];
  ASSERT_EQ(rc.size(), 32u);
  ASSERT_EQ(cc.size(), rc.size());
  int timed = 0;
  std::set<std::string> inputs;
  for (std::size_t i = 0; i < rc.size(); ++i) {
    EXPECT_EQ(rc[i]["inputs_sha"], cc[i]["inputs_sha"]) << i;
    EXPECT_FALSE(rc[i]["time"].get<bool>());
    timed += cc[i]["time"].get<bool>();
    inputs.insert(rc[i]["inputs_sha"].get<std::string>());
  }
  EXPECT_EQ(timed, 2);
  EXPECT_EQ(inputs.size(), rc.size());   // fresh inputs for every call
  // The candidate's request does not see the reference's output files.
  const std::string ref_dir = fs::path(reqs[0]["request"]["files"]["out"].get<std::string>()).parent_path();
  const std::string cand_dir = fs::path(reqs[1]["request"]["files"]["out"].get<std::string>()).parent_path();
  EXPECT_NE(ref_dir, cand_dir);
  EXPECT_FALSE(fs::exists(ref_dir));
}

// The inputs are keyed by a secret of each judgement (InputKey: the seed
// alone, guessable, gave them all to a native candidate, which served the
// timed calls from a table), the same for the reference and the candidate
// of one judgement; the poison is drawn per judgement too.
TEST_F(Fixture, KevoJudgedInputsAreKeyedPerJudgementAndThePoisonIsDrawnPerJudgement) {
  auto b = make(kevo_config("honest", log()));
  b->prepare(*task());
  std::filesystem::remove(log());
  ASSERT_TRUE(judge(*b, "KEVO_TEST_CORRECT\n", 11).is_correct());
  ASSERT_TRUE(judge(*b, "KEVO_TEST_CORRECT\n", 11).is_correct());
  ASSERT_TRUE(judge(*b, "KEVO_TEST_CORRECT\n", 12).is_correct());
  const auto runs = log_lines(log(), "run");
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_EQ(runs[0]["calls"][0]["inputs_sha"], runs[1]["calls"][0]["inputs_sha"]);   // one judgement, both programs
  EXPECT_NE(runs[0]["calls"][0]["inputs_sha"], runs[2]["calls"][0]["inputs_sha"]);   // same seed, another key
  EXPECT_NE(runs[0]["calls"][0]["inputs_sha"], runs[4]["calls"][0]["inputs_sha"]);   // another seed
  EXPECT_NE(runs[0]["calls"][0]["poison"], runs[2]["calls"][0]["poison"]);           // a fresh poison
}

TEST_F(Fixture, KevoJudgedModeCatchesWhatTheEvaluatorNeverChecks) {
  auto b = make(kevo_config("honest", log()));
  b->prepare(*task());
  const std::string ok = "KEVO_TEST_CORRECT ";
  Verdict v = judge(*b, ok + "KEVO_TEST_RUN_WRONG\n");
  ASSERT_EQ(v.status, Status::wrong_answer) << v.message;
  ASSERT_TRUE(v.mismatch.has_value());
  EXPECT_EQ(v.mismatch->arg, "out");
  EXPECT_EQ(v.mismatch->trial, "trial 1");
  EXPECT_EQ(v.mismatch->flat_index, 7);
  EXPECT_NEAR(v.mismatch->got - v.mismatch->expected, 1.0, 1e-4);
  EXPECT_NE(v.message.find("differs from the reference at [7]"), std::string::npos) << v.message;

  v = judge(*b, ok + "KEVO_TEST_RUN_WRONG_HIDDEN\n");
  ASSERT_EQ(v.status, Status::wrong_answer) << v.message;
  ASSERT_TRUE(v.mismatch.has_value());
  EXPECT_EQ(v.mismatch->shape.rfind("hidden ", 0), 0u) << v.mismatch->shape;
  EXPECT_EQ(v.message.find("hidden N="), std::string::npos) << v.message;
  EXPECT_EQ(v.feedback.find("hidden N="), std::string::npos) << v.feedback;
  EXPECT_NE(v.message.find("a hidden test shape"), std::string::npos) << v.message;

  // Wrong at a visible shape after a hidden one, by that shape's N (the
  // candidate lives in the evaluator's process through every call): the
  // feedback says only that it failed on or after a hidden shape (red team
  // 22: it quoted the value, and so the hidden size).
  v = judge(*b, ok + "KEVO_TEST_RUN_WRONG_AFTER_HIDDEN\n");
  ASSERT_EQ(v.status, Status::wrong_answer) << v.message;
  ASSERT_TRUE(v.mismatch.has_value());
  EXPECT_EQ(v.mismatch->shape.rfind("hidden ", 0), std::string::npos) << v.mismatch->shape;
  const std::string hidden_n = std::to_string(static_cast<long>(std::lround(v.mismatch->got - v.mismatch->expected)));
  EXPECT_GT(std::lround(v.mismatch->got - v.mismatch->expected), 1) << v.message;
  EXPECT_EQ(v.feedback.find(hidden_n), std::string::npos) << hidden_n << " in the feedback:\n" << v.feedback;
  EXPECT_NE(v.feedback.find("a hidden test shape"), std::string::npos) << v.feedback;

  v = judge(*b, ok + "KEVO_TEST_RUN_WRONG_STRESS\n");
  ASSERT_EQ(v.status, Status::wrong_answer) << v.message;
  EXPECT_EQ(v.mismatch->trial, "stress large");

  v = judge(*b, ok + "KEVO_TEST_RUN_WRONG_TIMED\n");
  ASSERT_EQ(v.status, Status::wrong_answer) << v.message;
  EXPECT_EQ(v.mismatch->trial, "trial 1");
  EXPECT_EQ(v.speedup, 0.0);

  v = judge(*b, ok + "KEVO_TEST_RUN_UNWRITTEN\n");
  ASSERT_EQ(v.status, Status::wrong_answer) << v.message;
  EXPECT_NE(v.message.find("pre-filled"), std::string::npos) << v.message;

  v = judge(*b, ok + "KEVO_TEST_RUN_MODIFY_INPUT\n");
  ASSERT_EQ(v.status, Status::wrong_answer) << v.message;
  EXPECT_EQ(v.mismatch->trial, "input-modified");
  EXPECT_NE(v.message.find("modified its input 'a'"), std::string::npos) << v.message;

  v = judge(*b, ok + "KEVO_TEST_RUN_SHORT_FILE\n");
  ASSERT_EQ(v.status, Status::runtime_error) << v.message;
  EXPECT_EQ(v.message.rfind("protocol breach", 0), 0u) << v.message;
  EXPECT_NE(v.message.find("bytes, expected"), std::string::npos) << v.message;

  EXPECT_EQ(judge(*b, "KEVO_TEST_CRASH\n").status, Status::runtime_error);
  EXPECT_EQ(judge(*b, "no marker at all\n").status, Status::compile_error);
  v = judge(*b, "KEVO_TEST_CORRECT KEVO_TEST_NS=1000\n");
  EXPECT_TRUE(v.is_correct()) << v.message;   // the backend still judges
  EXPECT_NEAR(v.speedup, 2.0, 1e-9);
  EXPECT_GE(command::command_stats(*b).breaches, 1u);
}

TEST_F(Fixture, KevoJudgedConformanceRefusesAnEvaluatorThatIgnoresItsInputs) {
  auto b = make(kevo_config("run_ignores_inputs", log()));
  try {
    b->prepare(*task());
    FAIL() << "an evaluator that writes zeros whatever the inputs was accepted";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/backend/command/run"), std::string::npos) << m;
    EXPECT_NE(m.find("null zeros"), std::string::npos) << m;
    EXPECT_NE(m.find("does not run the reference on the inputs"), std::string::npos) << m;
  }
}

TEST_F(Fixture, KevoJudgedPersistentEvaluatorIsRestartedAfterAFailure) {
  auto cfg = kevo_config("honest", log(), true);
  cfg["run"]["restart_on"] = "failure";   // the test task has hidden shapes ("hidden" restarts after each)
  auto b = make(cfg);
  b->prepare(*task());
  const auto starts = command::command_stats(*b).evaluator_starts;
  EXPECT_TRUE(judge(*b, "KEVO_TEST_CORRECT\n").is_correct());
  EXPECT_TRUE(judge(*b, "KEVO_TEST_CORRECT\n").is_correct());
  EXPECT_EQ(command::command_stats(*b).evaluator_starts, starts);   // one process for both requests of both
  EXPECT_EQ(judge(*b, "KEVO_TEST_CRASH\n").status, Status::runtime_error);
  EXPECT_TRUE(judge(*b, "KEVO_TEST_CORRECT\n").is_correct());
  EXPECT_EQ(command::command_stats(*b).evaluator_starts, starts + 1);
}

TEST_F(Fixture, KevoJudgedConfigValueIsChecked) {
  auto cfg = base_config("honest", log());
  cfg["judge"] = "both";
  const std::string e = input_error(cfg, tmp.path);
  EXPECT_NE(e.find("/backend/command/judge"), std::string::npos) << e;
}
