// The test task shared by the task tests: a valid sgemm manifest, its
// sources, and a fixture that writes tasks and checks load errors.
#pragma once

#include "kevo/core/task.hpp"

#include "kevo/core/error.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace kevo::test {

using nlohmann::json;

inline const char* kSeed =
    "// kevo:params begin\n"
    "#define TILE_M 8\n"
    "#define TILE_N 16\n"
    "#define LOOP_ORDER_ijk 1\n"
    "#define LOOP_ORDER \"ijk\"\n"
    "// kevo:params end\n"
    "#include <cstdint>\n"
    "extern \"C\" void sgemm(const float* A, const float* B, float* C, int32_t M, int32_t N, int32_t K) {}\n";
inline const char* kReference =
    "#include <cstdint>\n"
    "extern \"C\" void sgemm(const float* A, const float* B, float* C, int32_t M, int32_t N, int32_t K) {}\n";

inline json valid_manifest() {
  return json::parse(R"json({
    "name": "sgemm",
    "description": "C = A @ B",
    "backend": "cpu",
    "function": "sgemm",
    "args": [
      {"name": "A", "dtype": "float32", "role": "in", "shape": ["M", "K"]},
      {"name": "B", "dtype": "float32", "role": "in", "shape": ["K", "N"],
       "distribution": {"kind": "uniform", "low": -2, "high": 2}},
      {"name": "C", "dtype": "float32", "role": "out", "shape": ["M", "N"]},
      {"name": "M", "dtype": "int32", "role": "scalar", "value": "M"},
      {"name": "N", "dtype": "int32", "role": "scalar", "value": "N"},
      {"name": "K", "dtype": "int32", "role": "scalar", "value": "K"}
    ],
    "shapes": {
      "visible": [{"M": 512, "N": 256, "K": 128}],
      "hidden": [{"M": 129, "N": 77, "K": 65}, {"M": 1, "N": 300, "K": 33}]
    },
    "tolerance": {"atol": 1e-4, "rtol": 1e-4, "rel_l2": 1e-5},
    "reference": "reference.cpp",
    "seed": "seed.cpp",
    "search_space": {
      "params": [{"name": "TILE_M", "values": [8, 16, 32, 64]},
                 {"name": "TILE_N", "values": [8, 16, 32, 64]},
                 {"name": "LOOP_ORDER", "values": ["ijk", "ikj"]}],
      "restrictions": ["TILE_M * TILE_N <= 4096"],
      "seed_point": {"TILE_M": 8, "TILE_N": 16, "LOOP_ORDER": "ijk"}
    },
    "flops": "2*M*N*K",
    "bytes": "4*(M*K + K*N + M*N)"
  })json");
}

class TaskTest : public ::testing::Test {
 protected:
  TempDir tmp;

  std::filesystem::path write_task(const std::string& name, const json& manifest, const std::string& seed = kSeed,
                                   const std::string& reference = kReference) {
    tmp.write(name + "/task.json", manifest.dump(2));
    tmp.write(name + "/reference.cpp", reference);
    tmp.write(name + "/seed.cpp", seed);
    return tmp.path() / name;
  }

  // Loads `manifest` and expects an InputError naming task.json, `pointer` and `words`.
  void expect_error(const json& manifest, const std::string& pointer, const std::string& words,
                    const std::string& seed = kSeed) {
    const auto dir = write_task("bad", manifest, seed);
    try {
      load_task(dir);
      ADD_FAILURE() << "no error for " << pointer;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find((dir / "task.json").string() + ": "), std::string::npos) << what;
      EXPECT_EQ(e.key(), pointer) << what;
      EXPECT_NE(what.find(pointer + ": "), std::string::npos) << what;
      EXPECT_NE(what.find(words), std::string::npos) << "missing '" << words << "' in: " << what;
    }
  }

  void expect_error_after(const std::function<void(json&)>& edit, const std::string& pointer,
                          const std::string& words, const std::string& seed = kSeed) {
    json m = valid_manifest();
    edit(m);
    expect_error(m, pointer, words, seed);
  }
};

}  // namespace kevo::test
