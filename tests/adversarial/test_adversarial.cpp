// Every attack in candidates/ judged through one CpuBackend: each gets its
// exact expected status, every submitted id comes back exactly once, and the
// engine process (this test) survives them all.
#include "kevo/core/task.hpp"
#include "kevo/cpu/cpu_backend.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;
using kevo::Status;

namespace {

const fs::path kDir = KEVO_ADVERSARIAL_DIR;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

kevo::cpu::CpuOptions test_options() {
  nlohmann::json cfg = {
      {"cache_dir", ""},
      {"worker", KEVO_CPU_WORKER},
      {"compile_jobs", 2},
      {"eval_jobs", 2},
      {"limits", {{"wall_seconds", 4}, {"memory_mb", 1024}, {"output_kb", 64}}},
      {"timing", {{"warmup", 0}, {"min_repeats", 2}, {"max_repeats", 5}, {"budget_seconds", 0.02}, {"flush_kb", 256}}},
  };
  kevo::StrictObject obj(cfg, "test-config.json", "/backend/cpu");
  return kevo::cpu::parse_cpu_options(obj);
}

struct Expect {
  Status status;
  std::string message_part;   // "" = any
};

const std::map<std::string, Expect> kExpected = {
    {"correct", {Status::correct, ""}},
    {"openmp", {Status::correct, ""}},
    {"compile_error", {Status::compile_error, "error"}},
    {"missing_function", {Status::compile_error, "rowsum"}},
    {"segfault", {Status::runtime_error, "SIGSEGV"}},
    {"abort", {Status::runtime_error, "SIGABRT"}},
    {"throws", {Status::runtime_error, "exception"}},
    {"exit_early", {Status::runtime_error, "ended with exit code 0"}},
    {"infinite_loop", {Status::timeout, "wall-clock"}},
    {"sleep_forever", {Status::timeout, "wall-clock"}},
    {"alloc_100gb", {Status::memory_limit, ""}},
    {"alloc_100gb_malloc", {Status::memory_limit, "bytes failed"}},
    {"fork_bomb", {Status::runtime_error, "sandbox violation"}},
    {"kill_parent", {Status::runtime_error, "sandbox violation"}},
    {"write_file", {Status::runtime_error, "sandbox violation"}},
    {"print_gigabytes", {Status::output_limit, ""}},
    {"modify_input", {Status::wrong_answer, "modified its input"}},
    {"unwritten", {Status::wrong_answer, "never written"}},
    {"cached_result", {Status::wrong_answer, ""}},
    {"uninit_output", {Status::wrong_answer, ""}},
    {"uninit_malloc", {Status::wrong_answer, ""}},
    {"forge_stdout", {Status::wrong_answer, "never written"}},
    {"forge_fds", {Status::wrong_answer, "never written"}},
    // The engine attacked from the candidate's process.
    {"kill_all", {Status::runtime_error, "sandbox violation: forbidden system call 62 (kill"}},
    {"kill_group", {Status::runtime_error, "sandbox violation: forbidden system call 62 (kill"}},
    {"sigqueue_parent", {Status::runtime_error, "rt_sigqueueinfo"}},
    {"pidfd_getfd", {Status::runtime_error, "pidfd_open"}},
    {"prlimit_others", {Status::correct, ""}},
    {"read_secrets", {Status::correct, ""}},
    {"sysv_shm", {Status::runtime_error, "shmget"}},
    // Forging the verdict from inside: only the judge's comparison counts.
    {"forge_control", {Status::wrong_answer, "never written"}},
    // Coverage a candidate cannot learn.
    {"tail_bug", {Status::wrong_answer, "drawn"}},
    {"poison_probe", {Status::wrong_answer, "never written"}},
    // Libraries.
    {"cblas_call", {Status::forbidden, "cblas_sdot"}},
};

// A fake API key in the engine's environment: no candidate may read it.
constexpr const char* kSecret = "sk-kevo-test-2f9c6e1d8b";

}  // namespace

TEST(Adversarial, EveryAttackGetsItsStatus) {
  fs::remove("/tmp/kevo-adversarial-escape");
  ::setenv("KEVO_TEST_SECRET", kSecret, 1);
  rlimit files_before{};
  ::getrlimit(RLIMIT_NOFILE, &files_before);
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kDir / "task"));
  kevo::cpu::CpuBackend backend(test_options());
  backend.prepare(*task);

  // Every file in candidates/ must have an expectation, and the reverse.
  std::map<std::uint64_t, std::string> ids;
  std::uint64_t next = 100;
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(kDir / "candidates")) {
    const std::string name = e.path().stem().string();
    ++files;
    ASSERT_TRUE(kExpected.count(name)) << "no expectation for candidates/" << name << ".cpp";
    ids[next] = name;
    backend.submit(kevo::EvalRequest{next, task, read(e.path()), 42});
    ++next;
  }
  ASSERT_EQ(files, kExpected.size());

  std::map<std::string, kevo::Verdict> got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(110);
  while (got.size() < ids.size() && std::chrono::steady_clock::now() < until) {
    for (auto& r : backend.poll(std::chrono::milliseconds(500))) {
      ASSERT_TRUE(ids.count(r.id)) << "unknown id " << r.id;
      ASSERT_FALSE(got.count(ids[r.id])) << "id " << r.id << " came back twice";
      got.emplace(ids[r.id], std::move(r.verdict));
    }
  }
  ASSERT_EQ(got.size(), ids.size()) << "verdicts were lost";
  EXPECT_EQ(backend.in_flight(), 0u);

  for (const auto& [name, v] : got)   // a readable table in the test log
    std::printf("%-20s %-14s %.1fs %s\n", name.c_str(), std::string(kevo::to_string(v.status)).c_str(),
                v.worker_seconds, v.message.c_str());
  for (const auto& [name, want] : kExpected) {
    const kevo::Verdict& v = got.at(name);
    EXPECT_EQ(v.status, want.status) << name << ": got " << kevo::to_string(v.status) << ": " << v.message
                                     << "\noutput: " << v.output_tail.substr(0, 300);
    if (!want.message_part.empty()) {
      EXPECT_NE(v.message.find(want.message_part), std::string::npos) << name << ": " << v.message;
    }
    EXPECT_FALSE(v.feedback.empty()) << name;
  }

  // No text of any verdict carries the engine's secret.
  for (const auto& [name, v] : got)
    for (const std::string* text : {&v.message, &v.feedback, &v.output_tail, &v.compile_log})
      EXPECT_EQ(text->find(kSecret), std::string::npos) << name << " reached the secret: " << *text;
  EXPECT_NE(got.at("read_secrets").output_tail.find("mem openable 0"), std::string::npos)
      << got.at("read_secrets").output_tail;
  EXPECT_EQ(got.at("read_secrets").output_tail.find("found"), std::string::npos) << got.at("read_secrets").output_tail;
  EXPECT_NE(got.at("prlimit_others").output_tail.find("prlimit-others 0"), std::string::npos)
      << got.at("prlimit_others").output_tail;
  rlimit files_after{};
  ::getrlimit(RLIMIT_NOFILE, &files_after);
  EXPECT_EQ(files_after.rlim_cur, files_before.rlim_cur) << "a candidate changed the engine's limits";
  ASSERT_TRUE(got.at("tail_bug").mismatch.has_value());
  EXPECT_EQ(got.at("tail_bug").mismatch->shape.rfind("drawn ", 0), 0u) << got.at("tail_bug").mismatch->shape;

  // Details that matter beyond the status.
  EXPECT_GT(got.at("correct").speedup, 0.0);
  EXPECT_GT(got.at("correct").repeats, 0);
  EXPECT_EQ(got.at("correct").stage, kevo::Stage::done);
  EXPECT_GT(got.at("openmp").speedup, 0.0);
  ASSERT_TRUE(got.at("modify_input").mismatch.has_value());
  EXPECT_EQ(got.at("modify_input").mismatch->trial, "input-modified");
  EXPECT_EQ(got.at("modify_input").mismatch->arg, "A");
  ASSERT_TRUE(got.at("cached_result").mismatch.has_value());
  EXPECT_NE(got.at("cached_result").mismatch->trial, "trial 1") << "caught only by the fresh inputs of later trials";
  ASSERT_TRUE(got.at("unwritten").mismatch.has_value());
  EXPECT_EQ(got.at("unwritten").mismatch->arg, "out");
  EXPECT_EQ(got.at("compile_error").stage, kevo::Stage::compile);
  EXPECT_FALSE(got.at("compile_error").compile_log.empty());
  EXPECT_NE(got.at("print_gigabytes").output_tail.find("xxxx"), std::string::npos);
  EXPECT_LE(got.at("print_gigabytes").output_tail.size(), 5000u);
  EXPECT_FALSE(fs::exists("/tmp/kevo-adversarial-escape")) << "a candidate wrote outside its scratch dir";
  EXPECT_FALSE(fs::exists(fs::temp_directory_path() / "kevo-adversarial-escape-parent"));

  // The backend is still in working order: judge the correct one again
  // (its compiled object is reused).
  const auto before = backend.stats();
  kevo::Verdict again = backend.evaluate(task, read(kDir / "candidates" / "correct.cpp"), 7);
  EXPECT_EQ(again.status, Status::correct) << again.message;
  EXPECT_TRUE(again.compile_cached);
  EXPECT_EQ(backend.stats().compiles, before.compiles);

  int st;
  errno = 0;
  EXPECT_EQ(waitpid(-1, &st, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "a worker or compiler was left unreaped";
}

TEST(Adversarial, TheCudaPolicyVariantReachesTheWorker) {
  // The CUDA backend's requests carry "seccomp_policy": "cuda"; the shared
  // worker code installs that variant. Judged here with the CPU worker: an
  // existing file opened read-write is allowed by the CUDA variant only,
  // creating a file is a violation under both.
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kDir / "task"));
  const fs::path existing = fs::temp_directory_path() / ("kevo-policy-existing-" + std::to_string(::getpid()));
  std::ofstream(existing) << "keep";
  const std::string rdwr = "#include <cstdint>\n#include <fcntl.h>\n#include <unistd.h>\n"
                           "extern \"C\" void rowsum(const float* A, float* out, int32_t M, int32_t N) {\n"
                           "  int fd = open(\"" + existing.string() + "\", O_RDWR);\n"
                           "  if (fd >= 0) close(fd);\n"
                           "  for (int32_t i = 0; i < M; ++i) {\n"
                           "    float s = 0.0f;\n"
                           "    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];\n"
                           "    out[i] = s;\n  }\n}\n";
  kevo::cpu::CpuOptions cuda_opt = test_options();
  cuda_opt.flavour.policy = "cuda";
  kevo::cpu::CpuBackend cuda_variant(cuda_opt);
  cuda_variant.prepare(*task);
  const kevo::Verdict allowed = cuda_variant.evaluate(task, rdwr, 5);
  EXPECT_EQ(allowed.status, Status::correct) << allowed.message;
  fs::remove("/tmp/kevo-adversarial-escape");
  const kevo::Verdict created = cuda_variant.evaluate(task, read(kDir / "candidates" / "write_file.cpp"), 5);
  EXPECT_EQ(created.status, Status::runtime_error) << created.message;
  EXPECT_NE(created.message.find("sandbox violation"), std::string::npos) << created.message;
  EXPECT_FALSE(fs::exists("/tmp/kevo-adversarial-escape"));

  kevo::cpu::CpuBackend cpu_variant(test_options());
  cpu_variant.prepare(*task);
  const kevo::Verdict denied = cpu_variant.evaluate(task, rdwr, 5);
  EXPECT_EQ(denied.status, Status::runtime_error) << denied.message;
  EXPECT_NE(denied.message.find("sandbox violation"), std::string::npos) << denied.message;
  fs::remove(existing);
}

// Timing that only real work can move: each attack on the timing judged
// beside the honest kernel it is built on. An attack may be caught (wrong
// answer) or judged as what its honest work earns; never faster, and the
// reference is never slowed by what the candidate leaves behind.
TEST(Adversarial, TimingOnlyRealWorkCanMove) {
  const fs::path dir = kDir / "timing";
  auto task = std::make_shared<kevo::Task>(kevo::load_task(dir / "task"));
  nlohmann::json cfg = {
      {"cache_dir", ""},
      {"worker", KEVO_CPU_WORKER},
      {"compile_jobs", 2},
      {"limits", {{"wall_seconds", 20}, {"memory_mb", 1024}}},
      {"timing", {{"warmup", 1}, {"min_repeats", 5}, {"max_repeats", 40}, {"budget_seconds", 0.15}}},
  };
  kevo::StrictObject obj(cfg, "test-config.json", "/backend/cpu");
  kevo::cpu::CpuBackend backend(kevo::cpu::parse_cpu_options(obj));
  backend.prepare(*task);
  const kevo::Verdict plain = backend.evaluate(task, read(dir / "candidates" / "plain.cpp"), 3);
  ASSERT_EQ(plain.status, Status::correct) << plain.message;
  std::printf("%-16s %-14s speedup %.3f  cand %.1f us  ref %.1f us  %s\n", "plain", "correct", plain.speedup,
              plain.cand_median_ns / 1e3, plain.ref_median_ns / 1e3, plain.message.c_str());
  const std::map<std::string, bool> caught = {
      {"memo_one", false},     {"memo_many", false},      {"skip_same_args", true},
      {"finish_later", true},  {"busy_threads", false},   {"nice_reference", false},
  };
  for (const auto& [name, must_fail] : caught) {
    // Timings on a shared machine are noisy: an attack that only looks
    // faster or slows the reference by chance is judged up to three times,
    // and passes when one judgement shows no gain; a real gain shows in
    // every one.
    bool honest = false;
    std::string last;
    for (int attempt = 0; attempt < 3 && !honest; ++attempt) {
      const kevo::Verdict v = backend.evaluate(task, read(dir / "candidates" / (name + ".cpp")), 3 + attempt);
      std::printf("%-16s %-14s speedup %.3f  cand %.1f us  ref %.1f us  %s\n", name.c_str(),
                  std::string(kevo::to_string(v.status)).c_str(), v.speedup, v.cand_median_ns / 1e3,
                  v.ref_median_ns / 1e3, v.message.c_str());
      if (must_fail) {
        EXPECT_EQ(v.status, Status::wrong_answer) << name << ": " << v.message;
        honest = true;
        break;
      }
      ASSERT_EQ(v.status, Status::correct) << name << ": " << v.message;
      honest = v.speedup < 2.0 * plain.speedup && v.ref_median_ns < 1.6 * plain.ref_median_ns;
      last = "speedup " + std::to_string(v.speedup) + " (plain " + std::to_string(plain.speedup) + "), reference " +
             std::to_string(v.ref_median_ns / 1e3) + " us (plain " + std::to_string(plain.ref_median_ns / 1e3) + " us)";
    }
    EXPECT_TRUE(honest) << name << " gained from its attack, or slowed the reference, in three judgements: " << last;
  }
  // The honest kernel's verdict is what it was.
  const kevo::Verdict again = backend.evaluate(task, read(dir / "candidates" / "plain.cpp"), 3);
  EXPECT_EQ(again.status, Status::correct) << again.message;
}
