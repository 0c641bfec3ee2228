// kevo-cpu-worker: judges one candidate in a fresh process. Started by the
// CPU backend inside the sandbox runner (rlimits, own process group, scratch
// dir as cwd); installs the seccomp policy on itself before it loads the
// candidate, so candidate code never runs without it. See docs/verdicts.md.
#include "alloc_hooks.hpp"
#include "judge.hpp"
#include "worker_io.hpp"

#include "kevo/core/task.hpp"
#include "kevo/cpu/protocol.hpp"

#include <cfenv>
#include <chrono>
#include <string>

namespace {

namespace proto = kevo::cpu::protocol;
namespace w = kevo::cpu::worker;

}  // namespace

int main(int argc, char** argv) {
  const auto started = std::chrono::steady_clock::now();
  w::set_program_name("kevo-cpu-worker");
  int request_fd = -1, result_fd = -1;
  if (!w::parse_fds(argc, argv, request_fd, result_fd, "The evaluation worker of kevo's CPU backend")) return 2;

  // 1. The request (with the nonce), then the channel is closed.
  const nlohmann::json req = w::open_channel(request_fd, result_fd);
  w::set_alloc_report(w::result_channel(),
                      "\n{\"event\":\"alloc_failed\",\"nonce\":\"" + w::channel_nonce() + "\",\"bytes\":", "}\n");
  w::Request r;
  try {
    r = w::parse_request(req, started);
  } catch (const std::exception& e) {
    w::fatal("bad_request", std::string("bad request: ") + e.what());
  }
  w::Options& opt = r.opt;
  w::set_protocol_threads(opt.threads);

  // 2. The task and the reference (trusted: compiled by kevo from the task).
  kevo::Task task;
  try {
    task = kevo::load_task(r.task_dir);
  } catch (const std::exception& e) {
    w::fatal("task_load", e.what());
  }
  std::fenv_t default_env;
  std::fegetenv(&default_env);
  // 3. The libraries; the sandbox policy is in place before candidate code.
  const w::Libraries lib = w::load_libraries(r);
  const w::Reference reference = [ref = lib.reference](w::ArgSet& a) { ref(a.ptr.data()); };
  w::Kernel cand;
  if (opt.mode == proto::kModeNull) {
    cand = w::null_kernel(opt.null_kind, task, reference, opt.seed);
  } else {
    cand = [e = lib.candidate](w::ArgSet& a, const w::Case&) { e(a.ptr.data()); };
  }
  std::fenv_t cand_env;
  std::fegetenv(&cand_env);

  // 4. Judge.
  try {
    w::Judge judge(task, opt, reference, cand, default_env, cand_env);
    nlohmann::json result = judge.run();
    // Time spent inside main(): the rest of the wall time the engine sees is
    // the cost of the sandbox (exec, dynamic loading, pipes, reaping).
    result["worker_ns"] = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count();
    w::emit(result);
  } catch (const std::bad_alloc&) {
    w::fatal("worker_memory", "the worker could not allocate the task's buffers within the memory limit");
  } catch (const std::exception& e) {
    w::fatal("internal", e.what());
  }
  w::finish(0);
}
