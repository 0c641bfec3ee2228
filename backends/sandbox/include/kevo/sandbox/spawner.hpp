// A trusted helper process that starts programs for a process that may not:
// the evaluation worker under the seccomp policy, which forbids fork and
// exec, still runs its tool stages (compute-sanitizer, ncu) through it.
//
// The worker creates the Spawner before it installs the policy, with every
// command it may ever need; from then on it can only ask "run command i
// within S seconds" over a socketpair, and the spawner answers with how the
// command ended. Candidate code shares the worker's memory and descriptors,
// so it can send the same requests: that gains it nothing but a run of a
// command the worker would run anyway (docs/sandbox.md).
//
// The spawner process is cloned from the caller without running fork
// handlers and then makes only async-signal-safe calls on data prepared
// before the clone, so it may be started from a multi-threaded process
// (after a CUDA context exists). It moves into its own process group, points
// its stdio at /dev/null and closes every other descriptor but its socket.
// Each command runs in a new process group of its own, with stdout and
// stderr in the command's output file (created or truncated, mode 0600),
// RLIMIT_CORE 0, default signal dispositions and PR_SET_PDEATHSIG(SIGKILL).
// Past its wall-clock limit, or as soon as the caller's end of the socket
// closes (the caller exited or was killed), the command's whole group is
// killed with SIGKILL and reaped; the spawner exits when the caller's end
// closes.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kevo::sandbox {

struct SpawnCommand {
  std::vector<std::string> argv;   // argv[0]: the program's path (no PATH lookup)
  std::filesystem::path output;    // stdout and stderr (empty: /dev/null)
  double max_wall_seconds = 60.0;  // a request may ask for less, never for more
  // Landlock for the command and everything it starts (make_ruleset in
  // isolation.hpp, put on in its process after the output file is open and
  // before execve): with `confined`, it may write only beneath `write_dirs`
  // and read or execute only beneath `read_dirs` and `write_dirs` (files or
  // folders). The ruleset is built when the Spawner starts, which throws
  // Failure when the kernel has no Landlock: a command asked to be confined
  // never runs unconfined.
  bool confined = false;
  std::vector<std::string> write_dirs, read_dirs;
  // With `confined`: Landlock's scopes too where the kernel has them (no
  // signal to, and no abstract Unix socket of, a process outside the
  // command's domain: make_ruleset).
  bool scoped = true;
  // "NAME=VALUE" entries set (or replaced) in this command's environment
  // only, over the caller's environment at the Spawner's start.
  std::vector<std::string> env;
};

struct SpawnResult {
  bool started = false;     // false: it could not be started (error says why)
  int exit_code = -1;       // when it exited by itself
  int signal = 0;           // the signal that ended it (SIGKILL after a timeout)
  bool timed_out = false;   // killed past its wall-clock limit
  double wall_seconds = 0.0;
  std::string error;        // when not started
};

class Spawner {
 public:
  Spawner() noexcept;    // no spawner process: run() throws
  // Starts the spawner process with a fixed table of commands (the
  // environment of each is the caller's at this moment, the working
  // directory the caller's). Throws Failure when it cannot be started or a
  // command has no argv.
  explicit Spawner(std::vector<SpawnCommand> commands);
  // Closes the socket and reaps the spawner (which first kills and reaps a
  // command still running). Never throws.
  ~Spawner();
  Spawner(Spawner&&) noexcept;
  Spawner& operator=(Spawner&&) noexcept;
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  // Runs command `index` and waits for it; wall_seconds <= 0 or above the
  // command's max_wall_seconds means max_wall_seconds. Works under the
  // seccomp policy (send, recv). Throws Failure for an index out of range or
  // a spawner that is gone; a command that cannot start is a result.
  SpawnResult run(std::size_t index, double wall_seconds = 0.0);

  bool valid() const noexcept { return state_ != nullptr; }
  std::size_t size() const noexcept;
  pid_t pid() const noexcept;   // the spawner process (-1: none)
  // What the destructor does, now.
  void stop() noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kevo::sandbox
