// One judgement from request to result, as every native judge process runs
// it: the task loaded, the poison drawn, the reference and the candidate
// put in kernel hosts of their own (or a null candidate in the judge), the
// protocol run, the candidate's mapped libraries checked against the
// task's policy. Flavours supply the space, the flush and the host program.
#pragma once

#include "endpoint.hpp"
#include "judge.hpp"

#include "kevo/native/protocol.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kevo::native::judge {

struct SessionParts {
  Space* space = nullptr;                 // where buffers live (host_space() for the CPU)
  std::function<void()> flush;            // before every timed call
  std::string host_program;               // the executable run as `--host`
  std::vector<std::string> host_env;      // the hosts' environment

  // What a device's flavour (CUDA) changes; the CPU leaves these empty.
  // false: the judge's own timing does not run (the flavour's `timing`
  // does, at its place).
  bool protocol_timing = true;
  // The reference as the judge's own code (trusted: it runs in the judge,
  // beside the protocol's buffers), instead of in a kernel host.
  std::function<std::unique_ptr<Endpoint>()> local_reference;
  // A null candidate's endpoint, whose buffers must live where the space
  // works (the device).
  std::function<std::unique_ptr<Endpoint>(LocalEndpoint::Kernel)> local_candidate;
  // The candidate's buffers on the device: an arena of at least `bytes`
  // that the judge exported (kept alive by the flavour until the session
  // returns).
  std::function<const DeviceArena*(std::size_t bytes)> device_arena;
  // Wraps the candidate's host as the protocol calls it (a device slot).
  std::function<std::unique_ptr<Endpoint>(Endpoint&)> decorate_candidate;
  std::vector<std::string> host_args;     // HostSpec::host_args of the candidate's host
  int calibrate = 0;                      // HostSpec::calibrate of the candidate's host
  std::function<void()> before_null_call;
  std::function<void()> after_null_call;                                        // HostSpec::after_null_call
  std::function<void(std::chrono::steady_clock::time_point)> on_answer;         // HostSpec::on_answer (the candidate's)
  std::function<std::shared_ptr<void>()> hold_for_calibration;   // HostSpec::hold_for_calibration
  // Runs the protocol (a flavour holds its device's slot around it).
  std::function<JudgeResult(const std::function<JudgeResult()>&)> around_protocol;
  // The flavour's timing, inside the protocol where the judge's own would
  // run (after the visible shapes, before the hidden ones: Judge::set_timing),
  // with the calibration's round trips of the candidate's host.
  std::function<bool(Verdict&, Endpoint& cand, Endpoint& ref, const std::vector<double>& null_ns)> timing;
  // After a protocol that found the candidate correct, while its host
  // still runs: what the flavour does last (the CUDA worker ends the
  // candidate and times the reference alone).
  // `kill_candidate` checks its libraries one last time and sends its host
  // SIGKILL without waiting (its end, a device context's teardown, runs
  // on meanwhile); `end_candidate` kills it if that was not done and
  // waits until it has ended (its device context and any work left in it
  // are gone): what the flavour measures after that, the candidate cannot
  // disturb.
  std::function<void(JudgeResult&, Endpoint& cand, Endpoint& ref, const std::vector<double>& null_ns,
                     const std::function<void()>& kill_candidate, const std::function<void()>& end_candidate)>
      after_protocol;
};

// Runs the judgement; failures of kevo itself end the process with a fatal
// event (channel.hpp).
JudgeResult run_session(const JudgeRequest& req, const Task& task, const SessionParts& parts,
                        std::chrono::steady_clock::time_point started);

// The judge's options for a request.
Options options_of(const JudgeRequest& req, std::chrono::steady_clock::time_point started);

// The caller's environment as KEY=VALUE strings.
std::vector<std::string> current_environment();

}  // namespace kevo::native::judge
