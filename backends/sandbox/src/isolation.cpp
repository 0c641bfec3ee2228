#include "kevo/sandbox/isolation.hpp"

#include "kevo/core/error.hpp"
#include "kevo/sandbox/unique_fd.hpp"

#include "child_setup.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <linux/securebits.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

namespace kevo::sandbox {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// --- the report -------------------------------------------------------------

struct Flag {
  const char* key;
  bool IsolationReport::*member;
  const char* missing;
};
constexpr Flag kFlags[] = {
    {"user_ns", &IsolationReport::user_ns, "user namespace: candidate processes share the user's namespace"},
    {"pid_ns", &IsolationReport::pid_ns, "PID namespace: candidate processes can name other processes of the host"},
    {"mount_ns", &IsolationReport::mount_ns, "mount namespace: candidate processes see the host's mounts"},
    {"ipc_ns", &IsolationReport::ipc_ns, "IPC namespace: SysV IPC is shared (the system-call policy still forbids it)"},
    {"net_ns", &IsolationReport::net_ns, "network namespace: the network is shared (the system-call policy still forbids sockets)"},
    {"private_proc", &IsolationReport::private_proc, "private /proc: other processes' /proc entries are visible"},
    {"private_root", &IsolationReport::private_root, "a root of its own: candidate processes can read every file the user can (task manifests, sources, the user's secrets)"},
    {"unprivileged", &IsolationReport::unprivileged, "an unprivileged uid: candidate processes run as root outside their namespace, which the process limit does not bind"},
    {"read_only_fs", &IsolationReport::read_only_fs, "read-only file system: files the user may write are writable where the policy lets a call through"},
    {"caps_dropped", &IsolationReport::caps_dropped, "capabilities dropped: candidate processes keep capabilities"},
    {"seccomp", &IsolationReport::seccomp, "system-call allow-list: not installed"},
};

}  // namespace

std::vector<std::string> IsolationReport::missing() const {
  std::vector<std::string> out;
  for (const Flag& f : kFlags)
    if (!(this->*f.member)) out.emplace_back(f.missing);
  return out;
}

nlohmann::json IsolationReport::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const Flag& f : kFlags) j[f.key] = this->*f.member;
  j["notes"] = notes;
  return j;
}

IsolationReport IsolationReport::from_json(const nlohmann::json& j) {
  IsolationReport r;
  for (const Flag& f : kFlags) r.*f.member = j.value(f.key, false);
  if (auto it = j.find("notes"); it != j.end() && it->is_array())
    for (const auto& n : *it)
      if (n.is_string()) r.notes.push_back(n.get<std::string>());
  return r;
}

// --- spawning -----------------------------------------------------------------

namespace {

struct Plan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int sync_read = -1;     // the parent writes one byte once the id maps are in place
  int err_write = -1;     // errno of a failed exec (CLOEXEC)
  int src[8] = {};
  int dst[8] = {};
  int nmap = 0;
  int hi_base = 3;
  long close_max = 1024;
  bool become_root = false;   // setresuid(0) in the new user namespace before exec
};

using detail::child_fail;

// Between clone and exec: async-signal-safe calls only.
[[noreturn]] void child_main(const Plan& plan) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  char go = 0;
  ssize_t n;
  while ((n = ::read(plan.sync_read, &go, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) ::_exit(126);   // the parent is gone
  if (plan.become_root) {
    // Root of the new user namespace (the parent mapped it to an unprivileged
    // uid outside): raw calls, this thread only, so that exec keeps the
    // namespace's capabilities for the host's own set-up.
    if (::syscall(SYS_setresgid, 0, 0, 0) != 0 || ::syscall(SYS_setresuid, 0, 0, 0) != 0) child_fail(plan.err_write, errno);
  }
  detail::default_signals();
  const int errfd = detail::remap_fds(plan.src, plan.dst, plan.nmap, plan.hi_base, plan.err_write, plan.close_max);
  ::execve(plan.path, plan.argv, plan.envp);
  child_fail(errfd, errno);
}

bool write_proc(pid_t pid, const char* file, const std::string& text, std::string& why) {
  const std::string path = "/proc/" + std::to_string(pid) + "/" + file;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid() || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    why = "writing " + path + ": " + errno_text(errno);
    return false;
  }
  return true;
}

}  // namespace

bool map_ids(pid_t pid, std::string& why) {
  // Root in the namespace (so the child keeps its capabilities there
  // across exec, to build its file system), mapped outside to the
  // caller's own ids, or to the overflow user when the caller is root:
  // root is exempt from RLIMIT_NPROC, and the candidate's process must not
  // be. Its capabilities reach nothing outside the namespace either way.
  const unsigned outer_uid = ::geteuid() == 0 ? 65534u : ::geteuid();
  const unsigned outer_gid = ::geteuid() == 0 ? 65534u : ::getegid();
  return write_proc(pid, "uid_map", "0 " + std::to_string(outer_uid) + " 1\n", why) &&
         write_proc(pid, "setgroups", "deny", why) && write_proc(pid, "gid_map", "0 " + std::to_string(outer_gid) + " 1\n", why);
}

namespace {

pid_t raw_clone(unsigned long flags) {
  // Like fork (the child runs on a copy of the caller's stack) but without
  // pthread_atfork handlers (the CUDA driver registers some) and with
  // namespace flags.
  return static_cast<pid_t>(::syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0));
}

}  // namespace

IsolatedChild spawn_isolated(const std::string& path, const std::vector<std::string>& argv_in,
                             const std::vector<std::string>& env_in, const std::vector<std::pair<int, int>>& fds,
                             const IsolationRequest& request) {
  if (fds.size() > 8) throw Failure("sandbox: at most 8 descriptors reach an isolated child");
  std::vector<std::string> argv_s = argv_in, env_s = env_in;
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  Pipe sync = make_pipe();
  Pipe err = make_pipe();
  Plan plan;
  plan.path = path.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.sync_read = sync.read.get();
  plan.err_write = err.write.get();
  for (const auto& [src, dst] : fds) {
    plan.src[plan.nmap] = src;
    plan.dst[plan.nmap] = dst;
    ++plan.nmap;
    plan.hi_base = std::max(plan.hi_base, dst + 1);
  }
  plan.hi_base = std::max({plan.hi_base, sync.read.get() + 1, err.write.get() + 1});
  {
    long m = ::sysconf(_SC_OPEN_MAX);
    plan.close_max = m > 0 ? std::min<long>(m, 1 << 20) : 65536;
  }

  IsolatedChild child;
  IsolationReport& rep = child.report;
  const unsigned long all = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS;
  const unsigned long no_user = all & ~static_cast<unsigned long>(CLONE_NEWUSER);
  std::vector<unsigned long> attempts;
  if (request.namespaces) {
    attempts.push_back(all);
    if (::geteuid() == 0) attempts.push_back(no_user);
  }
  attempts.push_back(0);
  unsigned long used = 0;
  pid_t pid = -1;
  for (unsigned long flags : attempts) {
    plan.become_root = (flags & CLONE_NEWUSER) != 0;
    pid = raw_clone(flags);
    if (pid == 0) child_main(plan);
    if (pid > 0) {
      used = flags;
      break;
    }
    const int e = errno;
    if (flags != 0) rep.notes.push_back("namespaces " + std::string(flags == all ? "(user, pid, mount, ipc, net)" : "(pid, mount, ipc, net)") +
                                        " refused by the kernel: " + errno_text(e));
    else check_errno(false, "sandbox: clone of a kernel host");
  }
  if (!request.namespaces) rep.notes.push_back("namespaces turned off (sandbox.namespaces false)");
  sync.read.reset();
  err.write.reset();
  rep.user_ns = (used & CLONE_NEWUSER) != 0;
  rep.pid_ns = (used & CLONE_NEWPID) != 0;
  rep.mount_ns = (used & CLONE_NEWNS) != 0;
  rep.ipc_ns = (used & CLONE_NEWIPC) != 0;
  rep.net_ns = (used & CLONE_NEWNET) != 0;
  rep.unprivileged = rep.user_ns || ::geteuid() != 0;
  if (rep.user_ns) {
    std::string why;
    if (!map_ids(pid, why)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      throw Failure("sandbox: cannot map ids of a kernel host's user namespace: " + why);
    }
  }
  const char go = 1;
  // (plan.become_root was set before the clone: the child reads its copy.)
  if (::write(sync.write.get(), &go, 1) != 1) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw Failure("sandbox: cannot release a kernel host: " + errno_text(errno));
  }
  sync.write.reset();
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(err.read.get(), &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    ::waitpid(pid, nullptr, 0);
    throw Failure("sandbox: cannot start " + path + ": " + errno_text(child_errno));
  }
  child.pid = pid;
  return child;
}

// --- in the child ----------------------------------------------------------------

namespace {

constexpr const char* kNamespaces[] = {"user", "pid", "mnt", "ipc", "net"};

// The child reads /proc with read(2) and parses by hand, never with
// iostreams: in a torch host forked from a Python judge on the H200, an
// ifstream extraction from /proc/self/uid_map looped without end (the
// host never got ready; docs/torch.md#gpu-status). Bounded by `cap` bytes.
std::string read_text(const char* path, std::size_t cap = std::size_t{1} << 20) {
  std::string out;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  while (out.size() < cap) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

// The whitespace-separated fields of one line.
std::vector<std::string> fields_of(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

// Calls `each` with every line of `text` (without its newline).
template <typename F>
void for_each_line(std::string_view text, F&& each) {
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    each(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

// A decimal number, or `fallback` when `s` is not one (no locale involved).
unsigned long long decimal(const std::string& s, unsigned long long fallback) {
  if (s.empty() || s.size() > 20) return fallback;
  unsigned long long v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return fallback;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  return v;
}

std::string ns_id(const char* name) {
  struct stat st {};
  if (::stat((std::string("/proc/self/ns/") + name).c_str(), &st) != 0) return "?";
  return std::to_string(st.st_ino);
}

}  // namespace

std::string namespace_ids() {
  std::string out;
  for (const char* n : kNamespaces) out += (out.empty() ? "" : ",") + std::string(n) + ":" + ns_id(n);
  return out;
}

void detect_namespaces(const std::string& parent_ids, IsolationReport& r) {
  bool* flags[] = {&r.user_ns, &r.pid_ns, &r.mount_ns, &r.ipc_ns, &r.net_ns};
  for (std::size_t i = 0; i < std::size(kNamespaces); ++i) {
    const std::string key = std::string(kNamespaces[i]) + ":";
    const auto at = parent_ids.find(key);
    if (at == std::string::npos) {
      *flags[i] = false;
      continue;
    }
    const std::string parent = parent_ids.substr(at + key.size(), parent_ids.find(',', at) - at - key.size());
    const std::string mine = ns_id(kNamespaces[i]);
    // For the PID namespace the link names the namespace of the process
    // itself: a child cloned with CLONE_NEWPID sees the new one.
    *flags[i] = mine != "?" && parent != "?" && mine != parent;
  }
  // Its uid as the rest of the system sees it (through the user
  // namespace's map): root outside is exempt from the process limit.
  const unsigned long long inner = ::getuid();
  unsigned long long outer = inner;
  for_each_line(read_text("/proc/self/uid_map"), [&](std::string_view line) {
    const auto f = fields_of(line);
    if (f.size() != 3) return;
    const auto first = decimal(f[0], ~0ULL), lower = decimal(f[1], ~0ULL), count = decimal(f[2], 0);
    if (first != ~0ULL && lower != ~0ULL && inner >= first && inner - first < count) outer = lower + (inner - first);
  });
  r.unprivileged = outer != 0;
}

namespace {

// "\040" and friends in /proc/self/mountinfo.
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string oct = s.substr(i + 1, 3);
      if (oct.size() == 3 && oct.find_first_not_of("01234567") == std::string::npos) {
        out += static_cast<char>(std::stoi(oct, nullptr, 8));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// The flags a remount must keep (the kernel refuses to clear locked ones).
unsigned long kept_flags(const std::string& options) {
  unsigned long f = 0;
  std::string_view rest = options;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view o = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (o == "nosuid") f |= MS_NOSUID;
    else if (o == "nodev") f |= MS_NODEV;
    else if (o == "noexec") f |= MS_NOEXEC;
    else if (o == "noatime") f |= MS_NOATIME;
    else if (o == "nodiratime") f |= MS_NODIRATIME;
    else if (o == "relatime") f |= MS_RELATIME;
  }
  return f;
}

}  // namespace

namespace {

bool touch(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// Binds `from` (a file or a directory) at `to` inside the new root; a path
// that does not exist on this machine is skipped.
bool bind_into(const std::string& from, const std::string& to, std::string& why) {
  struct stat st {};
  if (::lstat(from.c_str(), &st) != 0) return true;
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    const ssize_t n = ::readlink(from.c_str(), target, sizeof target - 1);
    if (n <= 0) return true;
    target[n] = '\0';
    if (::symlink(target, to.c_str()) != 0) {
      why = "symlink " + to + ": " + errno_text(errno);
      return false;
    }
    return true;
  }
  const bool made = S_ISDIR(st.st_mode) ? ::mkdir(to.c_str(), 0755) == 0 : touch(to);
  if (!made || ::mount(from.c_str(), to.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    why = "binding " + from + ": " + errno_text(errno);
    return false;
  }
  return true;
}

// The parts of a writable /proc that stay read-only (writable_proc).
constexpr const char* kProcKeptReadOnly[] = {"sys", "sysrq-trigger", "driver", "irq", "bus", "fs", "acpi", "scsi",
                                             "pressure"};

// A tmpfs over /tmp (in this mount namespace only) becomes the root.
bool enter_private_root(IsolationReport& rep, const std::vector<std::string>& device_files,
                        const std::function<void(const std::string&)>& step,
                        const std::vector<std::string>& scratch, int scratch_mb, bool writable_proc) {
  const std::string root = "/tmp";
  std::string why;
  auto bind = [&](const std::string& from, const std::string& to) {
    if (step) step("binding " + from);
    return bind_into(from, to, why);
  };
  auto fail = [&](const std::string& what) {
    rep.notes.push_back("a root of its own: " + what);
    return false;
  };
  // The machine's /tmp, before the root's tmpfs hides it: paths to bind
  // from under it (a build or a tool kept there) are reached through it.
  const int old_tmp = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct CloseOnExit {
    int fd;
    ~CloseOnExit() {
      if (fd >= 0) ::close(fd);
    }
  } close_old_tmp{old_tmp};
  auto source_of = [&](const std::string& path) {
    if (old_tmp >= 0 && path.rfind(root + "/", 0) == 0)
      return "/proc/self/fd/" + std::to_string(old_tmp) + path.substr(root.size());
    return path;
  };
  if (step) step("a tmpfs for the root");
  if (::mount("kevo-root", root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0)
    return fail("mounting a tmpfs: " + errno_text(errno));
  for (const char* top : {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"})
    if (!bind(std::string("/") + top, root + "/" + top)) return fail(why);
  for (const char* dir : {"/etc", "/dev", "/sys", "/sys/devices", "/sys/devices/system", "/proc", "/oldroot"})
    if (::mkdir((root + dir).c_str(), 0755) != 0 && errno != EEXIST) return fail(std::string("mkdir ") + dir + ": " + errno_text(errno));
  for (const char* file : {"/etc/ld.so.cache", "/etc/alternatives", "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
                           "/sys/devices/system/cpu"})
    if (!bind(file, root + file)) return fail(why);
  // Scratch folders first: paths bound below may lie under them (a tree
  // under /tmp, bound into the scratch /tmp).
  for (const std::string& dir : scratch) {
    if (step) step("a writable tmpfs at " + dir);
    if (dir.size() < 2 || dir[0] != '/' || dir.find("..") != std::string::npos)
      return fail("scratch path " + dir + " is not absolute");
    for (std::size_t at = dir.find('/', 1); at != std::string::npos; at = dir.find('/', at + 1))
      if (::mkdir((root + dir.substr(0, at)).c_str(), 0755) != 0 && errno != EEXIST)
        return fail("mkdir " + dir.substr(0, at) + ": " + errno_text(errno));
    if (::mkdir((root + dir).c_str(), 01777) != 0 && errno != EEXIST) return fail("mkdir " + dir + ": " + errno_text(errno));
    const std::string opts = "mode=1777,size=" + std::to_string(std::max(1, scratch_mb)) + "m";
    if (::mount("kevo-scratch", (root + dir).c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
      return fail("mounting a tmpfs at " + dir + ": " + errno_text(errno));
  }
  for (const std::string& file : device_files) {
    // Paths under a tree bound above are visible already; others get their
    // parent folders made in the new root first (an interpreter's tree
    // under /opt, say).
    bool covered = false;
    for (const std::string top : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"})
      covered = covered || file == top || file.rfind(top + "/", 0) == 0;
    if (covered || file.empty() || file[0] != '/') continue;
    for (std::size_t at = file.find('/', 1); at != std::string::npos; at = file.find('/', at + 1))
      if (::mkdir((root + file.substr(0, at)).c_str(), 0755) != 0 && errno != EEXIST)
        return fail("mkdir " + file.substr(0, at) + ": " + errno_text(errno));
    if (!bind(source_of(file), root + file)) return fail(why);
  }
  if (rep.pid_ns) {
    if (step) step("a /proc of its own");
    if (::mount("proc", (root + "/proc").c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0)
      rep.private_proc = true;
    else
      rep.notes.push_back("mounting a private /proc: " + errno_text(errno));
    // A /proc left writable (the profiler's) keeps the machine's parts of
    // it read-only all the same: each is bound onto itself here, a mount
    // of its own that the read-only pass below remounts (sysctls, the
    // SysRq trigger, the drivers' and IRQs' files).
    if (rep.private_proc && writable_proc && rep.user_ns)
      for (const char* part : kProcKeptReadOnly) {
        const std::string at = root + "/proc/" + part;
        struct stat st {};
        if (::lstat(at.c_str(), &st) != 0) continue;
        if (::mount(at.c_str(), at.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
          return fail(std::string("binding /proc/") + part + " onto itself: " + errno_text(errno));
      }
  }
  if (step) step("pivot_root");
  if (::syscall(SYS_pivot_root, root.c_str(), (root + "/oldroot").c_str()) != 0) return fail("pivot_root: " + errno_text(errno));
  if (::chdir("/") != 0) return fail("chdir /: " + errno_text(errno));
  if (step) step("detaching the old root");
  if (::umount2("/oldroot", MNT_DETACH) != 0) return fail("detaching the old root: " + errno_text(errno));
  ::rmdir("/oldroot");
  rep.private_root = true;
  return true;
}

}  // namespace

void harden_filesystem(IsolationReport& rep, const std::vector<std::string>& device_files,
                       const std::function<void(const std::string&)>& step,
                       const std::vector<std::string>& scratch, int scratch_mb, bool writable_proc) {
  if (!rep.mount_ns) return;
  if (step) step("making mounts private");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    rep.notes.push_back("making mounts private: " + errno_text(errno));
    return;
  }
  const bool rooted = enter_private_root(rep, device_files, step, scratch, scratch_mb, writable_proc);
  if (!rooted && rep.pid_ns && !rep.private_proc) {
    if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0)
      rep.private_proc = true;
    else
      rep.notes.push_back("mounting a private /proc: " + errno_text(errno));
  }
  int total = 0, failed = 0;
  std::string first_failure;
  std::vector<std::pair<std::string, std::string>> mounts;   // point, options
  for_each_line(read_text("/proc/self/mountinfo"), [&](std::string_view line) {
    auto f = fields_of(line);
    if (f.size() >= 6) mounts.emplace_back(unescape(f[4]), f[5]);
  });
  for (const auto& [mp, options] : mounts) {
    if (rooted && std::find(scratch.begin(), scratch.end(), mp) != scratch.end()) continue;   // left writable
    // Only in a user namespace: a process that is the machine's root (no
    // user namespace) could write the machine's sysctls and SysRq through
    // it, capabilities or not.
    if (rooted && writable_proc && rep.private_proc && rep.user_ns && mp == "/proc") continue;
    ++total;
    if (step) step("read-only remount of " + mp);
    if (::mount(nullptr, mp.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | kept_flags(options), nullptr) != 0) {
      ++failed;
      if (first_failure.empty()) first_failure = mp + ": " + errno_text(errno);
    }
  }
  rep.read_only_fs = total > 0 && failed == 0;
  if (failed) rep.notes.push_back("read-only remount failed for " + std::to_string(failed) + " of " +
                                  std::to_string(total) + " mounts (first: " + first_failure + ")");
}

void drop_capabilities(IsolationReport& rep) {
  // Root in its namespace must not regain capabilities; lock that first
  // (needs CAP_SETPCAP, which a process without capabilities need not).
  ::prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
                                 SECBIT_NOROOT | SECBIT_NOROOT_LOCKED);
  std::string text = read_text("/proc/sys/kernel/cap_last_cap", 64);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const int last = static_cast<int>(std::min<unsigned long long>(decimal(text, CAP_LAST_CAP), 255));
  for (int c = 0; c <= last; ++c) ::prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &hdr, data) != 0) {
    rep.notes.push_back("capset: " + errno_text(errno));
    return;
  }
  __user_cap_data_struct now[2] = {};
  hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  bool zero = ::syscall(SYS_capget, &hdr, now) == 0;
  for (const auto& d : now) zero = zero && d.effective == 0 && d.permitted == 0 && d.inheritable == 0;
  rep.caps_dropped = zero;
  if (!zero) rep.notes.push_back("capabilities remain after capset");
}

namespace {

// The Landlock ABI, spelled here: the build's headers may be older than the
// kernel it runs on.
constexpr long kLandlockCreateRuleset = 444, kLandlockAddRule = 445, kLandlockRestrictSelf = 446;
constexpr std::uint64_t kExecute = 1ULL << 0, kWriteFile = 1ULL << 1, kReadFile = 1ULL << 2, kReadDir = 1ULL << 3,
                        kRemoveDir = 1ULL << 4, kRemoveFile = 1ULL << 5,
                        kMakeChar = 1ULL << 6, kMakeDir = 1ULL << 7, kMakeReg = 1ULL << 8, kMakeSock = 1ULL << 9,
                        kMakeFifo = 1ULL << 10, kMakeBlock = 1ULL << 11, kMakeSym = 1ULL << 12, kRefer = 1ULL << 13,
                        kTruncate = 1ULL << 14;
// LANDLOCK_SCOPE_*: what a domain's processes may not reach outside it.
constexpr std::uint64_t kScopeAbstractUnixSocket = 1ULL << 0, kScopeSignal = 1ULL << 1;
struct PathBeneath {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
} __attribute__((packed));

}  // namespace

int make_write_ruleset(const std::vector<std::string>& dirs, std::string& why, bool scoped) {
  return make_ruleset(dirs, {}, why, scoped);
}

int landlock_abi() {
  const long abi = ::syscall(kLandlockCreateRuleset, nullptr, 0, 1u /* LANDLOCK_CREATE_RULESET_VERSION */);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

int make_ruleset(const std::vector<std::string>& write_dirs, const std::vector<std::string>& read_dirs,
                 std::string& why, bool scoped) {
  const long abi = ::syscall(kLandlockCreateRuleset, nullptr, 0, 1u /* LANDLOCK_CREATE_RULESET_VERSION */);
  if (abi < 1) {
    why = std::string("Landlock is not available: ") + errno_text(errno);
    return -1;
  }
  const std::uint64_t reads = read_dirs.empty() ? 0 : kExecute | kReadFile | kReadDir;
  std::uint64_t handled = reads | kWriteFile | kRemoveDir | kRemoveFile | kMakeChar | kMakeDir | kMakeReg | kMakeSock |
                          kMakeFifo | kMakeBlock | kMakeSym;
  if (abi >= 2) handled |= kRefer;
  if (abi >= 3) handled |= kTruncate;
  // struct landlock_ruleset_attr: handled_access_fs, handled_access_net
  // (ABI 4; none handled: the network is left to the seccomp policies and
  // namespaces), scoped (ABI 6). An older kernel takes the first field alone.
  const std::uint64_t attr[3] = {handled, 0, kScopeAbstractUnixSocket | kScopeSignal};
  const bool with_scopes = scoped && abi >= 6;
  const int fd = static_cast<int>(
      ::syscall(kLandlockCreateRuleset, attr, with_scopes ? sizeof attr : sizeof attr[0], 0u));
  if (fd < 0) {
    why = std::string("landlock_create_ruleset: ") + errno_text(errno);
    return -1;
  }
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  const auto add = [&](const std::string& d, std::uint64_t access) {
    UniqueFd dir(::open(d.c_str(), O_PATH | O_CLOEXEC));
    if (!dir.valid()) return true;   // a path that does not exist allows nothing
    struct stat st {};
    // A rule on a file (not a folder) may hold only the rights of files.
    if (::fstat(dir.get(), &st) == 0 && !S_ISDIR(st.st_mode)) access &= kExecute | kWriteFile | kReadFile | kTruncate;
    PathBeneath rule{access, dir.get()};
    if (::syscall(kLandlockAddRule, fd, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &rule, 0u) == 0) return true;
    why = "landlock_add_rule(" + d + "): " + errno_text(errno);
    return false;
  };
  for (const std::string& d : write_dirs)
    if (!add(d, handled)) {
      ::close(fd);
      return -1;
    }
  for (const std::string& d : read_dirs)
    if (!add(d, reads)) {
      ::close(fd);
      return -1;
    }
  return fd;
}

std::vector<std::string> system_read_dirs() {
  return {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin",
          "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives"};
}

void add_program_dirs(std::vector<std::string>& dirs, const std::filesystem::path& program) {
  const std::filesystem::path dir = program.parent_path();
  if (dir.empty()) return;
  dirs.push_back(dir.string());
  if (dir.filename() == "bin") dirs.push_back(dir.parent_path().string());
}

bool restrict_to(int ruleset_fd) {
  if (ruleset_fd < 0) return false;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  return ::syscall(kLandlockRestrictSelf, ruleset_fd, 0u) == 0;
}

void set_non_dumpable() {
  check_errno(::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0, "prctl(PR_SET_DUMPABLE, 0)");
}

}  // namespace kevo::sandbox
