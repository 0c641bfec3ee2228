#include "judge.hpp"

#include "channel.hpp"

#include "kevo/sandbox/runner.hpp"
#include "kevo/sandbox/seccomp.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace kevo::native::judge {

namespace {

using Clock = std::chrono::steady_clock;

std::string fmt3(double v) {
  std::ostringstream o;
  o.precision(3);
  o << v;
  return o.str();
}

}  // namespace

// ---- helpers ----------------------------------------------------------------

std::string unstable_timing(const std::vector<double>& samples, double max_iqr_fraction) {
  if (samples.size() < 5) return {};
  const double m = quantile(samples, 0.5);
  if (m <= 0) return {};
  const double iqr = quantile(samples, 0.75) - quantile(samples, 0.25);
  if (max_iqr_fraction > 0 && iqr > max_iqr_fraction * m)
    return "IQR " + fmt3(100.0 * iqr / m) + "% of the median";
  // Two groups: a gap wider than 10% of the median between consecutive
  // sorted samples, with at least a fifth of them on each side.
  std::vector<double> s = samples;
  std::sort(s.begin(), s.end());
  const std::size_t lo = std::max<std::size_t>(1, s.size() / 5), hi = s.size() - s.size() / 5;
  for (std::size_t i = lo; i < hi && i < s.size(); ++i)
    if (s[i] - s[i - 1] > 0.1 * m)
      return "two groups of times (" + fmt3(s[i - 1] / 1e3) + " us and " + fmt3(s[i] / 1e3) + " us apart)";
  return {};
}

double roofline_floor_ns(const Task& task, const Shape& s, const Roofline& r) {
  double floor_ns = 0.0;
  const Env env = s.env();
  bool bf16 = false;
  for (const auto& a : task.args) bf16 = bf16 || (a.is_buffer() && a.dtype == DType::bf16);
  const double gflops = bf16 && r.peak_gflops_bf16 > 0 ? r.peak_gflops_bf16 : r.peak_gflops;
  // GFLOP/s is FLOP per nanosecond; GB/s is bytes per nanosecond.
  if (!task.flops.empty() && gflops > 0) floor_ns = std::max(floor_ns, task.flops.eval(env).as_double() / gflops);
  if (!task.bytes.empty() && r.peak_gbps > 0) floor_ns = std::max(floor_ns, task.bytes.eval(env).as_double() / r.peak_gbps);
  return floor_ns;
}

std::string first_mismatch(const Task& task, const Case& c, const ArgSet& want, const ArgSet& got, Space& space) {
  for (std::size_t k = 0; k < task.args.size(); ++k) {
    const Arg& arg = task.args[k];
    if (!arg.is_output()) continue;
    for (const ComparePart& p : space.compare(arg.dtype, want.buf[k], got.buf[k], want.n[k], task.tolerance, false))
      if (p.bad >= 0)
        return arg.name + multi_index(task, arg, *c.shape, p.bad) + ": expected " +
               fmt_double(space.element(arg.dtype, want.buf[k], p.bad)) + ", got " +
               fmt_double(space.element(arg.dtype, got.buf[k], p.bad));
  }
  return {};
}

// ---- null candidates ------------------------------------------------------

LocalEndpoint::Kernel null_kernel(const std::string& kind, const Task& task, Endpoint& reference, std::uint64_t seed,
                                  Space& space) {
  if (kind == "zeros") {
    return [&task, &space](ArgSet& a, const Case&) {
      for (std::size_t k = 0; k < task.args.size(); ++k)
        if (task.args[k].is_output()) space.zero(a.buf[k]);
    };
  }
  if (kind == "copy") {
    return [&task, &space](ArgSet& a, const Case&) {
      std::size_t src = task.args.size();
      for (std::size_t k = 0; k < task.args.size() && src == task.args.size(); ++k)
        if (task.args[k].is_input()) src = k;
      if (src == task.args.size() || a.n[src] == 0) return;
      for (std::size_t k = 0; k < task.args.size(); ++k) {
        if (task.args[k].role != Role::out) continue;   // an inout output keeps its input: identity
        space.convert(task.args[k].dtype, a.buf[k], a.n[k], task.args[src].dtype, a.buf[src], a.n[src]);
      }
    };
  }
  if (kind == "other_seed") {
    return [&task, &reference, seed, &space](ArgSet& a, const Case& c) {
      const ArgSet other = space.make_inputs(task, c, seed ^ 0x5DEECE66DULL, "null-other-seed");
      ArgSet& r = reference.arguments(task, c);
      space.load(task, r, other);
      if (reference.call(r, false).kind != CallResult::Kind::ok)
        throw std::runtime_error("the reference failed on the other seed's inputs");
      for (std::size_t k = 0; k < task.args.size(); ++k)
        if (task.args[k].is_output()) space.copy(a.buf[k], r.buf[k]);
    };
  }
  throw std::invalid_argument("unknown null candidate '" + kind + "'");
}

// ---- the judge ------------------------------------------------------------

Judge::Judge(const Task& task, const Options& opt, Endpoint& reference, Endpoint& candidate, Space& space)
    : task_(task), space_(space), opt_(opt), ref_(reference), cand_(&candidate) {
  for (std::size_t i = 0; i < task.visible.size(); ++i) cases_.push_back(Case{&task.visible[i], Case::Kind::visible, i});
  for (std::size_t i = 0; i < task.hidden.size(); ++i) cases_.push_back(Case{&task.hidden[i], Case::Kind::hidden, i});
  for (std::size_t i = 0; i < opt_.drawn.size(); ++i) cases_.push_back(Case{&opt_.drawn[i], Case::Kind::drawn, i});
}

void Judge::settle(Status s, const std::string& message) {
  v_.status = s;
  v_.message = message;
  throw Fail{};
}

void Judge::settle_failed_call(const CallResult& r, const Endpoint& side, bool candidate, const std::string& where) {
  const std::string who = candidate ? "the kernel" : "the reference";
  switch (r.kind) {
    case CallResult::Kind::ok: break;
    case CallResult::Kind::bad_alloc:
      settle(Status::memory_limit, who + " could not allocate memory (std::bad_alloc) " + where);
    case CallResult::Kind::threw: settle(Status::runtime_error, who + " threw an exception " + r.message + " " + where);
    case CallResult::Kind::died: break;
  }
  const HostEnd& e = side.end();
  const std::string proc = candidate ? "the candidate's process" : "the reference's process";
  if (e.resisted_stop)
    settle(Status::runtime_error, proc + " did not stay stopped when the judge stopped it (it resumed itself) " + where);
  if (e.violation >= 0 || e.signal == SIGSYS || (e.signal == 0 && e.exit_code == sandbox::kViolationExitCode)) {
    std::string call = "(unknown)";
    if (e.violation >= 0) {
      call = std::to_string(e.violation);
      const std::string name = sandbox::forbidden_syscall_name(e.violation);
      if (!name.empty()) call += " (" + name + ")";
    }
    settle(Status::runtime_error, "sandbox violation: forbidden system call " + call + " " + where);
  }
  if (e.signal == SIGXCPU || (e.signal == SIGKILL && opt_.host.cpu_seconds > 0 && e.cpu_seconds >= opt_.host.cpu_seconds))
    settle(Status::timeout, "exceeded the CPU-time limit of " + fmt3(opt_.host.cpu_seconds) + " s (limits.cpu_seconds) " + where);
  const bool rss_at_limit = opt_.host.memory_mb > 0 &&
                            static_cast<double>(e.max_rss_kb) >= 0.9 * static_cast<double>(opt_.host.memory_mb) * 1024;
  if (e.alloc_failed_bytes > 0 || rss_at_limit)
    settle(Status::memory_limit, (e.alloc_failed_bytes ? "an allocation of " + std::to_string(e.alloc_failed_bytes) + " bytes failed"
                                                       : std::string("peak memory reached the limit")) +
                                     " (limits.memory_mb = " + std::to_string(opt_.host.memory_mb) + ") " + where);
  if (e.signal != 0) settle(Status::runtime_error, "killed by " + sandbox::signal_name(e.signal) + " " + where);
  settle(Status::runtime_error, "protocol breach: " + proc + " ended with exit code " + std::to_string(e.exit_code) +
                                    " " + where + " (did the kernel end the process?)");
}

CallResult Judge::call(Endpoint& side, ArgSet& a, const Case& c, const std::string& trial, bool candidate,
                       bool poison_allocations) {
  if (candidate) emit({{"event", "call"}, {"trial", trial}, {"shape", c.label()}, {"hidden", c.hidden()}});
  CallResult r = side.call(a, poison_allocations);
  if (r.kind != CallResult::Kind::ok) {
    if (c.hidden()) mismatch_hidden_ = true;
    settle_failed_call(r, side, candidate, "during " + trial + " on shape " + c.label());
  }
  return r;
}

void Judge::check_still_stopped(const Case& c, const std::string& trial) {
  // Between its calls the candidate's process is stopped; if it runs now it
  // resumed itself, and may have run beside the reference or tampered with
  // the outputs about to be compared.
  if (!cand_->still_stopped())
    settle(Status::runtime_error, "the candidate's process resumed itself while it was stopped (during " + trial +
                                      " on shape " + c.label() + ")");
}

void Judge::check_inputs(const ArgSet& got, const ArgSet& orig, const Case& c, const std::string& trial) {
  // Inputs are compared byte for byte with the pristine copy the candidate
  // never saw (stronger than a hash, and parallel).
  for (std::size_t k = 0; k < task_.args.size(); ++k) {
    if (task_.args[k].role != Role::in) continue;
    const std::size_t at = space_.first_difference(got.buf[k], orig.buf[k]);
    if (at >= got.buf[k].bytes()) continue;
    const std::size_t es = dtype_size(task_.args[k].dtype);
    const auto i = static_cast<std::int64_t>(at / es);
    Mismatch m;
    m.arg = task_.args[k].name;
    m.shape = c.label();
    m.trial = "input-modified";
    m.flat_index = i;
    m.index = multi_index(task_, task_.args[k], *c.shape, i);
    m.expected = space_.element(task_.args[k].dtype, orig.buf[k], i);
    m.got = space_.element(task_.args[k].dtype, got.buf[k], i);
    v_.mismatch = m;
    mismatch_hidden_ = c.hidden();
    settle(Status::wrong_answer, "the kernel modified its input '" + m.arg + "' (at " + m.index + ", " + trial +
                                     ", shape " + c.label() + ")");
  }
}

void Judge::compare_outputs(const ArgSet& want, const ArgSet& got, const Case& c, const std::string& trial,
                            bool against_reference) {
  const Tolerance& tol = task_.tolerance;
  for (std::size_t k = 0; k < task_.args.size(); ++k) {
    const Arg& arg = task_.args[k];
    if (!arg.is_output()) continue;
    const OutputDiff d = diff_output(space_, arg.dtype, want.buf[k], got.buf[k], want.n[k], tol, against_reference);
    if (against_reference) {
      v_.max_abs_error = std::max(v_.max_abs_error, d.max_abs);
      v_.rel_l2_error = std::max(v_.rel_l2_error, d.rel_l2);
    }
    const std::int64_t bad = d.bad;
    const std::string& why = d.why;
    if (bad >= 0) {
      Mismatch m;
      m.arg = arg.name;
      m.shape = c.label();
      m.trial = trial;
      m.flat_index = bad;
      m.index = multi_index(task_, arg, *c.shape, bad);
      m.expected = space_.element(arg.dtype, want.buf[k], bad);
      m.got = space_.element(arg.dtype, got.buf[k], bad);
      v_.mismatch = m;
      mismatch_hidden_ = c.hidden();
      std::string what = against_reference ? "differs from the reference"
                                           : "differs between two runs on the same inputs";
      settle(Status::wrong_answer, "output '" + arg.name + "' " + what + " at " + m.index + " (" + trial +
                                       ", shape " + c.label() + "): expected " + fmt_double(m.expected) +
                                       ", got " + fmt_double(m.got) + ": " + why);
    }
  }
}

void Judge::trial_on(const Case& c, const std::string& trial, const std::string& tag, bool repeat,
                     const DistributionOverride& dist) {
  const ArgSet orig = space_.make_inputs(task_, c, opt_.seed, tag, dist);
  ArgSet& got = cand_->arguments(task_, c);
  space_.load(task_, got, orig);
  call(*cand_, got, c, trial, true, true);
  check_inputs(got, orig, c, trial);
  // The reference runs after the candidate, in its own process; its
  // outputs never enter the candidate's.
  ArgSet& want = ref_.arguments(task_, c);
  space_.load(task_, want, orig);
  call(ref_, want, c, trial, false, false);
  check_still_stopped(c, trial);
  compare_outputs(want, got, c, trial, true);
  if (!repeat) return;
  // Same inputs again, outputs poisoned again: the second run must agree
  // with the first within the task's tolerance (threaded reductions may
  // legitimately differ in the last bits).
  ArgSet first = space_.clone_for_call(task_, got, false);
  space_.load(task_, got, orig);
  call(*cand_, got, c, "repeat-consistency", true, true);
  compare_outputs(first, got, c, "repeat-consistency", false);
}

void Judge::correctness(bool hidden) {
  v_.stage = Stage::correctness;
  emit({{"event", "stage"}, {"stage", "correctness"}});
  for (int t = 0; t < opt_.trials; ++t)
    for (const Case& c : cases_)
      if (c.hidden() == hidden) trial_on(c, "trial " + std::to_string(t + 1), "trial" + std::to_string(t), t == 0, {});
}

void Judge::stress(bool hidden) {
  // Each declared stress distribution is one more trial on every shape
  // (visible, hidden and drawn): inputs a kernel must survive that the
  // usual distribution never produces (a softmax without max subtraction
  // overflows on a large mean).
  for (const StressTrial& st : task_.stress) {
    const DistributionOverride dist = [&st, this](const Arg& a) -> const Distribution* {
      for (const auto& [index, d] : st.inputs)
        if (&task_.args[index] == &a || task_.args[index].name == a.name) return &d;
      return nullptr;
    };
    for (const Case& c : cases_)
      if (c.hidden() == hidden) trial_on(c, "stress " + st.name, "stress-" + st.name, false, dist);
  }
}

void Judge::time_case(const Case& c, double budget, double& log_ratio, int& min_reps) {
  std::vector<double> tc, tr;
  int calls = 0;
  // One repeat: fresh inputs for both sides (drawn outside the timed
  // windows), outputs re-poisoned, both calls timed alone, and the
  // candidate's output checked against the reference's for the same inputs.
  auto repeat = [&](bool record, bool ref_first) {
    const std::string tag = "timing" + std::to_string(calls++);
    const ArgSet orig = space_.make_inputs(task_, c, opt_.seed, tag);
    ArgSet& got = cand_->arguments(task_, c);
    space_.load(task_, got, orig);
    ArgSet& want = ref_.arguments(task_, c);
    space_.load(task_, want, orig);
    const std::string trial = "timed call " + std::to_string(calls);
    double c_ns = 0, r_ns = 0;
    auto time_ref = [&] {
      if (flush_) flush_();
      r_ns = call(ref_, want, c, trial, false, false).ns;
    };
    auto time_cand = [&] {
      if (flush_) flush_();
      c_ns = call(*cand_, got, c, trial, true, false).ns;
    };
    if (ref_first) {
      time_ref();
      time_cand();
    } else {
      time_cand();
      time_ref();
    }
    check_still_stopped(c, trial);
    compare_outputs(want, got, c, trial, true);
    check_inputs(got, orig, c, trial);
    if (record) {
      tc.push_back(c_ns);
      tr.push_back(r_ns);
    }
  };
  emit({{"event", "call"}, {"trial", "timing"}, {"shape", c.label()}, {"hidden", false}});
  const TimingRequest& T = opt_.timing_options;
  for (int i = 0; i < T.warmup; ++i) repeat(false, i % 2 == 0);
  std::string unstable;
  for (int attempt = 0; attempt < 2; ++attempt) {
    tc.clear();
    tr.clear();
    const auto start = Clock::now();
    for (int rep = 0; rep < std::max(T.max_repeats, 1); ++rep) {
      // Interleaved, alternating order: drifts in clock speed or load hit
      // both sides alike.
      repeat(true, rep % 2 == 0);
      const auto now = Clock::now();
      const double spent = std::chrono::duration<double>(now - start).count();
      if (rep + 1 >= T.min_repeats && spent >= budget) break;
      if (opt_.wall_seconds > 0 && std::chrono::duration<double>(now - opt_.started).count() > 0.6 * opt_.wall_seconds)
        break;   // near the wall-clock limit: settle for fewer repeats
    }
    unstable = unstable_timing(tc, T.max_iqr_fraction);
    if (unstable.empty()) break;
    if (opt_.wall_seconds > 0 && std::chrono::duration<double>(Clock::now() - opt_.started).count() > 0.4 * opt_.wall_seconds)
      break;   // no time to time it again
  }
  const double cm = quantile(tc, 0.5), rm = quantile(tr, 0.5);
  const double ciqr = quantile(tc, 0.75) - quantile(tc, 0.25);
  const double riqr = quantile(tr, 0.75) - quantile(tr, 0.25);
  const double floor_ns = roofline_floor_ns(task_, *c.shape, opt_.roofline);
  nlohmann::json st = {{"shape", c.label()},       {"cand_median_ns", cm}, {"cand_iqr_ns", ciqr},
                       {"ref_median_ns", rm},      {"ref_iqr_ns", riqr},   {"repeats", tc.size()},
                       {"speedup", rm / std::max(cm, 1.0)}, {"roofline_floor_ns", floor_ns}};
  if (!unstable.empty()) {
    st["unstable"] = unstable;
    notes_.push_back("flagged: unstable timing on shape " + c.label() + " (" + unstable + ", timed twice)");
  }
  shape_timings_.push_back(st);
  if (floor_ns > 0 && cm < opt_.roofline.floor_fraction * floor_ns) {
    v_.stage = Stage::timing;
    settle(Status::runtime_error, "timed at " + fmt3(cm / 1e3) + " us on shape " + c.label() +
                                      ", under the roofline floor of " + fmt3(floor_ns / 1e3) +
                                      " us (flops / peak, bytes / bandwidth): an error, not a speedup");
  }
  v_.cand_median_ns += cm;
  v_.ref_median_ns += rm;
  v_.cand_iqr_ns += ciqr;
  v_.ref_iqr_ns += riqr;
  log_ratio += std::log(std::max(rm / std::max(cm, 1.0), 1e-12));
  min_reps = std::min(min_reps, static_cast<int>(tc.size()));
}

void Judge::timing() {
  v_.stage = Stage::timing;
  emit({{"event", "stage"}, {"stage", "timing"}});
  std::size_t visible = 0;
  for (const Case& c : cases_) visible += c.timed() ? 1 : 0;
  const double budget = opt_.timing_options.budget_seconds / static_cast<double>(std::max<std::size_t>(visible, 1));
  double log_ratio = 0.0;
  int shapes = 0;
  int min_reps = std::numeric_limits<int>::max();
  for (const Case& c : cases_) {
    if (!c.timed()) continue;
    time_case(c, budget, log_ratio, min_reps);
    ++shapes;
  }
  v_.repeats = shapes ? min_reps : 0;
  v_.speedup = shapes ? std::exp(log_ratio / shapes) : 0.0;
}

JudgeResult Judge::explain_end(const Endpoint& side, const std::string& where) {
  v_.stage = Stage::correctness;
  try {
    CallResult died;
    died.kind = CallResult::Kind::died;
    settle_failed_call(died, side, true, where);
  } catch (const Fail&) {
  }
  JudgeResult r;
  r.verdict = v_;
  return r;
}

JudgeResult Judge::run() {
  try {
    // The hidden shapes come last, after the timing: until then the
    // candidate's process has seen no hidden size, so the times that a
    // correct verdict's feedback reports cannot depend on one (a spin per
    // hidden shape seen told their number: redteam/time_channel.cpp and
    // tests/cuda/adversarial/time_channel.cu). A flavour's timing (the
    // CUDA worker's GPU timing) runs at the same place.
    correctness(false);
    stress(false);
    const bool judged = opt_.mode == kModeJudge;
    const bool timed = opt_.timing && judged;
    bool flavour_timed = false;
    if (timed) {
      timing();
    } else if (flavour_timing_ && judged) {
      v_.stage = Stage::timing;
      flavour_timed = flavour_timing_(v_);
      if (v_.status != Status::pending) throw Fail{};
    }
    if (opt_.hidden_shapes) {
      if (hidden_candidate_) {
        // The hidden shapes in a process of the candidate's own (its first
        // one ended), whose arena has room for them.
        std::string failure;
        Endpoint* fresh = hidden_candidate_(failure);
        if (!failure.empty()) {
          v_.stage = Stage::correctness;
          settle(Status::runtime_error, failure);
        }
        if (fresh) cand_ = fresh;
      }
      correctness(true);
      stress(true);
    }
    v_.status = Status::correct;
    if (timed) {
      std::ostringstream m;
      m.precision(3);
      m << "correct; speedup " << v_.speedup << "x (" << v_.cand_median_ns / 1e3 << " us vs reference "
        << v_.ref_median_ns / 1e3 << " us)";
      v_.message = m.str();
      for (const auto& n : notes_) v_.message += "; " + n;
    } else if (!flavour_timed) {
      // (A flavour's timing wrote its own message.)
      v_.message = "correct on " + std::to_string(opt_.trials + static_cast<int>(task_.stress.size())) + " trials x " +
                   std::to_string(cases_.size()) + " shapes";
    }
    v_.stage = Stage::done;
  } catch (const Fail&) {
    // A failure at a hidden shape after the timing: no speedup for a
    // kernel that is not correct.
    v_.speedup = 0.0;
    v_.cand_median_ns = v_.ref_median_ns = v_.cand_iqr_ns = v_.ref_iqr_ns = 0.0;
    v_.repeats = 0;
    shape_timings_.clear();
  }
  JudgeResult r;
  r.verdict = v_;
  r.mismatch_hidden = mismatch_hidden_;
  r.shape_timings = shape_timings_;
  return r;
}

}  // namespace kevo::native::judge
