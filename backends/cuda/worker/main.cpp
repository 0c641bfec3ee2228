// kevo-cuda-worker: the judge of one CUDA candidate. Started by the CUDA
// backend inside the sandbox runner (own process group, wall-clock kill,
// scratch dir). The judge holds the reference, the protocol's buffers and
// the clock in its own CUDA context; the candidate runs in a kernel host of
// its own (`kevo-cuda-worker --host`: its own process, namespaces and CUDA
// context, the CUDA allow-list), which sees only its argument buffers, an
// arena of device memory the judge exports to it. The judge runs the shared
// correctness protocol (fresh seeded inputs per trial, poisoned outputs,
// input checks, hidden and drawn shapes) with every buffer on the GPU, then
// times the candidate against the reference inside the GPU's exclusive
// timing slot.
// Optional stages run this same program as a child under a tool:
// compute-sanitizer before the protocol, ncu after a correct timing.
// `kevo-cuda-worker --health DEVICE` checks that a GPU still works (the
// backend runs it after any CUDA error). See docs/cuda.md.
#include "channel.hpp"
#include "device_arena.hpp"
#include "device_judge.hpp"
#include "device_space.hpp"
#include "host.hpp"
#include "judge.hpp"
#include "profile.hpp"
#include "session.hpp"
#include "visible_devices.hpp"

#include "kevo/core/process.hpp"
#include "kevo/core/task.hpp"
#include "kevo/core/verdict.hpp"
#include "kevo/native/protocol.hpp"
#include "kevo/sandbox/isolation.hpp"
#include "kevo/sandbox/seccomp.hpp"
#include "kevo/sandbox/spawner.hpp"

#include <dlfcn.h>
#include <glob.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cuda_runtime.h>

#include <cerrno>
#include <cfenv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace native = kevo::native;
namespace w = kevo::native::judge;
namespace cw = kevo::cuda::worker;
using cw::Entry;

// The seed of the re-verification of a suspiciously large speedup: inputs
// the first verdict never saw.
constexpr std::uint64_t kReverifySalt = 0x9E3779B97F4A7C15ULL;
// compute-sanitizer's exit code when it found errors (--error-exitcode).
constexpr int kSanitizerFound = 86;

// The profile of a correct candidate of a task with hidden shapes, where
// profile.unconfined is false and ncu's child could not be confined (no
// Landlock, a rule refused); the reason follows.
constexpr const char* kProfileWithheld =
    "profiler: not run: ncu's child runs the candidate without the system-call policy and could not be confined "
    "to keep it from this task's hidden shapes (backend.cuda.profile.unconfined: true runs it unconfined, for "
    "trusted candidates): ";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Creates the context on `requested`; "" on success, else the reason.
std::string open_device(int requested) {
  // Only this worker's GPU visible (docs/cuda.md): half the context cost.
  const int device = cw::narrow_visible_devices(requested);
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string which = "device " + std::to_string(requested) + (cvd ? std::string(" (CUDA_VISIBLE_DEVICES=") +
                                                                               cvd + " for this worker)"
                                                                         : std::string());
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    return "no usable CUDA " + which + ": " + (e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
  if (device >= count) return which + " of " + std::to_string(count);
  if ((e = cudaSetDevice(device)) != cudaSuccess || (e = cudaFree(nullptr)) != cudaSuccess)
    return "cannot create a CUDA context on " + which + ": " + cudaGetErrorString(e);
  return {};
}

// What the operating system refuses this process, for a context that
// cannot be made ("OS call failed"): the device files, shared memory, the
// address space and the limits. Said by the tool children on stderr (their
// log), where a confinement or a namespace differs from the worker's.
std::string os_diagnosis() {
  std::string out;
  const auto said = [&](const std::string& what, bool ok) {
    out += "  " + what + ": " + (ok ? std::string("ok") : std::strerror(errno)) + "\n";
  };
  out += "  uid " + std::to_string(::getuid()) + ", euid " + std::to_string(::geteuid()) + "\n";
  for (const char* name : {"HOME", "TMPDIR"}) {
    const char* v = std::getenv(name);
    out += std::string("  ") + name + "=" + (v ? v : "(unset)") + "\n";
  }
  for (const std::string& dir : {std::string("/"), std::string("/tmp"), fs::current_path().string(),
                                 std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp")}) {
    const std::string made = dir + (dir.back() == '/' ? "" : "/") + "kevo-diagnosis-dir";
    const bool ok = ::mkdir(made.c_str(), 0700) == 0;
    said("mkdir in " + dir, ok);
    if (ok) ::rmdir(made.c_str());
  }
  for (const auto& [name, resource] : {std::pair<const char*, int>{"RLIMIT_AS", RLIMIT_AS}, {"RLIMIT_NOFILE", RLIMIT_NOFILE},
                                       {"RLIMIT_NPROC", RLIMIT_NPROC}, {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK}}) {
    rlimit l{};
    ::getrlimit(resource, &l);
    out += "  " + std::string(name) + " " +
           (l.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : std::to_string(l.rlim_cur)) + "\n";
  }
  glob_t g{};
  if (::glob("/dev/nvidia*", 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) {
      const int fd = ::open(g.gl_pathv[i], O_RDWR | O_CLOEXEC);
      said(std::string("open ") + g.gl_pathv[i], fd >= 0);
      if (fd >= 0) ::close(fd);
    }
  ::globfree(&g);
  for (const char* p : {"/proc/driver/nvidia/params", "/proc/self/maps", "/sys/bus/pci/devices"}) {
    const int fd = ::open(p, O_RDONLY | O_CLOEXEC);
    said(std::string("read ") + p, fd >= 0);
    if (fd >= 0) ::close(fd);
  }
  const std::string shm = "/dev/shm/kevo-diagnosis-" + std::to_string(::getpid());
  const int fd = ::open(shm.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  said("create in /dev/shm", fd >= 0);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(shm.c_str());
  }
  const int mfd = static_cast<int>(::syscall(SYS_memfd_create, "kevo-diagnosis", 0u));
  said("memfd_create", mfd >= 0);
  if (mfd >= 0) ::close(mfd);
  void* m = ::mmap(nullptr, std::size_t{64} << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  said("reserve 64 GiB of address space", m != MAP_FAILED);
  if (m != MAP_FAILED) ::munmap(m, std::size_t{64} << 30);
  return out;
}

// `kevo-cuda-worker --health DEVICE`: context, allocation, a device memset
// and a copy back. Exit 0 and one line when the GPU works.
int health(int device) {
  if (std::string why = open_device(device); !why.empty()) {
    std::printf("unhealthy: %s\n", why.c_str());
    return 1;
  }
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  void* d = nullptr;
  std::vector<unsigned char> h(kBytes, 0);
  cudaError_t e = cudaMalloc(&d, kBytes);
  if (e == cudaSuccess) e = cudaMemset(d, 0xA5, kBytes);
  if (e == cudaSuccess) e = cudaMemcpy(h.data(), d, kBytes, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (d) (void)cudaFree(d);
  if (e != cudaSuccess) {
    std::printf("unhealthy: %s (%s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
    return 1;
  }
  for (unsigned char b : h)
    if (b != 0xA5) {
      std::printf("unhealthy: a 64 MiB memset read back wrong\n");
      return 1;
    }
  std::string bus;
  std::printf("healthy: %s\n", cw::device_identity(bus).c_str());
  return 0;
}

struct Extra {
  int device = 0;
  cw::GpuTiming gt;
  double reverify_speedup = 10.0;
  std::string lock_dir;
  std::string sanitizer, sanitizer_tool = "memcheck";   // compute-sanitizer path ("" = off)
  std::string profiler;                                  // ncu path ("" = off)
  bool profile = false;                                  // profile this candidate if correct
  bool profile_unconfined = false;                       // profile.unconfined: also where shapes are hidden
  double child_seconds = 60.0;
};

Extra parse_extra(const native::JudgeRequest& r) {
  const nlohmann::json& req = r.flavour;
  Extra x;
  x.device = req.value("device", 0);
  // The islands' device binding "index" (docs/islands.md) overrides it.
  if (const char* d = std::getenv("KEVO_DEVICE_INDEX"); d && *d) x.device = std::atoi(d);
  x.gt.peak_tflops = req.value("peak_tflops", x.gt.peak_tflops);
  x.gt.peak_tflops_bf16 = req.value("peak_tflops_bf16", x.gt.peak_tflops_bf16);
  x.gt.peak_gbps = req.value("peak_gbps", x.gt.peak_gbps);
  x.gt.floor_fraction = req.value("floor_fraction", x.gt.floor_fraction);
  x.gt.flush_bytes = r.timing_options.flush_bytes;
  x.reverify_speedup = req.value("reverify_speedup", x.reverify_speedup);
  x.gt.fill_idle_seconds = req.value("fill_idle_seconds", x.gt.fill_idle_seconds);
  x.gt.reset_persisting_l2 = req.value("reset_persisting_l2", x.gt.reset_persisting_l2);
  x.gt.phase_holds = req.value("slot_hold", std::string("call")) == "phase";
  x.gt.probe_tolerance_fraction = req.value("probe_tolerance_fraction", x.gt.probe_tolerance_fraction);
  x.gt.always_recalibrate = req.value("null_recalibration", std::string("always")) == "always";
  x.lock_dir = req.value("lock_dir", std::string());
  x.sanitizer = req.value("sanitizer", std::string());
  x.sanitizer_tool = req.value("sanitizer_tool", x.sanitizer_tool);
  x.profiler = req.value("profiler", std::string());
  x.profile = req.value("profile", false);
  x.profile_unconfined = req.value("profile_unconfined", false);
  x.child_seconds = req.value("child_seconds", x.child_seconds);
  return x;
}

void* open_library(const fs::path& path, const char* what) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    throw std::runtime_error(std::string("cannot load the ") + what + ": " + (e ? e : "dlopen failed"));
  }
  return h;
}

Entry entry_of(void* handle) {
  void* sym = ::dlsym(handle, native::kEntrySymbol);
  if (!sym) throw std::runtime_error(std::string("the library has no ") + native::kEntrySymbol);
  return reinterpret_cast<Entry>(sym);
}

// Trusted code in the judge's own context (the reference, the null
// candidates; the sanitizer's child): device buffers of one call.
class DeviceEndpoint final : public w::Endpoint {
 public:
  explicit DeviceEndpoint(std::function<void(w::ArgSet&, const w::Case&)> call) : call_(std::move(call)) {}
  w::ArgSet& arguments(const kevo::Task& task, const w::Case& c) override {
    c_ = c;
    const w::ArgSet shape = w::scalars_of(task, c);
    args_ = w::ArgSet();
    args_.sc = shape.sc;
    args_.n = shape.n;
    args_.buf.resize(shape.buf.size());
    for (std::size_t k = 0; k < task.args.size(); ++k)
      if (task.args[k].is_buffer())
        args_.buf[k] = cw::allocate_device(static_cast<std::size_t>(shape.n[k]) * kevo::dtype_size(task.args[k].dtype));
    args_.rebind();
    return args_;
  }
  w::CallResult call(w::ArgSet& a, bool) override {
    w::CallResult r;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      call_(a, c_);
    } catch (const std::bad_alloc& e) {
      r.kind = w::CallResult::Kind::bad_alloc;
      r.message = e.what();
    } catch (const std::exception& e) {
      r.kind = w::CallResult::Kind::threw;
      r.message = std::string("(") + typeid(e).name() + "): " + e.what();
    }
    r.ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
  const w::HostEnd& end() const override { return end_; }

 private:
  std::function<void(w::ArgSet&, const w::Case&)> call_;
  w::ArgSet args_;
  w::Case c_;
  w::HostEnd end_;
};

// The candidate's library for a child: the parent's private copy.
fs::path candidate_copy() { return fs::current_path() / "candidate.so"; }

// Writes the request a child reads, with the candidate pointing at the
// parent's private copy (the child must not overwrite a loaded library).
fs::path write_child_request(native::JudgeRequest req, const std::string& name) {
  req.candidate_so = candidate_copy().string();
  const fs::path p = fs::current_path() / (name + "-request.json");
  std::ofstream(p) << native::to_json(req).dump();
  return p;
}

// The profile child's folder: its request, the task's public copy, its
// result and ncu's page; the only folder of the worker's that a confined
// child reads or writes (profile_command).
fs::path profile_dir() { return fs::current_path() / "profile-child"; }

// Keeps the seconds left for children: never past the worker's own limit.
double child_limit(const Extra& x, const w::Options& opt) {
  if (opt.wall_seconds <= 0) return x.child_seconds;
  const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - opt.started).count();
  return std::max(1.0, std::min(x.child_seconds, 0.45 * (opt.wall_seconds - spent)));
}

// The CUDA kernel host's device (host.hpp): the context, the judge's arena,
// a device-wide synchronize after every call.
int g_host_device = 0;

std::vector<std::string> nvidia_device_files() {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob("/dev/nvidia*", 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  return out;
}

w::HostDevice cuda_host_device() {
  w::HostDevice d;
  d.open = [](int fd, std::size_t bytes, char*& base) -> std::string {
    if (std::string why = open_device(g_host_device); !why.empty()) return why;
    return cw::import_arena(fd, bytes, base);
  };
  d.finish_call = [] { return cw::finish_device_call(); };
  d.null_call = [] { return cw::finish_device_call(); };
  d.prime_call = [] { return cw::prime_round_trip(); };
  d.device_files = nvidia_device_files();
  d.confine_writes = [](kevo::sandbox::IsolationReport& rep) {
    // No root of its own: the driver opens its device files read-write, so
    // the policy lets existing files be opened so; Landlock keeps writes
    // to /dev and /proc.
    std::string why;
    const int ruleset = kevo::sandbox::make_write_ruleset({"/dev", "/proc"}, why);
    if (ruleset >= 0 && kevo::sandbox::restrict_to(ruleset)) {
      rep.notes.push_back("writes confined to /dev and /proc (Landlock)");
    } else {
      rep.notes.push_back("writes not confined by path: " + (why.empty() ? std::string("landlock_restrict_self failed") : why));
    }
    if (ruleset >= 0) ::close(ruleset);
  };
  return d;
}

[[noreturn]] void host_mode(int argc, char** argv) {
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--device") == 0) g_host_device = std::atoi(argv[i + 1]);
  ::setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
  static const w::HostDevice device = cuda_host_device();
  w::host_main(argc, argv, &device);
}

// The candidate's host, as the protocol calls it: every call inside the
// GPU's shared slot (a timing's exclusive hold contains it).
class SlotHeld final : public w::Endpoint {
 public:
  explicit SlotHeld(w::Endpoint& inner) : inner_(inner) {}
  w::ArgSet& arguments(const kevo::Task& task, const w::Case& c) override { return inner_.arguments(task, c); }
  w::CallResult call(w::ArgSet& a, bool poison) override {
    cw::SharedSlot slot;
    return inner_.call(a, poison);
  }
  const w::HostEnd& end() const override { return inner_.end(); }
  bool still_stopped() const override { return inner_.still_stopped(); }
  bool prime() override { return inner_.prime(); }
  bool null_call(double& ns) override { return inner_.null_call(ns); }

 private:
  w::Endpoint& inner_;
};

// --- child modes -----------------------------------------------------------

// `--child sanitize|profile --request-file F --result-file R`. sanitize: one
// correctness trial of the candidate on every shape (run under
// compute-sanitizer); profile: one call of the candidate on the first
// visible shape (run under ncu). Both take the GPU's slot themselves: the
// profile child holds it exclusively only around its call (ncu replays the
// kernels there), not while ncu, the process, its context and the libraries
// start, and reports its holds in its result ("slot_intervals").
int child_main(const std::string& mode, const fs::path& request_file, const fs::path& result_file) {
  const auto started = std::chrono::steady_clock::now();
  native::JudgeRequest r;
  try {
    r = native::judge_request_from_json(nlohmann::json::parse(read_file(request_file)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kevo-cuda-worker child: bad request: %s\n", e.what());
    return 2;
  }
  const Extra x = parse_extra(r);
  w::set_protocol_threads(r.judge_threads);
  ::setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
  if (std::string why = open_device(x.device); !why.empty()) {
    std::fprintf(stderr, "kevo-cuda-worker child: %s; what the system refuses it:\n%s", why.c_str(),
                 os_diagnosis().c_str());
    return 2;
  }
  kevo::Task task;
  Entry ref = nullptr, cand = nullptr;
  // Candidate code runs in this child too: the worker's policy goes on
  // before the candidate loads, so what it creates or opens for writing
  // (the result file, the slot files) is opened first.
  std::ofstream result(result_file);
  try {
    task = kevo::load_task(r.task_dir);
    // The reference only where it runs: the profile child (the task's
    // public copy, possibly confined) never loads it.
    if (mode == "sanitize") ref = entry_of(open_library(r.reference_so, "reference"));
    std::string bus;
    cw::device_identity(bus);
    cw::gpu_slot().open(x.lock_dir, bus);
    // Not under ncu: its injected library creates directories in the
    // profiled process (mkdir, system call 83, on the H200). The profile
    // child runs only candidates the policy-bound worker already judged
    // correct, with the process group, rlimits and wall-clock kill around
    // it (docs/sandbox.md).
    if (r.seccomp && mode == "sanitize") {
      // On stderr, the tool's log (the worker meets the same violation
      // itself when it judges the candidate).
      kevo::sandbox::set_violation_report(2, "kevo-cuda-worker child: sandbox violation: forbidden system call ", "\n");
      std::string why;
      const int ruleset = kevo::sandbox::make_write_ruleset({"/dev", "/proc", fs::current_path().string()}, why);
      if (ruleset >= 0 && !kevo::sandbox::restrict_to(ruleset)) throw std::runtime_error("landlock_restrict_self failed");
      if (ruleset >= 0) ::close(ruleset);
      // The slot's own locks stay possible here (the candidate shares this
      // process, as it does under the sanitizer anyway: docs/sandbox.md).
      kevo::sandbox::PolicyOptions po;
      po.policy = kevo::sandbox::policy_from_string(r.policy);
      po.refuse_file_locks = true;
      po.lockable_fds = cw::gpu_slot().descriptors();
      kevo::sandbox::install_candidate_policy(po);
    }
    cand = entry_of(open_library(r.candidate_so, "candidate"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kevo-cuda-worker child: %s\n", e.what());
    return 2;
  }
  nlohmann::json out;
  try {
    if (mode == "sanitize") {
      w::Options opt = w::options_of(r, started);
      opt.trials = 1;
      opt.timing = false;
      DeviceEndpoint reference([ref](w::ArgSet& a, const w::Case&) { cw::device_call(ref, a); });
      DeviceEndpoint k([cand](w::ArgSet& a, const w::Case&) { cw::device_call(cand, a); });
      out = native::to_json(w::Judge(task, opt, reference, k, cw::device_space()).run());
    } else {
      const w::Case c{&task.visible.at(0), w::Case::Kind::visible, 0};
      w::ArgSet a = [&] {
        cw::SharedSlot shared;
        return cw::device_space().make_inputs(task, c, r.seed, "profile");
      }();
      {
        // ncu replays the call's kernels: nothing else of kevo's may run on
        // the GPU meanwhile.
        cw::ExclusiveSlot slot;
        cw::device_call(cand, a);
      }
      out = {{"profiled", c.label()}, {"slot_intervals", cw::gpu_slot().exclusive_intervals()}};
    }
  } catch (const std::exception& e) {
    out = {{"error", e.what()}};
  }
  result << out.dump();
  return 0;
}

// --- stages run in children ------------------------------------------------

// The tool stages' commands, registered with a spawner before the seccomp
// policy: afterwards this process may not fork or exec, and the spawner runs
// only these (docs/sandbox.md, "The spawner").
struct Tools {
  kevo::sandbox::Spawner spawner;
  std::size_t sanitize = 0, profile = 0;   // command indices
  bool has_sanitize = false, has_profile = false;
};

std::vector<std::string> sanitize_argv(const native::JudgeRequest& req, const Extra& x) {
  const fs::path request = write_child_request(req, "sanitize");
  return {x.sanitizer,
          "--tool",
          x.sanitizer_tool,
          "--error-exitcode",
          std::to_string(kSanitizerFound),
          "--print-limit",
          "20",
          "--target-processes",
          "all",
          kevo::self_executable().string(),
          "--child",
          "sanitize",
          "--request-file",
          request.string(),
          "--result-file",
          (fs::current_path() / "sanitize-result.json").string()};
}

// The ncu command. Its child runs the candidate without the system-call
// policy (ncu's injected library makes calls it refuses), so its request
// holds what one call at the first visible shape needs and no secret of the
// judgement: the task's public copy (no hidden shape, no draw space:
// write_public_copy), no nonce, a seed of its own. With `confined`, ncu and
// everything it starts are under Landlock: they read the system's folders,
// ncu's own, this executable, the candidate's copy and the profile folder,
// and write only there, in /dev and in the GPU slot's folder; the task's
// files, the run's folder and the lineage are out of reach
// (docs/cuda.md#profiler-feedback).
kevo::sandbox::SpawnCommand profile_command(const native::JudgeRequest& req, const kevo::Task& task, const Extra& x,
                                            bool confined) {
  const fs::path dir = profile_dir();
  fs::create_directories(dir);
  kevo::write_public_copy(task, dir / "task");
  native::JudgeRequest pr = req;
  pr.task_dir = (dir / "task").string();
  pr.candidate_so = candidate_copy().string();
  pr.nonce.clear();
  pr.seed = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  const fs::path request = dir / "profile-request.json";
  std::ofstream(request) << native::to_json(pr).dump();
  const fs::path log = dir / "ncu.csv";
  kevo::sandbox::SpawnCommand c;
  c.output = fs::current_path() / "ncu-console.log";
  c.max_wall_seconds = x.child_seconds;
  c.confined = confined;
  if (confined) {
    // /proc writable: ncu's injected library writes there (through
    // /proc/self: without it no kernel is profiled; the probe's bisection on
    // an H100, tests/bench/ncu_confined_probe.py PROBE_BISECT). Landlock
    // still keeps it from tracing, and so from writing the memory of, any
    // process outside the domain (the worker, the spawner), and /proc/sys
    // asks for capabilities the child has not.
    c.write_dirs = {dir.string(), "/dev", "/proc"};
    if (!x.lock_dir.empty()) c.write_dirs.push_back(x.lock_dir);
    c.read_dirs = {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/run",
                   kevo::self_executable().string(), candidate_copy().string()};
    std::error_code ec;
    const fs::path ncu = fs::canonical(x.profiler, ec);
    if (!ec) c.read_dirs.push_back(ncu.parent_path().string());
    // Scoped too (the default: ABI 6, Linux 6.12+): no signal to, and no
    // abstract socket of, a process outside the domain
    // (CudaTools.TheProfileChildSignalsNothingOutside).
  }
  // ncu's temporary files and lock, and what it and its injected library
  // make under a home folder (the worker's environment names none): in the
  // profile folder, confined or not.
  c.env = {"TMPDIR=" + dir.string(), "HOME=" + dir.string()};
  c.argv = {x.profiler,
          "--clock-control",
          "none",
          "--target-processes",
          "all",
          "--section",
          "SpeedOfLight",
          "--section",
          "Occupancy",
          "--section",
          "LaunchStats",
          "--section",
          "WarpStateStats",
          "--launch-count",
          "8",
          "--csv",
          "--page",
          "raw",
          "--log-file",
          log.string(),
          kevo::self_executable().string(),
          "--child",
          "profile",
          "--request-file",
          request.string(),
          "--result-file",
          (dir / "profile-result.json").string()};
  return c;
}

// Writes the children's request files and starts the spawner (no process
// when no stage is on). Call before the policy.
Tools start_tools(const native::JudgeRequest& req, const kevo::Task& task, const Extra& x, bool candidate_code,
                  bool confine_profile) {
  Tools t;
  std::vector<kevo::sandbox::SpawnCommand> commands;
  if (candidate_code && !x.sanitizer.empty()) {
    t.has_sanitize = true;
    t.sanitize = commands.size();
    commands.push_back({sanitize_argv(req, x), fs::current_path() / "sanitizer.log", x.child_seconds});
  }
  if (candidate_code && x.profile && !x.profiler.empty()) {
    t.has_profile = true;
    t.profile = commands.size();
    commands.push_back(profile_command(req, task, x, confine_profile));
  }
  if (!commands.empty()) t.spawner = kevo::sandbox::Spawner(std::move(commands));
  return t;
}

cw::ChildResult run_tool(Tools& t, std::size_t index, double seconds) {
  const kevo::sandbox::SpawnResult s = t.spawner.run(index, seconds);
  cw::ChildResult c;
  if (s.started && s.signal == 0) c.exit_code = s.exit_code;
  c.timed_out = s.timed_out;
  return c;
}

// compute-sanitizer on one trial; a report found is a runtime_error.
bool sanitize(Tools& tools, const kevo::Task& task, const Extra& x, const w::Options& opt, kevo::Verdict& v) {
  const fs::path log = fs::current_path() / "sanitizer.log";
  const cw::ChildResult c = run_tool(tools, tools.sanitize, child_limit(x, opt));
  if (c.exit_code != kSanitizerFound) return true;   // clean, or a failure the protocol will meet itself
  v.status = kevo::Status::runtime_error;
  v.stage = kevo::Stage::correctness;
  v.message = "compute-sanitizer " + x.sanitizer_tool + " found errors: " + cw::sanitizer_summary(read_file(log));
  // The child ran a trial of every shape, the hidden ones among them, and
  // its report quotes what the candidate chose (the thread and block of a
  // bad access, its address): told as a call at a hidden shape, so that the
  // verdict's feedback, the next prompt, is redacted as one (the lineage
  // keeps the report).
  if (!task.hidden.empty())
    w::emit({{"event", "call"},
             {"trial", "compute-sanitizer"},
             {"shape", w::Case{&task.hidden.front(), w::Case::Kind::hidden, 0}.label()},
             {"hidden", true}});
  return false;
}

// ncu on one call of a correct candidate; fills v.profile.
void profile(Tools& tools, const Extra& x, const w::Options& opt, kevo::Verdict& v) {
  const fs::path log = profile_dir() / "ncu.csv";
  // The child holds the slot around its call (child_main); its holds count
  // as this candidate's. The child ran candidate code, so only holds inside
  // the child's lifetime are taken, at most its length in all.
  const double from = cw::monotonic_seconds(std::chrono::steady_clock::now());
  const cw::ChildResult c = run_tool(tools, tools.profile, child_limit(x, opt));
  const double to = cw::monotonic_seconds(std::chrono::steady_clock::now());
  try {
    const auto got = nlohmann::json::parse(read_file(profile_dir() / "profile-result.json"));
    double sum = 0.0;
    for (const auto& hold : got.value("slot_intervals", nlohmann::json::array())) {
      const double a = hold.at(0).get<double>(), b = hold.at(1).get<double>();
      if (!(a >= from && b >= a && b <= to) || (sum += b - a) > to - from) break;
      cw::gpu_slot().add_exclusive_interval(a, b);
    }
  } catch (const std::exception&) {
    // No result (the child failed): the console log below says why.
  }
  const std::string csv = read_file(log);
  if (c.exit_code != 0 || csv.empty()) {
    // The console holds what the candidate printed, and the profile child
    // runs it without the policy, where it can read the task's hidden
    // shapes: the profile (the analyst's prompt, the feedback) says only
    // what kevo recognises in it; the console's end goes to the worker's
    // output (the lineage's output_tail, not shown for a correct verdict).
    const std::string console = read_file(fs::current_path() / "ncu-console.log");
    v.profile = cw::ncu_failure(c.timed_out, c.exit_code, console);
    const std::string end = console.size() > 2000 ? console.substr(console.size() - 2000) : console;
    std::fprintf(stderr, "kevo-cuda-worker: ncu's console (its end):\n%s\n", end.c_str());
    // ncu's own log (its ==ERROR== lines say which path or permission it
    // missed), likewise to the output only.
    const std::string tail = csv.size() > 2000 ? csv.substr(csv.size() - 2000) : csv;
    std::fprintf(stderr, "kevo-cuda-worker: ncu's log (its end):\n%s\n", tail.c_str());
    return;
  }
  v.profile = cw::ncu_summary(csv);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--host") == 0) host_mode(argc, argv);
  const auto started = std::chrono::steady_clock::now();
  w::set_program_name("kevo-cuda-worker");
  if (argc == 3 && std::strcmp(argv[1], "--health") == 0) return health(std::atoi(argv[2]));
  if (argc == 7 && std::strcmp(argv[1], "--child") == 0 && std::strcmp(argv[3], "--request-file") == 0 &&
      std::strcmp(argv[5], "--result-file") == 0)
    return child_main(argv[2], argv[4], argv[6]);
  // The candidate's host runs as the same user: none may trace this
  // process or read its memory and /proc files.
  kevo::sandbox::set_non_dumpable();
  int request_fd = -1, result_fd = -1;
  if (!w::parse_fds(argc, argv, request_fd, result_fd, "The evaluation worker of kevo's CUDA backend")) return 2;
  const native::JudgeRequest r = w::open_channel(request_fd, result_fd);
  Extra x = parse_extra(r);
  w::set_protocol_threads(r.judge_threads);
  w::Options opt = w::options_of(r, started);
  const bool gpu_timing = opt.timing && opt.mode == native::kModeJudge;

  kevo::Task task;
  try {
    task = kevo::load_task(r.task_dir);
  } catch (const std::exception& e) {
    w::fatal("task_load", e.what());
  }
  w::Space& space = cw::device_space();

  // TF32 off for library calls (the backend also sets NVIDIA_TF32_OVERRIDE=0).
  ::setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
  // Where the worker's time goes, for the backend's statistics (seconds
  // since the previous mark).
  nlohmann::json phases = nlohmann::json::object();
  // The same on the host's monotonic clock (the slot's clock): [phase, end]
  // in order, so that a benchmark can lay every worker on one time line.
  nlohmann::json timeline = {{"start", cw::monotonic_seconds(started)}, {"marks", nlohmann::json::array()}};
  auto last = started;
  auto mark = [&](const char* phase) {
    const auto now = std::chrono::steady_clock::now();
    phases[phase] = phases.value(phase, 0.0) + std::chrono::duration<double>(now - last).count();
    timeline["marks"].push_back({phase, cw::monotonic_seconds(now)});
    last = now;
  };
  mark("start");
  if (std::string why = open_device(x.device); !why.empty()) w::fatal("no_gpu", why);
  int ordinal = 0;
  (void)cudaGetDevice(&ordinal);
  // The threshold of the judge's repeated probes after a call, before any
  // candidate's process exists (cw::AnswerProbe).
  double quiet_probe_ns = 0.0;
  try {
    cw::load_device_space_kernels();
    if (gpu_timing) quiet_probe_ns = cw::quiet_probe_threshold_ns();
  } catch (const std::exception& e) {
    w::fatal("no_gpu", e.what());
  }
  mark("context");
  // The protocol's memory is taken from the driver before the candidate's
  // process exists (it shares the GPU's memory and could exhaust it) and
  // before the shared slot (the driver serialises such calls with other
  // workers' context creation; device_space.hpp).
  std::size_t pool_after_reserve = 0;
  try {
    cw::reserve_protocol_memory(task,
                                static_cast<std::size_t>(std::max(x.gt.flush_bytes, cw::default_gpu_flush_bytes())));
  } catch (const std::exception& e) {
    w::fatal("no_gpu", e.what());
  }
  pool_after_reserve = cw::pool_reserved_bytes();
  mark("reserve");
  std::string bus_id;
  const std::string device = cw::device_identity(bus_id);
  try {
    cw::gpu_slot().open(x.lock_dir, bus_id);
  } catch (const std::exception& e) {
    w::fatal("gpu_slot", e.what());
  }

  const bool candidate_code = opt.mode == native::kModeJudge;
  // The ncu child runs the candidate without the system-call policy: for a
  // task with hidden shapes, which it could read from the task's files and
  // write into ncu's page (the thirteenth session's red team), it is
  // confined (profile_command). Where the kernel has no Landlock such a
  // task's candidate is not profiled, and its child is not registered.
  const bool confine_profile = candidate_code && x.profile && !task.hidden.empty() && !x.profile_unconfined;
  std::string profile_withheld;   // why this task's candidate is not profiled ("": it is, where asked)
  Tools tools;
  try {
    tools = start_tools(r, task, x, candidate_code, confine_profile);
  } catch (const std::exception& e) {
    if (!confine_profile) w::fatal("tools", e.what());
    // The spawner could not confine the child: not profiled, and the
    // child not registered.
    profile_withheld = std::string(kProfileWithheld) + e.what();
    x.profile = false;
    try {
      tools = start_tools(r, task, x, candidate_code, false);
    } catch (const std::exception& again) {
      w::fatal("tools", again.what());
    }
  }

  Entry ref = nullptr;
  try {
    ref = entry_of(open_library(r.reference_so, "reference"));
  } catch (const std::exception& e) {
    w::fatal("reference_load", e.what());
  }
  if (tools.has_sanitize || tools.has_profile) {
    // The tool stages' children load a private copy (the request they
    // read names it).
    std::error_code ec;
    fs::copy_file(r.candidate_so, candidate_copy(), fs::copy_options::overwrite_existing, ec);
    if (ec) w::fatal("candidate_copy", "cannot copy " + r.candidate_so + ": " + ec.message());
  }

  try {
    std::optional<cw::L2Flush> flush;
    if (gpu_timing) flush.emplace(x.gt);
    std::optional<cw::ExportedArena> arena;
    nlohmann::json shape_timings;
    cw::TimingLoopCost loop_cost;   // where the timed loops' time went (the phases "loop_*")
    bool timed = false;

    w::SessionParts parts;
    parts.space = &space;
    parts.protocol_timing = false;   // the GPU timing is ours (after_protocol)
    parts.host_program = kevo::self_executable().string();
    parts.host_env = w::current_environment();
    parts.local_reference = [&]() -> std::unique_ptr<w::Endpoint> {
      return std::make_unique<DeviceEndpoint>([ref](w::ArgSet& a, const w::Case&) { cw::device_call(ref, a); });
    };
    parts.local_candidate = [](w::LocalEndpoint::Kernel k) -> std::unique_ptr<w::Endpoint> {
      return std::make_unique<DeviceEndpoint>(std::move(k));
    };
    parts.device_arena = [&](std::size_t bytes) -> const w::DeviceArena* {
      arena.emplace(bytes);
      return &arena->arena();
    };
    parts.decorate_candidate = [](w::Endpoint& e) -> std::unique_ptr<w::Endpoint> { return std::make_unique<SlotHeld>(e); };
    parts.host_args = {"--device", std::to_string(ordinal)};
    // The null calls whose median comes off every timed call of the
    // candidate (docs/cuda.md#verdicts: its noise is the timing's).
    parts.calibrate = gpu_timing ? 16 : 0;
    // Under the GPU's shared slot: the null calls' GPU work (an empty
    // kernel, switches to this context) stays out of other workers' timed
    // windows, as all other kevo work on the GPU does. (Under the exclusive
    // slot instead, on an H100 with 8 workers, a null call's median still
    // came out at 1.01 ms against 176 us for the host's timed round trips
    // once in 60 candidates: what lengthens it is not kevo's GPU work; each
    // worker waited about 0.1 s more for the slot. docs/cuda.md#not-done-yet.)
    // The judge's probe after each of those null calls: the yardstick of
    // the probe after a timed call that no code of the candidate's can
    // have lengthened (time_on_device). Armed for the calibration only
    // (and again by time_on_device): correctness calls make no probe.
    std::vector<double> calibration_probes;
    cw::AnswerProbe answer_probe;
    answer_probe.quiet_ns = quiet_probe_ns;
    parts.hold_for_calibration = [&answer_probe, gpu_timing] {
      struct Held {
        cw::SharedSlot slot;
        cw::AnswerProbe& probe;
        explicit Held(cw::AnswerProbe& p, bool arm) : probe(p) {
          if (arm) probe.mode = cw::AnswerProbe::Mode::single;
        }
        ~Held() { probe.mode = cw::AnswerProbe::Mode::none; }
      };
      return std::static_pointer_cast<void>(std::make_shared<Held>(answer_probe, gpu_timing));
    };
    if (gpu_timing) {
      parts.on_answer = [&](std::chrono::steady_clock::time_point answered) { answer_probe.made(answered); };
      parts.after_null_call = [&] {
        calibration_probes.push_back(answer_probe.take());
      };
    }

    // The correctness protocol under one shared hold of the GPU's slot with
    // phase holds (every step's own hold nests in it); the GPU timing inside
    // it lets the hold go and takes it again after (an exclusive hold
    // cannot nest in a shared one).
    std::optional<cw::SharedSlot> protocol_hold;
    parts.around_protocol = [&](const std::function<native::JudgeResult()>& run) {
      const bool mine = x.gt.phase_holds && !protocol_hold;
      if (mine) protocol_hold.emplace();
      struct Release {
        std::optional<cw::SharedSlot>& hold;
        bool mine;
        ~Release() {
          if (mine) hold.reset();
        }
      } release{protocol_hold, mine};
      return run();
    };
    // The seed of the inputs of the last timing (the reference alone runs
    // on inputs of the same seed), and the re-verification's note.
    std::uint64_t timed_seed = opt.seed;
    std::string flagged;
    // The GPU timing, inside the protocol: after the visible shapes, before
    // any hidden one reaches the candidate's process (Judge::set_timing), so
    // that the times a verdict reports cannot depend on a hidden size
    // (tests/cuda/adversarial/time_channel.cu). The candidate's process
    // lives on for the hidden shapes; after_protocol ends it.
    parts.timing = [&](kevo::Verdict& v, w::Endpoint& cand, w::Endpoint& reference,
                       const std::vector<double>& null_ns) -> bool {
      mark("correctness");
      if (!gpu_timing) return false;
      const bool held = protocol_hold.has_value();
      protocol_hold.reset();
      cw::FirstCalibration calibrated;
      calibrated.null_ns = w::quantile(null_ns, 0.5);
      if (!calibration_probes.empty()) {
        calibrated.probe_median_ns = w::quantile(calibration_probes, 0.5);
        calibrated.probe_iqr_ns = w::quantile(calibration_probes, 0.75) - w::quantile(calibration_probes, 0.25);
      }
      try {
        shape_timings = cw::time_on_device(task, opt, opt.seed, x.gt, *flush, cand, answer_probe, calibrated, ref,
                                           v, loop_cost);
        if (v.status == kevo::Status::pending && v.speedup > x.reverify_speedup) {
          // Too good to take on trust: judge again on inputs from another
          // seed (the visible and drawn shapes: the hidden ones follow this
          // timing) and time again; the verdict says it was flagged.
          const double first = v.speedup;
          w::Options again = opt;
          again.seed = opt.seed ^ kReverifySalt;
          again.timing = false;
          again.hidden_shapes = false;
          // The judgement's drawn shapes, as the session drew them (its key).
          again.drawn = kevo::draw_shapes(task, space.input_key().draws_seed(opt.seed));
          native::JudgeResult second = parts.around_protocol([&] { return w::Judge(task, again, reference, cand, space).run(); });
          if (!second.verdict.is_correct()) {
            v = second.verdict;
            v.message = "re-verification of a " + std::to_string(first) + "x speedup failed: " + v.message;
          } else {
            shape_timings = cw::time_on_device(task, again, again.seed, x.gt, *flush, cand, answer_probe,
                                               calibrated, ref, v, loop_cost);
            timed_seed = again.seed;
            if (v.status == kevo::Status::pending)
              flagged = "; flagged: speedup above " + std::to_string(x.reverify_speedup) +
                        "x, re-verified on fresh inputs and re-timed";
          }
        }
      } catch (const std::exception& e) {
        v.status = kevo::Status::runtime_error;
        v.stage = kevo::Stage::timing;
        v.message = std::string("during timing: ") + e.what();
      }
      if (v.status == kevo::Status::pending) v.message += flagged;
      if (held) protocol_hold.emplace();
      mark("timing");
      return true;
    };
    parts.after_protocol = [&](native::JudgeResult& result, w::Endpoint&, w::Endpoint&, const std::vector<double>&,
                               const std::function<void()>& kill_candidate,
                               const std::function<void()>& end_candidate) {
      mark("correctness");
      if (!gpu_timing) return;
      kevo::Verdict& v = result.verdict;
      try {
        // The candidate's process is killed before the exclusive hold is
        // asked for, so that its context's teardown (about 36 ms on an
        // H100) runs while this worker waits for the slot, as other
        // workers' contexts are made and ended beside a timing; it is
        // reaped inside the hold, and the reference is timed alone where
        // nothing of it is left. (Ending it in a shared hold instead took
        // the teardown out of the exclusive hold too, but the end then
        // waited about 0.2 s for the shared slot behind the queued timers,
        // and a worker's latency bounds the throughput as much as the slot
        // does: docs/benchmarks.md#cuda-timed-pair.)
        kill_candidate();
        cw::ExclusiveSlot exclusive;
        const auto t0 = std::chrono::steady_clock::now();
        end_candidate();
        const auto t1 = std::chrono::steady_clock::now();
        // GPU work another worker's candidate's host left running (hole 4,
        // as at the start of each timing hold) would slow the reference
        // alone and so keep a slowed reference's time beside the candidate:
        // the judge's probes until the GPU is quiet first (counted with the
        // timing holds' waits).
        (void)cw::wait_for_quiet_gpu(answer_probe.quiet_ns, loop_cost);
        const bool changed = cw::reference_alone(task, opt, timed_seed, *flush, ref, shape_timings, v);
        // What this hold costs, apart (the backend's statistics).
        phases["hold_end_candidate"] = std::chrono::duration<double>(t1 - t0).count();
        phases["hold_reference_alone"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
        if (changed) v.message += flagged;
      } catch (const std::exception& e) {
        v.status = kevo::Status::runtime_error;
        v.stage = kevo::Stage::timing;
        v.message = std::string("during timing: ") + e.what();
      }
      timed = v.is_correct();
      mark("timing");
    };

    native::JudgeResult result;
    if (!(tools.has_sanitize && !sanitize(tools, task, x, opt, result.verdict))) result = w::run_session(r, task, parts, started);
    kevo::Verdict& got = result.verdict;
    if (timed && got.is_correct()) {
      result.shape_timings = shape_timings;
      got.stage = kevo::Stage::done;
      if (!profile_withheld.empty()) {
        got.profile = profile_withheld;
      } else if (tools.has_profile) {
        try {
          profile(tools, x, opt, got);
        } catch (const std::exception& e) {
          got.profile = std::string("profiler: ") + e.what();
        }
      }
    }
    mark("correctness");   // (the hidden shapes', where the protocol ended there)
    // A CUDA error may have left the GPU unwell: the backend checks it.
    if (got.status == kevo::Status::runtime_error && got.message.find("CUDA error") != std::string::npos)
      result.device_error = true;
    got.device = device;
    got.slot_seconds = cw::gpu_slot().exclusive_seconds();
    mark("profile");
    phases["slot_shared_wait"] = cw::gpu_slot().shared_wait_seconds();
    phases["slot_exclusive_wait"] = cw::gpu_slot().exclusive_wait_seconds();
    phases["slot_exclusive"] = got.slot_seconds;
    loop_cost.add_to(phases);
    nlohmann::json& fl = result.flavour;
    // MiB the pool grew past its reservation (0 when the reservation
    // covered the protocol, as it should: no driver call inside the slot).
    const std::size_t now = cw::pool_reserved_bytes();
    fl["pool_growth_mib"] = now > pool_after_reserve ? static_cast<double>(now - pool_after_reserve) / 1048576.0 : 0.0;
    fl["phases"] = phases;
    fl["slot_intervals"] = cw::gpu_slot().exclusive_intervals();
    fl["slot_shared_intervals"] = cw::gpu_slot().shared_intervals();
    timeline["exclusive_waits"] = cw::gpu_slot().exclusive_wait_intervals();
    timeline["shared_waits"] = cw::gpu_slot().shared_wait_intervals();
    fl["timeline"] = timeline;
    result.worker_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count();
    w::emit(native::to_json(result));
  } catch (const std::bad_alloc&) {
    w::fatal("worker_memory", "the worker could not allocate the task's buffers");
  } catch (const std::exception& e) {
    w::fatal("internal", e.what());
  }
  w::finish(0);
}
