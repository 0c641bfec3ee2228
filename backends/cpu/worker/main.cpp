// kevo-cpu-worker: the judge of one CPU candidate, in a fresh process. The
// CPU backend starts it inside the sandbox runner (rlimits, own process
// group, scratch dir as cwd). It holds the inputs, the reference's outputs,
// the comparisons and the clock; the reference and the candidate each run
// in a kernel host it starts from this same executable (`--host`), in
// namespaces of their own, under the allow-list seccomp policy, stopped
// whenever they are not making a call. See docs/verdicts.md and
// docs/sandbox.md.
#include "channel.hpp"
#include "host.hpp"
#include "session.hpp"
#include "space.hpp"

#include "kevo/core/process.hpp"
#include "kevo/core/task.hpp"
#include "kevo/sandbox/isolation.hpp"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

namespace j = kevo::native::judge;

// Reads and writes every cache line of a buffer larger than the last level
// cache, so that each timed call starts from a cold cache.
class CacheFlush {
 public:
  explicit CacheFlush(std::int64_t bytes) : buf_(static_cast<std::size_t>(std::max<std::int64_t>(bytes, 64))) {
    std::memset(buf_.data(), 1, buf_.bytes());
  }
  void operator()() {
    auto* p = static_cast<std::uint64_t*>(buf_.data());
    const std::size_t n = buf_.bytes() / sizeof(std::uint64_t);
    std::uint64_t s = 0;
    for (std::size_t i = 0; i < n; i += 8) {
      s += p[i];
      p[i] = s;
    }
    sink_ = sink_ + s;
  }

 private:
  j::Buffer buf_;
  volatile std::uint64_t sink_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--host") == 0) j::host_main(argc, argv);
  const auto started = std::chrono::steady_clock::now();
  j::set_program_name("kevo-cpu-worker");
  // Kernel hosts run as the same user: none may trace this process or read
  // its memory and /proc files.
  kevo::sandbox::set_non_dumpable();
  int request_fd = -1, result_fd = -1;
  if (!j::parse_fds(argc, argv, request_fd, result_fd, "The judge of kevo's CPU backend")) return 2;
  const kevo::native::JudgeRequest req = j::open_channel(request_fd, result_fd);
  j::set_protocol_threads(req.judge_threads);

  kevo::Task task;
  try {
    task = kevo::load_task(req.task_dir);
  } catch (const std::exception& e) {
    j::fatal("task_load", e.what());
  }
  try {
    kevo::native::JudgeResult result;
    {
      // Freed before the clock stops: its pages are the judge's work, not
      // the sandbox's.
      CacheFlush flush(req.timing_options.flush_bytes);
      j::SessionParts parts;
      parts.space = &j::host_space();
      parts.flush = [&flush] { flush(); };
      parts.host_program = kevo::self_executable().string();
      parts.host_env = j::current_environment();
      result = j::run_session(req, task, parts, started);
    }
    // Time spent inside main(): the rest of the wall time the engine sees is
    // the cost of the sandbox (exec, dynamic loading, pipes, reaping).
    result.worker_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count();
    j::emit(kevo::native::to_json(result));
  } catch (const std::bad_alloc&) {
    j::fatal("worker_memory", "the judge could not allocate the task's buffers within the memory limit");
  } catch (const std::exception& e) {
    j::fatal("internal", e.what());
  }
  j::finish(0);
}
