#include "kevo/operators/llm_local_server.hpp"

#include "kevo/core/error.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace kevo::operators::llm {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// GET http://127.0.0.1:port<path>: the HTTP status, 0 when nothing answered.
long get_status(int port, const std::string& path) {
  CURL* c = curl_easy_init();
  if (!c) return 0;
  const std::string url = fmt::format("http://127.0.0.1:{}{}", port, path);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 500L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, +[](char*, size_t s, size_t n, void*) { return s * n; });
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  return status;
}

std::string where(const LocalServerConfig& c, const std::string& key) {
  return fmt::format("{}: {}/local_server/{}", c.source_file, c.pointer, key);
}

}  // namespace

fs::path llm_home() {
  if (const char* h = std::getenv("KEVO_LLM_HOME"); h && *h) return h;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return fs::path(x) / "kevo" / "llm";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".local" / "share" / "kevo" / "llm";
  return {};
}

fs::path find_server_executable(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return executable(name) ? fs::path(name) : fs::path();
  if (const char* path = std::getenv("PATH")) {
    std::istringstream in(path);
    for (std::string dir; std::getline(in, dir, ':');)
      if (!dir.empty() && executable(fs::path(dir) / name)) return fs::path(dir) / name;
  }
  const fs::path home = llm_home();
  if (!home.empty() && executable(home / "bin" / name)) return home / "bin" / name;
  return {};
}

fs::path find_model_file(const std::string& name, const fs::path& base) {
  std::error_code ec;
  const fs::path p(name);
  if (name.empty()) return {};
  if (p.is_absolute()) return fs::is_regular_file(p, ec) ? p : fs::path();
  if (fs::is_regular_file(base / p, ec)) return base / p;
  const fs::path home = llm_home();
  if (!home.empty() && fs::is_regular_file(home / "models" / p, ec)) return home / "models" / p;
  return {};
}

int free_local_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) throw Failure(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int e = errno;
    ::close(s);
    throw Failure(std::string("choosing a free port of 127.0.0.1: ") + std::strerror(e));
  }
  ::close(s);
  return ntohs(a.sin_port);
}

std::optional<LocalServerConfig> parse_local_server(StrictObject& llm, const fs::path& base) {
  auto o = llm.optional_object("local_server");
  if (!o) return std::nullopt;
  LocalServerConfig c;
  c.source_file = llm.file();
  c.pointer = llm.pointer();
  c.command = o->strings("command", c.command);
  if (c.command.empty() || c.command[0].empty()) o->fail("command", "the server's command, e.g. [\"llama-server\"]");
  c.executable = find_server_executable(c.command[0]);
  const fs::path home = llm_home();
  if (c.executable.empty())
    o->fail("command", fmt::format("an executable: a path, or a name in PATH or in {} ('{}' is neither; "
                                   "scripts/setup-llm.sh installs llama-server there)",
                                   (home / "bin").string(), c.command[0]));
  const std::string model = o->string("model_file");
  c.model_file = find_model_file(model, base);
  if (c.model_file.empty())
    o->fail("model_file", fmt::format("an existing model file: absolute, relative to the config's folder, or in {} "
                                      "('{}' is none of these; scripts/setup-llm.sh installs "
                                      "SmolLM2-135M-Instruct.Q4_1.gguf there)",
                                      (home / "models").string(), model));
  c.args = o->strings("args", c.args);
  c.port = static_cast<int>(o->integer("port", 0, 0, 65535));
  c.startup_seconds = o->number("startup_seconds", c.startup_seconds, 0.1, 3600.0);
  c.threads = static_cast<int>(o->integer("threads", 0, 0, 4096));
  c.ready_path = o->string("ready_path", c.ready_path);
  if (c.ready_path.empty() || c.ready_path[0] != '/') o->fail("ready_path", "a URL path starting with '/'");
  o->finish();
  return c;
}

nlohmann::json to_json(const LocalServerConfig& c) {
  // What parse_local_server reads back (a resume parses the saved config).
  return {{"command", c.command},
          {"model_file", c.model_file.string()},
          {"args", c.args},
          {"port", c.port},
          {"startup_seconds", c.startup_seconds},
          {"threads", c.threads},
          {"ready_path", c.ready_path}};
}

LocalServer::LocalServer(const LocalServerConfig& config) {
  port_ = config.port > 0 ? config.port : free_local_port();
  const char* tmp = std::getenv("TMPDIR");
  log_ = fs::path(tmp && *tmp ? tmp : "/tmp") / fmt::format("kevo-llm-server-{}-{}.log", ::getpid(), port_);
  std::vector<std::string> argv = config.command;
  argv[0] = config.executable.string();
  for (const std::string& a : {std::string("--model"), config.model_file.string(), std::string("--host"),
                               std::string("127.0.0.1"), std::string("--port"), std::to_string(port_)})
    argv.push_back(a);
  if (config.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(config.threads)});
  argv.insert(argv.end(), config.args.begin(), config.args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  const int log_fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log_fd < 0) throw Failure(fmt::format("cannot create the local LLM server's log {}: {}", log_.string(), std::strerror(errno)));
  const auto t0 = Clock::now();
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(log_fd);
    throw Failure(std::string("fork (the local LLM server): ") + std::strerror(errno));
  }
  if (pid_ == 0) {
    // Dies with kevo, whatever ends it.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::close(log_fd);

  const auto deadline = t0 + std::chrono::duration<double>(config.startup_seconds);
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      const std::string how = WIFEXITED(st) ? fmt::format("exited with code {}", WEXITSTATUS(st))
                                            : fmt::format("was killed by signal {}", WTERMSIG(st));
      throw Failure(fmt::format("{}: the local LLM server {} while it started (port {}; its log ends: {})",
                                where(config, "command"), how, port_, log_tail()));
    }
    if (get_status(port_, config.ready_path) == 200) break;
    if (Clock::now() > deadline) {
      const std::string tail = log_tail();
      stop();
      throw Failure(fmt::format("{}: the local LLM server did not answer GET {} on port {} within {} s "
                                "(local_server.startup_seconds; its log ends: {})",
                                where(config, "startup_seconds"), config.ready_path, port_, config.startup_seconds,
                                tail));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  startup_s_ = std::chrono::duration<double>(Clock::now() - t0).count();
}

LocalServer::~LocalServer() {
  stop();
  std::error_code ec;
  fs::remove(log_, ec);
}

void LocalServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  int st = 0;
  while (::waitpid(pid_, &st, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
}

std::string LocalServer::base_url() const { return fmt::format("http://127.0.0.1:{}/v1", port_); }

std::string LocalServer::log_tail() const {
  std::ifstream in(log_, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  if (s.size() > 600) s = "..." + s.substr(s.size() - 600);
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s.empty() ? std::string("(empty)") : s;
}

}  // namespace kevo::operators::llm
