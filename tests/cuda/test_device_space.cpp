// The CUDA worker's device space against the host space (label gpu: skips
// without a GPU). The protocol is the same code over both; these tests check
// that the device's bulk work gives the same answers as the host's on the
// same buffers: first bad element and why, worst element, L2 sums, input
// checks, poisoning, and that its generator is deterministic, fresh per tag
// and has the task's distributions.
#include "device_space.hpp"
#include "require_gpu.hpp"
#include "slot.hpp"

#include "kevo/core/task.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <vector>

namespace {

namespace w = kevo::native::judge;
namespace cw = kevo::cuda::worker;


void free_device(void* p) { (void)cudaFree(p); }

w::Buffer upload(const w::Buffer& h) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, std::max<std::size_t>(h.bytes(), 1)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, h.data(), h.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  return w::Buffer(p, h.bytes(), &free_device);
}

w::Buffer download(const w::Buffer& d) {
  w::Buffer h(d.bytes());
  EXPECT_EQ(cudaMemcpy(h.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

kevo::Task task(const char* name) { return kevo::load_task(std::string(KEVO_CUDA_TASKS) + "/" + name); }

// Both spaces' parts, combined as the judge combines them.
struct Summary {
  double diff2 = 0, want2 = 0, max_abs = 0;
  std::int64_t compared = 0, bad = -1, worst = -1;
  w::Why why = w::Why::none;
};
Summary combine(const std::vector<w::ComparePart>& parts) {
  Summary s;
  for (const auto& p : parts) {
    s.diff2 += p.diff2;
    s.want2 += p.want2;
    s.compared += p.compared;
    if (p.max_abs > s.max_abs) {
      s.max_abs = p.max_abs;
      s.worst = p.worst;
    }
    if (s.bad < 0 && p.bad >= 0) {
      s.bad = p.bad;
      s.why = p.why;
    }
  }
  return s;
}

void expect_same(const Summary& h, const Summary& d) {
  EXPECT_EQ(h.bad, d.bad);
  EXPECT_EQ(static_cast<int>(h.why), static_cast<int>(d.why));
  EXPECT_EQ(h.worst, d.worst);
  EXPECT_EQ(h.compared, d.compared);
  EXPECT_DOUBLE_EQ(h.max_abs, d.max_abs);
  EXPECT_NEAR(h.diff2, d.diff2, 1e-9 * std::max(1.0, h.diff2));
  EXPECT_NEAR(h.want2, d.want2, 1e-9 * std::max(1.0, h.want2));
}

TEST(DeviceSpace, ComparisonMatchesTheHostOnTheSameBuffers) {
  REQUIRE_GPU();
  const kevo::Task t = task("sgemm");
  const w::Case c{&t.visible.at(0), w::Case::Kind::visible, 0};
  std::size_t y = 0;
  while (!t.args[y].is_output()) ++y;
  const w::ArgSet a = w::host_space().make_inputs(t, c, 11, "trial0");
  const std::int64_t n = a.n[y];
  ASSERT_GT(n, 3 * w::kBlockElements / 2) << "the shape should span more than one block";
  // A plausible output: the host fills Y with values, then the got side is
  // perturbed in ways each rule of the comparison must catch.
  w::Buffer want(a.buf[y].bytes()), got(a.buf[y].bytes());
  auto* pw = static_cast<float*>(want.data());
  auto* pg = static_cast<float*>(got.data());
  for (std::int64_t i = 0; i < n; ++i) pw[i] = pg[i] = std::sin(0.001f * static_cast<float>(i)) * 3.0f;
  for (std::int64_t i = 0; i < n; i += 97) pg[i] += 1e-6f;   // within tolerance, counts in the sums
  const kevo::Tolerance& tol = t.tolerance;
  w::Space& host = w::host_space();
  w::Space& dev = cw::device_space();

  auto check_case = [&](const char* what) {
    SCOPED_TRACE(what);
    const w::Buffer dw = upload(want), dg = upload(got);
    for (bool against : {true, false}) {
      const Summary h = combine(host.compare(kevo::DType::f32, want, got, n, tol, against));
      const Summary d = combine(dev.compare(kevo::DType::f32, dw, dg, n, tol, against));
      expect_same(h, d);
    }
  };
  check_case("all within tolerance");
  pg[w::kBlockElements + 5] += 0.5f;   // outside tolerance, second block
  check_case("one element outside tolerance");
  std::uint32_t poison = w::host_space().poison().f32;
  std::memcpy(&pg[w::kBlockElements + 3], &poison, 4);   // unwritten, earlier in the block
  check_case("an unwritten element before it");
  pg[17] = INFINITY;   // non-finite where the reference is finite, first block
  check_case("an infinity in the first block");
  pw[9] = NAN;   // a NaN the reference has and the candidate does not
  check_case("a NaN expected");
  std::memcpy(&pw[3], &poison, 4);   // the reference left an element unwritten
  check_case("an element the reference never wrote");
  {
    const Summary d = combine(dev.compare(kevo::DType::f32, upload(want), upload(got), n, tol, true));
    EXPECT_EQ(d.bad, 3);
    EXPECT_EQ(d.why, w::Why::reference_unwritten);
  }
}

// float64 outputs whose squares pass the largest double: both spaces give
// diff_output the scaled sums, and the relative L2 error is the same finite
// figure (before, inf / inf passed an output 9x over rel_l2).
TEST(DeviceSpace, HugeFloat64ValuesGiveTheHostsRelativeL2Error) {
  REQUIRE_GPU();
  const kevo::Tolerance tol{0.0, 0.01, 0.001};
  const std::int64_t n = 3 * w::kBlockElements / 2;
  w::Buffer want(static_cast<std::size_t>(n) * sizeof(double)), got(want.bytes());
  auto* pw = static_cast<double*>(want.data());
  auto* pg = static_cast<double*>(got.data());
  for (std::int64_t i = 0; i < n; ++i) {
    pw[i] = 1e300 * (1.0 + static_cast<double>(i % 17));
    pg[i] = pw[i] * 1.009;
  }
  const w::OutputDiff h = w::diff_output(w::host_space(), kevo::DType::f64, want, got, n, tol, true);
  const w::OutputDiff d = w::diff_output(cw::device_space(), kevo::DType::f64, upload(want), upload(got), n, tol, true);
  EXPECT_NEAR(h.rel_l2, 0.009, 1e-9);
  EXPECT_NEAR(d.rel_l2, h.rel_l2, 1e-12);
  EXPECT_GE(d.bad, 0);
  EXPECT_EQ(d.why, h.why);
}

TEST(DeviceSpace, InputsAreDeterministicFreshPerTagAndOutputsPoisoned) {
  REQUIRE_GPU();
  w::Space& dev = cw::device_space();
  for (const char* name : {"sgemm", "gemm_bf16_bias_relu"}) {
    SCOPED_TRACE(name);
    const kevo::Task t = task(name);
    const w::Case c{&t.visible.at(0), w::Case::Kind::visible, 0};
    const w::ArgSet a = dev.make_inputs(t, c, 7, "trial0"), b = dev.make_inputs(t, c, 7, "trial0");
    const w::ArgSet other = dev.make_inputs(t, c, 7, "trial1");
    for (std::size_t k = 0; k < t.args.size(); ++k) {
      const kevo::Arg& arg = t.args[k];
      if (!arg.is_buffer() || a.n[k] == 0) continue;
      const w::Buffer ha = download(a.buf[k]), hb = download(b.buf[k]), ho = download(other.buf[k]);
      EXPECT_EQ(std::memcmp(ha.data(), hb.data(), ha.bytes()), 0) << arg.name << ": same seed and tag";
      EXPECT_EQ(dev.first_difference(a.buf[k], b.buf[k]), a.buf[k].bytes());
      if (!arg.is_input()) {
        // Every element holds the host's poison pattern.
        const w::ArgSet host = w::host_space().make_inputs(t, c, 7, "trial0");
        EXPECT_EQ(std::memcmp(ha.data(), host.buf[k].data(), ha.bytes()), 0) << arg.name << " is poisoned";
        EXPECT_TRUE(std::isnan(dev.element(arg.dtype, a.buf[k], a.n[k] - 1)));
        continue;
      }
      if (a.n[k] > 16) {
        EXPECT_NE(std::memcmp(ha.data(), ho.data(), ha.bytes()), 0) << arg.name << ": another tag";
      }
      // The task's distribution (uniform [a, b) by default): in range, mean
      // near the middle, spread near (b - a) / sqrt(12).
      double sum = 0, sum2 = 0;
      for (std::int64_t i = 0; i < a.n[k]; ++i) {
        const double v = arg.dtype == kevo::DType::bf16
                             ? kevo::bf16_to_double(static_cast<const std::uint16_t*>(ha.data())[i])
                             : static_cast<const float*>(ha.data())[i];
        ASSERT_GE(v, arg.dist.a);
        ASSERT_LE(v, arg.dist.b);
        sum += v;
        sum2 += v * v;
      }
      const double m = sum / static_cast<double>(a.n[k]);
      const double sd = std::sqrt(sum2 / static_cast<double>(a.n[k]) - m * m);
      if (a.n[k] >= 10000) {
        EXPECT_NEAR(m, 0.5 * (arg.dist.a + arg.dist.b), 0.02 * (arg.dist.b - arg.dist.a)) << arg.name;
        EXPECT_NEAR(sd, (arg.dist.b - arg.dist.a) / std::sqrt(12.0), 0.02 * (arg.dist.b - arg.dist.a)) << arg.name;
      }
    }
  }
}

// The timed loop's fill: both argument sets (the candidate's and the
// reference's) hold what fill_inputs gives one of them, inputs and
// poisoned outputs alike, over whatever they held before.
TEST(DeviceSpace, FillingTwoSetsAtOnceGivesEachTheSingleFill) {
  REQUIRE_GPU();
  w::Space& dev = cw::device_space();
  for (const char* name : {"axpy", "gemm_bf16_bias_relu"}) {
    SCOPED_TRACE(name);
    const kevo::Task t = task(name);
    const w::Case c{&t.visible.at(0), w::Case::Kind::visible, 0};
    w::ArgSet single = dev.make_inputs(t, c, 5, "stale"), a = dev.make_inputs(t, c, 5, "stale-a"),
              b = dev.make_inputs(t, c, 5, "stale-b");
    dev.fill_inputs(t, c, single, 9, "timing3");
    cw::fill_inputs_twice(t, c, a, b, 9, "timing3");
    for (std::size_t k = 0; k < t.args.size(); ++k) {
      if (!t.args[k].is_buffer() || a.n[k] == 0) continue;
      SCOPED_TRACE(t.args[k].name);
      EXPECT_EQ(dev.first_difference(single.buf[k], a.buf[k]), a.buf[k].bytes());
      EXPECT_EQ(dev.first_difference(single.buf[k], b.buf[k]), b.buf[k].bytes());
      if (!t.args[k].is_input()) {
        EXPECT_TRUE(std::isnan(dev.element(t.args[k].dtype, b.buf[k], 0)));
      }
    }
    const w::ArgSet other = dev.make_inputs(t, c, 9, "timing4");
    bool differs = false;
    for (std::size_t k = 0; k < t.args.size(); ++k) {
      if (t.args[k].is_input() && a.n[k] > 16)
        differs = differs || dev.first_difference(a.buf[k], other.buf[k]) < a.buf[k].bytes();
    }
    EXPECT_TRUE(differs) << "another tag gives other inputs";
  }
}

TEST(DeviceSpace, InputCheckFindsTheFirstChangedByte) {
  REQUIRE_GPU();
  w::Space& dev = cw::device_space();
  for (std::size_t bytes : {std::size_t{1}, std::size_t{13}, std::size_t{4096}, std::size_t{1} << 22}) {
    SCOPED_TRACE(bytes);
    w::Buffer h(bytes);
    std::memset(h.data(), 0x5A, bytes);
    const w::Buffer a = upload(h);
    EXPECT_EQ(dev.first_difference(a, upload(h)), bytes);
    // Distinct offsets, highest first: each change is the lowest so far.
    const std::set<std::size_t, std::greater<>> offsets = {bytes - 1, bytes / 2, bytes / 3, 0};
    for (std::size_t at : offsets) {
      static_cast<unsigned char*>(h.data())[at] ^= 0x10;
      EXPECT_EQ(dev.first_difference(a, upload(h)), at);
    }
  }
}

TEST(DeviceSpace, NullCandidateHelpersWorkOnTheDevice) {
  REQUIRE_GPU();
  w::Space& dev = cw::device_space();
  const kevo::Task t = task("sgemm");
  const w::Case c{&t.hidden.at(0), w::Case::Kind::hidden, 0};
  const w::ArgSet a = dev.make_inputs(t, c, 3, "trial0");
  w::ArgSet b = dev.clone_for_call(t, a, true);
  std::size_t in = 0, y = 0;
  while (!t.args[in].is_input()) ++in;
  while (!t.args[y].is_output()) ++y;
  EXPECT_TRUE(std::isnan(dev.element(t.args[y].dtype, b.buf[y], 0)));
  EXPECT_EQ(dev.first_difference(a.buf[in], b.buf[in]), a.buf[in].bytes()) << "inputs are copied";
  dev.zero(b.buf[y]);
  EXPECT_EQ(dev.element(t.args[y].dtype, b.buf[y], b.n[y] - 1), 0.0);
  dev.convert(t.args[y].dtype, b.buf[y], b.n[y], t.args[in].dtype, a.buf[in], a.n[in]);
  const std::int64_t last = b.n[y] - 1;
  EXPECT_EQ(dev.element(t.args[y].dtype, b.buf[y], last), dev.element(t.args[in].dtype, a.buf[in], last % a.n[in]));
  dev.copy(b.buf[in], a.buf[in]);
  EXPECT_EQ(dev.first_difference(a.buf[in], b.buf[in]), a.buf[in].bytes());
}

}  // namespace
