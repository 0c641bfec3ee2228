// What a task adds to the judgement beyond its shapes: stress trials (other
// input distributions) and the library policy.
#include "kevo/core/task.hpp"

#include "task_fixture.hpp"

#include <gtest/gtest.h>

#include <set>

namespace kevo {
namespace {

using nlohmann::json;
using test::TaskTest;
using test::valid_manifest;

json normal(double mean, double stddev) { return {{"kind", "normal"}, {"mean", mean}, {"stddev", stddev}}; }

json stressed_manifest() {
  json m = valid_manifest();
  m["stress"] = {{{"name", "large-mean"}, {"inputs", {{"B", normal(1000, 3)}, {"A", normal(-5, 0.5)}}}},
                 {{"name", "tiny"}, {"inputs", {{"B", {{"kind", "uniform"}, {"low", 0}, {"high", 1e-3}}}}}}};
  return m;
}

TEST_F(TaskTest, StressTrialsAreReadInOrderWithTheirDistributions) {
  const Task t = load_task(write_task("stress", stressed_manifest()));
  ASSERT_EQ(t.stress.size(), 2u);
  EXPECT_EQ(t.stress[0].name, "large-mean");
  ASSERT_EQ(t.stress[0].inputs.size(), 2u);
  EXPECT_EQ(t.stress[0].inputs[0].first, 0u);   // argument order, not manifest order
  EXPECT_EQ(t.stress[0].inputs[0].second.kind, Distribution::Kind::normal);
  EXPECT_EQ(t.stress[0].inputs[0].second.a, -5.0);
  EXPECT_EQ(t.stress[0].inputs[1].first, 1u);
  EXPECT_EQ(t.stress[0].inputs[1].second.a, 1000.0);
  EXPECT_EQ(t.stress[0].inputs[1].second.b, 3.0);
  EXPECT_EQ(t.stress[1].inputs.at(0).second.kind, Distribution::Kind::uniform);
  EXPECT_EQ(t.stress[1].inputs.at(0).second.b, 1e-3);
  EXPECT_TRUE(load_task(write_task("plain", valid_manifest())).stress.empty());
}

TEST_F(TaskTest, WithStressReplacesOnlyTheNamedInputs) {
  const Task t = load_task(write_task("stress", stressed_manifest()));
  const Task s = with_stress(t, t.stress[1]);
  EXPECT_EQ(s.args[1].dist.kind, Distribution::Kind::uniform);
  EXPECT_EQ(s.args[1].dist.a, 0.0);
  EXPECT_EQ(s.args[1].dist.b, 1e-3);
  EXPECT_EQ(s.args[0].dist.a, t.args[0].dist.a);   // A keeps its own
  EXPECT_EQ(s.args[0].dist.b, t.args[0].dist.b);
  EXPECT_EQ(t.args[1].dist.a, -2.0);               // the task itself is unchanged
  EXPECT_EQ(s.name, t.name);
  EXPECT_EQ(s.hidden.size(), t.hidden.size());
  const Task both = with_stress(t, t.stress[0]);
  EXPECT_EQ(both.args[0].dist.a, -5.0);
  EXPECT_EQ(both.args[1].dist.a, 1000.0);
}

TEST_F(TaskTest, BadStressTrialsNameTheKey) {
  auto edit = [](std::function<void(json&)> f) {
    return [f](json& m) {
      m["stress"] = {{{"name", "big"}, {"inputs", {{"A", normal(1000, 3)}}}}};
      f(m["stress"]);
    };
  };
  expect_error_after([](json& m) { m["stress"] = json::array(); }, "/stress", "an array of 1 to 8 objects");
  expect_error_after([](json& m) { m["stress"] = json::object(); }, "/stress", "an array of 1 to 8 objects");
  expect_error_after(edit([](json& s) { s[0]["name"] = "Big"; }), "/stress/0/name", "lower-case letters");
  expect_error_after(edit([](json& s) { s[0]["name"] = "1x"; }), "/stress/0/name", "starting with a letter");
  expect_error_after(edit([](json& s) { s.push_back(s[0]); }), "/stress/1/name", "appears twice");
  expect_error_after(edit([](json& s) { s[0].erase("inputs"); }), "/stress/0/inputs", "the key is required");
  expect_error_after(edit([](json& s) { s[0]["inputs"] = json::object(); }), "/stress/0/inputs",
                     "at least one input argument (A, B)");
  expect_error_after(edit([](json& s) { s[0]["inputs"]["C"] = normal(0, 1); }), "/stress/0/inputs/C",
                     "an input argument (role in or inout): A, B");
  expect_error_after(edit([](json& s) { s[0]["inputs"]["M"] = normal(0, 1); }), "/stress/0/inputs/M",
                     "an input argument");
  expect_error_after(edit([](json& s) { s[0]["inputs"]["A"] = normal(0, -1); }), "/stress/0/inputs/A/stddev",
                     "a number >= 0");
  expect_error_after(edit([](json& s) { s[0]["inputs"]["A"] = {{"kind", "normal"}, {"std", 3}}; }),
                     "/stress/0/inputs/A/std", "unknown key");
  expect_error_after(edit([](json& s) { s[0]["inputs"]["A"] = 3; }), "/stress/0/inputs/A", "an object");
  expect_error_after(edit([](json& s) { s[0]["tolerance"] = 1; }), "/stress/0/tolerance", "unknown key");
  // Integer inputs take integer distributions, as in "args".
  json ints = valid_manifest();
  ints["args"][0]["dtype"] = "int32";
  ints["args"][0]["distribution"] = {{"kind", "integers"}, {"low", 0}, {"high", 9}};
  ints["stress"] = {{{"name", "big"}, {"inputs", {{"A", normal(1000, 3)}}}}};
  expect_error(ints, "/stress/0/inputs/A/kind", "\"integers\" or \"constant\" for an int32 argument");
}

TEST_F(TaskTest, LibrariesDefaultToTheBackendsRuntime) {
  json m = valid_manifest();
  EXPECT_EQ(load_task(write_task("cpu", m)).libraries,
            (std::vector<std::string>{"libc", "libm", "libstdc++", "openmp"}));
  m["backend"] = "cuda";
  const Task cuda = load_task(write_task("cuda", m));
  EXPECT_EQ(cuda.libraries, (std::vector<std::string>{"libc", "libm", "libstdc++", "cudart"}));
  EXPECT_TRUE(cuda.allows_library("cudart"));
  EXPECT_FALSE(cuda.allows_library("cublas"));
  m["backend"] = "null";
  EXPECT_EQ(load_task(write_task("null", m)).libraries, (std::vector<std::string>{"libc", "libm", "libstdc++"}));
}

TEST_F(TaskTest, LibrariesAddToTheRuntimeAndDoNotBindSourceBaselines) {
  json m = valid_manifest();
  m["backend"] = "cuda";
  m["libraries"] = {"cublasLt", "cub"};
  m["baselines"] = {{"sources", {{{"name", "cublas"}, {"source", "reference.cpp"}, {"link", {"cublas"}}}}}};
  const Task t = load_task(write_task("libs", m));
  EXPECT_EQ(t.libraries, (std::vector<std::string>{"libc", "libm", "libstdc++", "cudart", "cublasLt", "cub"}));
  EXPECT_TRUE(t.allows_library("cub"));
  EXPECT_FALSE(t.allows_library("cublas"));   // what the baseline links is not the candidates'
  EXPECT_EQ(t.source_baselines.at(0).link, (std::vector<std::string>{"cublas"}));
  m["backend"] = "cpu";
  m["libraries"] = {"blas"};
  m.erase("baselines");
  EXPECT_TRUE(load_task(write_task("blas", m)).allows_library("blas"));
}

TEST_F(TaskTest, BadLibrariesNameTheEntry) {
  expect_error_after([](json& m) { m["libraries"] = {"cublas"}; }, "/libraries/0",
                     "a library of the \"cpu\" backend (blas); \"cublas\" is for \"cuda\" tasks");
  expect_error_after([](json& m) { m["libraries"] = {"openblas"}; }, "/libraries/0",
                     "a library kevo knows for the \"cpu\" backend: blas, got \"openblas\"");
  expect_error_after([](json& m) { m["backend"] = "cuda"; m["libraries"] = {"cuBLAS"}; }, "/libraries/0",
                     "cublas, cublasLt, cub, thrust");
  expect_error_after([](json& m) { m["libraries"] = {"openmp"}; }, "/libraries/0",
                     "\"openmp\" is part of every cpu task's runtime");
  expect_error_after([](json& m) { m["libraries"] = {"libm"}; }, "/libraries/0", "part of every cpu task's runtime");
  expect_error_after([](json& m) { m["libraries"] = {"blas", "blas"}; }, "/libraries/1", "listed twice");
  expect_error_after([](json& m) { m["libraries"] = "blas"; }, "/libraries", "array");
  expect_error_after([](json& m) { m["backend"] = "null"; m["libraries"] = {"blas"}; }, "/libraries/0",
                     "none for this backend");
}

TEST(Libraries, TheKnownListIsConsistent) {
  std::set<std::string> names;
  for (const LibraryInfo& l : known_libraries()) {
    EXPECT_TRUE(names.insert(l.name).second) << l.name << " twice";
    EXPECT_FALSE(l.what.empty()) << l.name;
    if (l.header_only) {
      EXPECT_TRUE(l.link.empty()) << l.name;
      EXPECT_FALSE(l.headers.empty()) << l.name;
    }
    if (!l.runtime && !l.header_only) {
      EXPECT_FALSE(l.link.empty()) << l.name;
    }
  }
  for (const char* n : {"cublas", "cublasLt", "cub", "openmp", "cudart"}) EXPECT_TRUE(names.count(n)) << n;
  const auto cub = std::find_if(known_libraries().begin(), known_libraries().end(),
                                [](const LibraryInfo& l) { return l.name == "cub"; });
  ASSERT_NE(cub, known_libraries().end());
  EXPECT_TRUE(cub->header_only);
  EXPECT_EQ(cub->headers, (std::vector<std::string>{"cub/"}));
  EXPECT_EQ(runtime_libraries("cpu"), (std::vector<std::string>{"libc", "libm", "libstdc++", "openmp"}));
}

}  // namespace
}  // namespace kevo
