// Isolation of a kernel host process beyond seccomp (documented in
// docs/sandbox.md): its own user, PID, mount, IPC and network namespaces
// where the kernel allows them, a private /proc, every mount read-only,
// every capability dropped (also when kevo runs as root), death with its
// parent, and a non-dumpable judge and engine. What could not be had is
// reported, never silently skipped.
#pragma once

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kevo::sandbox {

struct IsolationReport {
  bool user_ns = false, pid_ns = false, mount_ns = false, ipc_ns = false, net_ns = false;
  bool private_proc = false;    // a /proc of its own PID namespace
  bool private_root = false;    // a root of its own: the system's code and loader, nothing of the user's
  bool unprivileged = false;    // its uid outside its namespace is not root (limits bind it)
  bool read_only_fs = false;    // every mount it can see is read-only
  bool caps_dropped = false;    // no capability in any set, bounding set empty
  bool seccomp = false;         // the allow-list policy is in place
  std::vector<std::string> notes;   // why something could not be had

  // The guarantees that are missing, in words ("pid namespace: ...").
  std::vector<std::string> missing() const;
  nlohmann::json to_json() const;
  static IsolationReport from_json(const nlohmann::json&);
};

// The namespaces a spawn asks for; a spawn falls back to fewer when the
// kernel refuses (an unprivileged user without user namespaces, a
// container that forbids them) and says so in the report.
struct IsolationRequest {
  bool namespaces = true;
};

struct IsolatedChild {
  pid_t pid = -1;
  IsolationReport report;   // the namespaces it got (the rest is filled by the child)
};

// Starts `path` with `argv` and `env` as a child of the caller, in the
// caller's process group (so that a group kill reaches it), with
// PR_SET_PDEATHSIG(SIGKILL), default signal dispositions and only the
// descriptors in `fds` (source, target; targets >= 3 plus 0, 1, 2 as the
// caller has them). Namespaces: user (the caller's uid and gid mapped to
// themselves), PID, mount, IPC, network and UTS where possible. Only
// async-signal-safe calls run between the clone and exec. Throws Failure
// when no process can be started at all.
IsolatedChild spawn_isolated(const std::string& path, const std::vector<std::string>& argv,
                             const std::vector<std::string>& env, const std::vector<std::pair<int, int>>& fds,
                             const IsolationRequest& request = {});

// Writes the id maps of `pid`, a child cloned into a new user namespace:
// root inside, the caller's ids outside (the overflow user 65534 when the
// caller is root). False with the reason in `why`.
bool map_ids(pid_t pid, std::string& why);

// The caller's namespaces: "user:4026531837,pid:...,mnt:...,ipc:...,net:...".
std::string namespace_ids();
// Sets the namespace flags of `report` to those the caller does not share
// with the process whose namespace_ids() are given (a child learns what
// its clone got).
void detect_namespaces(const std::string& parent_ids, IsolationReport& report);

// In the child, after exec, while it still holds its namespace's
// capabilities: mounts made private; a root of its own (a tmpfs holding
// bind mounts of /usr and the /lib trees, the loader's cache, a few device
// files, the CPU topology in /sys and a fresh /proc for its PID namespace;
// nothing of the user's files, the run's or other candidates'), pivoted
// into; every mount remounted read-only. Failures are noted in the report
// (a host that cannot pivot keeps the machine's tree, read-only).
// `device_files`: more paths bound into the new root (the GPU's device
// files for a CUDA host; paths that do not exist are skipped). `step`, when
// given, hears each step before it is taken (a host that stalls can say
// where). `scratch`: absolute paths (such as "/tmp" and "/dev/shm") made
// in the new root, each with a fresh tmpfs of `scratch_mb` MiB on it, the
// only mounts left writable (the torch profiler's: ncu keeps its lock,
// temporary files and shared memory there; docs/torch.md#profiler).
// `writable_proc`: the new root's /proc (its PID namespace's) is left out of
// the read-only remount (the profiler's: the CUDA driver started inside
// names its threads through /proc/self/task/N/comm, and under a read-only
// /proc cuInit fails with error 304); only in a user namespace of its own,
// and its machine-wide parts (sys, sysrq-trigger, driver, irq, bus, fs...)
// stay read-only.
void harden_filesystem(IsolationReport& report, const std::vector<std::string>& device_files = {},
                       const std::function<void(const std::string&)>& step = {},
                       const std::vector<std::string>& scratch = {}, int scratch_mb = 64,
                       bool writable_proc = false);
// Drops every capability (effective, permitted, inheritable, ambient and
// the bounding set) and locks the securebits, so that uid 0 regains none.
void drop_capabilities(IsolationReport& report);
// Landlock (Linux 5.13+): a ruleset under which the calling process may
// create, write, remove, rename or truncate files only beneath `dirs`
// (reading stays free). Returns its descriptor (close-on-exec), or -1 with
// the reason in `why` when the kernel has no Landlock. Built in the parent:
// a child only has to call restrict_to(fd). Scoped as make_ruleset says
// (its callers, the CUDA host and the sanitizer's child, ran with the
// scopes on a GPU: neither the driver nor the tool signals or connects
// outside the domain).
int make_write_ruleset(const std::vector<std::string>& dirs, std::string& why, bool scoped = true);
// The same, reading confined too: the caller may also read (and execute)
// only beneath `read_dirs` (files or folders), and beneath `write_dirs`.
// An empty `read_dirs` leaves reading free (make_write_ruleset).
// Where the kernel's Landlock has scopes (ABI 6, Linux 6.12+) and `scoped`
// holds, the caller may also not signal a process outside its Landlock
// domain (the engine, a worker, another candidate's process) nor connect
// to an abstract Unix socket made outside it; older kernels confine files
// only (landlock_abi() says which).
int make_ruleset(const std::vector<std::string>& write_dirs, const std::vector<std::string>& read_dirs,
                 std::string& why, bool scoped = true);
// The kernel's Landlock ABI version (0: no Landlock).
int landlock_abi();
// What every confined toolchain may read: the system's trees and the
// dynamic linker's configuration (read_dirs of make_ruleset).
std::vector<std::string> system_read_dirs();
// Adds a program's folder to `dirs`, and for a bin/ folder its prefix too
// (a compiler's own lib/ and include/, a virtual environment).
void add_program_dirs(std::vector<std::string>& dirs, const std::filesystem::path& program);
// Puts the caller (the calling thread and its later children) under the
// ruleset, with PR_SET_NO_NEW_PRIVS. Async-signal-safe; false on failure.
bool restrict_to(int ruleset_fd);

// PR_SET_DUMPABLE 0: other processes of the user can neither trace this
// one nor read its /proc files (environ, mem, fd). Throws Failure.
void set_non_dumpable();

}  // namespace kevo::sandbox
