// Loud LLM failures (docs/llm.md#failures): how the client classifies a
// failed request, the stop rules over the outcomes (Health: a fatal failure
// at once, a failure share over a window, carried between ranks by the
// rounds), and the authenticated start-up probe, against the fake server.
#include "fake_server.hpp"

#include "kevo/core/error.hpp"
#include "kevo/operators/llm_client.hpp"
#include "kevo/operators/llm_health.hpp"
#include "kevo/operators/llm_operators.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

namespace kevo {
namespace {
namespace fs = std::filesystem;
using namespace kevo::operators::llm;
using nlohmann::json;

Model fake_model(const test::FakeServer& s) {
  Model m;
  m.name = "fm";
  m.base_url = s.url();
  m.model = "fake-coder";
  m.api_key_env = "KEVO_TEST_FAILURES_KEY";
  m.max_tokens = 64;
  m.api_key = "sk-failures-secret";
  return m;
}

ClientOptions quick() {
  ClientOptions o;
  o.connect_timeout_s = 1.0;
  o.timeout_s = 1.0;
  o.max_retries = 1;
  o.backoff_initial_s = 0.01;
  o.backoff_max_s = 0.05;
  return o;
}

ChatResult ask(Client& c) {
  c.submit(0, {"be brief", {{"user", "say hi"}}});
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    for (auto& [ticket, r] : c.poll(std::chrono::milliseconds(50))) return r;
  ADD_FAILURE() << "no answer";
  return {};
}

TEST(LlmFailures, ClassifiesHttpStatusesAndMarksTheOnesThatRepeat) {
  struct Case {
    int status;
    const char* body;
    const char* kind;
    bool fatal;
  };
  const Case cases[] = {
      {401, "invalid api key", "auth", true},
      {403, "forbidden", "auth", true},
      {402, "insufficient credit", "payment", true},
      {404, "The model `x` does not exist.", "not_found", true},
      {400, "{\"error\": {\"message\": \"model 'qwen9' not found\"}}", "not_found", true},
      {400, "context length exceeded", "prompt_too_long", false},
      {400, "{\"error\": {\"message\": \"This model's maximum context length is 8192 tokens\"}}", "prompt_too_long",
       false},
      {413, "payload too large", "prompt_too_long", false},
      {400, "prompt is too long: 210000 tokens > 200000 maximum", "prompt_too_long", false},
      {422, "temperature out of range", "client", false},
      {429, "slow down", "rate_limit", false},
      {500, "oops", "server", false},
      {503, "overloaded", "server", false},
      {408, "", "timeout", false},
  };
  for (const auto& c : cases) {
    const auto f = classify_http_failure(c.status, c.body);
    EXPECT_EQ(f.kind, c.kind) << c.status << " " << c.body;
    EXPECT_EQ(f.fatal, c.fatal) << c.status << " " << c.body;
  }
}

TEST(LlmFailures, TheClientNamesTheKindOfEveryFailedRequest) {
  const std::vector<std::tuple<json, std::string, bool>> cases = {
      {{{"kind", "status"}, {"status", 401}, {"body", "bad key sk-failures-secret"}}, "auth", true},
      {{{"kind", "status"}, {"status", 404}, {"body", "no such model"}}, "not_found", true},
      {{{"kind", "status"}, {"status", 500}}, "server", false},
      {{{"kind", "invalid_json"}}, "invalid_reply", false},
      {{{"kind", "empty_choices"}}, "empty", false},
      {{{"kind", "stall"}, {"seconds", 3}}, "timeout", false},
  };
  for (const auto& [behaviour, kind, fatal] : cases) {
    test::FakeServer s(json{{"default", behaviour}});
    ASSERT_TRUE(s.up());
    Client c({fake_model(s)}, quick(), {});
    const ChatResult r = ask(c);
    EXPECT_FALSE(r.ok) << behaviour.dump();
    EXPECT_EQ(r.failure, kind) << behaviour.dump() << ": " << r.error;
    EXPECT_EQ(r.fatal, fatal) << behaviour.dump();
    // Transient failures are retried; one that repeats, and an empty reply
    // (the model's answer), are not.
    const bool transient = kind == "server" || kind == "invalid_reply" || kind == "timeout";
    EXPECT_EQ(r.retries, transient ? 1 : 0) << behaviour.dump();
    // A server quoting the rejected key: the error never carries it.
    EXPECT_EQ(r.error.find("sk-failures-secret"), std::string::npos) << r.error;
  }
}

ChatResult outcome(bool ok, std::string kind = "", bool fatal = false, int status = 0) {
  ChatResult r;
  r.ok = ok;
  r.model = "m";
  r.failure = std::move(kind);
  r.fatal = fatal;
  r.http_status = status;
  if (!ok) r.error = "scripted";
  return r;
}

std::vector<Model> one_model() {
  Model m;
  m.name = "m";
  m.model = "model-id";
  m.base_url = "http://127.0.0.1:1/v1";
  m.api_key_env = "SOME_KEY";
  return {m};
}

TEST(LlmHealth, AFatalFailureStopsAtOnceNamingModelAndStatus) {
  Health h({0.5, 20}, one_model());
  h.record(0, outcome(true));
  EXPECT_FALSE(h.exhausted());
  h.record(0, outcome(false, "auth", true, 401));
  ASSERT_TRUE(h.exhausted());
  EXPECT_TRUE(h.stop_when_exhausted());
  EXPECT_EQ(h.stop_exit_code(), 3);
  const std::string why = h.summary();
  EXPECT_NE(why.find("'m'"), std::string::npos) << why;
  EXPECT_NE(why.find("model-id"), std::string::npos) << why;
  EXPECT_NE(why.find("HTTP 401"), std::string::npos) << why;
  EXPECT_NE(why.find("$SOME_KEY"), std::string::npos) << why;
}

TEST(LlmHealth, StopsPastTheShareOfTheWindowOnlyOnceTheWindowIsFull) {
  Health h({0.5, 6}, one_model());
  // Five failures of five: the window (6) is not full yet.
  for (int k = 0; k < 5; ++k) h.record(0, outcome(false, "timeout"));
  EXPECT_FALSE(h.exhausted());
  // Budget refusals are the budget's business: not counted.
  h.record(0, outcome(false, "budget"));
  EXPECT_FALSE(h.exhausted());
  EXPECT_EQ(h.window_requests(), 5);
  h.record(0, outcome(false, "server"));
  ASSERT_TRUE(h.exhausted());
  EXPECT_NE(h.summary().find("6 of the last 6"), std::string::npos) << h.summary();
  EXPECT_NE(h.summary().find("timeout 5"), std::string::npos) << h.summary();
  EXPECT_NE(h.summary().find("server 1"), std::string::npos) << h.summary();

  // At the share exactly it goes on; one more failure in the window stops it.
  Health g({0.5, 4}, one_model());
  for (bool ok : {true, false, true, false, true, false, true, false}) g.record(0, outcome(ok, ok ? "" : "server"));
  EXPECT_FALSE(g.exhausted());
  EXPECT_EQ(g.window_failures(), 2);
  g.record(0, outcome(false, "server"));   // window: false true false false
  EXPECT_TRUE(g.exhausted());

  // Failures of the prompt's making (too long for the model's context, a
  // refusal of its content) are not the model's health: a candidate whose
  // source or output fills its children's prompts could otherwise stop the
  // run (red team 22). Not counted.
  Health p({0.5, 4}, one_model());
  for (int k = 0; k < 20; ++k) p.record(0, outcome(false, k % 2 ? "prompt_too_long" : "refusal"));
  EXPECT_FALSE(p.exhausted());
  EXPECT_EQ(p.window_requests(), 0);
  for (bool ok : {true, false, true, false}) p.record(0, outcome(ok, ok ? "" : "server"));
  EXPECT_EQ(p.window_requests(), 4);
  EXPECT_FALSE(p.exhausted()) << "2 of 4";
  p.record(0, outcome(false, "server"));
  EXPECT_TRUE(p.exhausted()) << "3 of 4";

  // Share 1: never on the share (a fatal failure still stops).
  Health never({1.0, 2}, one_model());
  for (int k = 0; k < 10; ++k) never.record(0, outcome(false, "server"));
  EXPECT_FALSE(never.exhausted());
}

TEST(LlmHealth, RoundsCarryTheStopAndItsReasonToEveryRank) {
  Health a({0.5, 20}, one_model()), b({0.5, 20}, one_model());
  a.start_shared(0, 2);
  b.start_shared(1, 2);
  ASSERT_EQ(a.width(), b.width());
  b.record(0, outcome(false, "not_found", true, 404));
  std::vector<double> ca(a.width()), cb(b.width()), sum(a.width());
  a.open_round(ca.data());
  b.open_round(cb.data());
  for (std::size_t k = 0; k < sum.size(); ++k) sum[k] = ca[k] + cb[k];
  a.close_round(sum.data());
  b.close_round(sum.data());
  ASSERT_TRUE(a.exhausted());
  EXPECT_NE(a.summary().find("on rank 1"), std::string::npos) << a.summary();
  EXPECT_NE(a.summary().find("HTTP 404"), std::string::npos) << a.summary();
  EXPECT_NE(a.summary().find("'m'"), std::string::npos) << a.summary();
}

ServiceConfig probing_config(const test::FakeServer& s, const std::string& key_env) {
  json j = {{"models", {{{"name", "fm"}, {"provider", "openai-compatible"}, {"base_url", s.url()},
                         {"model", "fake-coder"}, {"api_key_env", key_env}}}},
            {"client", {{"timeout_s", 2.0}, {"connect_timeout_s", 1.0}}},
            {"probe", true}};
  StrictObject o(j, "run.json", "/llm");
  return parse_service_config(o, fs::path(KEVO_SOURCE_DIR) / "configs");
}

TEST(LlmProbe, ARejectedKeyIsAnInputErrorNamingItsVariable) {
  test::FakeServer s(json{{"models", {{"kind", "status"}, {"status", 401}, {"body", "bad key"}}}});
  ASSERT_TRUE(s.up());
  ::setenv("KEVO_TEST_FAILURES_KEY", "sk-wrong-key", 1);
  Service service(probing_config(s, "KEVO_TEST_FAILURES_KEY"));
  try {
    service.probe();
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("KEVO_TEST_FAILURES_KEY"), std::string::npos) << what;
    EXPECT_NE(what.find("'fm'"), std::string::npos) << what;
    EXPECT_NE(what.find("HTTP 401"), std::string::npos) << what;
    EXPECT_EQ(what.find("sk-wrong-key"), std::string::npos) << what;
  }
  // One GET, authenticated; no chat request, no token spent.
  const auto log = s.log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["method"], "GET");
  EXPECT_TRUE(log[0]["has_key"].get<bool>());
  ::unsetenv("KEVO_TEST_FAILURES_KEY");

  // A server that wants a key where the config names none: the config's key.
  Service keyless(probing_config(s, ""));
  try {
    keyless.probe();
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "run.json");
    EXPECT_EQ(e.key(), "/llm/models/0/api_key_env");
  }
}

TEST(LlmProbe, AServerWithoutAListingOrThatListsTheModelPasses) {
  // Listed: quiet. No listing (404): a note, not an error.
  for (const json& models : {json{{"kind", "list"}, {"ids", {"fake-coder"}}}, json{{"kind", "status"}, {"status", 404}}}) {
    test::FakeServer s(json{{"models", models}});
    ASSERT_TRUE(s.up());
    Service service(probing_config(s, ""));
    EXPECT_NO_THROW(service.probe()) << models.dump();
    EXPECT_EQ(s.log().size(), 1u);
  }
}

}  // namespace
// A model behind a Unix-domain socket (llm.models[].unix_socket): the
// probe and the chat requests go through the socket, base_url giving only
// the scheme, Host and path (its port, 1, has nothing listening: without
// the socket every request would be refused). Bad paths are input errors
// naming the key.
TEST(LlmProbe, AModelBehindAUnixSocketIsProbedAndAskedThroughIt) {
  test::FakeServer s(json{{"models", {{"kind", "list"}, {"ids", {"fake-coder"}}}},
                          {"default", {{"kind", "text"}, {"text", "through the socket"}}}},
                     "uds", true);
  ASSERT_TRUE(s.up());
  auto config = [&](const json& socket) {
    json j = {{"models", {{{"name", "fm"}, {"provider", "openai-compatible"}, {"base_url", "http://127.0.0.1:1/v1"},
                           {"model", "fake-coder"}, {"api_key_env", ""}, {"unix_socket", socket}}}},
              {"client", {{"timeout_s", 2.0}, {"connect_timeout_s", 1.0}}},
              {"probe", true}};
    StrictObject o(j, "run.json", "/llm");
    return parse_service_config(o, fs::path(KEVO_SOURCE_DIR) / "configs");
  };
  const ServiceConfig through = config(s.socket_path());
  ASSERT_EQ(through.models.at(0).unix_socket, s.socket_path());
  Service service(through);
  EXPECT_NO_THROW(service.probe());
  Client c(through.models, quick(), {});
  const ChatResult r = ask(c);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "through the socket");
  const auto log = s.log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0]["method"], "GET");
  EXPECT_EQ(log[1]["method"], "POST");

  // The same model over TCP: refused.
  Service tcp(config(""));
  try {
    tcp.probe();
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("not reachable"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("llm.models[0].base_url"), std::string::npos) << e.what();
  }
  // A socket with no server: the error names the socket and its key.
  Service nobody(config((s.dir() / "nobody.sock").string()));
  try {
    nobody.probe();
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("through " + (s.dir() / "nobody.sock").string()), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("llm.models[0].unix_socket"), std::string::npos) << e.what();
  }
  // Not an absolute path, or longer than a socket address holds.
  for (const std::string& bad : {std::string("llm.sock"), "/" + std::string(120, 'x')}) {
    try {
      config(bad);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "run.json");
      EXPECT_EQ(e.key(), "/llm/models/0/unix_socket") << e.what();
      EXPECT_NE(std::string(e.what()).find("absolute path"), std::string::npos) << e.what();
    }
  }
}

}  // namespace kevo
