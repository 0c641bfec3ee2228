// Shared by test_lineage and its helper process lineage_writer_child: the
// deterministic candidate of an id (so a reader can check any row it finds
// against what the writer must have written) and a small process holder.
#pragma once

#include "kevo/core/candidate.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/lineage/schema.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace kevo_test {

inline constexpr std::uint32_t kTasks = 3;

inline kevo::lineage::RunInfo make_run(int rank = 0, int nranks = 1) {
  kevo::lineage::RunInfo run;
  run.config_json = R"({"name":"lineage-test","seed":7,"lineage":{"flush_records":256}})";
  run.task_manifests_json = R"([{"name":"sgemm"},{"name":"softmax"},{"name":"naïve_conv"}])";
  run.tasks = {"sgemm", "softmax", "naïve_conv"};
  run.seed = 7;
  run.host = "testhost";
  run.start_time = 1.75e9;
  run.rank = rank;
  run.nranks = nranks;
  return run;
}

// A kernel source of about `bytes` bytes that depends on `id` only.
inline std::string make_source(std::uint64_t id, std::size_t bytes) {
  std::string s = "// kevo:params begin\n#define TILE " + std::to_string(8 << (id % 4)) +
                  "\n// kevo:params end\n// candidate " + std::to_string(id) +
                  " — π ≈ 3.14159, ✓ naïve → fast 🚀\nextern \"C\" void k(const float* a, float* b, int n) {\n";
  std::uint64_t x = id * 6364136223846793005ULL + 1442695040888963407ULL;
  while (s.size() < bytes) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    s += "  b[" + std::to_string(x % 97) + "] += a[" + std::to_string((x >> 20) % 89) + "] * " +
         std::to_string((x >> 40) % 1000) + ".0f;\n";
  }
  return s + "}\n";
}

// Candidate `id`, covering every final status: duplicates (same source as
// their original, not judged), operator failures (invalid: no source, a
// reason), lost ones, long sources, unicode, non-finite numbers.
inline kevo::Candidate make_candidate(std::uint64_t id) {
  using kevo::Stage;
  using kevo::Status;
  kevo::Candidate c;
  c.id = id;
  c.task = static_cast<std::uint32_t>(id % kTasks);
  c.parent0 = id >= 1 ? static_cast<std::int64_t>(id - 1) : -1;
  c.parent1 = (id % 5 == 0 && id >= 2) ? static_cast<std::int64_t>(id - 2) : -1;
  static const char* const ops[] = {"seed", "param_mutation", "param_crossover", "llm_rewrite", "llm_fix_ünïcode"};
  c.op = ops[id % 5];
  c.eval_seed = id * 0x9E3779B97F4A7C15ULL;
  c.t_created = 1.75e9 + static_cast<double>(id) * 0.125;
  c.t_submitted = c.t_created + 0.25;
  c.t_finished = c.t_created + 1.5;
  c.params_json = "{\"TILE\":" + std::to_string(8 << (id % 4)) + "}";
  c.source = make_source(id, id % 50 == 7 ? 100'000 : 600 + (id * 37) % 800);
  kevo::Verdict& v = c.verdict;
  v.status = static_cast<Status>(1 + id % 11);   // correct .. internal_error
  v.message = std::string(kevo::to_string(v.status)) + " (candidate " + std::to_string(id) + ")";
  v.feedback = "feedback group " + std::to_string(id % 7) + ": keep the loop order ✓";
  if (id % 3 == 0) v.profile = "dram 71% of peak, sm 12%, occupancy 88%, stall long_scoreboard";
  if (id % 2 == 0) v.device = "NVIDIA H200 0000:19:00.0";
  v.compile_seconds = 0.5 + static_cast<double>(id % 10) * 0.01;
  v.compile_cached = id % 3 == 0;
  v.worker_seconds = 0.1 * static_cast<double>(id % 4);
  v.slot_seconds = 0.05 * static_cast<double>(id % 3);
  v.max_rss_kb = 1000 + static_cast<std::int64_t>(id);
  switch (v.status) {
    case Status::correct:
      v.stage = Stage::done;
      v.cand_median_ns = 1000.0 + static_cast<double>(id);
      v.cand_iqr_ns = 12.5;
      v.ref_median_ns = 5000.0;
      v.ref_iqr_ns = 40.0;
      v.repeats = 30;
      v.speedup = id % 13 == 0 ? std::numeric_limits<double>::infinity() : v.ref_median_ns / v.cand_median_ns;
      v.max_abs_error = 1e-7;
      v.rel_l2_error = 1e-9;
      break;
    case Status::wrong_answer:
      v.stage = Stage::correctness;
      v.max_abs_error = id % 2 ? std::numeric_limits<double>::infinity() : 0.5;
      v.rel_l2_error = std::numeric_limits<double>::quiet_NaN();
      v.mismatch = kevo::Mismatch{"C", "M=129,N=77,K=65", "trial 2", static_cast<std::int64_t>(id), "[3, 17]", 1.5,
                                  id % 2 ? std::numeric_limits<double>::quiet_NaN() : -2.25};
      break;
    case Status::compile_error:
      v.stage = Stage::compile;
      v.compile_log = "cand.cpp:3:7: error: ‘tile’ was not declared in this scope\n   3 | tile += 1;\n";
      break;
    case Status::runtime_error:
      v.stage = Stage::correctness;
      v.exit_code = -1;
      v.signal = 11;
      v.output_tail = "about to crash\nSegmentation fault (id " + std::to_string(id) + ")\n";
      break;
    case Status::timeout:
    case Status::memory_limit:
    case Status::output_limit:
      v.stage = Stage::timing;
      v.output_tail = std::string(300, 'x');
      break;
    case Status::duplicate:
      // Same source as its original; never judged.
      v = kevo::Verdict{};
      v.status = Status::duplicate;
      v.message = "same normalised source as candidate " + std::to_string(id - 1);
      c.duplicate_of = static_cast<std::int64_t>(id - 1);
      c.source = make_source(id - 1, (id - 1) % 50 == 7 ? 100'000 : 600 + ((id - 1) * 37) % 800);
      break;
    case Status::invalid:
      v = kevo::Verdict{};
      v.status = Status::invalid;
      c.source.clear();
      c.params_json.clear();
      c.op_note = "operator failed: the model returned no code block (attempt " + std::to_string(id % 3) + ")";
      break;
    case Status::lost:
      v.stage = Stage::compile;
      v.message = "in flight when the run was killed";
      break;
    case Status::internal_error:
      v.stage = Stage::compile;
      v.message = "worker executable missing";
      break;
    default:
      break;
  }
  c.hash = kevo::source_hash(c.source);
  return c;
}

inline bool same_double(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// A child process with its stdout on a pipe. Move-only; the destructor kills
// (SIGKILL) and reaps a child that is still running.
class Process {
 public:
  // argv[0] is searched in PATH when it has no slash.
  static Process spawn(const std::vector<std::string>& argv, bool quiet_stderr = false) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    if (quiet_stderr) posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    if (rc != 0) {
      ::close(fds[0]);
      throw std::runtime_error("posix_spawnp " + argv[0] + " failed");
    }
    return Process(pid, fds[0]);
  }

  Process(Process&& o) noexcept : pid_(std::exchange(o.pid_, -1)), fd_(std::exchange(o.fd_, -1)) {}
  Process& operator=(Process&&) = delete;
  Process(const Process&) = delete;
  ~Process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }

  pid_t pid() const { return pid_; }
  // stdout is closed and every line has been read.
  bool at_eof() const { return fd_ < 0 && buf_.find('\n') == std::string::npos; }

  // Next line of stdout, waiting at most timeout_ms. False on timeout or EOF.
  bool read_line(std::string& line, int timeout_ms) {
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return true;
      }
      if (fd_ < 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return false;
      char chunk[4096];
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n <= 0) {
        ::close(fd_);
        fd_ = -1;
        return false;
      }
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  // Everything the child writes until it closes stdout.
  std::string read_all() {
    std::string out = std::exchange(buf_, {});
    char chunk[65536];
    while (fd_ >= 0) {
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n <= 0) {
        ::close(fd_);
        fd_ = -1;
        break;
      }
      out.append(chunk, static_cast<std::size_t>(n));
    }
    return out;
  }

  // Exit code, or 128 + signal.
  int wait() {
    int status = 0;
    if (pid_ <= 0) return -1;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  void kill9() {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
  }

 private:
  Process(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buf_;
};

}  // namespace kevo_test
