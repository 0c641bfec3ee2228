// Starts tests/llm/fake_llm_server.py on 127.0.0.1 (a free port) for one
// test and stops it afterwards. The script and the request log live in a
// fresh temporary folder.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace kevo::test {

class FakeServer {
 public:
  // With `unix_socket`, it listens on a Unix-domain socket (socket_path())
  // instead of TCP.
  explicit FakeServer(const nlohmann::json& script, const std::string& tag = "srv", bool unix_socket = false) {
    dir_ = std::filesystem::temp_directory_path() /
           ("kevo-fake-llm-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "script.json") << script.dump();
    const std::string py = KEVO_TEST_PYTHON, server = KEVO_FAKE_LLM_SERVER;
    std::vector<std::string> args = {py, server, "--script", (dir_ / "script.json").string(),
                                     "--log", (dir_ / "log.jsonl").string(), "--port-file",
                                     (dir_ / "port").string()};
    if (unix_socket) {
      args.push_back("--unix");
      args.push_back(socket_path());
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (posix_spawn(&pid_, py.c_str(), &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    for (int k = 0; k < 800 && !std::filesystem::exists(dir_ / "port"); ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    std::ifstream in(dir_ / "port");
    in >> port_;
    listening_ = unix_socket ? std::filesystem::exists(dir_ / "port") && std::filesystem::exists(socket_path()) : port_ > 0;
  }
  ~FakeServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  bool up() const { return listening_; }
  std::string socket_path() const { return (dir_ / "llm.sock").string(); }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  // The request log, one object per request.
  std::vector<nlohmann::json> log() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(dir_ / "log.jsonl");
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool listening_ = false;
};

}  // namespace kevo::test
