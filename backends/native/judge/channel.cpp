#include "channel.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace kevo::native::judge {

namespace {

int g_result_fd = -1;
std::string g_nonce;
const char* g_program = "kevo-worker";

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t left = s.size();
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > (1u << 20)) fatal("bad_request", "request larger than 1 MiB");
  }
  return out;
}

}  // namespace

void set_program_name(const char* name) { g_program = name; }

bool parse_fds(int argc, char** argv, int& request_fd, int& result_fd, const char* what) {
  request_fd = result_fd = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--request-fd") request_fd = std::atoi(argv[i + 1]);
    else if (a == "--result-fd") result_fd = std::atoi(argv[i + 1]);
  }
  if (request_fd < 0 || result_fd < 0 || ::fcntl(request_fd, F_GETFD) < 0 || ::fcntl(result_fd, F_GETFD) < 0) {
    std::fprintf(stderr, "usage: %s --request-fd N --result-fd M\n%s; the engine starts it.\n", g_program, what);
    return false;
  }
  return true;
}

JudgeRequest open_channel(int request_fd, int result_fd) {
  const std::string text = read_all(request_fd);
  ::close(request_fd);
  // Kernel hosts must not inherit the channel.
  ::fcntl(result_fd, F_SETFD, FD_CLOEXEC);
  g_result_fd = result_fd;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_object() && j.contains("nonce") && j["nonce"].is_string()) g_nonce = j["nonce"].get<std::string>();
  try {
    return judge_request_from_json(j);
  } catch (const std::exception& e) {
    fatal("bad_request", std::string("bad request: ") + e.what());
  }
}

int result_channel() { return g_result_fd; }

void emit(nlohmann::json j) {
  if (g_result_fd < 0) return;
  j["nonce"] = g_nonce;
  write_all(g_result_fd, "\n" + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void finish(int code) {
  std::fflush(nullptr);
  std::_Exit(code);
}

void fatal(const std::string& kind, const std::string& message) {
  if (g_result_fd >= 0) {
    emit({{"event", "fatal"}, {"kind", kind}, {"message", message}});
  } else {
    std::fprintf(stderr, "%s: %s: %s\n", g_program, kind.c_str(), message.c_str());
  }
  finish(kJudgeFatalExit);
}

}  // namespace kevo::native::judge
