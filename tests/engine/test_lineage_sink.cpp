// The HDF5 lineage sink: with its writer on a thread of its own it writes the
// same file as on the island's thread (rows, texts and their references,
// events in order), refuses an unrecordable candidate at once, and after
// flush() a reader sees everything handed over. And the LLM tally of the
// records the sink writes, read from their text.
#include "common.hpp"

#include "kevo/core/rng.hpp"
#include "kevo/engine/lineage_sink.hpp"
#include "kevo/engine/llm_summary.hpp"
#include "kevo/engine/run.hpp"
#include "kevo/lineage/reader.hpp"
#include "kevo/lineage/writer.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>
#include <unistd.h>

namespace kevo::test {
namespace {
namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("kevo-sink-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The toy run's committed candidates, some with LLM records: canonical ones
// (cut out of the text) and one written with blanks (parsed and dumped).
std::vector<Candidate> toy_candidates() {
  auto config = engine::parse_config(toy_config(), "conf.json", test_plugins());
  auto tasks = engine::load_tasks(config);
  VectorSink sink;
  engine::IslandOptions opts;
  opts.seed = config.seed;
  opts.budget = config.budget;
  opts.island = config.island;
  engine::Island island(opts, tasks, *config.backend, config.operators, sink);
  std::atomic<int> stop{0};
  island.run(stop, {});
  auto rows = sink.rows;
  for (std::size_t k = 0; k < rows.size(); k += 3)
    rows[k].llm = "[{\"model\":\"m\",\"ok\":true,\"prompt\":[{\"content\":\"line\\nnext " + std::to_string(k) +
                  "\",\"role\":\"user\"}],\"reply\":\"```cpp\\nint x;\\n```\"},{\"ok\":false}]";
  rows.at(1).llm = "[ {\"ok\": true, \"b\": 1.50, \"a\": \"x\"} ]";
  return rows;
}

engine::RunAttributes attributes() {
  engine::RunAttributes a;
  a.config = toy_config();
  a.tasks = nlohmann::json::array({{{"name", "toy"}}, {{"name", "other"}}});
  a.task_names = {"toy", "other"};
  a.seed = 7;
  a.host = "test";
  a.start_time = 1.0;
  a.task_map = {1};   // the island's task 0 is the run's task 1
  return a;
}

// Everything a sink is asked to do during a run, in a fixed order: records
// (copied and moved), migrants, events, ticks, a flush in the middle.
void feed(engine::LineageSink& sink, const std::vector<Candidate>& rows) {
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (k % 7 == 3) sink.event(engine::LineageSink::EventKind::note, static_cast<std::int64_t>(k), 0, -1, "note " + std::to_string(k));
    if (k % 11 == 5) {
      sink.record_migrant(rows[k], 3);
    } else if (k % 2) {
      sink.record(rows[k]);
    } else {
      Candidate c = rows[k];
      sink.record_moved(std::move(c));
    }
    sink.tick();
    if (k == rows.size() / 2) sink.flush();
  }
  sink.end("run ended by the test");
  sink.flush();
}

TEST(LineageSink, TheWriterThreadWritesTheSameFile) {
  if (!lineage::LineageWriter::library_thread_safe()) GTEST_SKIP() << "HDF5 is not thread-safe here: no writer thread";
  const auto rows = toy_candidates();
  ASSERT_GT(rows.size(), 40u);
  const fs::path dir = scratch("same");
  for (const bool background : {false, true}) {
    auto sink = engine::open_hdf5_sink(dir / (background ? "bg.h5" : "fg.h5"), attributes(), 5, 1000.0, background);
    feed(*sink, rows);
  }
  const auto fg = lineage::LineageReader::open(dir / "fg.h5");
  const auto bg = lineage::LineageReader::open(dir / "bg.h5");
  ASSERT_EQ(bg.rows().size(), fg.rows().size());
  ASSERT_EQ(bg.rows().size(), rows.size());
  EXPECT_EQ(bg.text_count(), fg.text_count());
  for (std::size_t k = 0; k < fg.rows().size(); ++k) {
    const lineage::Row &a = fg.rows()[k], &b = bg.rows()[k];
    auto fields = [](const lineage::Row& r) {
      return std::make_tuple(r.id, r.task, std::string(r.op_name()), r.status, r.stage, r.compile_cached, r.parent0,
                             r.parent1, r.duplicate_of, r.hash, r.eval_seed, r.rank, r.origin_rank, r.message,
                             r.params, r.source, r.compile_log, r.feedback, r.output_tail, r.mismatch, r.op_note,
                             r.profile, r.device, r.speedup, r.cand_median_ns, r.t_created, r.t_submitted,
                             r.t_finished);
    };
    EXPECT_TRUE(fields(a) == fields(b)) << "row " << k;
    EXPECT_EQ(a.task, 1u);
    EXPECT_EQ(bg.candidate(b).source, rows[k].source);
  }
  ASSERT_EQ(bg.events().size(), fg.events().size());
  std::size_t llm = 0;
  for (std::size_t k = 0; k < fg.events().size(); ++k) {
    lineage::Event a = fg.events()[k], b = bg.events()[k];
    EXPECT_GT(b.time, 0.0);
    a.time = b.time = 0.0;
    EXPECT_EQ(a, b) << "event " << k;
    llm += a.kind == lineage::EventKind::llm;
  }
  // Two records per candidate with records (a migrant brings none), and the
  // record written with blanks as its compact dump.
  EXPECT_GT(llm, 20u);
  EXPECT_EQ(bg.events().back().kind, lineage::EventKind::stop);
  EXPECT_EQ(bg.events().back().text, "run ended by the test");
  bool respelled = false;
  for (const auto& e : bg.events()) respelled = respelled || e.text == "{\"a\":\"x\",\"b\":1.5,\"ok\":true}";
  EXPECT_TRUE(respelled);
  fs::remove_all(dir);
}

TEST(LineageSink, RefusesAnUnrecordableCandidateAtOnceAndFlushesForReaders) {
  const fs::path dir = scratch("refuse");
  auto sink = engine::open_hdf5_sink(dir / "l.h5", attributes(), 1000, 1000.0, true);
  Candidate pending;
  pending.id = 5;
  EXPECT_THROW(sink->record(pending), Failure);
  Candidate bad_task;
  bad_task.id = 6;
  bad_task.task = 4;   // outside the task map
  bad_task.verdict.status = Status::correct;
  EXPECT_THROW(sink->record_moved(std::move(bad_task)), std::out_of_range);
  Candidate ok;
  ok.id = 7;
  ok.verdict.status = Status::correct;
  ok.source = "int x;";
  sink->record(ok);
  sink->flush();
  // The file is closed between flushes: a reader sees the record now.
  lineage::ReaderOptions ro;
  const auto r = lineage::LineageReader::open(dir / "l.h5", ro);
  ASSERT_EQ(r.rows().size(), 1u);
  EXPECT_EQ(r.rows()[0].id, 7u);
  EXPECT_EQ(r.candidate(r.rows()[0]).source, "int x;");
  sink.reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kevo::test

namespace kevo::test {
namespace {

// The LLM tally reads a canonical record's members without a DOM; on random
// records (each tallied member absent, or of any type) it counts what the
// DOM tally it replaced counted.
TEST(LlmSummary, ReadingRecordTextsCountsWhatTheDomCounted) {
  auto old_tally = [](engine::LlmTally& t, const nlohmann::json& r) {
    auto num = [&](const char* key) -> std::int64_t {
      const auto it = r.find(key);
      return it != r.end() && it->is_number() ? it->get<std::int64_t>() : 0;
    };
    auto flag = [&](const char* key) {
      const auto it = r.find(key);
      return it != r.end() && it->is_boolean() && it->get<bool>();
    };
    ++t.requests;
    t.retries += num("retries");
    t.input_tokens += num("input_tokens");
    t.output_tokens += num("output_tokens");
    if (const auto c = r.find("cost_usd"); c != r.end() && c->is_number()) t.usd += c->get<double>();
    if (flag("cached")) ++t.cached;
    if (flag("rejected")) ++t.rejected;
    if (flag("ok")) return;
    ++t.failures;
    std::string kind = "other";
    if (const auto k = r.find("failure"); k != r.end() && k->is_string() && !k->get<std::string>().empty())
      kind = k->get<std::string>();
    else if (num("http_status") > 0)
      kind = "http " + std::to_string(num("http_status"));
    ++t.failures_by_kind[kind];
  };
  auto old_add = [&](engine::LlmSummary& s, const std::string& op, const nlohmann::json& r) {
    if (!r.is_object()) return;
    const auto m = r.find("model");
    const std::string model = m != r.end() && m->is_string() ? m->get<std::string>() : std::string("?");
    old_tally(s.total, r);
    old_tally(s.by_model[model], r);
    old_tally(s.by_operator[op], r);
    old_tally(s.by_operator_model[op + "/" + model], r);
  };
  Rng rng(31);
  auto any = [&]() -> nlohmann::json {
    switch (rng.below(11)) {
      case 0: return nullptr;
      case 1: return true;
      case 2: return false;
      case 3: return static_cast<std::int64_t>(rng.below(1000)) - 100;
      case 4: return 2.75 * static_cast<double>(rng.below(100));
      case 5: return rng.below(2) ? "m1" : "with \"quote\"";
      case 6: return "";
      case 7: return nlohmann::json::array({1, 2});
      case 8: return std::uint64_t{1} << 63;
      case 9: return 404;
      default: return "timeout";
    }
  };
  const char* keys[] = {"model", "retries", "input_tokens", "output_tokens", "cost_usd", "cached",
                        "rejected", "ok", "failure", "http_status"};
  engine::LlmSummary fast, dom;
  for (int k = 0; k < 3000; ++k) {
    nlohmann::json turns = nlohmann::json::array();
    for (auto n = 1 + rng.below(3); n > 0; --n) {
      nlohmann::json r = {{"prompt", {{{"content", "a\nb"}, {"role", "user"}}}}, {"reply", "```cpp\n```"}};
      for (const char* key : keys)
        if (rng.below(4)) r[key] = any();
      if (rng.below(20) == 0) r = any();   // not an object
      turns.push_back(r);
    }
    const std::string op = rng.below(2) ? "llm_rewrite" : "llm_fix";
    fast.add_candidate(op, turns.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    for (const auto& r : turns) old_add(dom, op, r);
  }
  EXPECT_EQ(engine::to_json(fast), engine::to_json(dom));
  EXPECT_EQ(engine::format_llm(fast), engine::format_llm(dom));
  EXPECT_EQ(engine::llm_failure_line(fast), engine::llm_failure_line(dom));
  EXPECT_GT(fast.total.failures, 100);
}

}  // namespace
}  // namespace kevo::test
