// A non-blocking runner of sandboxed subprocesses: a poll() reactor that the
// caller drives (the CPU backend calls poll() from Backend::poll()).
//
// Every process is started with fork() followed at once by execve() in the
// child (only async-signal-safe calls in between: everything the child needs
// is prepared before fork). The child gets its own session and process group
// (setsid), the rlimits of Limits (RLIMIT_CORE always 0), a private scratch
// directory as cwd and $TMPDIR, stdin from /dev/null (or the input channel),
// and no file descriptor but the ones listed in the Spec. A wall-clock
// timeout or an output cap overrun kills the whole process group with
// SIGKILL; every child is reaped with wait4 (for its rusage) so no zombie is
// left, and the leftovers of its group are killed before it is reaped.
#pragma once

#include "kevo/sandbox/scratch_dir.hpp"
#include "kevo/sandbox/unique_fd.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kevo::sandbox {

struct Limits {
  double wall_seconds = 10.0;          // wall clock; the group is killed past it (0 = none)
  double cpu_seconds = 0.0;            // RLIMIT_CPU soft (SIGXCPU), hard = soft + 1 s (0 = none)
  std::int64_t memory_mb = 0;          // RLIMIT_AS (0 = none)
  std::int64_t file_mb = 0;            // RLIMIT_FSIZE (0 = none)
  std::int64_t output_bytes = 1 << 20; // cap on captured stdout/stderr (each when separate)
  std::int64_t result_bytes = 1 << 20; // cap on the result pipe
  int open_files = 0;                  // RLIMIT_NOFILE (0 = inherit)
  // RLIMIT_NPROC counts all processes and threads of the real user, so the
  // limit set is the user's current count plus this many (0 = inherit).
  int processes = 0;
};

struct Spec {
  std::vector<std::string> argv;       // argv[0]: a path, or a name looked up in PATH
  std::vector<std::string> env;        // the whole environment ("KEY=VALUE"); TMPDIR is set to the scratch dir
  std::filesystem::path scratch_base;  // non-empty: make a private scratch dir under it (cwd, TMPDIR)
  std::vector<std::pair<std::string, std::string>> files;  // (name, content) written into the scratch dir first
  std::filesystem::path cwd;           // used when there is no scratch dir (empty: inherit)
  Limits limits;
  bool merge_stderr = true;            // stderr goes to the same capture as stdout
  int input_fd = -1;                   // child fd of the input channel (-1: none; 0: its stdin); gets `input`, then EOF
  std::string input;
  // The input channel stays open after `input` (more comes with send(), EOF
  // with close_input()): a persistent evaluator reading request after request.
  bool keep_input_open = false;
  // poll() returns as soon as this child wrote to stdout, with the finished
  // ones so far (possibly none): its caller reads take_output() at once.
  bool wake_on_output = false;
  int result_fd = -1;                  // child fd of the result pipe (-1: none)
  // Writes only beneath the scratch dir and /dev (Landlock, where the
  // kernel has it): for compilers, which must write but only their build.
  bool confine_writes = false;
  // With confine_writes: reads only beneath these (files or folders), the
  // scratch dir and /dev; empty leaves reading free. For compilers, which
  // read what a source names (#include of a file of the user's).
  std::vector<std::string> read_dirs;
  // With confine_writes: also writable (and readable), besides the scratch
  // dir and /dev.
  std::vector<std::string> write_dirs;
  // With confine_writes: start() throws Failure when Landlock cannot be
  // applied, rather than starting the command unconfined (confine_error).
  bool confine_required = false;
};

enum class Outcome {
  exited,        // exited by itself (exit_code)
  signaled,      // killed by a signal it did not get from the runner (signal)
  timeout,       // the runner killed it past limits.wall_seconds
  output_limit,  // the runner killed it for printing more than a cap
  killed         // kill() or kill_all()
};
const char* to_string(Outcome);

struct Finished {
  std::uint64_t id = 0;
  Outcome outcome = Outcome::exited;
  int exit_code = 0;          // when it exited
  int signal = 0;             // the terminating signal, if any
  std::string output;         // stdout (and stderr when merged), at most output_bytes
  std::string error_output;   // stderr when not merged
  std::string result;         // what came through the result pipe, at most result_bytes
  bool output_capped = false; // some capture hit its cap
  double wall_seconds = 0.0;
  double user_seconds = 0.0, system_seconds = 0.0;
  std::string confine_error;  // confine_writes asked for and Landlock not available: why
  std::int64_t max_rss_kb = 0;
  ScratchDir scratch;         // still present; removed when this Finished is destroyed
};

class Runner {
 public:
  Runner();
  ~Runner();   // kills and reaps whatever still runs
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Starts a process. Throws Failure when it cannot be started (including
  // an executable that cannot be executed).
  std::uint64_t start(Spec spec);

  // Waits at most max_wait for processes to finish; returns the finished ones
  // (it returns early as soon as at least one finished).
  std::vector<Finished> poll(std::chrono::milliseconds max_wait);

  // Kills the group of a running process; its Finished (outcome killed) comes
  // from a later poll(). False when the id is not running.
  bool kill(std::uint64_t id);
  // Kills every group and reaps every child now (blocking, briefly).
  // Returns the ids that were running; their results are dropped.
  std::vector<std::uint64_t> kill_all();

  std::size_t running() const { return procs_.size(); }

  // A running child started with keep_input_open: appends to its input
  // (sent as the channel takes it), or closes the channel (EOF). False when
  // the id is not running or its input is closed.
  bool send(std::uint64_t id, std::string data);
  bool close_input(std::uint64_t id);
  // Moves out what a running child wrote so far on stdout (and on stderr,
  // when not merged); from then on its caps count what comes after. Empty
  // when the id is not running.
  std::string take_output(std::uint64_t id);
  std::string take_error_output(std::uint64_t id);
  // Sets a running child's wall-clock deadline to `seconds` from now (0:
  // none): past it the group is killed and the outcome is timeout.
  bool set_deadline(std::uint64_t id, double seconds);

  // Starts one process and waits for it (other processes finishing meanwhile
  // are kept for the next poll()).
  Finished run(Spec spec);

 private:
  struct Proc;
  void finish(Proc& p, std::vector<Finished>& out);
  void pump(Proc& p, bool final_drain);

  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, std::unique_ptr<Proc>> procs_;
  std::vector<Finished> stash_;   // finished while run() waited for another
  UniqueFd devnull_;
};

// "SIGSEGV (Segmentation fault)".
std::string signal_name(int sig);

// The user's current number of processes + threads (for RLIMIT_NPROC).
int count_user_tasks();
// Looks `name` up in PATH (the given value, "" = the engine's); returns "" if not found.
std::string find_in_path(const std::string& name, const std::string& path_value = "");

}  // namespace kevo::sandbox
