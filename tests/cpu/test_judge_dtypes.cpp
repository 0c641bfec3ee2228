// The shared judging protocol (kevo_native_judge) on bfloat16 buffers, in
// process: inputs are exact bfloat16 values, outputs are poisoned with a NaN
// that a kernel's own NaN is told apart from, and comparisons happen on the
// widened values. The kernels here are host functions on host buffers (the
// protocol does not care who computes; the CUDA worker runs the same code on
// downloads); CPU tasks cannot declare bfloat16, so this is the only place the
// protocol meets it without a GPU.
#include "judge.hpp"

#include "kevo/core/task.hpp"

#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace kevo;
using namespace kevo::native::judge;

class TempTask {
 public:
  TempTask() {
    std::string tmpl = (fs::temp_directory_path() / "kevo-judge-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    const std::string src = "extern \"C\" void twice(const __nv_bfloat16* X, __nv_bfloat16* Y, int n) {}\n";
    std::ofstream(dir_ / "reference.cu") << src;
    std::ofstream(dir_ / "seed.cu") << src;
    std::ofstream(dir_ / "task.json") << R"({
      "name": "twice", "description": "Y = 2 X", "backend": "cuda", "function": "twice",
      "args": [{"name": "X", "dtype": "bfloat16", "role": "in", "shape": ["n"],
                "distribution": {"kind": "uniform", "low": -3, "high": 3}},
               {"name": "Y", "dtype": "bfloat16", "role": "out", "shape": ["n"]},
               {"name": "n", "dtype": "int32", "role": "scalar", "value": "n"}],
      "shapes": {"visible": [{"n": 1000}], "hidden": [{"n": 7}]},
      "tolerance": {"atol": 0.01, "rtol": 0.01, "rel_l2": 0.01},
      "reference": "reference.cu", "seed": "seed.cu"})";
    task_ = load_task(dir_);
  }
  ~TempTask() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  TempTask(const TempTask&) = delete;
  TempTask& operator=(const TempTask&) = delete;
  const Task& task() const { return task_; }

 private:
  fs::path dir_;
  Task task_;
};

std::uint16_t* bits(ArgSet& a, std::size_t k) { return static_cast<std::uint16_t*>(a.buf[k].data()); }
const std::uint16_t* bits(const ArgSet& a, std::size_t k) {
  return static_cast<const std::uint16_t*>(a.buf[k].data());
}

// Y = 2 X, exact in bfloat16.
void twice(ArgSet& a) {
  for (std::int64_t i = 0; i < a.n[1]; ++i) bits(a, 1)[i] = bf16_from_double(2.0 * bf16_to_double(bits(a, 0)[i]));
}

Verdict judge(const Task& task, LocalEndpoint::Kernel candidate) {
  Options opt;
  opt.mode = "judge";
  opt.seed = 11;
  opt.trials = 2;
  opt.timing = false;
  LocalEndpoint ref([](ArgSet& a, const Case&) { twice(a); }, host_space());
  LocalEndpoint cand(std::move(candidate), host_space());
  Judge j(task, opt, ref, cand, host_space());
  return j.run().verdict;
}

TEST(JudgeBfloat16, InputsAreExactBfloat16ValuesAndOutputsArePoisoned) {
  const TempTask tt;
  const Task& t = tt.task();
  const Case c{&t.visible[0], Case::Kind::visible, 0};
  Space& sp = host_space();
  const ArgSet a = sp.make_inputs(t, c, 5, "trial0");
  ASSERT_EQ(a.buf[0].bytes(), 2000u);
  double lo = 1e9, hi = -1e9;
  for (std::int64_t i = 0; i < 1000; ++i) {
    const double x = bf16_to_double(bits(a, 0)[i]);
    ASSERT_EQ(bf16_from_double(x), bits(a, 0)[i]);
    ASSERT_TRUE(x >= -3.0 && x <= 3.0) << x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    ASSERT_EQ(bits(a, 1)[i], 0x7FDE) << i;   // the output's poison
  }
  EXPECT_LT(lo, -2.5);
  EXPECT_GT(hi, 2.5);
  // Reproducible per seed, different for another seed.
  const ArgSet same = sp.make_inputs(t, c, 5, "trial0"), other = sp.make_inputs(t, c, 6, "trial0");
  EXPECT_EQ(std::memcmp(a.buf[0].data(), same.buf[0].data(), 2000), 0);
  EXPECT_NE(std::memcmp(a.buf[0].data(), other.buf[0].data(), 2000), 0);

  ArgSet want = sp.clone_for_call(t, a, true), got = sp.clone_for_call(t, a, true);
  twice(want);
  EXPECT_NE(first_mismatch(t, c, want, got, sp).find("Y[0]: expected"), std::string::npos);
  twice(got);
  EXPECT_EQ(first_mismatch(t, c, want, got, sp), "");
  bits(got, 1)[17] = bf16_from_double(bf16_to_double(bits(got, 1)[17]) + 0.5);
  EXPECT_NE(first_mismatch(t, c, want, got, sp).find("Y[17]"), std::string::npos);
}

TEST(JudgePoison, DrawnPerJudgementAndNeverACanonicalNan) {
  // A candidate cannot test for a documented constant: each judgement's
  // poison comes from fresh entropy.
  std::set<std::uint32_t> f32;
  std::set<std::uint16_t> b16;
  for (std::uint64_t e = 1; e <= 200; ++e) {
    const Poison p = Poison::draw(e);
    f32.insert(p.f32);
    b16.insert(p.bf16);
    float as_float = 0;
    std::memcpy(&as_float, &p.f32, sizeof as_float);
    ASSERT_TRUE(std::isnan(as_float));
    ASSERT_NE(p.f32, 0x7FC00000u);
    ASSERT_NE(p.bf16, 0x7FC0u);
    ASSERT_NE(p.bf16, 0x7FFFu);
    ASSERT_EQ(p.bf16 & 0x7FC0u, 0x7FC0u);
    ASSERT_NE(p.i32, 0);
    ASSERT_NE(p.i32, -1);
  }
  EXPECT_GT(f32.size(), 190u);
  EXPECT_GT(b16.size(), 40u);

  // Outputs take the space's current poison, and the comparison knows it.
  const TempTask tt;
  const Task& t = tt.task();
  Space& sp = host_space();
  const Poison before = sp.poison();
  sp.set_poison(Poison::draw(99));
  const Case c{&t.visible[0], Case::Kind::visible, 0};
  const ArgSet a = sp.make_inputs(t, c, 5, "trial0");
  EXPECT_EQ(bits(a, 1)[0], sp.poison().bf16);
  const Verdict skipped = judge(t, [&](ArgSet& x, const Case&) {
    twice(x);
    bits(x, 1)[0] = sp.poison().bf16;
  });
  EXPECT_NE(skipped.message.find("never written"), std::string::npos) << skipped.message;
  sp.set_poison(before);
}

TEST(JudgePoison, KeyedPoisonIsNewWithEveryKeyAndFixedByKeyAndSeed) {
  // One getrandom per judgement: the poison comes from the input key. A new
  // key gives a new poison (whatever the seed), the same key and seed the
  // same one, and another seed under the same key another one.
  std::set<std::uint32_t> by_key;
  std::set<std::uint64_t> f64;
  for (int i = 0; i < 64; ++i) {
    const InputKey k = InputKey::draw();
    const Poison p = keyed_poison(k, 1);
    by_key.insert(p.f32);
    f64.insert(p.f64);
    const Poison again = keyed_poison(k, 1);
    ASSERT_EQ(again.f32, p.f32);
    ASSERT_EQ(again.f64, p.f64);
    ASSERT_EQ(again.i32, p.i32);
    ASSERT_EQ(again.bf16, p.bf16);
    float as_float = 0;
    std::memcpy(&as_float, &p.f32, sizeof as_float);
    ASSERT_TRUE(std::isnan(as_float));
  }
  EXPECT_GT(by_key.size(), 60u);
  EXPECT_GT(f64.size(), 60u);
  const InputKey k = InputKey::draw();
  EXPECT_NE(keyed_poison(k, 1).f64, keyed_poison(k, 2).f64);
}

TEST(JudgeBfloat16, TheProtocolJudgesBfloat16Outputs) {
  const TempTask tt;
  const Task& t = tt.task();
  EXPECT_EQ(judge(t, [](ArgSet& a, const Case&) { twice(a); }).status, Status::correct);

  // One bfloat16 ulp off (2^-7 relative, under rtol 0.01) everywhere: correct.
  const Verdict ulp = judge(t, [](ArgSet& a, const Case&) {
    twice(a);
    for (std::int64_t i = 0; i < a.n[1]; ++i)
      if (bits(a, 1)[i] & 0x7FFF) bits(a, 1)[i] ^= 1;
  });
  EXPECT_EQ(ulp.status, Status::correct) << ulp.message;
  EXPECT_GT(ulp.max_abs_error, 0.0);

  // The last element never written: the poison is recognised.
  const Verdict skipped = judge(t, [](ArgSet& a, const Case&) {
    twice(a);
    bits(a, 1)[a.n[1] - 1] = 0x7FDE;
  });
  EXPECT_EQ(skipped.status, Status::wrong_answer);
  EXPECT_NE(skipped.message.find("never written"), std::string::npos) << skipped.message;

  // A NaN the kernel computed (canonical 0x7FC0) is a NaN, not an unwritten element.
  const Verdict nan = judge(t, [](ArgSet& a, const Case&) {
    twice(a);
    bits(a, 1)[3] = bf16_from_double(std::nan(""));
  });
  EXPECT_EQ(nan.status, Status::wrong_answer);
  EXPECT_NE(nan.message.find("got a non-finite value"), std::string::npos) << nan.message;
  EXPECT_EQ(nan.message.find("never written"), std::string::npos) << nan.message;

  // Wrong by far more than the tolerance: Y = X.
  const Verdict wrong = judge(t, [](ArgSet& a, const Case&) { std::memcpy(a.buf[1].data(), a.buf[0].data(), a.buf[0].bytes()); });
  EXPECT_EQ(wrong.status, Status::wrong_answer);
}

// The relative L2 bound on float64 outputs whose squares pass the largest
// double (values above about 1e154): the sums were infinite and the error
// inf / inf = NaN, which no bound fails, so an output wrong by just under
// rtol everywhere passed a rel_l2 ten times tighter.
Buffer f64_buffer(const std::vector<double>& v) {
  Buffer b(v.size() * sizeof(double));
  std::memcpy(b.data(), v.data(), b.bytes());
  return b;
}

TEST(JudgeL2, HugeFloat64ValuesStillFailTheRelativeL2Bound) {
  const Tolerance tol{0.0, 0.01, 0.001};
  for (const double scale : {1.0, 1e200, 1e300}) {
    std::vector<double> want(1000), got(1000);
    for (std::size_t i = 0; i < want.size(); ++i) {
      want[i] = scale * (1.0 + static_cast<double>(i % 17));
      got[i] = want[i] * 1.009;   // within rtol, 9x over rel_l2
    }
    const OutputDiff d = diff_output(host_space(), DType::f64, f64_buffer(want), f64_buffer(got),
                                     static_cast<std::int64_t>(want.size()), tol, true);
    EXPECT_GE(d.bad, 0) << "scale " << scale;
    EXPECT_NEAR(d.rel_l2, 0.009, 1e-9) << "scale " << scale;
    EXPECT_NE(d.why.find("relative L2 error"), std::string::npos) << d.why;
  }
}

TEST(JudgeL2, HugeFloat64ValuesThatMatchPass) {
  const Tolerance tol{0.0, 0.01, 0.001};
  std::vector<double> want(1000), got(1000);
  for (std::size_t i = 0; i < want.size(); ++i) {
    want[i] = 1e300 * (1.0 + static_cast<double>(i % 17));
    got[i] = want[i] * (1.0 + 1e-6);
  }
  const OutputDiff d = diff_output(host_space(), DType::f64, f64_buffer(want), f64_buffer(got),
                                   static_cast<std::int64_t>(want.size()), tol, true);
  EXPECT_LT(d.bad, 0) << d.why;
  EXPECT_NEAR(d.rel_l2, 1e-6, 1e-9);
}

TEST(JudgeL2, AnInfiniteDifferenceOfFiniteValuesFails) {
  const Tolerance tol{0.0, 0.01, 0.001};
  const OutputDiff d = diff_output(host_space(), DType::f64, f64_buffer({1e308, 1.0}), f64_buffer({-1e308, 1.0}), 2,
                                   tol, true);
  EXPECT_EQ(d.bad, 0);
  EXPECT_TRUE(std::isinf(d.rel_l2)) << d.rel_l2;
}

}  // namespace

// The arena's size (judge/space.hpp, arena_size): the candidate's process
// reads it from its start, before any hidden shape has run. For every
// bundled CPU and CUDA task it is the same at every judgement's draws (it
// depends on the visible shapes and the draw space's caps only), holds
// every case, and no hidden shape sizes it, so no bundled task has its
// feedback withheld for it (RedTeam.TheArenasSizeSaysNothingOfTheHiddenShapes
// shows the channel on a task built for it).
TEST(JudgeArena, EveryBundledTaskHasOneSizeForEveryDrawAndNoHiddenShapeSizesIt) {
  int tasks = 0;
  for (const char* backend : {"cpu", "cuda"})
    for (const auto& e : fs::directory_iterator(fs::path(KEVO_TEST_TASKS_DIR) / backend)) {
      if (!fs::exists(e.path() / "task.json")) continue;
      const Task task = load_task(e.path());
      ++tasks;
      std::size_t bytes = 0;
      for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const std::vector<Shape> drawn = draw_shapes(task, seed * 0x9E3779B97F4A7C15ULL);
        const ArenaSize a = arena_size(task, drawn, 4096);
        EXPECT_EQ(a.reveals, nullptr) << task.name << ": hidden shape " << a.reveals->label << " sizes the arena";
        if (seed == 1) bytes = a.bytes;
        EXPECT_EQ(a.bytes, bytes) << task.name << ": the size moved with the draws (seed " << seed << ")";
        for (const auto& s : drawn) EXPECT_LE(layout_bytes(task, Case{&s, Case::Kind::drawn, 0}, 4096), a.bytes) << s.label;
        for (const auto& s : task.hidden) EXPECT_LE(layout_bytes(task, Case{&s, Case::Kind::hidden, 0}, 4096), a.bytes);
      }
    }
  EXPECT_GE(tasks, 13);
}

// A task without a draw space whose hidden shape is larger than its
// visible one: the arena must hold it, and says so (`reveals`), so the
// engine withholds the judgement's feedback; with a draw space whose caps
// hold it, the size is the caps' and nothing is revealed.
TEST(JudgeArena, AHiddenShapeBeyondTheCapsIsRevealedAndOneWithinIsNot) {
  TempTask t;
  Task task = t.task();
  ASSERT_TRUE(task.draw.empty());
  task.visible = {Shape{"n=16", {{"n", 16}}}};
  task.hidden = {Shape{"n=3", {{"n", 3}}}};
  EXPECT_EQ(arena_size(task, {}, 4096).reveals, nullptr);
  EXPECT_EQ(arena_size(task, {}, 4096).bytes, 2u * 4096);
  task.hidden.push_back(Shape{"n=5000", {{"n", 5000}}});
  ArenaSize a = arena_size(task, {}, 4096);
  ASSERT_NE(a.reveals, nullptr);
  EXPECT_EQ(a.reveals->label, "n=5000");
  // The candidate's first process keeps the visible shapes' size; the
  // second one (the hidden shapes) gets room for two bfloat16 buffers of
  // 10000 bytes.
  EXPECT_EQ(a.bytes, 2u * 4096);
  EXPECT_EQ(a.hidden_bytes, 2u * 12288);
  task.draw.count = 4;
  task.draw.max_elements = 8192;
  task.draw.max_bytes = 1 << 20;
  a = arena_size(task, {}, 4096);
  EXPECT_EQ(a.reveals, nullptr);
  EXPECT_EQ(a.bytes, 2u * 16384);   // 8192 bfloat16 elements per buffer
  EXPECT_EQ(a.hidden_bytes, a.bytes);
  // Each buffer could hold all 10000 bytes (12288 rounded), but both
  // together hold no more than 10000, each rounded up by less than 4096.
  task.draw.max_elements = 0;
  task.draw.max_bytes = 10000;
  EXPECT_EQ(draw_layout_bound(task, 4096), 10000u + 2 * 4096);
}
