#include "common.hpp"

#include "kevo/core/error.hpp"

#include <gtest/gtest.h>

namespace kevo::test {
namespace {

std::string error_of(const nlohmann::json& doc) {
  try {
    engine::parse_config(doc, "conf.json", test_plugins());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, ValidConfigFillsDefaults) {
  auto c = engine::parse_config(toy_config(), "conf.json", test_plugins());
  EXPECT_EQ(c.name, "toy");
  EXPECT_EQ(c.seed, 7u);
  EXPECT_EQ(c.budget.evaluations_per_task, 60);
  EXPECT_EQ(c.budget.max_candidates_per_task, 1200);
  EXPECT_EQ(c.operators.size(), 2u);
  EXPECT_EQ(c.effective["island"]["selection"], "tournament");
  EXPECT_EQ(c.island.ramp, 4);   // a slow start per task by default
  EXPECT_EQ(c.effective["island"]["ramp"], 4);
  EXPECT_EQ(c.effective["backend"]["null"]["wrong_fraction"], 0.1);
  EXPECT_EQ(c.effective["operators"][0]["rate"], 0.1);
  EXPECT_EQ(c.effective["operators"][0]["local"], 1.0);
  EXPECT_EQ(c.effective["operators"][0]["guided"], 1.0);
  EXPECT_EQ(c.effective["operators"][0]["radius"], 0);
}

TEST(Config, UnknownKeyNamesPointerAndAllowedKeys) {
  auto doc = toy_config();
  doc["island"]["populaton"] = 3;
  const auto msg = error_of(doc);
  EXPECT_NE(msg.find("conf.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("/island/populaton"), std::string::npos) << msg;
  EXPECT_NE(msg.find("population"), std::string::npos) << msg;
}

TEST(Config, UnknownNestedBackendKey) {
  auto doc = toy_config();
  doc["backend"]["null"]["slotz"] = 3;
  EXPECT_NE(error_of(doc).find("/backend/null/slotz"), std::string::npos) << error_of(doc);
}

TEST(Config, WrongTypesAndRanges) {
  auto doc = toy_config();
  doc["budget"]["evaluations_per_task"] = "ten";
  EXPECT_NE(error_of(doc).find("/budget/evaluations_per_task"), std::string::npos);
  doc = toy_config();
  doc["budget"]["evaluations_per_task"] = 0;
  EXPECT_NE(error_of(doc).find("/budget/evaluations_per_task"), std::string::npos);
  doc = toy_config();
  doc["island"]["elites"] = 100;
  EXPECT_NE(error_of(doc).find("/island/elites"), std::string::npos);
  doc = toy_config();
  doc["island"]["ramp"] = -1;
  EXPECT_NE(error_of(doc).find("/island/ramp"), std::string::npos) << error_of(doc);
  doc = toy_config();
  doc["operators"][1]["type"] = "nope";
  EXPECT_NE(error_of(doc).find("/operators/1/type"), std::string::npos) << error_of(doc);
  doc = toy_config();
  doc["tasks"] = {"does/not/exist"};
  EXPECT_NE(error_of(doc).find("/tasks"), std::string::npos);
  doc = toy_config();
  doc.erase("operators");
  EXPECT_NE(error_of(doc).find("/operators"), std::string::npos);
  doc = toy_config();
  doc["operators"][0]["enabled"] = false;
  doc["operators"][1]["enabled"] = false;
  EXPECT_NE(error_of(doc).find("/operators"), std::string::npos);
}

TEST(Config, SetOverrides) {
  auto doc = toy_config();
  engine::apply_override(doc, "budget.evaluations_per_task=5");
  engine::apply_override(doc, "operators.1.enabled=false");
  engine::apply_override(doc, "island.selection=proportional");
  engine::apply_override(doc, "backend.null.table=");
  EXPECT_EQ(doc["budget"]["evaluations_per_task"], 5);
  EXPECT_EQ(doc["operators"][1]["enabled"], false);
  EXPECT_EQ(doc["island"]["selection"], "proportional");
  EXPECT_EQ(doc["backend"]["null"]["table"], "");
  EXPECT_THROW(engine::apply_override(doc, "novalue"), InputError);
  EXPECT_THROW(engine::apply_override(doc, "operators.9.weight=1"), InputError);
  EXPECT_THROW(engine::apply_override(doc, "a..b=1"), InputError);
  auto c = engine::parse_config(doc, "conf.json", test_plugins());
  EXPECT_FALSE(c.operators[1].enabled);
  EXPECT_EQ(c.island.selection, engine::Selection::proportional);
}

// The message names what the user wrote: the override, not a file that
// does not hold the value.
TEST(Config, SetErrorsNameTheOverrideNotTheFile) {
  auto bad = [](const std::vector<std::string>& overrides) {
    auto doc = toy_config();
    for (const auto& o : overrides) engine::apply_override(doc, o);
    try {
      engine::parse_config(doc, "conf.json", test_plugins());
    } catch (const InputError& e) {
      return std::string(engine::attribute_overrides(e, "conf.json", overrides).what());
    }
    return std::string();
  };
  // A value of the wrong type: the override and the key, never the file.
  const std::string type = bad({"seed=3", "budget.evaluations_per_task=abc"});
  EXPECT_EQ(type.rfind("--set budget.evaluations_per_task=abc: /budget/evaluations_per_task: expected", 0), 0u) << type;
  EXPECT_EQ(type.find("conf.json"), std::string::npos) << type;
  // Below an overridden key (a whole object set at once), and an unknown key.
  const std::string below = bad({"island={\"population\": -1}"});
  EXPECT_EQ(below.rfind("--set island={\"population\": -1}: /island/population", 0), 0u) << below;
  const std::string unknown = bad({"island.populaton=5"});
  EXPECT_EQ(unknown.rfind("--set island.populaton=5: /island/populaton: unknown key", 0), 0u) << unknown;
  // The last override of a key is the one in effect.
  const std::string last = bad({"seed=-1", "seed=-2"});
  EXPECT_EQ(last.rfind("--set seed=-2: /seed", 0), 0u) << last;
  // About a parent of the overridden key: the file, with the override named.
  const std::string parent = bad({"operators.0.enabled=false", "operators.1.enabled=false"});
  EXPECT_EQ(parent.rfind("conf.json: /operators: expected", 0), 0u) << parent;
  EXPECT_NE(parent.find("(with --set operators.0.enabled=false, --set operators.1.enabled=false)"), std::string::npos)
      << parent;
  // An error the overrides have nothing to do with stays the file's.
  auto doc = toy_config();
  doc["island"]["populaton"] = 5;
  try {
    engine::parse_config(doc, "conf.json", test_plugins());
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    const std::string own = engine::attribute_overrides(e, "conf.json", {"seed=3"}).what();
    EXPECT_EQ(own.rfind("conf.json: /island/populaton", 0), 0u) << own;
  }
}

}  // namespace
}  // namespace kevo::test
