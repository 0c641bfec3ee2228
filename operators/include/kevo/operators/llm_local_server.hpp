// A local model server that kevo starts and stops itself (llm.local_server,
// docs/llm.md#a-local-model): an OpenAI-compatible server (llama.cpp's
// llama-server by default) on 127.0.0.1, started before the first request
// or the start-up probe, stopped by its PID when the run ends, fails or is
// interrupted (and killed by the kernel if kevo dies: PR_SET_PDEATHSIG).
#pragma once

#include "kevo/core/strict_json.hpp"

#include <nlohmann/json.hpp>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kevo::operators::llm {

struct LocalServerConfig {
  // The server's argv before kevo's arguments; [0] a path, or a name looked
  // up in PATH and then in <llm home>/bin.
  std::vector<std::string> command = {"llama-server"};
  std::filesystem::path model_file;   // resolved: an existing file
  std::vector<std::string> args;      // more arguments, after kevo's
  int port = 0;                       // 0: a free port of 127.0.0.1, chosen at start
  double startup_seconds = 120.0;     // until it answers its readiness check
  int threads = 0;                    // --threads (0: the server's default)
  std::string ready_path = "/health"; // GET answered 200 once the model is loaded
  // Resolved by parse: the executable's path, and where the config is.
  std::filesystem::path executable;
  std::string source_file, pointer;
};

// Where scripts/setup-llm.sh installs the server and the models:
// $KEVO_LLM_HOME, else $XDG_DATA_HOME/kevo/llm, else $HOME/.local/share/kevo/llm.
std::filesystem::path llm_home();
// The executable for `name` (a path, or PATH, or <llm home>/bin); "" if none.
std::filesystem::path find_server_executable(const std::string& name);
// The model file for `name` (absolute, or relative to `base`, or in <llm
// home>/models); "" if none exists.
std::filesystem::path find_model_file(const std::string& name, const std::filesystem::path& base);

class LocalServer {
 public:
  // Starts the server and waits until GET <ready_path> answers 200. Throws
  // Failure naming the config key, with the server's last log lines, when
  // it exits or does not get ready in time.
  explicit LocalServer(const LocalServerConfig& config);
  ~LocalServer();   // SIGTERM, up to 5 s, then SIGKILL; reaped
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // http://127.0.0.1:PORT/v1
  std::string base_url() const;
  double startup_seconds() const { return startup_s_; }

 private:
  void stop();
  std::string log_tail() const;

  pid_t pid_ = -1;
  int port_ = 0;
  double startup_s_ = 0.0;
  std::filesystem::path log_;
};

// A port of 127.0.0.1 that nothing listens on now.
int free_local_port();

// The "local_server" object of the "llm" section (absent: none). Resolves
// the executable and the model file now: a missing one is an InputError
// naming the key and where kevo looked (scripts/setup-llm.sh installs
// both).
std::optional<LocalServerConfig> parse_local_server(StrictObject& llm_section, const std::filesystem::path& base);
nlohmann::json to_json(const LocalServerConfig&);

}  // namespace kevo::operators::llm
