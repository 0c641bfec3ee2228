// libkevo_pyhost: the isolation of kevo's sandbox (backends/sandbox) for
// processes that are Python: the torch backend's candidate hosts, forked
// from a judge that has imported torch (docs/torch.md#the-judge). Python
// loads it with ctypes.PyDLL (the interpreter lock stays held, as os.fork
// holds it) and calls these C functions:
//
//   kevo_pyhost_clone       fork into new user, PID, mount, IPC, network and
//                           UTS namespaces (fewer where the kernel refuses,
//                           said in the report); the child is released once
//                           the parent has written its id maps
//   kevo_pyhost_harden      in the child: a root of its own holding the
//                           system's code, the interpreter's and the paths
//                           given, a /proc of its PID namespace, read-only
//                           (the binds' JSON may say "writable_proc": true)
//   kevo_pyhost_lockdown    in the child: capabilities dropped, the
//                           allow-list system-call policy installed
//   kevo_pyhost_loopback_up in the child (the profiler's, before lockdown):
//                           its network namespace's loopback brought up
//   kevo_pyhost_non_dumpable, kevo_pyhost_namespace_ids, kevo_pyhost_syscall_name
//
// Each returns 0 (or a pid) on success and -1 on failure, and writes a JSON
// report (IsolationReport::to_json, or {"error": ...}) into `out`.
#include "kevo/sandbox/isolation.hpp"
#include "kevo/sandbox/seccomp.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace sb = kevo::sandbox;

namespace {

void put(char* out, int cap, const std::string& text) {
  if (!out || cap <= 0) return;
  const std::size_t n = std::min<std::size_t>(text.size(), static_cast<std::size_t>(cap) - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

int error(char* out, int cap, const std::string& why) {
  put(out, cap, nlohmann::json{{"error", why}}.dump());
  return -1;
}

}  // namespace

extern "C" {

int kevo_pyhost_namespace_ids(char* out, int cap) {
  put(out, cap, sb::namespace_ids());
  return 0;
}

int kevo_pyhost_syscall_name(long nr, char* out, int cap) {
  put(out, cap, sb::forbidden_syscall_name(nr));
  return 0;
}

int kevo_pyhost_non_dumpable() {
  try {
    sb::set_non_dumpable();
    return 0;
  } catch (...) {
    return -1;
  }
}

// Parent: returns the child's pid; child: returns 0 (then call
// PyOS_AfterFork_Child). `namespaces` 0: a plain fork, reported as such.
int kevo_pyhost_clone(int namespaces, char* out, int cap) {
  int sync[2];
  if (::pipe2(sync, O_CLOEXEC) != 0) return error(out, cap, std::string("pipe: ") + std::strerror(errno));
  const unsigned long all = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS;
  const unsigned long no_user = all & ~static_cast<unsigned long>(CLONE_NEWUSER);
  std::vector<unsigned long> attempts;
  if (namespaces) {
    attempts.push_back(all);
    if (::geteuid() == 0) attempts.push_back(no_user);
  }
  attempts.push_back(0);
  sb::IsolationReport rep;
  unsigned long used = 0;
  pid_t pid = -1;
  for (unsigned long flags : attempts) {
    pid = static_cast<pid_t>(::syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0));
    if (pid == 0) {
      // The child: dies with its parent; waits until its ids are mapped.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(sync[1]);
      char go = 0;
      ssize_t n;
      while ((n = ::read(sync[0], &go, 1)) < 0 && errno == EINTR) {
      }
      ::close(sync[0]);
      if (n != 1) ::_exit(126);
      if (flags & CLONE_NEWUSER) {
        if (::syscall(SYS_setresgid, 0, 0, 0) != 0 || ::syscall(SYS_setresuid, 0, 0, 0) != 0) ::_exit(125);
      }
      return 0;
    }
    if (pid > 0) {
      used = flags;
      break;
    }
    if (flags != 0)
      rep.notes.push_back(std::string("namespaces ") + (flags == all ? "(user, pid, mount, ipc, net)" : "(pid, mount, ipc, net)") +
                          " refused by the kernel: " + std::strerror(errno));
  }
  ::close(sync[0]);
  if (pid < 0) {
    ::close(sync[1]);
    return error(out, cap, std::string("clone: ") + std::strerror(errno));
  }
  if (!namespaces) rep.notes.push_back("namespaces turned off (sandbox.namespaces false)");
  rep.user_ns = (used & CLONE_NEWUSER) != 0;
  rep.pid_ns = (used & CLONE_NEWPID) != 0;
  rep.mount_ns = (used & CLONE_NEWNS) != 0;
  rep.ipc_ns = (used & CLONE_NEWIPC) != 0;
  rep.net_ns = (used & CLONE_NEWNET) != 0;
  if (rep.user_ns) {
    std::string why;
    if (!sb::map_ids(pid, why)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      ::close(sync[1]);
      return error(out, cap, "cannot map the ids of a host's user namespace: " + why);
    }
  }
  const char go = 1;
  const bool released = ::write(sync[1], &go, 1) == 1;
  ::close(sync[1]);
  if (!released) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return error(out, cap, std::string("cannot release a host: ") + std::strerror(errno));
  }
  put(out, cap, rep.to_json().dump());
  return pid;
}

// In the child, before the device is opened (a driver in a PID namespace of
// its own needs its own /proc, and reads many of the machine's files, so the
// private root comes after it): mounts made private, a fresh /proc.
int kevo_pyhost_mount_proc(char* out, int cap) {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return error(out, cap, std::string("making mounts private: ") + std::strerror(errno));
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    return error(out, cap, std::string("mounting a /proc of its own: ") + std::strerror(errno));
  put(out, cap, "{}");
  return 0;
}

// In the child, after the device is opened: the namespaces it got, a /proc
// of its own, a private root with `binds` (a JSON array of paths: the
// interpreter's trees, the candidate's build, device files), read-only; or
// an object {"binds": [...], "scratch": ["/tmp", "/dev/shm"], "scratch_mb":
// 64}, whose scratch folders get a tmpfs each, left writable (the profiler).
int kevo_pyhost_harden(const char* parent_ns_ids, const char* binds_json, int stage_fd, char* out, int cap) {
  try {
    sb::IsolationReport rep;
    sb::detect_namespaces(parent_ns_ids ? parent_ns_ids : "", rep);
    std::vector<std::string> binds;
    std::vector<std::string> scratch;
    int scratch_mb = 64;
    bool writable_proc = false;
    if (binds_json && *binds_json) {
      const auto j = nlohmann::json::parse(binds_json);
      const auto& list = j.is_object() ? j.at("binds") : j;
      for (const auto& b : list) binds.push_back(b.get<std::string>());
      if (j.is_object()) {
        for (const auto& d : j.value("scratch", nlohmann::json::array())) scratch.push_back(d.get<std::string>());
        scratch_mb = j.value("scratch_mb", scratch_mb);
        writable_proc = j.value("writable_proc", false);
      }
    }
    // Each step on the judge's side pipe ("stage private-root: ..."), so
    // that a stall names the mount it stopped at.
    sb::harden_filesystem(rep, binds, [stage_fd](const std::string& what) {
      if (stage_fd < 0) return;
      const std::string line = "stage private-root: " + what + "\n";
      [[maybe_unused]] const ssize_t n = ::write(stage_fd, line.data(), line.size());
    }, scratch, scratch_mb, writable_proc);
    put(out, cap, rep.to_json().dump());
    return 0;
  } catch (const std::exception& e) {
    return error(out, cap, e.what());
  }
}

// In the child, after the device and the interpreter's modules are loaded
// and before any candidate code: no capabilities, no new privileges, the
// policy (`policy` "cpu" or "cuda"; `seccomp` 0 leaves it out, reported).
// A violation writes "sandbox violation: <number>\n" to `violation_fd`
// and exits with 159.
int kevo_pyhost_lockdown(const char* policy, int own_pid_ns, int violation_fd, int seccomp, char* out, int cap) {
  try {
    sb::IsolationReport rep;
    sb::drop_capabilities(rep);
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (seccomp) {
      if (violation_fd >= 0) sb::set_violation_report(violation_fd, "sandbox violation: system call ", "\n");
      sb::PolicyOptions o;
      o.policy = sb::policy_from_string(policy ? policy : "cpu");
      o.own_pid_namespace = own_pid_ns != 0;
      sb::install_candidate_policy(o);
      rep.seccomp = true;
    } else {
      rep.notes.push_back("system-call policy turned off (sandbox.seccomp false)");
    }
    put(out, cap, rep.to_json().dump());
    return 0;
  } catch (const std::exception& e) {
    return error(out, cap, e.what());
  }
}

// In the child, in a network namespace of its own (whose loopback starts
// down), before lockdown: "lo" brought up, so that a tool and the process
// it starts can talk over 127.0.0.1 (ncu and its target do); nothing
// outside the namespace is reachable.
int kevo_pyhost_loopback_up(char* out, int cap) {
  const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return error(out, cap, std::string("socket: ") + std::strerror(errno));
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  int rc = ::ioctl(s, SIOCGIFFLAGS, &ifr);
  if (rc == 0 && !(ifr.ifr_flags & IFF_UP)) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    rc = ::ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  const int e = errno;
  ::close(s);
  if (rc != 0) return error(out, cap, std::string("bringing up the loopback: ") + std::strerror(e));
  put(out, cap, "{}");
  return 0;
}

}  // extern "C"
