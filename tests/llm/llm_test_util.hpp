// Helpers shared by the LLM unit tests: a service config pointing at a
// (fake) server with the bundled prompts and knowledge, and an operator
// driven until its outcome arrives.
#pragma once

#include "kevo/core/mutation_operator.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/operators/llm_operators.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>

namespace kevo::test {

// The "llm" section of one model at `url`, the prompts and knowledge of
// configs/, no probe and a fixed hardware text; `extra` replaces or adds
// keys of the section (e.g. {"hardware": ""} to describe the machine).
inline operators::llm::ServiceConfig service_config(const std::string& url,
                                                    const std::string& provider = "openai-compatible",
                                                    const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json j = {{"models", {{{"name", "fake"}, {"provider", provider}, {"base_url", url}, {"model", "fake-coder"},
                                   {"usd_per_mtok_in", 1.0}, {"usd_per_mtok_out", 2.0}, {"max_tokens", 256}}}},
                      {"client", {{"timeout_s", 2.0}, {"connect_timeout_s", 1.0}, {"max_retries", 2},
                                  {"backoff_initial_s", 0.01}, {"backoff_max_s", 3.0}}},
                      {"probe", false}, {"hardware", "a test CPU with 2 threads"}};
  j.update(extra);
  StrictObject o(j, "test", "/llm");
  return operators::llm::parse_service_config(o, std::filesystem::path(KEVO_SOURCE_DIR) / "configs");
}

// The LLM records of an outcome are written as text (not through a DOM):
// they must be exactly what a DOM's compact dump of them would be.
inline void expect_records_are_their_dump(const OperatorOutcome& o) {
  if (o.llm.empty()) return;
  const auto j = nlohmann::json::parse(o.llm, nullptr, false);
  ASSERT_TRUE(j.is_array()) << o.llm;
  EXPECT_EQ(o.llm, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// Drives an operator until its outcome arrives.
inline OperatorOutcome await_outcome(MutationOperator& op, const OperatorRequest& req) {
  if (auto now = op.begin(req)) {
    expect_records_are_their_dump(*now);
    return *now;
  }
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30))
    for (auto& o : op.poll(std::chrono::milliseconds(50))) {
      expect_records_are_their_dump(o);
      return o;
    }
  ADD_FAILURE() << "no outcome";
  return {};
}

}  // namespace kevo::test
