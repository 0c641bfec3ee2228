#include "profile.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <thread>

extern char** environ;

namespace kevo::cuda::worker {

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, const std::filesystem::path& log, double seconds) {
  ChildResult r;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  // Its own group, so that a timeout kills the tool and what it started.
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &fa, &at, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (rc != 0) return r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return r;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = true;
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);   // anything the tool left behind
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

std::string sanitizer_summary(const std::string& report) {
  // Keep the "=========" lines that describe errors, not the banner.
  std::istringstream in(report);
  std::string out;
  int kept = 0;
  for (std::string line; std::getline(in, line) && kept < 8;) {
    if (line.rfind("=========", 0) != 0) continue;
    std::string body = trim(line.substr(9));
    if (body.empty() || body.rfind("COMPUTE-SANITIZER", 0) == 0 || body.rfind("Saved host backtrace", 0) == 0 ||
        body.rfind("Host Frame", 0) == 0)
      continue;
    out += (out.empty() ? "" : "; ") + body;
    ++kept;
  }
  if (out.empty()) out = "(no error text; see the worker output)";
  if (out.size() > 1200) out = out.substr(0, 1200) + "...";
  return out;
}

std::string ncu_failure(bool timed_out, int exit_code, const std::string& console) {
  // Each known condition adds a fixed text: what the candidate prints can
  // at most choose among these, not spell anything out.
  static const std::pair<const char*, const char*> known[] = {
      {"ERR_NVGPUCTRPERM", "the GPU's performance counters are not open to this user (ERR_NVGPUCTRPERM)"},
      {"No kernels were profiled", "no kernel was profiled"},
      {"The application returned an error code", "the profiled process ended with an error"},
  };
  std::string out = "profiler: ncu failed (" + (timed_out ? std::string("timed out") : "exit code " + std::to_string(exit_code)) + ")";
  std::string seen;
  for (const auto& [token, text] : known)
    if (console.find(token) != std::string::npos) seen += (seen.empty() ? "" : "; ") + std::string(text);
  out += seen.empty() ? "; its console is not quoted (the candidate's process writes to it)" : ": " + seen;
  return out;
}

}  // namespace kevo::cuda::worker
