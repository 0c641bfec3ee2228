#include "kevo/core/verdict.hpp"
#include "kevo/core/task.hpp"
#include "kevo/core/verdict_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kevo {
namespace {

TEST(Verdict, StatusAndStageNames) {
  EXPECT_EQ(to_string(Status::wrong_answer), "wrong_answer");
  EXPECT_EQ(to_string(Status::internal_error), "internal_error");
  EXPECT_EQ(to_string(Stage::correctness), "correctness");
  for (int i = 0; i < kStatusCount; ++i) {
    const auto s = static_cast<Status>(i);
    EXPECT_EQ(status_from_string(to_string(s)), s);
  }
  for (int i = 0; i <= static_cast<int>(Stage::done); ++i) {
    const auto s = static_cast<Stage>(i);
    EXPECT_EQ(stage_from_string(to_string(s)), s);
  }
  EXPECT_FALSE(status_from_string("Correct").has_value());
  EXPECT_FALSE(stage_from_string("").has_value());
}

TEST(Verdict, JsonRoundTrip) {
  Verdict v;
  v.status = Status::wrong_answer;
  v.stage = Stage::correctness;
  v.message = "C differs at [3, 17]";
  v.compile_seconds = 1.25;
  v.compile_cached = true;
  v.compile_log = "warning: x";
  v.max_abs_error = 0.5;
  v.rel_l2_error = std::numeric_limits<double>::infinity();
  v.mismatch = Mismatch{"C", "M=129,N=77,K=65", "trial 2", 401, "[3, 17]", 1.5, -2.25};
  v.cand_median_ns = 10.5;
  v.cand_iqr_ns = 0.5;
  v.ref_median_ns = 21.0;
  v.ref_iqr_ns = 1.0;
  v.repeats = 30;
  v.speedup = std::numeric_limits<double>::quiet_NaN();
  v.worker_seconds = 3.0;
  v.exit_code = 1;
  v.signal = 11;
  v.max_rss_kb = 12345;
  v.output_tail = "segfault\n";
  v.feedback = "feedback text";

  const nlohmann::json j = to_json(v);
  EXPECT_EQ(j["status"], "wrong_answer");
  EXPECT_EQ(j["mismatch"]["arg"], "C");
  const Verdict w = verdict_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(w.status, v.status);
  EXPECT_EQ(w.stage, v.stage);
  EXPECT_EQ(w.message, v.message);
  EXPECT_EQ(w.compile_seconds, v.compile_seconds);
  EXPECT_EQ(w.compile_cached, v.compile_cached);
  EXPECT_EQ(w.compile_log, v.compile_log);
  EXPECT_EQ(w.max_abs_error, v.max_abs_error);
  EXPECT_TRUE(std::isinf(w.rel_l2_error));
  ASSERT_TRUE(w.mismatch.has_value());
  EXPECT_EQ(w.mismatch->arg, "C");
  EXPECT_EQ(w.mismatch->shape, "M=129,N=77,K=65");
  EXPECT_EQ(w.mismatch->trial, "trial 2");
  EXPECT_EQ(w.mismatch->flat_index, 401);
  EXPECT_EQ(w.mismatch->index, "[3, 17]");
  EXPECT_EQ(w.mismatch->expected, 1.5);
  EXPECT_EQ(w.mismatch->got, -2.25);
  EXPECT_EQ(w.cand_median_ns, 10.5);
  EXPECT_EQ(w.cand_iqr_ns, 0.5);
  EXPECT_EQ(w.ref_median_ns, 21.0);
  EXPECT_EQ(w.ref_iqr_ns, 1.0);
  EXPECT_EQ(w.repeats, 30);
  EXPECT_TRUE(std::isnan(w.speedup));
  EXPECT_EQ(w.worker_seconds, 3.0);
  EXPECT_EQ(w.exit_code, 1);
  EXPECT_EQ(w.signal, 11);
  EXPECT_EQ(w.max_rss_kb, 12345);
  EXPECT_EQ(w.output_tail, "segfault\n");
  EXPECT_EQ(w.feedback, "feedback text");

  Verdict ok;
  ok.status = Status::correct;
  ok.stage = Stage::done;
  const nlohmann::json k = to_json(ok);
  EXPECT_TRUE(k["mismatch"].is_null());
  EXPECT_FALSE(verdict_from_json(k).mismatch.has_value());
  EXPECT_TRUE(verdict_from_json(k).is_correct());
}

TEST(Verdict, BadJsonThrows) {
  EXPECT_ANY_THROW(verdict_from_json(nlohmann::json::parse(R"({"status": "great", "stage": "done"})")));
  EXPECT_ANY_THROW(verdict_from_json(nlohmann::json::parse(R"({"stage": "done"})")));
  EXPECT_ANY_THROW(verdict_from_json(nlohmann::json::parse(R"({"status": "correct", "stage": "done", "repeats": "x"})")));
  EXPECT_ANY_THROW(verdict_from_json(nlohmann::json::parse(R"([1])")));
}

}  // namespace
}  // namespace kevo

namespace kevo {
namespace {

// The feedback's rules around hidden shapes, in one place for every backend.
TEST(VerdictFeedback, HiddenShapesWithholdWhatTheCandidateControls) {
  Task task;
  task.name = "t";
  Verdict v;
  v.status = Status::runtime_error;
  v.message = "exit code 300";
  v.output_tail = "rows 7 cols 1001";
  EXPECT_NE(verdict_feedback(v, task).find("rows 7 cols 1001"), std::string::npos) << "no hidden shape: all of it";
  for (const HiddenRun& run : {HiddenRun{"hidden h0", ""}, HiddenRun{"", "hidden h0"}, HiddenRun{"hidden h1", "hidden h0"}}) {
    const std::string fb = verdict_feedback(v, task, run);
    EXPECT_EQ(fb.find("rows 7"), std::string::npos) << fb;
    EXPECT_EQ(fb.find("exit code 300"), std::string::npos) << fb;
    EXPECT_NE(fb.find("hidden test shape"), std::string::npos) << fb;
  }
  // forbidden after a hidden shape: kevo's finding stays, the output goes;
  // at a hidden shape: withheld like the rest.
  v.status = Status::forbidden;
  v.message = "the candidate loaded libblas.so.3";
  std::string fb = verdict_feedback(v, task, {"", "hidden h0"});
  EXPECT_NE(fb.find("libblas.so.3"), std::string::npos) << fb;
  EXPECT_EQ(fb.find("rows 7"), std::string::npos) << fb;
  fb = verdict_feedback(v, task, {"hidden h0", ""});
  EXPECT_EQ(fb.find("libblas.so.3"), std::string::npos) << fb;
  EXPECT_EQ(fb.find("rows 7"), std::string::npos) << fb;
}

}  // namespace
}  // namespace kevo
