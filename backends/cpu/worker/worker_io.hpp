// What every evaluation worker (kevo-cpu-worker, kevo-cuda-worker) does the
// same way around the judge: read the request, hide and use the nonce'd
// result channel, load libraries, end without running static destructors.
// The protocol is in kevo/cpu/protocol.hpp and docs/verdicts.md.
#pragma once

#include "judge.hpp"

#include "kevo/sandbox/seccomp.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>

namespace kevo::cpu::worker {

// The program name used in messages that cannot go through the channel.
void set_program_name(const char* name);

// Parses "--request-fd N --result-fd M"; prints usage and returns false when
// they are missing or not open.
bool parse_fds(int argc, char** argv, int& request_fd, int& result_fd, const char* what);

// Reads the request from request_fd (then closes it), moves the result pipe
// to a random high descriptor and remembers the nonce; a bad request ends
// the process with a fatal event.
nlohmann::json open_channel(int request_fd, int result_fd);
int result_channel();
const std::string& channel_nonce();

// _Exit after flushing stdio: static destructors of candidate code must not
// run after the verdict (a crash there would contradict it).
[[noreturn]] void finish(int code);
// Sends a "fatal" event (or prints, before the channel exists) and exits
// with protocol::kWorkerFatalExit.
[[noreturn]] void fatal(const std::string& kind, const std::string& message);

// The request fields every worker reads.
struct Request {
  Options opt;
  std::filesystem::path task_dir, candidate_so, reference_so;
  bool seccomp = true;
  // "seccomp_policy": which variant (the CUDA backend asks for "cuda").
  kevo::sandbox::Policy policy = kevo::sandbox::Policy::cpu;
  int open_files = 0;
};
// Throws std::exception on a missing or ill-typed field.
Request parse_request(const nlohmann::json& req, std::chrono::steady_clock::time_point started);

void* open_library(const std::filesystem::path& path, const char* what);
Entry entry_of(void* handle);

// Copies the candidate library into the scratch dir (its own inode: dlopen
// shares one handle, and static state, between paths of one file, and the
// reference and an identical candidate come from the same cache entry).
std::filesystem::path local_copy(const std::filesystem::path& so);

// Installs the seccomp policy (reporting violations on the channel) and
// lowers RLIMIT_NOFILE; a failure to install is fatal.
void lock_down(bool seccomp, int open_files, kevo::sandbox::Policy policy = kevo::sandbox::Policy::cpu);

// The worker's libraries, in the order that keeps candidate code inside the
// policy: the trusted reference (a failure is fatal), a private copy of the
// candidate, lock_down(), then the candidate (a load failure is sent as a
// "load_error" event and ends the worker). candidate is null in mode null.
struct Libraries {
  Entry reference = nullptr;
  Entry candidate = nullptr;
};
Libraries load_libraries(const Request& r);

}  // namespace kevo::cpu::worker
