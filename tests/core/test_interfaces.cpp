// The non-virtual checks of Backend and MutationOperator, with fakes.
#include "kevo/core/backend.hpp"
#include "kevo/core/error.hpp"
#include "kevo/core/mutation_operator.hpp"
#include "kevo/core/text.hpp"

#include <gtest/gtest.h>

#include <deque>

namespace kevo {
namespace {

// Judges every submission "correct" on the next poll, or as scripted.
class FakeBackend : public Backend {
 public:
  FakeBackend() : Backend("fake") {}
  std::deque<EvalResult> script;   // returned by the next poll instead, when set
  std::vector<EvalRequest> queued;
  int prepared = 0, cancelled = 0;

 protected:
  BackendNeeds do_needs() const override { return {}; }
  void do_prepare(const Task& task) override {
    if (task.name == "unusable") throw InputError(task.manifest_path.string(), "", "a usable task");
    ++prepared;
  }
  std::size_t do_wanted() const override { return 2; }
  void do_submit(EvalRequest r) override { queued.push_back(std::move(r)); }
  std::vector<EvalResult> do_poll(std::chrono::milliseconds) override {
    std::vector<EvalResult> out;
    if (!script.empty()) {
      out.push_back(script.front());
      script.pop_front();
      return out;
    }
    for (auto& r : queued) {
      EvalResult e;
      e.id = r.id;
      e.verdict.status = Status::correct;
      e.verdict.stage = Stage::done;
      e.verdict.message = r.source;
      out.push_back(e);
    }
    queued.clear();
    return out;
  }
  void do_cancel_all() override {
    ++cancelled;
    queued.clear();
  }
};

std::shared_ptr<Task> make_task(const std::string& name) {
  auto t = std::make_shared<Task>();
  t->name = name;
  t->manifest_path = "/tasks/" + name + "/task.json";
  return t;
}

TEST(Backend, SubmitPollAndChecks) {
  FakeBackend b;
  auto task = make_task("t");
  EXPECT_THROW(b.submit(EvalRequest{1, task, "x", 0}), Failure);   // not prepared
  EXPECT_THROW(b.submit(EvalRequest{1, nullptr, "x", 0}), Failure);
  b.prepare(*task);
  b.submit(EvalRequest{1, task, "x", 0});
  b.submit(EvalRequest{2, task, "y", 0});
  EXPECT_EQ(b.in_flight(), 2u);
  try {
    b.submit(EvalRequest{1, task, "z", 0});
    FAIL();
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("backend 'fake': request id 1 is in flight already"), std::string::npos);
  }
  const auto results = b.poll(std::chrono::milliseconds(0));
  EXPECT_EQ(results.size(), 2u);
  EXPECT_EQ(b.in_flight(), 0u);

  auto bad = make_task("unusable");
  EXPECT_THROW(b.prepare(*bad), InputError);
  EXPECT_THROW(b.submit(EvalRequest{3, bad, "x", 0}), Failure);
}

TEST(Backend, PollRejectsUnknownAndPendingResults) {
  FakeBackend b;
  auto task = make_task("t");
  b.prepare(*task);
  b.submit(EvalRequest{5, task, "x", 0});
  EvalResult unknown;
  unknown.id = 6;
  unknown.verdict.status = Status::correct;
  b.script.push_back(unknown);
  EXPECT_THROW(b.poll(std::chrono::milliseconds(0)), Failure);
  EvalResult pending;
  pending.id = 5;
  b.script.push_back(pending);
  EXPECT_THROW(b.poll(std::chrono::milliseconds(0)), Failure);
  EXPECT_EQ(b.cancel_all(), std::vector<std::uint64_t>{5});
  EXPECT_EQ(b.cancelled, 1);
  EXPECT_EQ(b.in_flight(), 0u);
}

TEST(Backend, EvaluateIsSynchronousAndPrepares) {
  FakeBackend b;
  auto task = make_task("t");
  const Verdict v = b.evaluate(task, "source text", 1);
  EXPECT_TRUE(v.is_correct());
  EXPECT_EQ(v.message, "source text");
  EXPECT_EQ(b.prepared, 1);
  EXPECT_EQ(b.in_flight(), 0u);
  b.submit(EvalRequest{1, task, "x", 0});
  EXPECT_THROW(b.evaluate(task, "y", 1), Failure);   // would swallow request 1's result
}

// Candidate output as an adversary writes it: every invalid UTF-8 form, NUL,
// a terminal escape.
const std::string kHostile = std::string("out\xC0\x80 \xE0\x80\x80 \xED\xA0\x80 \xF4\x90\x80\x80 \xE2\x82 \x80 ") +
                             std::string("\0", 1) + "\x1b[2J\r end\n";

TEST(Backend, VerdictTextsLeaveSanitised) {
  FakeBackend b;
  auto task = make_task("t");
  b.prepare(*task);
  b.submit(EvalRequest{5, task, "x", 0});
  EvalResult r;
  r.id = 5;
  r.verdict.status = Status::wrong_answer;
  Verdict& v = r.verdict;
  v.message = v.compile_log = v.output_tail = v.feedback = v.profile = v.device = kHostile;
  v.mismatch = Mismatch{kHostile, kHostile, kHostile, 3, kHostile, 1.0, 2.0};
  ASSERT_THROW(to_json(v).dump(), nlohmann::json::type_error);   // what the wrapper prevents
  b.script.push_back(r);
  const auto results = b.poll(std::chrono::milliseconds(0));
  ASSERT_EQ(results.size(), 1u);
  const Verdict& got = results[0].verdict;
  const std::string want = sanitize_utf8(kHostile, kShownText);
  for (const std::string* t : {&got.message, &got.compile_log, &got.output_tail, &got.feedback, &got.profile,
                               &got.device, &got.mismatch->arg, &got.mismatch->shape, &got.mismatch->trial,
                               &got.mismatch->index})
    EXPECT_EQ(*t, want);
  EXPECT_EQ(want.find('\x1b'), std::string::npos);
  EXPECT_NO_THROW(to_json(got).dump());
  // evaluate() goes through poll(): the fake echoes the source as message.
  b.queued.clear();   // request 5 was answered by the script
  EXPECT_EQ(b.evaluate(task, kHostile, 1).message, want);
}

// Answers through poll(), as an LLM operator does.
class AsyncOperator : public MutationOperator {
 public:
  AsyncOperator() : MutationOperator("async_op", 1) {}
  bool applicable(const Task&) const override { return true; }
  std::vector<OperatorOutcome> next;

 protected:
  std::optional<OperatorOutcome> do_begin(const OperatorRequest&) override { return std::nullopt; }
  std::vector<OperatorOutcome> do_poll(std::chrono::milliseconds) override { return std::move(next); }
};

TEST(MutationOperator, OutcomeTextsLeaveSanitisedFromPoll) {
  AsyncOperator op;
  OperatorOutcome ok = OperatorOutcome::ok(1, Proposal{"int x; // " + kHostile + "\f", std::nullopt, kHostile, kHostile});
  ok.llm = "[{\"reply\": \"" + kHostile + "\"}]";
  op.next = {ok, OperatorOutcome::failed(2, kHostile)};
  const auto out = op.poll(std::chrono::milliseconds(0));
  ASSERT_EQ(out.size(), 2u);
  // Sources and LLM records: valid UTF-8 without NUL, controls kept (the
  // form feed of a source stays); notes and reasons: no controls.
  EXPECT_EQ(out[0].proposal->source, sanitize_utf8("int x; // " + kHostile + "\f", kStoredText));
  EXPECT_NE(out[0].proposal->source.find('\f'), std::string::npos);
  EXPECT_EQ(out[0].proposal->source.find('\0'), std::string::npos);
  EXPECT_TRUE(is_clean_utf8(out[0].llm, kStoredText));
  EXPECT_EQ(out[0].proposal->note, sanitize_utf8(kHostile, kShownText));
  EXPECT_EQ(out[0].proposal->profile, sanitize_utf8(kHostile, kShownText));
  EXPECT_EQ(out[1].failure, sanitize_utf8(kHostile, kShownText));
  // A failure without a reason is a broken operator, from poll() as from begin().
  op.next = {OperatorOutcome::failed(3, "")};
  EXPECT_THROW(op.poll(std::chrono::milliseconds(0)), Failure);
}

class FakeOperator : public MutationOperator {
 public:
  explicit FakeOperator(int arity) : MutationOperator("fake_op", arity) {}
  bool applicable(const Task&) const override { return true; }
  std::uint64_t answer_id = 0;
  bool use_answer_id = false;

 protected:
  std::optional<OperatorOutcome> do_begin(const OperatorRequest& r) override {
    return OperatorOutcome::ok(use_answer_id ? answer_id : r.id, Proposal{r.parents[0]->source + "!", std::nullopt, ""});
  }
};

TEST(MutationOperator, BeginChecksTheRequest) {
  FakeOperator op(1);
  Task task;
  Rng rng(1);
  Candidate parent;
  parent.source = "src";
  OperatorRequest r;
  r.id = 9;
  r.task = &task;
  r.rng = &rng;
  r.parents = {&parent};
  const auto out = op.begin(r);
  ASSERT_TRUE(out && out->proposal);
  EXPECT_EQ(out->proposal->source, "src!");

  OperatorRequest no_task = r;
  no_task.task = nullptr;
  EXPECT_THROW(op.begin(no_task), Failure);
  OperatorRequest no_rng = r;
  no_rng.rng = nullptr;
  EXPECT_THROW(op.begin(no_rng), Failure);
  OperatorRequest two = r;
  two.parents.push_back(&parent);
  try {
    op.begin(two);
    FAIL();
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("operator 'fake_op': needs 1 parent(s)"), std::string::npos) << e.what();
  }
  OperatorRequest null_parent = r;
  null_parent.parents = {nullptr};
  EXPECT_THROW(op.begin(null_parent), Failure);
  op.use_answer_id = true;
  op.answer_id = 10;
  EXPECT_THROW(op.begin(r), Failure);
}

}  // namespace
}  // namespace kevo
