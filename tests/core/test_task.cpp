#include "kevo/core/task.hpp"

#include "kevo/core/error.hpp"
#include "task_fixture.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

namespace kevo {
namespace {

using test::kReference;
using test::kSeed;
using test::TaskTest;
using test::valid_manifest;
using nlohmann::json;

TEST_F(TaskTest, ValidTaskLoads) {
  const Task t = load_task(write_task("sgemm", valid_manifest()));
  EXPECT_EQ(t.name, "sgemm");
  EXPECT_EQ(t.description, "C = A @ B");
  EXPECT_EQ(t.function, "sgemm");
  EXPECT_TRUE(t.dir.is_absolute());
  EXPECT_EQ(t.manifest_path, t.dir / "task.json");
  ASSERT_EQ(t.args.size(), 6u);
  EXPECT_EQ(t.args[1].dist.kind, Distribution::Kind::uniform);
  EXPECT_EQ(t.args[1].dist.a, -2.0);
  EXPECT_EQ(t.args[0].dist.a, -1.0);   // default uniform -1..1
  EXPECT_EQ(t.dims, (std::vector<std::string>{"M", "K", "N"}));
  ASSERT_EQ(t.visible.size(), 1u);
  ASSERT_EQ(t.hidden.size(), 2u);
  EXPECT_EQ(t.visible[0].label, "M=512,K=128,N=256");
  EXPECT_EQ(t.hidden[0].dims.at("N"), 77);
  EXPECT_EQ(t.tolerance.rel_l2, 1e-5);
  EXPECT_EQ(t.reference_source, kReference);
  EXPECT_EQ(t.seed_source, kSeed);
  EXPECT_EQ(t.c_signature(),
            "extern \"C\" void sgemm(const float* A, const float* B, float* C, int32_t M, int32_t N, int32_t K)");
  EXPECT_EQ(t.extents(t.args[0], t.hidden[0]), (std::vector<std::int64_t>{129, 65}));
  EXPECT_EQ(t.elements(t.args[2], t.visible[0]), 512 * 256);
  EXPECT_EQ(t.scalar_value(t.args[5], t.hidden[1]).i, 33);
  EXPECT_EQ(t.flops.eval(t.visible[0].env()).i, 2LL * 512 * 256 * 128);
  EXPECT_EQ(t.space.params().size(), 3u);
  ASSERT_TRUE(t.seed_point.has_value());
  EXPECT_EQ(*t.seed_point, (Point{0, 1, 0}));
  EXPECT_EQ(t.manifest["name"], "sgemm");
}

TEST_F(TaskTest, SeedPointComesFromTheSeedBlock) {
  json m = valid_manifest();
  m["search_space"].erase("seed_point");
  const Task t = load_task(write_task("derived", m));
  ASSERT_TRUE(t.seed_point.has_value());
  EXPECT_EQ(t.space.key(*t.seed_point), "TILE_M=8,TILE_N=16,LOOP_ORDER=ijk");

  // Without a block and without seed_point there is no seed point.
  expect_error(m, "/search_space/seed_point", "the seed has neither", kReference);
  // A block value outside the parameter's list.
  std::string seed = kSeed;
  seed.replace(seed.find("TILE_M 8"), 8, "TILE_M 9");
  expect_error(m, "/search_space/seed_point", "#define TILE_M 9 is not one of: 8, 16, 32, 64", seed);
  // An explicit seed_point that disagrees with the block.
  expect_error_after([](json& j) { j["search_space"]["seed_point"]["TILE_M"] = 16; }, "/search_space/seed_point",
                     "params block in seed.cpp");
}

TEST_F(TaskTest, MinimalTaskWithDefaults) {
  const json m = json::parse(R"({
    "name": "scale-2", "function": "scale",
    "args": [{"name": "x", "dtype": "float64", "role": "inout", "shape": ["n + 2"]},
             {"name": "idx", "dtype": "int64", "role": "in", "shape": [4]},
             {"name": "n", "dtype": "int64", "role": "scalar", "value": "n"},
             {"name": "eps", "dtype": "float32", "role": "scalar", "value": "1e-5"}],
    "shapes": {"visible": [{"n": 10}]},
    "reference": "reference.cpp", "seed": "seed.cpp"})");
  const std::string src = "extern \"C\" void scale(double* x, const int64_t* idx, int64_t n, float eps) {}\n";
  const Task t = load_task(write_task("min", m, src, src));
  EXPECT_EQ(t.backend, "cpu");
  EXPECT_TRUE(t.hidden.empty());
  EXPECT_TRUE(t.space.empty());
  EXPECT_FALSE(t.seed_point.has_value());
  EXPECT_TRUE(t.flops.empty());
  EXPECT_EQ(t.tolerance.atol, 1e-5);
  EXPECT_EQ(t.args[1].dist.kind, Distribution::Kind::integers);
  EXPECT_EQ(t.elements(t.args[0], t.visible[0]), 12);
  EXPECT_EQ(t.elements(t.args[1], t.visible[0]), 4);
  EXPECT_DOUBLE_EQ(t.scalar_value(t.args[3], t.visible[0]).d, 1e-5);
  EXPECT_EQ(t.c_signature(), "extern \"C\" void scale(double* x, const int64_t* idx, int64_t n, float eps)");
}

TEST_F(TaskTest, BadManifestsNameFileAndPointer) {
  expect_error_after([](json& j) { j["args"][2]["dtype"] = "float16"; }, "/args/2/dtype",
                     "expected one of: float32, float64, int32, int64, bfloat16, got \"float16\"");
  expect_error_after([](json& j) { j["args"][0]["role"] = "input"; }, "/args/0/role", "one of: in, out, inout, scalar");
  expect_error_after([](json& j) { j["args"][1]["name"] = "A"; }, "/args/1/name", "unique argument name");
  expect_error_after([](json& j) { j["args"][1]["name"] = "2B"; }, "/args/1/name", "C identifier");
  expect_error_after([](json& j) { j["args"][2]["distribution"] = {{"kind", "uniform"}}; }, "/args/2/distribution",
                     "unknown key");
  expect_error_after([](json& j) { j["args"][0]["shap"] = {"M"}; }, "/args/0/shap", "unknown key");
  expect_error_after([](json& j) { j["args"][3]["shape"] = {"M"}; }, "/args/3/shape", "unknown key");
  expect_error_after([](json& j) { j["args"][0]["shape"] = {"M +"}; }, "/args/0/shape/0", "column 4");
  expect_error_after([](json& j) { j["args"][0]["shape"] = json::array(); }, "/args/0/shape", "non-empty array");
  expect_error_after([](json& j) { j["args"][0]["shape"] = {"M - 1"}; }, "/args/0/shape/0", "positive extent");
  expect_error_after([](json& j) { j["args"][1]["distribution"]["low"] = 5; }, "/args/1/distribution/high",
                     "a number >= low");
  expect_error_after([](json& j) { j["args"][1]["distribution"]["kind"] = "gaussian"; },
                     "/args/1/distribution/kind", "one of: uniform, normal, constant, integers");
  expect_error_after([](json& j) { j["args"][1]["distribution"] = {{"kind", "normal"}, {"stddev", -1}}; },
                     "/args/1/distribution/stddev", "a number >= 0");
  expect_error_after([](json& j) { j["args"][2]["role"] = "in"; }, "/args", "at least one argument with role");
  expect_error_after([](json& j) { j["args"][3]["value"] = "M / 2"; }, "/args/3/value", "a value of type int32");
  expect_error_after([](json& j) { j["args"] = json::array(); }, "/args", "non-empty array");
  expect_error_after([](json& j) { j.erase("function"); }, "/function", "a string (the key is required)");
  expect_error_after([](json& j) { j["function"] = "void"; }, "/function", "C identifier");
  expect_error_after([](json& j) { j["name"] = "bad name"; }, "/name", "letters, digits");
  expect_error_after([](json& j) { j["refrence"] = "x.cpp"; }, "/refrence", "unknown key; expected one of:");
}

TEST_F(TaskTest, Bfloat16BuffersForCudaTasks) {
  json m = valid_manifest();
  m["backend"] = "cuda";
  for (int k : {0, 1, 2}) m["args"][k]["dtype"] = "bfloat16";
  m["args"][1]["distribution"] = {{"kind", "integers"}, {"low", -256}, {"high", 256}};
  const Task t = load_task(write_task("bf16", m));
  EXPECT_EQ(t.args[0].dtype, DType::bf16);
  EXPECT_EQ(to_string(DType::bf16), "bfloat16");
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_TRUE(is_floating(DType::bf16));
  EXPECT_EQ(t.args[0].dist.kind, Distribution::Kind::uniform);   // the floating default
  EXPECT_EQ(t.c_signature(),
            "extern \"C\" void sgemm(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int32_t M, "
            "int32_t N, int32_t K)");
  // Integers are exact in bfloat16 up to 2^8 only.
  m["args"][1]["distribution"]["high"] = 257;
  expect_error(m, "/args/1/distribution/high", "an integer");
  m["args"][1]["distribution"] = {{"kind", "constant"}, {"value", 0.1}};   // rounded when stored: fine
  EXPECT_NO_THROW(load_task(write_task("bf16c", m)));
  // Not for scalars, not for the CPU backend (its compilers have no bfloat16 type).
  json scalar = m;
  scalar["args"][3]["dtype"] = "bfloat16";
  expect_error(scalar, "/args/3/dtype", "bfloat16 is for buffers only");
  m["backend"] = "cpu";
  expect_error(m, "/args/0/dtype", "bfloat16 is supported by the \"cuda\" backend only");
}

TEST(Bfloat16, RoundsToNearestEvenOnceAndWidensExactly) {
  EXPECT_EQ(bf16_from_double(1.0), 0x3F80);
  EXPECT_EQ(bf16_from_double(-2.0), 0xC000);
  EXPECT_EQ(bf16_from_double(0.0), 0x0000);
  EXPECT_EQ(bf16_from_double(-0.0), 0x8000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even 1.
  EXPECT_EQ(bf16_from_double(1.0 + 0x1p-8), 0x3F80);
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(bf16_from_double(1.0 + 3 * 0x1p-8), 0x3F82);
  // Just above a tie rounds up, even where a float in between would round to
  // the tie itself (the double rounding through float that this avoids).
  EXPECT_EQ(bf16_from_double(1.0 + 0x1p-8 + 0x1p-40), 0x3F81);
  EXPECT_EQ(bf16_from_double(1.0 + 0x1p-8 - 0x1p-40), 0x3F80);
  EXPECT_EQ(bf16_from_double(0.1), 0x3DCD);
  EXPECT_EQ(bf16_from_double(1e39), 0x7F80);    // beyond the largest bf16: inf
  EXPECT_EQ(bf16_from_double(-1e39), 0xFF80);
  EXPECT_EQ(bf16_from_double(3.3895313892515355e38), 0x7F7F);   // the largest bf16 stays finite
  EXPECT_EQ(bf16_from_double(1e-45), 0x0000);   // under half the smallest subnormal (2^-133)
  EXPECT_EQ(bf16_from_double(0x1p-133), 0x0001);
  EXPECT_EQ(bf16_from_double(std::numeric_limits<double>::quiet_NaN()), 0x7FC0);
  EXPECT_EQ(bf16_from_double(std::numeric_limits<double>::infinity()), 0x7F80);
  EXPECT_EQ(bf16_to_double(0x3F81), 1.0 + 0x1p-7);
  EXPECT_EQ(bf16_to_double(0x0001), 0x1p-133);
  EXPECT_TRUE(std::isnan(bf16_to_double(0x7FC0)));
  // Every finite bf16 survives the round trip.
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const double d = bf16_to_double(static_cast<std::uint16_t>(b));
    if (std::isnan(d)) continue;
    ASSERT_EQ(bf16_from_double(d), b) << std::hex << b;
  }
}

TEST_F(TaskTest, BadShapes) {
  expect_error_after([](json& j) { j["shapes"]["visible"][0].erase("K"); }, "/shapes/visible/0/K",
                     "an integer >= 0 (the key is required)");
  expect_error_after([](json& j) { j["shapes"]["hidden"][1]["Q"] = 3; }, "/shapes/hidden/1/Q",
                     "unknown key; expected one of the dimensions the arguments use: M, K, N");
  expect_error_after([](json& j) { j["shapes"]["visible"] = json::array(); }, "/shapes/visible", "non-empty array");
  expect_error_after([](json& j) { j["shapes"]["hiden"] = json::array(); }, "/shapes/hiden", "unknown key");
  expect_error_after([](json& j) { j["shapes"]["hidden"][0]["M"] = "big"; }, "/shapes/hidden/0/M",
                     "an integer >= 0, got \"big\"");
  expect_error_after([](json& j) { j["shapes"]["hidden"][0]["M"] = 0; }, "/args/0/shape/0", "positive extent");
  expect_error_after([](json& j) { j["tolerance"]["atol"] = -1; }, "/tolerance/atol", "a number >= 0");
  expect_error_after([](json& j) { j["tolerance"]["abs"] = 1; }, "/tolerance/abs", "unknown key");
  expect_error_after([](json& j) { j["flops"] = "2*M*N*Q"; }, "/flops", "unknown name 'Q'");
  expect_error_after([](json& j) { j["bytes"] = "M -"; }, "/bytes", "column 4");
  expect_error_after([](json& j) { j["flops"] = "M - 1000"; }, "/flops", "a finite count >= 0");
}

TEST_F(TaskTest, BadFilesAndSearchSpace) {
  expect_error_after([](json& j) { j["reference"] = "missing.cpp"; }, "/reference", "is not a file");
  expect_error_after([](json& j) { j["function"] = "dgemm"; }, "/reference", "never mentions 'dgemm'");
  expect_error_after([](json& j) { j["search_space"]["params"][1]["name"] = "TILE_M"; },
                     "/search_space/params/1/name", "unique parameter name");
  expect_error_after([](json& j) { j["search_space"]["params"][1]["name"] = "K"; }, "/search_space/params/1/name",
                     "not an argument");
  expect_error_after([](json& j) { j["search_space"]["params"][0]["values"] = json::array(); },
                     "/search_space/params/0/values", "non-empty array");
  expect_error_after([](json& j) { j["search_space"]["params"][0]["values"] = {8, 16, 8}; },
                     "/search_space/params/0/values/2", "unique values");
  expect_error_after([](json& j) { j["search_space"]["params"][0]["values"] = {8, "x"}; },
                     "/search_space/params/0/values/1", "all numbers or all strings");
  expect_error_after([](json& j) { j["search_space"]["params"][2]["values"] = {"ijk", "i k"}; },
                     "/search_space/params/2/values/1", "letters, digits");
  expect_error_after([](json& j) { j["search_space"]["params"][0]["values"] = {true}; },
                     "/search_space/params/0/values/0", "a number or a string");
  expect_error_after([](json& j) { j["search_space"]["restrictions"] = {"TILE_M * TILE_K <= 4096"}; },
                     "/search_space/restrictions/0", "unknown name 'TILE_K'");
  expect_error_after([](json& j) { j["search_space"]["restrictions"] = {"TILE_M <"}; },
                     "/search_space/restrictions/0", "column 9");
  expect_error_after([](json& j) { j["search_space"]["restrictions"] = {"TILE_M > 8"}; },
                     "/search_space/seed_point", "violates 'TILE_M > 8'");
  expect_error_after([](json& j) { j["search_space"]["restrictions"] = {"LOOP_ORDER < 3"}; },
                     "/search_space/restrictions/0", "strings can only be compared");
  expect_error_after([](json& j) { j["search_space"]["seed_point"]["TILE_M"] = 12; },
                     "/search_space/seed_point/TILE_M", "one of: 8, 16, 32, 64, got 12");
  expect_error_after([](json& j) { j["search_space"]["seed_point"]["TILE_K"] = 8; },
                     "/search_space/seed_point/TILE_K", "unknown key");
  expect_error_after([](json& j) { j["search_space"]["seed_point"].erase("LOOP_ORDER"); },
                     "/search_space/seed_point/LOOP_ORDER", "one of: \"ijk\", \"ikj\"");
  expect_error_after([](json& j) { j["search_space"]["parms"] = 1; }, "/search_space/parms", "unknown key");
}

TEST_F(TaskTest, MissingManifestAndBadJson) {
  EXPECT_THROW(load_task(tmp.path() / "nothing"), InputError);
  tmp.write("broken/task.json", "{\"name\": ");
  try {
    load_task(tmp.path() / "broken");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("task.json: expected valid JSON; line 1"), std::string::npos) << e.what();
  }
}

// Baselines that ship as sources: read with the manifest, every key checked
// at its own pointer (the backend compiles and judges them at run start).
TEST_F(TaskTest, SourceBaselines) {
  json m = valid_manifest();
  m["baselines"] = {{"torch", "torch.mm(A, B)"},
                    {"sources", {{{"name", "blas"}, {"source", "lib.cpp"}, {"link", {"openblas", "m"}}},
                                 {{"name", "naive2"}, {"source", "reference.cpp"}}}}};
  const auto dir = write_task("good", m);
  tmp.write("good/lib.cpp", kReference);
  const Task t = load_task(dir);
  ASSERT_EQ(t.source_baselines.size(), 2u);
  EXPECT_EQ(t.source_baselines[0].name, "blas");
  EXPECT_EQ(t.source_baselines[0].path, dir / "lib.cpp");
  EXPECT_EQ(t.source_baselines[0].source, kReference);
  EXPECT_EQ(t.source_baselines[0].link, (std::vector<std::string>{"openblas", "m"}));
  EXPECT_TRUE(t.source_baselines[1].link.empty());
  EXPECT_EQ(t.baselines.at("torch"), "torch.mm(A, B)");

  auto with = [](json entry) { return [entry](json& j) { j["baselines"] = {{"sources", {entry}}}; }; };
  const json ok = {{"name", "ref"}, {"source", "reference.cpp"}};
  auto edited = [&](const char* key, json value) {
    json e = ok;
    e[key] = std::move(value);
    return with(e);
  };
  expect_error_after([](json& j) { j["baselines"] = {{"sources", json::array()}}; }, "/baselines/sources",
                     "an array of 1 to 16 objects");
  expect_error_after([](json& j) { j["baselines"] = {{"sources", "lib.cpp"}}; }, "/baselines/sources", "an array");
  expect_error_after(with("lib.cpp"), "/baselines/sources/0", "object");
  expect_error_after(edited("name", "cuBLAS"), "/baselines/sources/0/name", "lower-case identifier");
  expect_error_after(edited("name", ""), "/baselines/sources/0/name", "lower-case identifier");
  expect_error_after(edited("source", "missing.cpp"), "/baselines/sources/0/source", "is not a file");
  expect_error_after(edited("link", {"-o/tmp/x"}), "/baselines/sources/0/link", "library names");
  expect_error_after(edited("link", {"cublas", "a b"}), "/baselines/sources/0/link", "at index 1");
  expect_error_after(edited("link", "cublas"), "/baselines/sources/0/link", "");
  expect_error_after(edited("libs", json::array()), "/baselines/sources/0/libs", "unknown key");
  expect_error_after([&](json& j) { j["baselines"] = {{"sources", {ok, ok}}}; }, "/baselines/sources/1/name",
                     "appears twice");
  expect_error_after([&](json& j) { j["baselines"] = {{"sources", {json{{"source", "reference.cpp"}}}}}; },
                     "/baselines/sources/0/name", "");
}

TEST_F(TaskTest, LibraryBaselines) {
  // Absent: none; present: carried verbatim for the backend's script.
  EXPECT_TRUE(load_task(write_task("plain", valid_manifest())).baselines.empty());
  json m = valid_manifest();
  m["baselines"] = {{"torch", "torch.mm(A, B)"}};
  const Task t = load_task(write_task("good", m));
  ASSERT_EQ(t.baselines.size(), 1u);
  EXPECT_EQ(t.baselines.at("torch"), "torch.mm(A, B)");
  m["baselines"] = json::object();
  EXPECT_TRUE(load_task(write_task("empty", m)).baselines.empty());

  expect_error_after([](json& j) { j["baselines"] = {{"cublas", "torch.mm(A, B)"}}; }, "/baselines/cublas",
                     "unknown key; expected one of: sources, torch");
  expect_error_after([](json& j) { j["baselines"] = {{"torch", 3}}; }, "/baselines/torch",
                     "a Python expression (a string)");
  expect_error_after([](json& j) { j["baselines"] = {{"torch", "  "}}; }, "/baselines/torch", "non-empty");
  expect_error_after([](json& j) { j["baselines"] = {{"torch", "torch.mm(A,\n B)"}}; }, "/baselines/torch",
                     "one-line");
  expect_error_after([](json& j) { j["baselines"] = {{"torch", "torch.mm(AA, BB)"}}; }, "/baselines/torch",
                     "uses at least one argument name (A, B, C, M, N, K)");
  expect_error_after([](json& j) { j["baselines"] = "torch.mm(A, B)"; }, "/baselines", "object");
  expect_error_after([](json& j) { j["baseline"] = {{"torch", "torch.mm(A, B)"}}; }, "/baseline",
                     "did you mean 'baselines'?");
}

TEST_F(TaskTest, FindTaskDirs) {
  const auto a = write_task("suite/b_task", valid_manifest());
  const auto b = write_task("suite/a_task", valid_manifest());
  tmp.write("suite/notes/readme.txt", "not a task");
  const auto dirs = find_task_dirs(tmp.path() / "suite");
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], b);
  EXPECT_EQ(dirs[1], a);
  EXPECT_EQ(find_task_dirs(a), std::vector<std::filesystem::path>{a});
  EXPECT_THROW(find_task_dirs(tmp.path() / "suite" / "notes"), InputError);
  EXPECT_THROW(find_task_dirs(tmp.path() / "absent"), InputError);
}

}  // namespace
}  // namespace kevo
