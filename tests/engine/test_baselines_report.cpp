// Library baselines in reports (docs/cuda.md#library-baselines): the table
// `kevo run` and `kevo report` print from RUN_DIR/baselines.json, and how a
// run records the baseline hook's outcome (a failure is a note, not an end).
#include "kevo/engine/report.hpp"
#include "kevo/engine/run.hpp"

#include "kevo/app/plugins.hpp"
#include "kevo/engine/config.hpp"

#include "../core/test_util.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kevo::engine {
namespace {

using nlohmann::json;

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The table's line that starts with `task` (as whitespace-separated words).
std::vector<std::string> row_of(const std::string& table, const std::string& task) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(task + " ", 0) == 0) return words(line);
  return {};
}

TaskRow row(const std::string& task, std::int64_t best_id, double speedup, double best_ms, double ref_ms) {
  TaskRow r;
  r.task = task;
  r.best_id = best_id;
  r.best_speedup = speedup;
  r.best_ms = best_ms;
  r.ref_ms = ref_ms;
  return r;
}

json measured_doc() {
  return json::parse(R"json({
    "format": "kevo-baselines/1", "measured": true, "torch": "2.9.0", "device_name": "NVIDIA H200",
    "tasks": {
      "softmax": {"expr": "torch.softmax(X, dim=1)",
                  "eager": {"median_ms": 0.12, "iqr_ms": 0.001, "repeats": 40, "check": "ok"},
                  "compile": {"median_ms": 0.08, "iqr_ms": 0.001, "repeats": 40, "check": "ok", "compile_seconds": 12.5}},
      "sgemm": {"expr": "torch.mm(A, B)",
                "eager": {"median_ms": 5.0, "iqr_ms": 0.01, "repeats": 10, "check": "wrong: C: 7 element(s) outside atol"},
                "compile": {"error": "BackendCompilerFailed: inductor failed"}},
      "transpose": {"expr": "A.t().contiguous()", "error": "timed out after 900 s (baselines.wall_seconds)"}
    }})json");
}

TEST(BaselineReport, ColumnsAndSpeedups) {
  const std::vector<TaskRow> rows = {row("softmax", 5, 3.5, 0.1, 0.35), row("sgemm", 9, 2.0, 10.0, 20.0),
                                     row("transpose", -1, 0.0, -1, -1)};
  const std::string t = format_baselines(rows, measured_doc());
  EXPECT_EQ(words(t.substr(0, t.find('\n'))),
            (std::vector<std::string>{"task", "best", "ms", "ref", "ms", "torch", "ms", "compile", "ms", "vs", "ref", "vs",
                                      "lib", "fastest", "library"}))
      << t;
  // best, reference, eager, compile, vs reference, vs the fastest correct library time (0.08 / 0.1).
  EXPECT_EQ(row_of(t, "softmax"),
            (std::vector<std::string>{"softmax", "0.1000", "0.3500", "0.1200", "0.0800", "3.50x", "0.80x", "torch.compile"}))
      << t;
  // A wrong baseline is shown, starred, and is no yardstick; a failed one is '-'.
  EXPECT_EQ(row_of(t, "sgemm"),
            (std::vector<std::string>{"sgemm", "10.0000", "20.0000", "5.0000*", "-", "2.00x", "-", "-"}))
      << t;
  EXPECT_EQ(row_of(t, "transpose"), (std::vector<std::string>{"transpose", "-", "-", "-", "-", "-", "-", "-"})) << t;
  EXPECT_NE(t.find("* output outside the task's tolerance"), std::string::npos) << t;
  EXPECT_NE(t.find("sgemm: torch eager output wrong: C: 7 element(s)"), std::string::npos) << t;
  EXPECT_NE(t.find("sgemm: torch.compile failed: BackendCompilerFailed"), std::string::npos) << t;
  EXPECT_NE(t.find("transpose: failed: timed out after 900 s"), std::string::npos) << t;
  EXPECT_NE(t.find("softmax: torch.compile took 12.5 s to compile"), std::string::npos) << t;
  EXPECT_NE(t.find("torch 2.9.0 on NVIDIA H200"), std::string::npos) << t;

  EXPECT_EQ(fastest_baseline(measured_doc(), "softmax"), std::make_pair(0.08, std::string("torch.compile")));
  EXPECT_EQ(fastest_baseline(measured_doc(), "sgemm").first, -1.0);
  EXPECT_EQ(fastest_baseline(measured_doc(), "nosuchtask").first, -1.0);

  // The eager baseline is the yardstick when it is the faster correct one.
  json d = measured_doc();
  d["tasks"]["softmax"]["compile"]["median_ms"] = 0.2;
  EXPECT_EQ(row_of(format_baselines(rows, d), "softmax"),
            (std::vector<std::string>{"softmax", "0.1000", "0.3500", "0.1200", "0.2000", "3.50x", "1.20x", "torch", "eager"}));

  const auto notes = baseline_notes(measured_doc());
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_NE(notes[1].find("library baseline softmax: torch eager 0.1200 ms"), std::string::npos) << notes[1];
}

TEST(BaselineReport, WithoutTorchTheNoteIsShown) {
  const json doc = {{"format", "kevo-baselines/1"}, {"measured", false},
                    {"note", "torch is not importable by python3 (No module named 'torch'); torch eager and "
                             "torch.compile left out"},
                    {"tasks", json::object()}};
  const std::string t = format_baselines({row("axpy", 3, 1.25, 0.8, 1.0)}, doc);
  EXPECT_EQ(row_of(t, "axpy"), (std::vector<std::string>{"axpy", "0.8000", "1.0000", "-", "-", "1.25x", "-", "-"})) << t;
  EXPECT_NE(t.find("library baselines: torch is not importable by python3"), std::string::npos) << t;
  ASSERT_EQ(baseline_notes(doc).size(), 1u);
}

TEST(BaselineRecord, WritesTheDocumentAndSurvivesAFailingHook) {
  test::TempDir dir;
  // No hook (every backend but CUDA): nothing is written.
  EXPECT_TRUE(record_baselines({}, {}, 1, dir.path(), nullptr).is_null());
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "baselines.json"));
  EXPECT_TRUE(read_baselines(dir.path()).is_null());

  std::uint64_t seen_seed = 0;
  const BaselineHook note_hook = [&](const std::vector<std::shared_ptr<const Task>>&, std::uint64_t seed) {
    seen_seed = seed;
    return json{{"format", "kevo-baselines/1"}, {"measured", false}, {"note", "torch is not importable"},
                {"tasks", json::object()}};
  };
  const json doc = record_baselines(note_hook, {}, 42, dir.path(), nullptr);
  EXPECT_EQ(seen_seed, 42u);
  EXPECT_EQ(read_baselines(dir.path()), doc);

  // A hook that throws: the run keeps going, the file says why.
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  const BaselineHook bad = [](const std::vector<std::shared_ptr<const Task>>&, std::uint64_t) -> json {
    throw std::runtime_error("cannot start python3");
  };
  const json failed = record_baselines(bad, {}, 1, dir.path(), log);
  EXPECT_EQ(failed.value("measured", true), false);
  EXPECT_EQ(read_baselines(dir.path()).value("note", ""), "measuring failed: cannot start python3");
  std::rewind(log);
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, log);
  std::fclose(log);
  EXPECT_NE(std::string(buf, n).find("kevo: library baselines: measuring failed: cannot start python3"),
            std::string::npos);

  // An unreadable file reads as a note, not as a crash of `kevo report`.
  dir.write("baselines.json", "{not json");
  EXPECT_NE(read_baselines(dir.path()).value("note", "").find("not a JSON object"), std::string::npos);
}

// Source baselines shipped with a task (docs/tasks.md#baselines) on the CPU
// backend: compiled with their libraries, judged with correctness and timing
// against the reference, recorded in baselines.json beside the hook's, and
// shown as their own columns; a wrong or broken one is reported failed and
// never used as a yardstick.
TEST(SourceBaselines, JudgedByTheBackendRecordedAndReported) {
  test::TempDir dir;
  const std::filesystem::path src = std::filesystem::path(KEVO_TEST_DATA) / "../../../configs/tasks/cpu/reduce_sum";
  const auto task_dir = dir.path() / "reduce_sum";
  std::filesystem::create_directories(task_dir);
  for (const char* f : {"reference.cpp", "seed.cpp"}) std::filesystem::copy_file(src / f, task_dir / f);
  std::ifstream in(src / "task.json");
  json manifest = json::parse(in);
  manifest["baselines"] = {{"sources",
                            {{{"name", "rows"}, {"source", "baseline_rows.cpp"}, {"link", {"m"}}},
                             {{"name", "zeros"}, {"source", "baseline_zeros.cpp"}},
                             {{"name", "broken"}, {"source", "baseline_broken.cpp"}}}}};
  dir.write("reduce_sum/task.json", manifest.dump(2));
  // Row by row in double (std::fma from libm: -lm is on its link line).
  dir.write("reduce_sum/baseline_rows.cpp", R"(#include <cmath>
#include <cstdint>
#include <vector>
extern "C" void reduce_sum(const float* X, float* Y, int32_t R, int32_t C) {
  std::vector<double> acc(C, 0.0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) acc[c] = std::fma(1.0, X[r * C + c], acc[c]);
  for (int64_t c = 0; c < C; ++c) Y[c] = static_cast<float>(acc[c]);
}
)");
  dir.write("reduce_sum/baseline_zeros.cpp", R"(#include <cstdint>
extern "C" void reduce_sum(const float*, float* Y, int32_t, int32_t C) { for (int32_t c = 0; c < C; ++c) Y[c] = 0; }
)");
  dir.write("reduce_sum/baseline_broken.cpp", "extern \"C\" void reduce_sum(const float* X) { return X; }\n");

  const json conf = {{"name", "b"}, {"seed", 3}, {"tasks", {task_dir.string()}},
                     {"operators", {{{"type", "param_mutation"}}}},
                     {"backend", {{"type", "cpu"}, {"cpu", {{"cache_dir", ""}, {"timing", {{"budget_seconds", 0.05}}}}}}},
                     {"progress", {{"mode", "off"}}}};
  auto config = parse_config(conf, "conf.json", app::builtin_plugins({"cpu"}));
  EXPECT_FALSE(config.baselines);   // the CPU backend has no hook: only the backend judges
  auto tasks = load_tasks(config);
  ASSERT_TRUE(has_source_baselines(tasks));
  const auto run = dir.path() / "run";
  std::filesystem::create_directories(run);
  const json doc = record_baselines(config.baselines, tasks, 3, run, nullptr, config.backend.get());
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(read_baselines(run), doc);
  const json& s = doc.at("tasks").at("reduce_sum").at("sources");
  EXPECT_EQ(s.at("rows").at("status"), "correct") << s.dump(2);
  EXPECT_GT(s.at("rows").at("median_ms").get<double>(), 0.0);
  EXPECT_GT(s.at("rows").at("ref_ms").get<double>(), 0.0);
  EXPECT_EQ(s.at("rows").at("link"), json({"m"}));
  EXPECT_EQ(s.at("zeros").at("status"), "wrong_answer");
  EXPECT_TRUE(s.at("zeros").contains("error"));
  EXPECT_FALSE(s.at("zeros").contains("median_ms"));
  EXPECT_EQ(s.at("broken").at("status"), "compile_error");

  // The report: a column per source baseline; the failed ones are notes.
  const double rows_ms = s.at("rows").at("median_ms").get<double>();
  const std::string t = format_baselines({row("reduce_sum", 5, 2.0, rows_ms * 2, rows_ms * 4)}, doc);
  EXPECT_NE(t.find("rows ms"), std::string::npos) << t;
  std::fputs(t.c_str(), stdout);   // the table as kevo report prints it
  EXPECT_NE(t.find("zeros ms"), std::string::npos) << t;
  const auto cells = row_of(t, "reduce_sum");
  ASSERT_EQ(cells.size(), 11u) << t;   // task best ref torch compile broken rows zeros vs-ref vs-lib fastest
  EXPECT_EQ(cells[5], "-");            // broken
  EXPECT_EQ(cells[6], fmt::format("{:.4f}", rows_ms));
  EXPECT_EQ(cells[7], "-");            // zeros
  EXPECT_EQ(cells[9], "0.50x");        // the library is twice as fast as the best
  EXPECT_EQ(cells[10], "rows");
  EXPECT_NE(t.find("reduce_sum: zeros failed: wrong_answer"), std::string::npos) << t;
  EXPECT_NE(t.find("reduce_sum: broken failed: compile_error"), std::string::npos) << t;
  EXPECT_EQ(fastest_baseline(doc, "reduce_sum").second, "rows");
  const auto notes = baseline_notes(doc);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("rows "), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("zeros failed: wrong_answer"), std::string::npos) << notes[0];
}

// KernelBench's fast_p: the share of tasks whose evolved candidate is
// correct and faster than p x the baseline; 0 marks a task with none.
TEST(FastP, SharesAndGeomeanFollowTheDefinition) {
  const FastP f = fast_p({0.0, 0.6, 1.0, 1.2, 4.0});
  ASSERT_EQ(f.share.size(), std::size(kFastP));
  EXPECT_EQ(f.tasks, 5);
  EXPECT_EQ(f.correct, 4);
  EXPECT_DOUBLE_EQ(f.share[0], 0.8);   // p = 0: correct
  EXPECT_DOUBLE_EQ(f.share[1], 0.8);   // p = 0.5
  EXPECT_DOUBLE_EQ(f.share[2], 0.6);   // p = 0.8
  EXPECT_DOUBLE_EQ(f.share[3], 0.4);   // p = 1: strictly faster
  EXPECT_DOUBLE_EQ(f.share[4], 0.2);   // p = 1.5
  EXPECT_DOUBLE_EQ(f.share[5], 0.2);   // p = 2
  EXPECT_NEAR(f.geomean, std::pow(0.6 * 1.0 * 1.2 * 4.0, 0.25), 1e-12);
  const FastP none = fast_p({0.0, 0.0});
  EXPECT_EQ(none.correct, 0);
  EXPECT_DOUBLE_EQ(none.geomean, 0.0);
  EXPECT_DOUBLE_EQ(none.share[0], 0.0);
}

// The report's section: against the reference, and against the faster of
// torch eager and torch.compile when the run measured them.
TEST(FastP, TheReportComparesWithTheFasterPyTorchBaseline) {
  RunReport r;
  EvolvedRow a;
  a.task = "a";
  a.speedup = 3.0;      // over eager
  a.best_ms = 1.0;      // eager 3 ms, compile 1.5 ms: 1.5x over the best PyTorch
  a.wrong_hidden = 2;
  EvolvedRow b;
  b.task = "b";
  b.wrong_visible = 1;
  r.evolved = {a, b};
  r.baselines = json::parse(R"({"format": "kevo-baselines/1", "measured": true, "tasks": {
      "a": {"eager": {"median_ms": 3.0, "check": "ok"}, "compile": {"median_ms": 1.5, "check": "ok"}}}})");
  const std::string t = format_fast_p(r);
  EXPECT_NE(t.find("vs the reference"), std::string::npos) << t;
  EXPECT_NE(t.find("vs best PyTorch"), std::string::npos) << t;
  EXPECT_NE(t.find("hidden shapes 2"), std::string::npos) << t;
  EXPECT_NE(t.find("visible shapes 1"), std::string::npos) << t;
  const json j = fast_p_json(r);
  EXPECT_DOUBLE_EQ(j.at("vs_reference").at("fast_p").at("2").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j.at("vs_best_pytorch").at("fast_p").at("1").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j.at("vs_best_pytorch").at("fast_p").at("1.5").get<double>(), 0.0);   // exactly 1.5x is not over 1.5
  EXPECT_NEAR(j.at("vs_best_pytorch").at("geomean").get<double>(), 1.5, 1e-12);
}

}  // namespace
}  // namespace kevo::engine
