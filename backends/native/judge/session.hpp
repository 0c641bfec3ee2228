// One judgement from request to result, as every native judge process runs
// it: the task loaded, the poison drawn, the reference and the candidate
// put in kernel hosts of their own (or a null candidate in the judge), the
// protocol run, the candidate's mapped libraries checked against the
// task's policy. Flavours supply the space, the flush and the host program.
#pragma once

#include "judge.hpp"

#include "kevo/native/protocol.hpp"

#include <functional>
#include <string>
#include <vector>

namespace kevo::native::judge {

struct SessionParts {
  Space* space = nullptr;                 // where buffers live (host_space() for the CPU)
  std::function<void()> flush;            // before every timed call
  std::string host_program;               // the executable run as `--host`
  std::vector<std::string> host_env;      // the hosts' environment
};

// Runs the judgement; failures of kevo itself end the process with a fatal
// event (channel.hpp).
JudgeResult run_session(const JudgeRequest& req, const Task& task, const SessionParts& parts,
                        std::chrono::steady_clock::time_point started);

// The judge's options for a request.
Options options_of(const JudgeRequest& req, std::chrono::steady_clock::time_point started);

// The judge's own executable (/proc/self/exe).
std::string self_executable();
// The caller's environment as KEY=VALUE strings.
std::vector<std::string> current_environment();

}  // namespace kevo::native::judge
