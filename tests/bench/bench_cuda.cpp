// bench_cuda: the CUDA backend's figures (docs/benchmarks.md#cuda-backend).
//   bench_cuda compile TASKS_DIR [a,b]  NVRTC vs nvcc -cubin vs nvcc -shared (the backend's
//                                       command) latency per bundled seed, median of 3
//   bench_cuda throughput TASK_DIR N [J] N distinct search-space points submitted at once (proposals
//                                       arrive instantly): candidates verified and timed per
//                                       GPU-minute, and the duty cycle of the one timing slot
//   bench_cuda contexts N [G]            N processes creating a CUDA context at once (on 1 GPU, then
//                                       spread over G): does the driver serialise them, per GPU or
//                                       per host? (what bounds a fresh worker per candidate)
//   bench_cuda sustain N G MB SECONDS [busy]  N children kept in flight for SECONDS, each a context, MB
//                                       MiB allocated and written, freed, exit: the host's sustained rate
//                                       of fresh contexts, and what memory per process costs it; with
//                                       busy, while another process keeps GPU 0 busy (as a timing does)
//   bench_cuda cv TASK_DIR K            the seed judged K times: coefficient of variation of its
//                                       median time across judgements
// Needs a GPU for throughput and cv; compile runs anywhere nvcc does.
#include "kevo/core/rng.hpp"
#include "kevo/core/search_space.hpp"
#include "kevo/core/task.hpp"
#include "kevo/cpu/cpu_backend.hpp"
#include "kevo/cuda/cuda_backend.hpp"
#include "kevo/cuda/probe_excess.hpp"

#include <cuda_runtime.h>
#include <nvrtc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace kevo;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

int compile_bench(const fs::path& tasks, const std::string& only) {
  const cpu::CpuOptions c = cuda::to_cpu_options(cuda::CudaOptions{});
  const fs::path tmp = fs::temp_directory_path() / "kevo-bench-cuda";
  fs::create_directories(tmp);
  std::printf("%-12s %10s %12s %12s\n", "task", "nvrtc_s", "nvcc_cubin_s", "nvcc_so_s");
  std::vector<double> all_rtc, all_cubin, all_so;
  for (const auto& d : find_task_dirs(tasks)) {
    const Task t = load_task(d);
    if (!only.empty() && ("," + only + ",").find("," + t.name + ",") == std::string::npos) continue;
    const std::string src = cpu::compiled_source(t, t.seed_source);
    const fs::path file = tmp / (t.name + ".cu");
    std::ofstream(file) << src;
    std::vector<double> rtc, cubin, so;
    for (int r = 0; r < 3; ++r) {
      {
        // The device code only (the seed up to its host function, with the
        // fixed-width types declared): NVRTC has no host compiler and no C++
        // standard headers, so the entry adapter and the host launch code
        // cannot be built this way (docs/cuda.md).
        std::string dev = t.seed_source.substr(0, t.seed_source.find("extern \"C\""));
        for (std::size_t p; (p = dev.find("#include <cstdint>")) != std::string::npos;)
          dev.replace(p, 18, "typedef int int32_t; typedef long long int64_t;");
        for (std::size_t p; (p = dev.find("#include <cfloat>")) != std::string::npos;)
          dev.replace(p, 17, "#define FLT_MAX 3.402823466e+38F");
        auto t0 = Clock::now();
        nvrtcProgram prog;
        nvrtcCreateProgram(&prog, dev.c_str(), file.c_str(), 0, nullptr, nullptr);
        const char* opts[] = {"-arch=sm_90", "-std=c++17"};
        nvrtcResult res = nvrtcCompileProgram(prog, 2, opts);
        rtc.push_back(since(t0));
        if (res != NVRTC_SUCCESS && r == 0) {
          size_t n = 0;
          nvrtcGetProgramLogSize(prog, &n);
          std::string log(n, '\0');
          nvrtcGetProgramLog(prog, log.data());
          std::printf("  (nvrtc on %s: %s; first lines: %.200s)\n", t.name.c_str(), nvrtcGetErrorString(res), log.c_str());
        }
        nvrtcDestroyProgram(&prog);
      }
      {
        const std::string cmd = c.compiler + " " + join(c.flags) + " -cubin -o " + (tmp / (t.name + ".cubin")).string() +
                                " " + file.string() + " > /dev/null 2>&1";
        auto t0 = Clock::now();
        if (std::system(cmd.c_str()) != 0 && r == 0) std::printf("  (nvcc -cubin failed on %s)\n", t.name.c_str());
        cubin.push_back(since(t0));
      }
      {
        const std::string cmd = c.compiler + " " + join(c.flags) + " " + join(c.flavour.link_flags) + " -o " +
                                (tmp / (t.name + ".so")).string() + " " + file.string() + " > /dev/null 2>&1";
        auto t0 = Clock::now();
        if (std::system(cmd.c_str()) != 0 && r == 0) std::printf("  (nvcc -shared failed on %s)\n", t.name.c_str());
        so.push_back(since(t0));
      }
    }
    std::printf("%-12s %10.3f %12.3f %12.3f\n", t.name.c_str(), median(rtc), median(cubin), median(so));
    all_rtc.push_back(median(rtc));
    all_cubin.push_back(median(cubin));
    all_so.push_back(median(so));
  }
  std::printf("%-12s %10.3f %12.3f %12.3f\n", "MEDIAN", median(all_rtc), median(all_cubin), median(all_so));
  return 0;
}

// BENCH_CUDA_OPTIONS='{"timing": {"max_repeats": 200}}': backend.cuda keys
// (docs/cuda.md) over the defaults, to compare settings in one call.
cuda::CudaOptions bench_options() {
  const char* text = std::getenv("BENCH_CUDA_OPTIONS");
  if (!text || !*text) return {};
  const nlohmann::json doc = nlohmann::json::parse(text);   // outlives obj, which refers to it
  StrictObject obj(doc, "BENCH_CUDA_OPTIONS", "");
  cuda::CudaOptions o = cuda::parse_cuda_options(obj);
  obj.finish();
  std::printf("backend.cuda options: %s\n", text);
  return o;
}

std::unique_ptr<Backend> backend(int eval_jobs = 0) {
  cuda::CudaOptions o = bench_options();
  o.base.cache_dir = "";   // every candidate really compiles
  if (eval_jobs > 0) o.base.eval_jobs = eval_jobs;
  return cuda::make_cuda_backend(std::move(o));
}

// Where the time went while the slot idled: every worker's timeline (its
// phases, its waits for the slot and its holds, one monotonic clock) is
// sampled each millisecond of [from, to]. For each state of the slot
// (timing, correctness work only, idle) it prints the share of the window
// and how many workers were, on average, in each state of their own: a
// phase of the worker (context, reserve, correctness, timing...), waiting
// for the slot or holding it, or not running at all (between a worker's
// end and the next one's start; "live" counts the others).
void where_time_went(const std::vector<nlohmann::json>& timelines, double from, double to) {
  struct Worker {
    double start = 0.0, end = 0.0;
    std::vector<std::pair<std::string, double>> marks;   // phase, end
    std::vector<std::pair<double, double>> excl, shared, excl_wait, shared_wait;
  };
  auto spans = [](const nlohmann::json& j, const char* key) {
    std::vector<std::pair<double, double>> v;
    for (const auto& iv : j.value(key, nlohmann::json::array())) v.emplace_back(iv[0].get<double>(), iv[1].get<double>());
    return v;
  };
  std::vector<Worker> ws;
  for (const auto& t : timelines) {
    Worker w;
    w.start = t.value("start", 0.0);
    for (const auto& m : t.value("marks", nlohmann::json::array())) w.marks.emplace_back(m[0].get<std::string>(), m[1].get<double>());
    if (w.marks.empty()) continue;
    w.end = w.marks.back().second;
    w.excl = spans(t, "slot_intervals");
    w.shared = spans(t, "slot_shared_intervals");
    w.excl_wait = spans(t, "exclusive_waits");
    w.shared_wait = spans(t, "shared_waits");
    ws.push_back(std::move(w));
  }
  if (ws.empty() || to <= from) return;
  auto in = [](const std::vector<std::pair<double, double>>& v, double t) {
    for (const auto& [a, b] : v)
      if (a <= t && t < b) return true;
    return false;
  };
  const char* slot_states[] = {"timing", "correctness only", "idle"};
  std::map<std::string, double> count[3];
  double samples[3] = {0, 0, 0};
  for (double t = from; t < to; t += 1e-3) {
    int slot = 2;
    std::vector<std::string> states;
    for (const Worker& w : ws) {
      if (t < w.start || t >= w.end) continue;
      std::string st;
      if (in(w.excl, t)) st = "holds: timing", slot = 0;
      else if (in(w.shared, t)) st = "holds: shared", slot = std::min(slot, 1);
      else if (in(w.excl_wait, t)) st = "waits: to time";
      else if (in(w.shared_wait, t)) st = "waits: shared";
      else {
        for (const auto& [phase, end] : w.marks)
          if (t < end) {
            st = phase;
            break;
          }
      }
      states.push_back(st);
    }
    samples[slot] += 1;
    count[slot]["live"] += static_cast<double>(states.size());
    for (const auto& st : states) count[slot][st] += 1;
  }
  const double total = samples[0] + samples[1] + samples[2];
  for (int k = 0; k < 3; ++k) {
    if (samples[k] == 0) continue;
    std::printf("  slot %-16s %5.1f%% of the window; workers on average:", slot_states[k], 100.0 * samples[k] / total);
    for (const auto& [st, c] : count[k]) std::printf(" %s %.2f;", st.c_str(), c / samples[k]);
    std::printf("\n");
  }
}

// What one candidate-reference pair of the timed loop cost, step by step
// (the judge's clock, the workers' phases "loop_*"; warm-up pairs included).
void print_loop_pairs(const std::function<double(const std::string&)>& phase_sum) {
  const double pairs = phase_sum("loop_pairs");
  if (pairs <= 0) return;
  std::printf("timed loop, per pair (us, %.0f pairs):", pairs);
  double sum = 0;
  for (const char* step :
       {"inputs", "flush", "reference", "prime", "call", "probe", "flush_after_call", "check", "check_after_call"}) {
    const double us = 1e6 * phase_sum(std::string("loop_") + step) / pairs;
    sum += us;
    std::printf(" %s %.1f", step, us);
  }
  std::printf("; all %.1f\n", sum);
}

// How widely the timed samples spread (IQR / median, the median over
// judgements), each side: what decides how soon the timing's stop rule
// (both medians known to 1%) is met.
void print_spread(const std::vector<double>& cand, const std::vector<double>& ref) {
  if (cand.empty()) return;
  std::printf("timed samples, IQR / median (median over %zu judgements): candidate %.2f%%, reference %.2f%%\n",
              cand.size(), 100.0 * median(cand), 100.0 * median(ref));
}

int throughput_bench(const fs::path& dir, int n, int eval_jobs) {
  auto task = std::make_shared<const Task>(load_task(dir));
  auto b = backend(eval_jobs);
  auto* cb = dynamic_cast<cpu::CpuBackend*>(b.get());
  b->prepare(*task);
  std::vector<Point> pts = task->space.enumerate();
  Rng rng(42);
  for (std::size_t i = pts.size(); i > 1; --i) std::swap(pts[i - 1], pts[rng.range(0, static_cast<std::int64_t>(i - 1))]);
  if (static_cast<int>(pts.size()) < n) n = static_cast<int>(pts.size());
  const auto s0 = cb->stats();
  const auto t0 = Clock::now();
  int submitted = 0, done = 0, correct = 0;
  double slot = 0.0, worker = 0.0, repeats = 0.0;
  std::vector<double> cand_spread, ref_spread;   // IQR / median of each correct candidate's timed samples
  std::set<std::string> devices;
  while (done < n) {
    // Proposals arrive instantly: keep the backend's queues as full as it wants.
    for (std::size_t w = b->wanted(); w > 0 && submitted < n; --w, ++submitted)
      b->submit({static_cast<std::uint64_t>(submitted + 1), task,
                 apply_point(task->space, pts[static_cast<std::size_t>(submitted)], task->seed_source), 7});
    for (const EvalResult& r : b->poll(std::chrono::milliseconds(20))) {
      ++done;
      correct += r.verdict.is_correct() ? 1 : 0;
      // The time the worker held the GPU's exclusive timing slot.
      slot += r.verdict.slot_seconds;
      worker += r.verdict.worker_seconds;
      repeats += r.verdict.repeats;
      if (r.verdict.is_correct() && r.verdict.cand_median_ns > 0 && r.verdict.ref_median_ns > 0) {
        cand_spread.push_back(r.verdict.cand_iqr_ns / r.verdict.cand_median_ns);
        ref_spread.push_back(r.verdict.ref_iqr_ns / r.verdict.ref_median_ns);
      }
      if (!r.verdict.device.empty()) devices.insert(r.verdict.device);
      if (!r.verdict.is_correct()) std::printf("  not correct: %s\n", r.verdict.message.c_str());
    }
  }
  const double wall = since(t0);
  const auto s1 = cb->stats();
  std::printf("task %s: %d candidates (%d correct) in %.1f s: %.1f candidates verified+timed per GPU-minute\n",
              task->name.c_str(), n, correct, wall, 60.0 * n / wall);
  std::printf("compiles %llu, %d workers at once; worker time %.1f s; timing slot held %.1f s of %.1f s: duty "
              "cycle %.1f%%\n",
              static_cast<unsigned long long>(s1.compiles - s0.compiles), cb->options().eval_jobs, worker, slot, wall,
              100.0 * slot / wall);
  // What a hold bought: timed repeats (candidate and reference pairs) per
  // correct candidate, and the slot time per pair.
  if (correct > 0)
    std::printf("timed repeats per correct candidate %.0f (%.3f ms of slot per candidate-reference pair; timing "
                "budget %.3f s, repeats %d..%d)\n",
                repeats / correct, repeats > 0 ? 1e3 * slot / repeats : 0.0, cb->options().timing.budget_seconds,
                cb->options().timing.min_repeats, cb->options().timing.max_repeats);
  print_spread(cand_spread, ref_spread);
  std::printf("worker environment set by the backend: %s\n", join(cb->options().flavour.worker_env).c_str());
  // The steady state: from the first timing hold to the last, so that the
  // pipeline's fill (the first compiles and contexts, before any timing can
  // start) and its drain do not count against the slot.
  using Holds = std::vector<std::pair<double, double>>;
  auto since_start = [](const Holds& before, const Holds& after) {
    Holds h(after.begin() + static_cast<std::ptrdiff_t>(before.size()), after.end());
    std::sort(h.begin(), h.end());
    return h;
  };
  // Seconds of [from, to] covered by the union of the holds.
  auto covered = [](const Holds& h, double from, double to) {
    double busy = 0.0, until = from;
    for (const auto& [a, e] : h) {
      const double b = std::max(a, until), f = std::min(e, to);
      if (f > b) busy += f - b;
      until = std::max(until, std::min(e, to));
    }
    return busy;
  };
  const Holds holds = since_start(s0.slot_intervals, s1.slot_intervals);
  if (!holds.empty()) {
    double last = holds.front().second;
    for (const auto& h : holds) last = std::max(last, h.second);
    const double first = holds.front().first, window = last - first;
    const double busy = covered(holds, first, last);
    Holds any = since_start(s0.slot_shared_intervals, s1.slot_shared_intervals);
    any.insert(any.end(), holds.begin(), holds.end());
    std::sort(any.begin(), any.end());
    const double gpu = covered(any, first, last);
    const double fill = first - std::chrono::duration<double>(t0.time_since_epoch()).count();
    std::printf("steady state (first timing hold to last): slot busy %.1f s of %.1f s: duty cycle %.1f%% "
                "(%zu holds; the first began %.2f s after the first submission); slot held in either mode "
                "(timing or correctness work) %.1f%%\n",
                busy, window, window > 0 ? 100.0 * busy / window : 0.0, holds.size(), fill,
                window > 0 ? 100.0 * gpu / window : 0.0);
    std::vector<nlohmann::json> timelines(s1.worker_timelines.begin() + static_cast<std::ptrdiff_t>(s0.worker_timelines.size()),
                                          s1.worker_timelines.end());
    where_time_went(timelines, first, last);
  }
  for (const auto& d : devices) std::printf("device: %s\n", d.c_str());
  // Where an average worker's time went (the CUDA worker's "phases"), and
  // what the process cost outside main().
  const double results = static_cast<double>(std::max<std::uint64_t>(s1.worker_results - s0.worker_results, 1));
  auto phase_sum = [&](const std::string& phase) {
    const auto before = s0.worker_phase_seconds.find(phase), after = s1.worker_phase_seconds.find(phase);
    return (after == s1.worker_phase_seconds.end() ? 0.0 : after->second) -
           (before == s0.worker_phase_seconds.end() ? 0.0 : before->second);
  };
  // Not seconds of a worker's time: the timed shapes' null-call counts and
  // sums (printed apart below).
  auto not_a_phase = [](const std::string& name) {
    return name.rfind("loop_", 0) == 0 || name.rfind("null_", 0) == 0 || name == "round_trip" ||
           name.rfind("after_call_charged", 0) == 0 || name.rfind("probe_excess_", 0) == 0 ||
           name == "hold_foreign_unfinished";
  };
  std::printf("per worker (s):");
  for (const auto& [phase, secs] : s1.worker_phase_seconds)
    if (!not_a_phase(phase)) std::printf(" %s %.3f", phase.c_str(), phase_sum(phase) / results);
  std::printf("; outside main %.3f\n",
              ((s1.worker_wall_seconds - s0.worker_wall_seconds) - (s1.worker_inner_seconds - s0.worker_inner_seconds)) /
                  results);
  print_loop_pairs(phase_sum);
  const double again = phase_sum("null_recalibrations");
  if (again > 0)
    std::printf("host null calls made again on %.0f timed shapes: the second median shorter on %.0f, longer on %.0f; "
                "made a third or fourth time %.0f times; null taken off the calls %.2f us per judgement (its "
                "shapes' sum)\n",
                again, phase_sum("null_second_shorter"), phase_sum("null_second_longer"), phase_sum("null_retries"),
                1e6 * phase_sum("null_taken") / results);
  if (const double pairs = phase_sum("loop_pairs"); pairs > 0)
    std::printf("timed calls charged for GPU work left after the answer (the judge's probe beyond its yardstick "
                "and tolerance): %.0f of %.0f pairs\n",
                phase_sum("after_call_charged"), pairs);
  if (const double pairs = phase_sum("loop_pairs"); pairs > 0) {
    // The distribution of the probe's excess over its yardstick, over every
    // timed pair: what honest calls leave, and so what the tolerance
    // (backend.cuda.probe_tolerance_fraction) must allow.
    std::printf("probe after a call beyond its yardstick, share of pairs:");
    for (std::size_t b = 0; b < kevo::cuda::kProbeExcessBuckets; ++b) {
      const std::string phase = kevo::cuda::probe_excess_phase(b);
      std::printf(" %s %.1f%%", phase.substr(std::string("probe_excess_").size()).c_str(), 100.0 * phase_sum(phase) / pairs);
    }
    std::printf("; charged %.2f us a pair on average\n", phase_sum("after_call_charged_us") / pairs);
  }
  std::printf("device memory pool grew past its reservation in %llu worker(s), %.1f MiB in all\n",
              static_cast<unsigned long long>(s1.workers_pool_grew - s0.workers_pool_grew),
              s1.pool_growth_mib - s0.pool_growth_mib);
  return 0;
}

// One process of `contexts` and `sustain`: the runtime's initialisation
// (cuInit, device enumeration) and the context on the one visible GPU, timed
// apart; with `mb`, that much device memory allocated, written and freed.
int context_child(std::size_t mb) {
  const auto t0 = Clock::now();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) return 1;
  const auto t1 = Clock::now();
  void* p = nullptr;
  if (cudaSetDevice(0) != cudaSuccess || cudaMalloc(&p, 1 << 20) != cudaSuccess) return 1;
  (void)cudaFree(p);
  const auto t2 = Clock::now();
  if (mb > 0) {
    if (cudaMalloc(&p, mb << 20) != cudaSuccess || cudaMemset(p, 0x5A, mb << 20) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
      return 1;
    (void)cudaFree(p);
  }
  const auto t3 = Clock::now();
  std::printf("%.6f %.6f %.6f\n", std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count(), std::chrono::duration<double>(t3 - t2).count());
  return 0;
}

// `sustain ... busy`: keeps GPU 0 busy from another process, as a timing
// does (short device work, a synchronize after each), until killed.
// On SIGTERM it prints the distribution of its iterations' times: whether
// other processes' context creation disturbs work already on the GPU (a
// timing's, in kevo).
volatile std::sig_atomic_t busy_stop = 0;

int busy_child() {
  std::signal(SIGTERM, [](int) { busy_stop = 1; });
  void* p = nullptr;
  const std::size_t bytes = std::size_t{256} << 20;
  if (cudaSetDevice(0) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess) return 1;
  std::vector<double> us;
  for (unsigned i = 0; !busy_stop; ++i) {
    const auto t0 = Clock::now();
    if (cudaMemsetAsync(p, static_cast<int>(i & 0xFF), bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
      return 1;
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  auto q = [&](double f) { return us.empty() ? 0.0 : us[static_cast<std::size_t>(f * static_cast<double>(us.size() - 1))]; };
  std::printf("busy process: %zu memsets of 256 MiB, each us: median %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f\n",
              us.size(), q(0.5), q(0.9), q(0.99), q(0.999), q(1.0));
  std::fflush(stdout);
  return 0;
}

// Children kept `n` in flight, round-robin over `gpus` GPUs (each narrowed
// to one, as workers are), until `seconds` have passed (0: one batch of n):
// a finished one is replaced at once, as the backend replaces a worker.
// Each runs `argv` and prints one line.
struct ChildRun {
  int ok = 0, failed = 0;
  double wall = 0.0;
  std::vector<std::string> lines;   // of the children that exited 0
};

ChildRun run_children(const std::vector<std::string>& argv, int n, int gpus, double seconds) {
  struct Kid {
    pid_t pid;
    int fd;
  };
  std::vector<Kid> kids;
  ChildRun out;
  int next = 0;
  auto spawn = [&] {
    int pipefd[2];
    if (::pipe(pipefd) != 0) return;
    const std::string gpu = std::to_string(next++ % gpus);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(pipefd[1], 1);
      ::close(pipefd[0]);
      ::setenv("CUDA_VISIBLE_DEVICES", gpu.c_str(), 1);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(pipefd[1]);
    kids.push_back({pid, pipefd[0]});
  };
  auto reap = [&] {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    for (std::size_t i = 0; pid > 0 && i < kids.size(); ++i) {
      if (kids[i].pid != pid) continue;
      char line[256] = {};
      const ssize_t got = ::read(kids[i].fd, line, sizeof line - 1);
      ::close(kids[i].fd);
      kids.erase(kids.begin() + static_cast<std::ptrdiff_t>(i));
      if (got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        ++out.ok;
        out.lines.emplace_back(line);
      } else {
        ++out.failed;
      }
      break;
    }
  };
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) spawn();
  while (since(t0) < seconds) {
    reap();
    spawn();
  }
  while (!kids.empty()) reap();
  out.wall = since(t0);
  return out;
}

// Average of the children's "init context memory" lines.
void average_phases(const ChildRun& r, double& init, double& ctx, double& mem) {
  init = ctx = mem = 0.0;
  for (const auto& line : r.lines) {
    double a = 0, b = 0, c = 0;
    if (std::sscanf(line.c_str(), "%lf %lf %lf", &a, &b, &c) != 3) continue;
    init += a;
    ctx += b;
    mem += c;
  }
  if (r.ok > 0) {
    init /= r.ok;
    ctx /= r.ok;
    mem /= r.ok;
  }
}

// One batch of N processes at once: this program's context-child, or with
// `health` the worker's health check (context, 64 MiB memset and copy back).
void context_batch(const std::string& self, const std::string& worker, int n, int gpus, bool health) {
  const ChildRun r = run_children(health ? std::vector<std::string>{worker, "--health", "0"}
                                         : std::vector<std::string>{self, "context-child", "0"},
                                  n, gpus, 0.0);
  std::printf("%-13s N=%-3d GPUs=%d: %d ok, batch %.2f s, %.2f processes/s", health ? "worker health" : "context",
              n, gpus, r.ok, r.wall, r.ok / r.wall);
  if (!health && r.ok) {
    double init = 0, ctx = 0, mem = 0;
    average_phases(r, init, ctx, mem);
    std::printf(", per process: runtime init %.3f s, context %.3f s", init, ctx);
  }
  std::printf("\n");
}

int contexts_bench(int n, int gpus) {
  const std::string self = fs::canonical("/proc/self/exe").string();
  const std::string worker = (fs::path(self).parent_path() / "kevo-cuda-worker").string();
  for (bool health : {false, true}) {
    context_batch(self, worker, 1, 1, health);
    context_batch(self, worker, n, 1, health);
    if (gpus > 1) context_batch(self, worker, n, gpus, health);
  }
  return 0;
}

// `sustain`: N context-children (with `mb` MiB each) in flight for
// `seconds`: the sustained rate and the average phases.
int sustain_bench(int n, int gpus, std::size_t mb, double seconds, bool busy) {
  const std::string self = fs::canonical("/proc/self/exe").string();
  pid_t busy_pid = -1;
  if (busy) {
    busy_pid = ::fork();
    if (busy_pid == 0) {
      ::execl(self.c_str(), self.c_str(), "busy-child", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::sleep(2);   // its context exists and it is running
  }
  ChildRun r;
  if (n > 0) {
    r = run_children({self, "context-child", std::to_string(mb)}, n, gpus, seconds);
  } else {   // the busy process alone: its undisturbed times
    ::usleep(static_cast<useconds_t>(seconds * 1e6));
    r.wall = seconds;
  }
  if (busy_pid > 0) {
    ::kill(busy_pid, SIGTERM);
    ::waitpid(busy_pid, nullptr, 0);
    std::printf("(GPU 0 kept busy meanwhile by another process: 256 MiB memsets, a synchronize after each)\n");
  }
  double init = 0, ctx = 0, mem = 0;
  average_phases(r, init, ctx, mem);
  std::printf("sustain N=%-3d GPUs=%d MiB=%-5zu: %d ok, %d failed in %.1f s: %.2f processes/s; per process: "
              "runtime init %.3f s, context %.3f s, memory %.3f s\n",
              n, gpus, mb, r.ok, r.failed, r.wall, r.ok / r.wall, init, ctx, mem);
  return r.failed ? 1 : 0;
}

int cv_bench(const fs::path& dir, int k) {
  auto task = std::make_shared<const Task>(load_task(dir));
  auto b = backend();
  b->prepare(*task);
  std::vector<double> t, cand_spread, ref_spread, nulls, trips;
  auto* cb = dynamic_cast<cpu::CpuBackend*>(b.get());
  // A phase's sum so far (the worker's "null_taken" and "round_trip": what
  // came off each judgement's calls, and their median round trip).
  auto phase = [&](const char* name) {
    if (!cb) return 0.0;
    const auto st = cb->stats();
    const auto it = st.worker_phase_seconds.find(name);
    return it == st.worker_phase_seconds.end() ? 0.0 : it->second;
  };
  for (int i = 0; i < k; ++i) {
    const double null0 = phase("null_taken"), trip0 = phase("round_trip");
    const Verdict v = b->evaluate(task, task->seed_source, 100 + static_cast<std::uint64_t>(i));
    if (!v.is_correct()) {
      std::printf("judgement %d: %s\n", i, v.message.c_str());
      return 1;
    }
    t.push_back(v.cand_median_ns);
    nulls.push_back(1e9 * (phase("null_taken") - null0));
    trips.push_back(1e9 * (phase("round_trip") - trip0));
    cand_spread.push_back(v.cand_iqr_ns / std::max(v.cand_median_ns, 1.0));
    ref_spread.push_back(v.ref_iqr_ns / std::max(v.ref_median_ns, 1.0));
  }
  print_spread(cand_spread, ref_spread);
  if (cb) {
    const auto st = cb->stats();
    print_loop_pairs([&](const std::string& name) -> double {
      const auto it = st.worker_phase_seconds.find(name);
      return it == st.worker_phase_seconds.end() ? 0.0 : it->second;
    });
  }
  auto mean_sd = [](const std::vector<double>& v) {
    double m = 0, s = 0;
    for (double x : v) m += x;
    m /= static_cast<double>(v.size());
    for (double x : v) s += (x - m) * (x - m);
    return std::pair{m, v.size() > 1 ? std::sqrt(s / static_cast<double>(v.size() - 1)) : 0.0};
  };
  const auto [m, s] = mean_sd(t);
  std::printf("task %s seed: %d judgements, mean of medians %.2f us, CV %.3f%%\n", task->name.c_str(), k, m / 1e3,
              100.0 * s / m);
  // Where the spread comes from: the calls' round trips, and the host's
  // null call taken off them (SD in us, against the medians' SD).
  const auto [tm, ts] = mean_sd(trips);
  const auto [nm, ns] = mean_sd(nulls);
  std::printf("of which: round trips' medians mean %.2f us, SD %.3f us; null call taken off mean %.2f us, SD %.3f us; "
              "medians' SD %.3f us\n",
              tm / 1e3, ts / 1e3, nm / 1e3, ns / 1e3, s / 1e3);
  // Every judgement's median, for tests/bench/cv_compare.py.
  const char* opts = std::getenv("BENCH_CUDA_OPTIONS");
  std::printf("values_us (kevo%s%s):", opts && *opts ? " " : "", opts && *opts ? opts : "");
  for (double x : t) std::printf(" %.4f", x / 1e3);
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "busy-child") return busy_child();
  if (argc == 3 && std::string(argv[1]) == "context-child")
    return context_child(static_cast<std::size_t>(std::atoll(argv[2])));
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_cuda compile TASKS_DIR | throughput TASK_DIR N [J] | contexts N [G] | sustain N G MB SECONDS [busy] | cv TASK_DIR K\n");
    return 2;
  }
  const std::string mode = argv[1];
  try {
    if (mode == "compile") return compile_bench(argv[2], argc > 3 ? argv[3] : "");
    if (mode == "throughput") return throughput_bench(argv[2], argc > 3 ? std::atoi(argv[3]) : 60, argc > 4 ? std::atoi(argv[4]) : 0);
    if (mode == "contexts") return contexts_bench(std::atoi(argv[2]), argc > 3 ? std::atoi(argv[3]) : 1);
    if (mode == "sustain" && (argc == 6 || (argc == 7 && std::string(argv[6]) == "busy")))
      return sustain_bench(std::atoi(argv[2]), std::max(1, std::atoi(argv[3])),
                           static_cast<std::size_t>(std::atoll(argv[4])), std::atof(argv[5]), argc == 7);
    if (mode == "cv") return cv_bench(argv[2], argc > 3 ? std::atoi(argv[3]) : 10);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
