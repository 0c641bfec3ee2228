// The instant LLM server of the OpenEvolve comparison (docs/benchmarks.md,
// "Against OpenEvolve (issue 19)") in C++: the same answers as the Python
// one in tests/bench/openevolve_compare.py (`serve`), for a fraction of its
// CPU per request, so that the server is not what a fast client measures.
// Test scaffolding: HTTP/1.1 on 127.0.0.1, keep-alive, TCP_NODELAY, one
// write per answer, one thread (epoll).
//
//   kevo_bench_instant_llm_server --port-file F --prefix A --suffix B [--realtime] [--unix PATH]
//
// --unix PATH: it also listens on a Unix-domain socket at PATH (created
// afresh), with the same answers: what a client on the same host pays for
// HTTP without loopback TCP (docs/llm.md, `unix_socket`).
//
// --realtime: the server asks for SCHED_FIFO (priority 1) so that it answers
// at once. On a machine with fewer free cores than busy threads (the 2-core
// development machine: kevo's island, kevo's lineage thread, this server),
// the default policy left a woken server queued behind a running thread
// for up to 3 ms while the client's core sat idle (perf sched: 25-45% of
// kevo's search time). Its CPU still comes from the same cores. Refused
// without the privilege (CAP_SYS_NICE, or an RLIMIT_RTPRIO above 0): the
// server then runs under the default policy, and /stats says which.
//
// Every POST .../chat/completions is answered 200 with the bytes of file A,
// the number of chat requests answered so far (this one included), then the
// bytes of file B (the Python side splits one chat completion around that
// number); GET .../models lists one model; GET /stats gives
// {"posts", "gets", "connections", "cpu_s", "realtime"}; anything else 404. A body must
// come with a Content-Length (chunked: 411, and the connection closes);
// "Expect: 100-continue" gets its interim answer. The port goes to F (written
// to F.tmp, then renamed) once the server listens; SIGTERM ends it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>

namespace {

struct Conn {
  std::string in, out;
  bool continued = false;   // the 100 Continue of the request being read was sent
  bool closing = false;     // close once `out` is written
  bool watching_out = false;   // EPOLLOUT asked for
};

long long posts = 0, gets = 0, connections = 0;
bool realtime = false;   // SCHED_FIFO granted (--realtime)
std::string prefix, suffix;

std::string read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "instant server: cannot read %s\n", path);
    std::exit(2);
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

void answer(Conn& c, int status, std::string_view body) {
  const char* reason = status == 200 ? "OK" : status == 404 ? "Not Found" : "Length Required";
  char head[160];
  const int n = std::snprintf(head, sizeof head,
                              "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                              "Connection: keep-alive\r\n\r\n",
                              status, reason, body.size());
  c.out.append(head, static_cast<std::size_t>(n));
  c.out.append(body);
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// Answers every complete request in c.in.
void serve(Conn& c) {
  while (!c.closing) {
    const std::size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) return;
    const std::string_view head(c.in.data(), end);
    std::size_t length = 0;
    bool expect = false, chunked = false;
    std::size_t line = head.find("\r\n");
    const std::string_view request = head.substr(0, line);
    while (line != std::string_view::npos) {
      const std::size_t next = head.find("\r\n", line + 2);
      const std::string_view h = head.substr(line + 2, next == std::string_view::npos ? std::string_view::npos : next - line - 2);
      line = next;
      const std::size_t colon = h.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string key = lower(h.substr(0, colon));
      std::string_view value = h.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (key == "content-length") length = std::strtoull(std::string(value).c_str(), nullptr, 10);
      else if (key == "expect" && lower(value).find("100-continue") != std::string::npos) expect = true;
      else if (key == "transfer-encoding" && lower(value).find("chunked") != std::string::npos) chunked = true;
    }
    if (chunked) {
      answer(c, 411, R"({"error": {"message": "send a Content-Length"}})");
      c.closing = true;
      return;
    }
    if (c.in.size() < end + 4 + length) {
      if (expect && !c.continued) {
        c.continued = true;
        c.out += "HTTP/1.1 100 Continue\r\n\r\n";
      }
      return;
    }
    c.continued = false;
    const std::size_t sp1 = request.find(' ');
    const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : request.find(' ', sp1 + 1);
    const std::string method(request.substr(0, sp1));
    const std::string path(sp1 == std::string_view::npos ? std::string_view() : request.substr(sp1 + 1, sp2 - sp1 - 1));
    c.in.erase(0, end + 4 + length);
    if (method == "POST" && ends_with(path, "/chat/completions")) {
      ++posts;
      std::string body = prefix;
      body += std::to_string(posts);
      body += suffix;
      answer(c, 200, body);
    } else if (method == "GET" && ends_with(path, "/models")) {
      ++gets;
      answer(c, 200, R"({"object": "list", "data": [{"id": "bench", "object": "model"}]})");
    } else if (method == "GET" && path == "/stats") {
      char stats[200];
      const int n = std::snprintf(stats, sizeof stats,
                                  R"({"posts": %lld, "gets": %lld, "connections": %lld, "cpu_s": %.6f, "realtime": %s})",
                                  posts, gets, connections, cpu_seconds(), realtime ? "true" : "false");
      answer(c, 200, std::string_view(stats, static_cast<std::size_t>(n)));
    } else {
      answer(c, 404, R"({"error": {"message": "no such endpoint"}})");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char *port_file = nullptr, *prefix_file = nullptr, *suffix_file = nullptr, *unix_path = nullptr;
  bool want_realtime = false, bad = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--realtime") want_realtime = true;
    else if (i + 1 >= argc) bad = true;
    else if (a == "--port-file") port_file = argv[++i];
    else if (a == "--prefix") prefix_file = argv[++i];
    else if (a == "--suffix") suffix_file = argv[++i];
    else if (a == "--unix") unix_path = argv[++i];
    else bad = true;
  }
  if (bad || !port_file || !prefix_file || !suffix_file) {
    std::fprintf(stderr, "usage: %s --port-file F --prefix A --suffix B [--realtime] [--unix PATH]\n", argv[0]);
    return 2;
  }
  if (want_realtime) {
    sched_param sp{};
    sp.sched_priority = 1;
    realtime = ::sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
    if (!realtime) std::fprintf(stderr, "instant server: SCHED_FIFO refused (%s): default policy\n", std::strerror(errno));
  }
  prefix = read_file(prefix_file);
  suffix = read_file(suffix_file);

  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd, 1024) != 0) {
    std::perror("instant server: bind/listen");
    return 1;
  }
  socklen_t len = sizeof a;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  int ufd = -1;
  if (unix_path) {
    sockaddr_un u{};
    u.sun_family = AF_UNIX;
    if (std::strlen(unix_path) >= sizeof u.sun_path) {
      std::fprintf(stderr, "instant server: --unix path longer than %zu bytes\n", sizeof u.sun_path - 1);
      return 2;
    }
    std::strcpy(u.sun_path, unix_path);
    ::unlink(unix_path);
    ufd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (::bind(ufd, reinterpret_cast<sockaddr*>(&u), sizeof u) != 0 || ::listen(ufd, 1024) != 0) {
      std::perror("instant server: bind/listen on the Unix socket");
      return 1;
    }
  }
  const std::string tmp = std::string(port_file) + ".tmp";
  {
    std::ofstream f(tmp);
    f << ntohs(a.sin_port);
  }
  std::rename(tmp.c_str(), port_file);

  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = lfd;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  if (ufd >= 0) {
    ev.data.fd = ufd;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, ufd, &ev);
  }
  std::map<int, Conn> conns;
  epoll_event events[64];
  char buf[65536];
  while (true) {
    const int n = ::epoll_wait(ep, events, 64, -1);
    if (n < 0 && errno == EINTR) continue;
    for (int k = 0; k < n; ++k) {
      const int fd = events[k].data.fd;
      if (fd == lfd || fd == ufd) {
        while (true) {
          const int c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) break;
          if (fd == lfd) ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ++connections;
          conns[c];
          epoll_event cev{};
          cev.events = EPOLLIN;
          cev.data.fd = c;
          ::epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
        }
        continue;
      }
      Conn& c = conns[fd];
      bool gone = false;
      if (events[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        while (true) {
          const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
          if (r > 0) {
            c.in.append(buf, static_cast<std::size_t>(r));
            continue;
          }
          if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) gone = true;
          if (r < 0 && errno == EINTR) continue;
          break;
        }
        serve(c);
      }
      // One write per answer (or per batch of answers): what the socket
      // does not take now waits for EPOLLOUT.
      while (!gone && !c.out.empty()) {
        const ssize_t w = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (w > 0) {
          c.out.erase(0, static_cast<std::size_t>(w));
          continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        gone = true;
      }
      if (!gone && c.closing && c.out.empty()) gone = true;
      if (gone) {
        ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
        conns.erase(fd);
        continue;
      }
      if (c.watching_out != !c.out.empty()) {   // no system call per request otherwise
        c.watching_out = !c.out.empty();
        epoll_event cev{};
        cev.events = EPOLLIN | (c.watching_out ? static_cast<unsigned>(EPOLLOUT) : 0u);
        cev.data.fd = fd;
        ::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &cev);
      }
    }
  }
}
