// What every judge process (the CPU and CUDA workers) does the same way
// around the protocol: read the request, keep the nonce'd result channel,
// write events, end without running static destructors. The protocol is in
// kevo/native/protocol.hpp and docs/verdicts.md.
#pragma once

#include "kevo/native/protocol.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace kevo::native::judge {

// The program name used in messages that cannot go through the channel.
void set_program_name(const char* name);

// Parses "--request-fd N --result-fd M"; prints usage and returns false when
// they are missing or not open.
bool parse_fds(int argc, char** argv, int& request_fd, int& result_fd, const char* what);

// Reads the request from request_fd (then closes it) and keeps the result
// channel and the nonce; a bad request ends the process with a fatal event.
JudgeRequest open_channel(int request_fd, int result_fd);
int result_channel();

// Writes one event line (adds the nonce).
void emit(nlohmann::json j);

// _Exit after flushing stdio: static destructors must not run after the
// verdict.
[[noreturn]] void finish(int code);
// Sends a "fatal" event (or prints, before the channel exists) and exits
// with kJudgeFatalExit.
[[noreturn]] void fatal(const std::string& kind, const std::string& message);

}  // namespace kevo::native::judge
