// The two sides the judge calls: the candidate and the reference. A remote
// endpoint is a kernel host process (host.hpp) that holds the side's code
// and sees only its own argument buffers, in a shared arena; it is stopped
// (SIGSTOP) whenever it is not making a call, so that nothing of it runs
// while the judge or the other side works. A local endpoint runs trusted
// code (the built-in null candidates) in the judge. Documented in
// docs/verdicts.md and docs/sandbox.md.
#pragma once

#include "space.hpp"

#include "kevo/native/protocol.hpp"
#include "kevo/sandbox/isolation.hpp"
#include "kevo/sandbox/unique_fd.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kevo::native::judge {

struct HostControl;

// How a kernel host process ended, for the verdict.
struct HostEnd {
  bool ended = false;
  int exit_code = 0;
  int signal = 0;
  std::int64_t violation = -1;          // the forbidden system call, if the SIGSYS handler saw one
  std::uint64_t alloc_failed_bytes = 0; // the last allocation that failed
  double cpu_seconds = 0.0;
  std::int64_t max_rss_kb = 0;
  bool resisted_stop = false;           // it did not stop when the judge stopped it
  bool terminated = false;              // the judge ended it after its last call (terminate())
};

struct CallResult {
  enum class Kind { ok, threw, bad_alloc, died };
  Kind kind = Kind::ok;
  std::string message;   // threw / bad_alloc: the exception's text
  double ns = 0.0;       // the judge's monotonic clock around the call, resume to finish
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // The buffers of one call of case c, where this endpoint's code sees
  // them; their contents are whatever the last call left. Valid until the
  // next arguments().
  virtual ArgSet& arguments(const Task& task, const Case& c) = 0;
  // Makes the call on `a` (from arguments()).
  virtual CallResult call(ArgSet& a, bool poison_allocations) = 0;
  // After a call that died: how.
  virtual const HostEnd& end() const = 0;
  // Whether its process is still stopped, as the judge left it after its
  // last call (a host that resumed itself would run beside the other side).
  virtual bool still_stopped() const { return true; }
  // A round trip that runs none of the side's code (a device's host: an
  // empty kernel in its context), outside any timed window: the next timed
  // call then finds the side's context current on the device, as the
  // reference's call finds the judge's. Not timed; false: it died.
  virtual bool prime() { return true; }
  // A null call as the calibration made them (primed, then an idle
  // synchronize and the answer, none of the side's code), its round trip
  // in `ns`; false where the side has none (not a device's host) or died.
  // Made after the side's code is loaded, so that code may have slowed it.
  virtual bool null_call(double& ns) {
    (void)ns;
    return false;
  }
};

// Trusted code in the judge's own process (null candidates).
class LocalEndpoint final : public Endpoint {
 public:
  using Kernel = std::function<void(ArgSet&, const Case&)>;
  LocalEndpoint(Kernel kernel, Space& space) : kernel_(std::move(kernel)), space_(space) {}
  ArgSet& arguments(const Task& task, const Case& c) override;
  CallResult call(ArgSet& a, bool poison_allocations) override;
  const HostEnd& end() const override { return end_; }

 private:
  Kernel kernel_;
  Space& space_;
  ArgSet args_;
  Case case_;
  HostEnd end_;
};

// A host's argument buffers in device memory instead of its shared-memory
// arena (CUDA): the judge allocated and exported it (`fd`, given to the
// host as descriptor 6) and sees it at `base` in its own context.
struct DeviceArena {
  int fd = -1;
  char* base = nullptr;
  std::size_t bytes = 0;
};

struct HostSpec {
  std::string program;        // the judge's own executable (run as `--host`)
  std::string library;        // the shared object to load
  std::string role;           // "candidate" / "reference": for messages
  bool seccomp = true;
  std::string policy = "cpu";
  bool namespaces = true;
  bool trusted = false;       // the reference: never dumpable
  HostLimits limits;
  std::size_t arena_bytes = 0;   // the largest case's buffers (layout_bytes, kArenaAlign)
  std::vector<std::string> env;
  const DeviceArena* device = nullptr;   // the buffers on a device (arena_bytes is then its size)
  std::vector<std::string> host_args;    // more `--key value` pairs for the flavour's host
  // Null calls timed before the side's code is loaded (null_ns()): the
  // round trip of a call as the judge's clock sees it, which no code of
  // the side can have slowed. `before_null_call` runs before each, as the
  // judge's preparation runs before a timed call.
  int calibrate = 0;
  std::function<void()> before_null_call;
  // Runs after each of them (the host stopped again): a device flavour
  // takes its probe of the GPU, made at the null call's answer (on_answer
  // below), after a call of a host with no code of the side.
  std::function<void()> after_null_call;
  // Runs right after the answer of every call and null call that stops
  // the host, its SIGSTOP sent but not yet waited for, given the judge's
  // clock at the answer: a device flavour's probe of the GPU, so that the
  // probe's end does not depend on how long the stop takes (GPU work the
  // host left running runs on through the stop).
  std::function<void(std::chrono::steady_clock::time_point answered)> on_answer;
  // Held (the returned token alive) around all of the calibration's null
  // calls: a device's shared slot, so that their GPU work neither waits
  // behind another worker's timing (a null round trip inflated by it would
  // be taken off every timed call: a speedup) nor runs inside one.
  std::function<std::shared_ptr<void>()> hold_for_calibration;
};

// A kernel host process. The constructor starts it; wait_ready() waits
// until its code is loaded (or it failed) and stops it (so that a judge
// starts both of its hosts before it waits for either).
class RemoteEndpoint final : public Endpoint {
 public:
  explicit RemoteEndpoint(const HostSpec& spec);
  ~RemoteEndpoint() override;
  RemoteEndpoint(const RemoteEndpoint&) = delete;
  RemoteEndpoint& operator=(const RemoteEndpoint&) = delete;

  void wait_ready();
  // After wait_ready(): loaded and waiting for calls; otherwise
  // load_error() says why (a load failure the host reported) or end() how
  // it died while loading.
  bool ready() const { return ready_; }
  const std::string& load_error() const { return load_error_; }
  const sandbox::IsolationReport& isolation() const { return isolation_; }

  ArgSet& arguments(const Task& task, const Case& c) override;
  CallResult call(ArgSet& a, bool poison_allocations) override;
  const HostEnd& end() const override { return end_; }

  bool still_stopped() const override;
  bool prime() override;
  bool null_call(double& ns) override;
  // The judge's clock at the answer of the last call or null call, before
  // the host was stopped again (HostSpec::on_answer gets it too).
  std::chrono::steady_clock::time_point answered_at() const { return answered_; }
  // The files the host has mapped (/proc/PID/maps), "" when unreadable.
  std::string mapped_files() const;
  pid_t pid() const { return pid_; }
  // The calibration's round trips (HostSpec::calibrate), in ns.
  const std::vector<double>& null_ns() const { return null_ns_; }
  // Kills the host now (its device context goes with it) and reaps it;
  // end() says so.
  void terminate();
  // Sends the host SIGKILL without waiting: its end (a device context's
  // teardown) runs on while the caller does other work; terminate() reaps
  // it.
  void kill_now();

 private:
  bool wait_done(std::uint32_t seq);
  bool alive();
  void stop_and_wait();
  void wait_stopped();   // after SIGSTOP: until the host is stopped (or killed for resisting)
  void reap(int status, const ::rusage& ru);
  void reset_scheduling();
  // Posts call `seq` to the host and waits for its answer; the judge's
  // clock from the resume to the answer; then stops it unless
  // `stop_after` is false. False: it died.
  bool round_trip(std::uint32_t seq, double& ns, bool stop_after = true);
  // Posts call `seq` and resumes the host (no wait).
  void post(std::uint32_t seq);
  void calibrate();

  HostSpec spec_;
  pid_t pid_ = -1;
  sandbox::UniqueFd report_;                 // the isolation report's pipe, until wait_ready()
  sandbox::UniqueFd stat_fd_;                // /proc/PID/stat, until the host is reaped
  sandbox::IsolationReport spawn_notes_;     // what the spawn itself found
  int arena_fd_ = -1;
  void* arena_ = nullptr;
  std::size_t arena_bytes_ = 0;
  HostControl* ctl_ = nullptr;
  std::uint32_t seq_ = 0;
  std::chrono::steady_clock::time_point answered_{};   // the last round trip's answer (answered_at())
  bool ready_ = false;
  std::string load_error_;
  sandbox::IsolationReport isolation_;
  HostEnd end_;
  ArgSet args_;
  bool sched_saved_ = false;
  cpu_set_t affinity_{};
  std::vector<double> null_ns_;
};

}  // namespace kevo::native::judge
