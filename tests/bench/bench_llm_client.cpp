// LLM client throughput and added latency against a loopback server that
// answers instantly (docs/benchmarks.md#llm-client). The server runs in this
// process on its own threads: one per keep-alive connection, a canned
// OpenAI-style reply to every request.
//
// Targets: >= 1,000 requests/s per rank; <= 1 ms latency added by the client
// per request over a bare blocking socket round trip with the same bytes.
//
// usage: kevo_bench_llm_client [requests] [concurrency]
#include "kevo/operators/llm_client.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {
using namespace kevo::operators::llm;
using Clock = std::chrono::steady_clock;

const std::string kReplyBody =
    R"({"id":"b","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"```cpp\nint x;\n```"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":5}})";

// Reads one HTTP request (headers + Content-Length body) from `fd` using
// `buf` as carry-over; false at EOF.
bool read_request(int fd, std::string& buf) {
  char tmp[65536];
  while (true) {
    const auto end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::size_t len = 0;
      const auto cl = buf.find("Content-Length:");
      if (cl != std::string::npos && cl < end) len = std::strtoul(buf.c_str() + cl + 15, nullptr, 10);
      if (buf.size() >= end + 4 + len) {
        buf.erase(0, end + 4 + len);
        return true;
      }
    }
    const ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<std::size_t>(n));
  }
}

class InstantServer {
 public:
  InstantServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 1024) != 0) std::abort();
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accept_thread_ = std::thread([this] {
      while (true) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        int on = 1;
        ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        std::thread([c] {
          const std::string resp = fmt::format(
              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}", kReplyBody.size(),
              kReplyBody);
          std::string buf;
          while (read_request(c, buf))
            if (::write(c, resp.data(), resp.size()) != static_cast<ssize_t>(resp.size())) break;
          ::close(c);
        }).detach();
      }
    });
  }
  ~InstantServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    accept_thread_.join();
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread accept_thread_;
};

// The bare round trip: one blocking keep-alive socket, the same request bytes.
double raw_round_trip_us(int port, const std::string& body, int n) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) std::abort();
  int on = 1;
  ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  const std::string req = fmt::format(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "
      "{}\r\n\r\n{}",
      body.size(), body);
  std::string buf;
  char tmp[65536];
  const auto t0 = Clock::now();
  for (int k = 0; k < n; ++k) {
    if (::write(s, req.data(), req.size()) != static_cast<ssize_t>(req.size())) std::abort();
    buf.clear();
    while (buf.find(kReplyBody) == std::string::npos) {
      const ssize_t r = ::read(s, tmp, sizeof tmp);
      if (r <= 0) std::abort();
      buf.append(tmp, static_cast<std::size_t>(r));
    }
  }
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
  ::close(s);
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  const int requests = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int concurrency = argc > 2 ? std::atoi(argv[2]) : 32;
  InstantServer server;
  Model m;
  m.name = "bench";
  m.base_url = fmt::format("http://127.0.0.1:{}/v1", server.port());
  m.model = "bench";
  m.max_tokens = 64;
  m.concurrency = concurrency;
  const Conversation conv{"You write kernels.", {{"user", std::string(2000, 'x')}}};

  // Throughput: `requests` requests, `concurrency` in flight.
  double rps = 0;
  {
    Client c({m}, ClientOptions{}, BudgetLimits{});
    for (int k = 0; k < 64; ++k) c.submit(0, conv);   // warm up the connection pool
    while (c.in_flight() > 0) c.poll(std::chrono::milliseconds(10));
    const auto t0 = Clock::now();
    for (int k = 0; k < requests; ++k) c.submit(0, conv);
    int ok = 0, done = 0;
    while (done < requests)
      for (auto& [t, r] : c.poll(std::chrono::milliseconds(10))) {
        ++done;
        ok += r.ok;
      }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    rps = requests / s;
    if (ok != requests) fmt::print("WARNING: {} of {} requests failed\n", requests - ok, requests);
  }

  // Latency: one request at a time, client vs a bare socket round trip.
  double client_us = 0, raw_us = 0;
  {
    Model one = m;
    one.concurrency = 1;
    Client c({one}, ClientOptions{}, BudgetLimits{});
    const int n = 1000;
    c.submit(0, conv);
    while (c.in_flight() > 0) c.poll(std::chrono::milliseconds(10));
    // Wall time from submit() to the poll() that returns the result: what
    // the island sees, body building and reply parsing included.
    const auto t0 = Clock::now();
    for (int k = 0; k < n; ++k) {
      c.submit(0, conv);
      std::vector<std::pair<std::uint64_t, ChatResult>> got;
      while (got.empty()) got = c.poll(std::chrono::milliseconds(50));
      if (!got.front().second.ok) std::abort();
    }
    client_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
    raw_us = raw_round_trip_us(server.port(), request_body(one, conv), n);
  }
  const double added_us = client_us - raw_us;   // may come out negative: within noise
  fmt::print("llm client, loopback instant server, {} requests, concurrency {}\n", requests, concurrency);
  fmt::print("  throughput        {:9.0f} requests/s   target >= 1000   ratio {:.2f}x\n", rps, rps / 1000.0);
  fmt::print("  latency (mean)    {:9.1f} us client, {:.1f} us bare socket round trip\n", client_us, raw_us);
  fmt::print("  added latency     {:9.1f} us           target <= 1000   ratio {:.2f}x headroom\n", added_us,
             1000.0 / std::max(added_us, 1.0));
  return 0;
}
