#include "kevo/core/strict_json.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>

namespace kevo {
namespace {

using nlohmann::json;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(StrictJson, UnknownKeyNamesPointerAndAllowedKeys) {
  const json j = json::parse(R"({"island": {"population": 8, "elites": 2, "populaton": 9}})");
  StrictObject root(j, "config.json", "");
  StrictObject island = root.object("island");
  EXPECT_EQ(island.integer("population", std::nullopt, 1), 8);
  EXPECT_EQ(island.integer("elites", 1, 0), 2);
  EXPECT_EQ(island.integer("in_flight", 4, 1), 4);               // absent: default, still allowed
  EXPECT_EQ(island.choice("selection", {"tournament", "uniform"}, "tournament"), "tournament");
  const std::string msg = message_of([&] { island.finish(); });
  EXPECT_EQ(msg,
            "config.json: /island/populaton: unknown key; expected one of: elites, in_flight, population, "
            "selection (did you mean 'population'?)");
}

TEST(StrictJson, TypeAndRangeErrors) {
  const json j = json::parse(R"({"budget": {"evaluations": "ten", "seconds": -1, "flag": 1,
                                              "mode": "fast", "list": ["a", 2], "big": 1e3, "frac": 2.5}})");
  StrictObject root(j, "config.json", "");
  StrictObject b = root.object("budget");
  EXPECT_EQ(message_of([&] { b.integer("evaluations", std::nullopt, 1); }),
            "config.json: /budget/evaluations: expected an integer >= 1, got \"ten\"");
  EXPECT_EQ(message_of([&] { b.number("seconds", std::nullopt, 0.0); }),
            "config.json: /budget/seconds: expected a number >= 0, got -1");
  EXPECT_EQ(message_of([&] { b.boolean("flag"); }), "config.json: /budget/flag: expected true or false, got 1");
  EXPECT_EQ(message_of([&] { b.choice("mode", {"slow", "steady"}); }),
            "config.json: /budget/mode: expected one of: slow, steady, got \"fast\"");
  EXPECT_EQ(message_of([&] { b.strings("list"); }), "config.json: /budget/list/1: expected a string, got 2");
  EXPECT_EQ(message_of([&] { b.string("missing"); }),
            "config.json: /budget/missing: expected a string (the key is required)");
  EXPECT_EQ(message_of([&] { root.object("nothere"); }),
            "config.json: /nothere: expected an object (the key is required)");
  EXPECT_EQ(b.integer("big"), 1000);   // 1e3 is an integer
  EXPECT_NE(message_of([&] { b.integer("frac"); }).find("expected an integer, got 2.5"), std::string::npos);
  const json array = json::array();
  EXPECT_EQ(message_of([&] { StrictObject(array, "f.json", "/x"); }), "f.json: /x: expected an object, got []");
  EXPECT_EQ(b.string("absent", "dflt"), "dflt");
  EXPECT_FALSE(root.optional_object("absent").has_value());
  EXPECT_EQ(json_type_name(json(1)), "integer");
  EXPECT_EQ(json_type_name(json(1.5)), "number");
  EXPECT_EQ(json_type_name(json::object()), "object");
}

TEST(StrictJson, FinishPassesWhenEverythingWasRead) {
  const json j = json::parse(R"({"a": 1, "b": "x"})");
  StrictObject o(j, "f.json", "");
  EXPECT_EQ(o.integer("a"), 1);
  o.allow("b");
  EXPECT_NO_THROW(o.finish());
}

TEST(StrictJson, ReadFileErrors) {
  test::TempDir dir;
  const auto missing = (dir.path() / "nope.json").string();
  EXPECT_EQ(message_of([&] { read_json_file(missing); }), missing + ": expected a readable JSON file");

  const auto bad = dir.write("bad.json", "{\n  \"a\": 1,\n  \"b\": }\n").string();
  const std::string msg = message_of([&] { read_json_file(bad); });
  EXPECT_EQ(msg.rfind(bad + ": expected valid JSON; line 3, column 8", 0), 0u) << msg;

  const auto dup = dir.write("dup.json", R"({"x": [{"k": 1}, {"k": 2, "k": 3}]})").string();
  EXPECT_EQ(message_of([&] { read_json_file(dup); }),
            dup + ": /x/1/k: duplicate key; expected each key once per object");

  const auto good = dir.write("good.json", R"({"x": [1, {"y": true}], "z": {"w": null}})").string();
  const json j = read_json_file(good);
  EXPECT_EQ(j["x"][1]["y"], true);
}

}  // namespace
}  // namespace kevo
