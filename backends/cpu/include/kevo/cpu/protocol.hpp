// What the CPU backend and its evaluation worker (kevo-cpu-worker) agree on.
// Documented in docs/verdicts.md ("The worker protocol").
//
// The backend starts one worker per evaluation:
//   kevo-cpu-worker --request-fd 3 --result-fd 4
// fd 3 carries one JSON request (with the per-evaluation nonce) and then EOF;
// the worker reads it, closes fd 3 and moves the result pipe (fd 4) to a
// random high descriptor. Every line the worker writes on the result pipe is
// a JSON object carrying the nonce; the backend ignores every other line and
// everything on stdout/stderr.
#pragma once

namespace kevo::cpu::protocol {

inline constexpr int kRequestFd = 3;
inline constexpr int kResultFd = 4;

// Every compiled source (reference, seed, candidate) gets an adapter appended
// that calls the task's function with the declared argument types:
//   extern "C" void kevo_cpu_entry_v1(void* const* args);
// args[k] points at buffer k, or at the value of scalar k.
inline constexpr const char* kEntrySymbol = "kevo_cpu_entry_v1";

// Worker modes.
inline constexpr const char* kModeJudge = "judge";            // candidate vs reference (+ timing)
inline constexpr const char* kModeSelfCheck = "self_check";   // reference vs a fresh copy of itself
inline constexpr const char* kModeNull = "null";              // a built-in null candidate vs reference

// Exit code of a worker that failed for its own reasons (bad request, task
// unreadable, seccomp unavailable...): it sends a "fatal" event first.
inline constexpr int kWorkerFatalExit = 3;

}  // namespace kevo::cpu::protocol
