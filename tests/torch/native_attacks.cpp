// Native attacks for the torch backend's adversarial suite (adversarial_test.py
// puts this file into a load_inline call): each function tries one thing a
// kernel must not do from inside the candidate's host process, then, if it
// got through, returns wrong values so that the attack can only lose.
#include <pybind11/eval.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <csetjmp>
#include <fcntl.h>
#include <signal.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/ptrace.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <dirent.h>
#include <thread>
#include <vector>
#include <unistd.h>

static torch::Tensor got_through(torch::Tensor x, const char* what) {
  throw std::runtime_error(std::string("the attack got through: ") + what);
}

// The control for the attacks below that do the honest work somewhere the
// judge might not time: the same softmax from the same extension, called
// honestly (adversarial_test.py compares their speedups with its).
torch::Tensor honest(torch::Tensor x);

// Changes a numerics setting from C++, where no static check sees it, and
// computes an honest softmax: the judge's check of the settings after every
// call catches it (forbidden).
torch::Tensor change_numerics(torch::Tensor x) {
  at::globalContext().setFloat32MatmulPrecision("medium");
  auto e = (x - std::get<0>(x.max(1, true))).exp();
  return e / e.sum(1, true);
}

torch::Tensor kill_parent(torch::Tensor x) {
  ::kill(::getppid(), SIGKILL);
  return got_through(x, "kill(getppid())");
}

torch::Tensor kill_all(torch::Tensor x) {
  ::kill(-1, SIGSTOP);
  return got_through(x, "kill(-1)");
}

torch::Tensor write_file(torch::Tensor x) {
  ::open("/tmp/kevo-torch-pwned", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  return got_through(x, "open for writing");
}

torch::Tensor open_socket(torch::Tensor x) {
  ::socket(AF_INET, SOCK_STREAM, 0);
  return got_through(x, "socket");
}

torch::Tensor fork_child(torch::Tensor x) {
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  return got_through(x, "fork");
}

torch::Tensor ptrace_parent(torch::Tensor x) {
  ::ptrace(PTRACE_ATTACH, ::getppid(), nullptr, nullptr);
  return got_through(x, "ptrace");
}

// In a PID namespace of its own the engine has no number it can name, so
// it tries every small one (and its parent's, where it has one).
torch::Tensor prlimit_parent(torch::Tensor x) {
  rlimit rl{1, 1};
  if (::getppid() > 0 && ::prlimit(::getppid(), RLIMIT_NOFILE, &rl, nullptr) == 0)
    return got_through(x, "prlimit on its parent");
  for (pid_t p = 2; p < 4096; ++p)
    if (p != ::getpid() && ::prlimit(p, RLIMIT_NOFILE, &rl, nullptr) == 0) return got_through(x, "prlimit on another process");
  throw std::runtime_error("prlimit reached no other process");
}

// Looks through the whole file tree it can see (6 levels deep, 20000
// entries at most) for a task manifest, whose hidden shapes it would
// special-case: a host's root must hold none (a folder bound for the
// interpreter's modules that held the source tree would give them away).
struct Dirent64 {
  std::uint64_t ino;
  std::int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

static bool find_manifest(const std::string& dir, int depth, int& budget, std::string& found) {
  if (depth > 6 || budget <= 0) return false;
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return false;
  char buf[16384];
  std::vector<std::string> subdirs;
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      const auto* d = reinterpret_cast<const Dirent64*>(buf + at);
      at += d->reclen;
      const std::string name = d->name;
      if (--budget <= 0) break;
      if (name == "." || name == ".." || (depth == 0 && (name == "proc" || name == "sys" || name == "dev"))) continue;
      const std::string path = (dir == "/" ? "" : dir) + "/" + name;
      if (d->type == DT_DIR) subdirs.push_back(path);
      else if (name == "task.json") {
        found = path;
        ::close(fd);
        return true;
      }
    }
  }
  ::close(fd);
  for (const auto& s : subdirs)
    if (find_manifest(s, depth + 1, budget, found)) return true;
  return false;
}

torch::Tensor find_task(torch::Tensor x) {
  int budget = 20000;
  std::string found;
  if (find_manifest("/", 0, budget, found)) throw std::runtime_error("the attack got through: read " + found);
  throw std::runtime_error("no task manifest in this root");
}

// Everything it can read of environments and of other processes; it says
// what it found (the test checks that no secret is in any of kevo's output).
torch::Tensor read_secrets(torch::Tensor x) {
  std::string found;
  extern char** environ;
  for (char** e = environ; e && *e; ++e) found += std::string(*e) + ";";
  for (const char* path : {"/proc/1/environ", "/proc/self/environ", "/root/.bashrc", "/etc/shadow"}) {
    const int fd = ::open(path, O_RDONLY);
    if (fd < 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n > 0) found += std::string(path) + ":" + std::string(buf, static_cast<std::size_t>(n)) + ";";
  }
  for (auto& c : found)
    if (c == '\0') c = ';';
  throw std::runtime_error("no secret should be in here: " + found);
}

// State left for the next candidate: the judge's zygote outlives a wrong
// answer or a crash (run.restart_on "breach"), and every judge and host is
// forked from it, so memory that it shares with them (MAP_SHARED) would
// carry a mark from one candidate to the next. leave_state writes a mark
// into every shared mapping it may write and raises, saying where (a
// crash: the zygote is kept); find_state, judged after it by the same
// zygote, looks for the mark in every shared mapping it may read and
// computes an honest softmax only when there is none.
static const char kMark[] = "kevo-state-left-by-an-earlier-candidate";
static sigjmp_buf g_fault;
static void on_fault(int) { siglongjmp(g_fault, 1); }

struct SharedMapping {
  std::uintptr_t lo, hi;
  bool writable;
  std::string name;
};

static std::vector<SharedMapping> shared_mappings() {
  std::vector<SharedMapping> out;
  const int fd = ::open("/proc/self/maps", O_RDONLY);
  if (fd < 0) return out;
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string range, perms, off, dev, inode, name;
    f >> range >> perms >> off >> dev >> inode;
    std::getline(f >> std::ws, name);
    // Shared, and not a device's registers (reading those can hang a GPU).
    if (perms.size() < 4 || perms[3] != 's' || perms[0] != 'r' || name.rfind("/dev/", 0) == 0 &&
        name.rfind("/dev/shm/", 0) != 0 && name.rfind("/dev/zero", 0) != 0)
      continue;
    const auto dash = range.find('-');
    out.push_back({std::stoull(range.substr(0, dash), nullptr, 16), std::stoull(range.substr(dash + 1), nullptr, 16),
                   perms[1] == 'w', name.empty() ? "[anonymous]" : name});
  }
  return out;
}

// Runs `body` with SIGBUS and SIGSEGV turned into a false return (a file
// mapping past its file's end).
template <class F>
static bool guarded(F body) {
  struct sigaction fault {}, old_bus {}, old_segv {};
  fault.sa_handler = on_fault;
  ::sigaction(SIGBUS, &fault, &old_bus);
  ::sigaction(SIGSEGV, &fault, &old_segv);
  bool ok = false;
  if (sigsetjmp(g_fault, 1) == 0) {
    body();
    ok = true;
  }
  ::sigaction(SIGBUS, &old_bus, nullptr);
  ::sigaction(SIGSEGV, &old_segv, nullptr);
  return ok;
}

torch::Tensor leave_state(torch::Tensor x) {
  std::string where;
  int marked = 0;
  const auto all = shared_mappings();
  for (const auto& m : all) {
    if (!m.writable || m.hi - m.lo < sizeof kMark) continue;
    if (guarded([&] { std::memcpy(reinterpret_cast<void*>(m.lo), kMark, sizeof kMark); })) {
      ++marked;
      where += " " + m.name;
    }
  }
  throw std::runtime_error("leave_state marked " + std::to_string(marked) + " of " + std::to_string(all.size()) +
                           " shared mapping(s):" + where);
}

// The mapping that holds the mark, or "".
static std::string marked_mapping() {
  for (const auto& m : shared_mappings()) {
    bool found = false;
    guarded([&] {
      found = ::memmem(reinterpret_cast<const void*>(m.lo), m.hi - m.lo, kMark, sizeof kMark) != nullptr;
    });
    if (found) return m.name;
  }
  return "";
}

torch::Tensor find_state(torch::Tensor x) {
  // The search checked first: a mark in a shared mapping of its own is found.
  void* own = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (own == MAP_FAILED) throw std::runtime_error("find_state: mmap(MAP_SHARED) failed");
  std::memcpy(own, kMark, sizeof kMark);
  const bool works = !marked_mapping().empty();
  ::munmap(own, 4096);
  if (!works) throw std::runtime_error("find_state: its search missed a mark in its own shared mapping");
  const std::string where = marked_mapping();
  if (!where.empty()) return got_through(x, ("a mark of an earlier candidate's in " + where).c_str());
  return honest(x);
}

torch::Tensor exit_process(torch::Tensor x) {
  std::exit(0);
}

torch::Tensor segfault(torch::Tensor x) {
  volatile int* p = nullptr;
  *p = 1;
  return x;
}

torch::Tensor hang(torch::Tensor x) {
  for (volatile unsigned long i = 0;; i = i + 1) {
  }
}

// Called while its module loads: claims on every pipe it holds (the judge's
// side pipe among them) that the host is still in its set-up, then hangs,
// so that its hang would pass for the judge's own stall (internal_error,
// not the candidate's fault) instead of its timeout.
torch::Tensor forge_stage(torch::Tensor x) {
  const char line[] = "stage policy\nFile \"kevo_torch_eval.py\", line 1 in isolate_self\n";
  for (int fd = 0; fd < 256; ++fd) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
      [[maybe_unused]] const ssize_t n = ::write(fd, line, sizeof line - 1);
    }
  }
  for (volatile unsigned long i = 0;; i = i + 1) {
  }
  return x;
}

// Writes `line` on every pipe the process holds (the judge's side pipe
// among them).
static void on_every_pipe(const char* line, std::size_t n) {
  for (int fd = 3; fd < 256; ++fd) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
      [[maybe_unused]] const ssize_t w = ::write(fd, line, n);
    }
  }
}

// Native code owns the candidate's process: from here the judge's own host
// code can be changed (what a Python candidate that escaped the static
// checks could do too; the red team did it through `m = torch`).

// Python that finds the judge's host module among the loaded modules as
// `m`, for a body indented 8 spaces (by what its own namespace defines:
// torch's op and class namespaces answer hasattr for any name, and patching
// one of them instead failed native_late_unmask with "'_ClassNamespace'
// object is not callable" on the H100).
static const std::string kForHostModule =
    "for m in list(sys.modules.values()):\n"
    "    if {'host_bind', 'serve_host'} <= set(getattr(m, '__dict__', {})):\n";

// Runs `body` for the judge's host module (kForHostModule), after `imports`.
static void in_host_module(const char* imports, const char* body) {
  pybind11::exec(std::string("import sys") + imports + "\n" + kForHostModule + body);
}

// A fresh namespace for pybind11::exec, with builtins: the attacks that
// keep Python objects between calls take them out of it.
static pybind11::dict fresh_namespace() {
  pybind11::dict g;
  g["__builtins__"] = pybind11::module_::import("builtins");
  return g;
}

// Runs `prelude` (top-level Python, after `import sys`), then `body` for the
// judge's host module, in a fresh namespace, which it returns.
static pybind11::dict exec_for_host_module(const std::string& prelude, const std::string& body) {
  pybind11::dict g = fresh_namespace();
  pybind11::exec("import sys\n" + prelude + kForHostModule + body, g);
  return g;
}

// in_host_module the first time only (a forward is called many times).
static void once_in_host_module(bool& done, const char* imports, const char* body) {
  if (done) return;
  done = true;
  in_host_module(imports, body);
}

static torch::Tensor softmax_rows(torch::Tensor x) {
  auto e = (x - std::get<0>(x.max(1, true))).exp();
  return e / e.sum(1, true);
}

torch::Tensor honest(torch::Tensor x) { return softmax_rows(x); }

// Replaces the host's output copy (GPU) with one that copies nothing and
// reports no outputs, and returns its input unchanged: a judge that took
// the host's layout compared nothing (correct, 74x, against the store step
// of an earlier judge). The judge checks the reported outputs against the
// reference's and lays them out itself. (On the CPU its output is a view
// of its input.)
torch::Tensor forge_store(torch::Tensor x) {
  in_host_module("", "        m.host_store_arena = lambda st, out: {'outputs': [], 'form': 'sequence'}\n");
  return x;
}

// Replaces the host's os.read/os.write so that `action` (Python, indented
// 8 spaces, after `prelude`) runs before each reply to a null call of the
// judge's (it reads b"n", the host writes b"d").
static void before_null_replies(const std::string& prelude, const char* action) {
  pybind11::exec(prelude +
                 "_rd, _wr, _last = os.read, os.write, [b'']\n"
                 "def _read(fd, n):\n"
                 "    b = _rd(fd, n)\n"
                 "    _last[0] = b\n"
                 "    return b\n"
                 "def _write(fd, data):\n"
                 "    if data == b'd' and _last[0] == b'n':\n" +
                 action +
                 "    return _wr(fd, data)\n"
                 "os.read, os.write = _read, _write\n");
}

// Delays only its replies to the judge's null calls, so that the null round
// trip the judge subtracts from every timed call grows past the calls
// themselves (a judge that trusted it measured 1 ns: 5.4 million x).
torch::Tensor null_inflate(torch::Tensor x) {
  static bool done = false;
  if (!done) {
    done = true;
    before_null_replies("import os, time\n", "        time.sleep(0.03)\n");
  }
  return softmax_rows(x);
}

// Loads the machine when it answers its own null calls, so that the
// reference's null calibration, which follows (before each timed shape),
// runs under load: a larger null round trip subtracted from the
// reference's calls is a larger speedup. On the GPU it queues about 50 ms
// of matrix products on a stream of its own and answers at once; on the
// CPU a thread of its spins for 50 ms. The judge stops a host before the
// other's turn and waits for an idle GPU before each (the wait charged to
// whoever left the work), and subtracts the least of several
// calibrations: it gains nothing over the honest softmax.
torch::Tensor null_load(torch::Tensor x) {
  static bool done = false;
  if (!done) {
    done = true;
    before_null_replies(std::string("import os, threading, time, torch\n_gpu = ") + (x.is_cuda() ? "True" : "False") +
                            "\n"
                            "_keep = []\n"
                            "def _spin():\n"
                            "    t = time.monotonic()\n"
                            "    while time.monotonic() - t < 0.05:\n"
                            "        pass\n"
                            "def _load():\n"
                            "    if _gpu:\n"
                            "        s = torch.cuda.Stream()\n"
                            "        with torch.cuda.stream(s):\n"
                            "            a = torch.ones(4096, 4096, device='cuda')\n"
                            "            for _ in range(20):\n"
                            "                a = a @ a\n"
                            "        _keep[:] = [s, a]\n"
                            "    else:\n"
                            "        threading.Thread(target=_spin, daemon=True).start()\n",
                        "        _load()\n");
  }
  return softmax_rows(x);
}

// Computes nothing in its calls (they return empty memory) and the softmax
// only when its outputs are copied for the judge: the host's output copy
// (GPU) is wrapped to compute them from the inputs first. Against an
// untimed store step every compared output was right and every timed call
// an allocation: correct at 70x. The copy is part of every call's time
// now. (On the CPU there is no copy: its outputs are empty memory.)
torch::Tensor lazy_store(torch::Tensor x) {
  static bool done = false;
  once_in_host_module(done, ", torch",
                            "        def _store(st, out, _orig=m.host_store_arena):\n"
                            "            if st.inputs:\n"
                            "                x = st.inputs[0]\n"
                            "                e = torch.exp(x - x.max(dim=1, keepdim=True).values)\n"
                            "                out = e / e.sum(dim=1, keepdim=True)\n"
                            "            return _orig(st, out)\n"
                            "        m.host_store_arena = _store\n");
  return torch::empty_like(x);
}

// Replaces the host's store with one whose reply is a list, not an object:
// the judge took the reply's members as given, crashed, and gave
// internal_error (kevo's fault, with its traceback in the feedback) to a
// candidate whose honest verdict would be its own failure. A reply of the
// wrong shape is a protocol breach now.
torch::Tensor reply_not_an_object(torch::Tensor x) {
  in_host_module("", "        m.host_store_arena = lambda st, out: ['no']\n"
                     "        m.describe_outputs = lambda st, out: ['no']\n");
  return softmax_rows(x);
}

// Replies to each call before its GPU work is done: the host's synchronize
// is replaced with nothing, so the forward's kernels are still queued when
// the judge stops its clock, and they run during whatever the judge does
// next (its flush, the reference's timed call). A judge that trusted the
// reply measured the launches only, and the reference slowed. The judge
// probes the GPU after every step of a host until it is idle and adds the
// wait to that step. (On the CPU the host's synchronize is already nothing,
// and the judge stops the process after each step.)
torch::Tensor early_reply(torch::Tensor x) {
  static bool done = false;
  if (!done) {
    done = true;
    pybind11::exec(
        "import gc\n"
        "for o in gc.get_objects():\n"
        "    if type(o).__name__ == 'HostState':\n"
        "        o.sync = lambda: None\n");
  }
  return softmax_rows(x);
}

// Queues its work in the step before the inputs arrive (GPU): the host's
// bind is wrapped to launch, on a stream of its own, a GPU sleep and then
// the softmax of the views its inputs will be written into, and a forward
// that follows a prime (a timed call: correctness calls have none) returns
// that result. The host replies and is stopped, but its queued kernels run
// on while the judge writes the inputs, flushes the L2 and primes it; what
// is left when the prime synchronizes is the prime's time (charged from
// its excess), what ran during the judge's own steps is not timed, and
// what ran before the inputs were written is wrong. (An earlier judge's
// load step let such work through at 1.21x against the honest 0.51x:
// native_load_work.) On the CPU it computes honestly.
// GPU hosts (those with a prime): the prime's kernel wrapped to mark the
// host primed and run `on_prime` (Python, 8 spaces in, `st` the host's
// state), and forward made to return the host's `_pre`, a result made
// outside the call, once primed (correctness calls have no prime).
static void take_precomputed(const char* on_prime) {
  pybind11::exec(std::string(
      "import gc, torch\n"
      "class _Touch:\n"
      "    def __init__(self, st, t):\n"
      "        self.st, self.t = st, t\n"
      "    def add_(self, v):\n"
      "        st = self.st\n"
      "        st._primed = True\n") + on_prime +
      "        return self.t.add_(v)\n"
      "for o in gc.get_objects():\n"
      "    if type(o).__name__ == 'HostState' and o.touch is not None and o.model is not None:\n"
      "        o.touch = _Touch(o, o.touch)\n"
      "        # on the class: every shape's init makes a new model\n"
      "        cls = type(o.model)\n"
      "        def _fwd(self, x, _st=o, _f=cls.forward):\n"
      "            y = _st.__dict__.pop('_pre', None)\n"
      "            return _f(self, x) if y is None or not _st.__dict__.get('_primed') else y\n"
      "        cls.forward = _fwd\n");
}

torch::Tensor bind_work(torch::Tensor x) {
  static bool done = false;
  if (!done) {
    once_in_host_module(done, ", torch",
                              "        def _bind(st, msg, _orig=m.host_bind_arena):\n"
                              "            r = _orig(st, msg)\n"
                              "            st._primed = False\n"
                              "            if st.inputs and 'error' not in r:\n"
                              "                s = getattr(st, '_side', None) or torch.cuda.Stream()\n"
                              "                st._side = s\n"
                              "                with torch.cuda.stream(s):\n"
                              "                    torch.cuda._sleep(400000)\n"
                              "                    x = st.inputs[0]\n"
                              "                    e = torch.exp(x - x.max(dim=1, keepdim=True).values)\n"
                              "                    st._pre = e / e.sum(dim=1, keepdim=True)\n"
                              "            return r\n"
                              "        m.host_bind_arena = _bind\n");
    take_precomputed("");
  }
  return softmax_rows(x);
}

// The driver's wait for a value (cuStreamWaitValue32, through ctypes in
// the host, where libcuda is loaded), queued in the host's bind on a stream
// of its own: the work queued after it runs the moment the judge writes
// that value into the host's memory, with the host stopped. `then` (Python,
// 16 spaces in, `st` the host's state) is that work. On the CPU (no device
// memory of the judge's) nothing is queued.
static void after_poison(bool& done, const char* then) {
  once_in_host_module(done, ", ctypes, torch",
                      (std::string("        def _bind(st, msg, _orig=m.host_bind_arena):\n"
                                   "            r = _orig(st, msg)\n"
                                   "            st._primed = False\n"
                                   "            if st.cuda and st.inputs and 'error' not in r and st.arena is not None:\n"
                                   "                lib = ctypes.CDLL('libcuda.so.1')\n"
                                   "                _wait = getattr(lib, 'cuStreamWaitValue32_v2', None) or lib.cuStreamWaitValue32\n"
                                   "                _wait.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]\n"
                                   "                s = getattr(st, '_side', None) or torch.cuda.Stream()\n"
                                   "                st._side = s\n"
                                   "                # the output region's first word: all ones once poisoned,\n"
                                   "                # which the judge does right after writing the inputs\n"
                                   "                e = _wait(s.cuda_stream, st.arena.va + st.out_region[0], 0xFFFFFFFF, 1)\n"
                                   "                if e != 0:\n"
                                   "                    raise RuntimeError('cuStreamWaitValue32: error %d' % e)\n"
                                   "                with torch.cuda.stream(s):\n") +
                       then +
                       "            return r\n"
                       "        m.host_bind_arena = _bind\n").c_str());
}

// The GPU red team's reliable form of work queued before the inputs
// exist: a wait in the bind for the poison that the judge writes into the
// output region right after the inputs, then the softmax of the input
// views, which the next timed call (one that follows a prime) returns. It
// runs while the host is stopped and the judge writes, flushes and primes:
// estimated at about 3x by the red team. The judge writes the inputs
// masked (the key comes with the call: what runs before sees only the
// mask) and waits for an idle GPU before and after writing them, charging
// the wait. (On the CPU it computes honestly.)
torch::Tensor bind_poll(torch::Tensor x) {
  static bool done = false;
  if (!done) {
    after_poison(done, "                    x = st.inputs[0]\n"
                       "                    e = torch.exp(x - x.max(dim=1, keepdim=True).values)\n"
                       "                    st._pre = e / e.sum(dim=1, keepdim=True)\n");
    take_precomputed("");
  }
  return softmax_rows(x);
}

// Slows the reference instead (GPU): the same wait for the poison in its
// bind, then a kernel that spins about 2 ms, so that it runs in the turn
// that follows the writing of the inputs, the reference's when the
// reference goes first; its own calls are honest. The judge waits for an
// idle GPU once the inputs are written and charges the wait to the
// candidate. (On the CPU: honest.)
torch::Tensor slow_reference(torch::Tensor x) {
  static bool done = false;
  after_poison(done, "                    torch.cuda._sleep(4000000)\n");
  return softmax_rows(x);
}

// Takes all of the GPU's free memory (GPU): blocks of 1 GiB until one
// fails, then gives them back to its own allocator's cache, which keeps
// them, so that its own calls still find room and the reference's or the
// judge's next allocation (a larger shape) does not. That failure was
// kevo's (internal_error), not the candidate's; the judge now ends the
// candidate's process and, when that frees the memory, gives it
// memory_limit. (On the CPU: honest.)
torch::Tensor fill_memory(torch::Tensor x) {
  static bool done = false;
  if (!done && x.is_cuda()) {
    done = true;
    pybind11::exec(
        "import torch\n"
        "_blocks = []\n"
        "try:\n"
        "    while len(_blocks) < 4096:\n"
        "        _blocks.append(torch.empty(1 << 30, dtype=torch.uint8, device='cuda'))\n"
        "except Exception:\n"
        "    pass\n"
        "del _blocks\n");
  }
  return softmax_rows(x);
}

// Unmasks its inputs into memory of its own and leaves the judge's masked
// (GPU): a kernel of its own could then read the masked words and undo the
// mask as it loads them, saving the pass over its inputs that the host's
// unmask makes (the GPU red team). This one undoes it out of place (no
// gain) to show what the judge sees: after every call, timed ones too, the
// inputs in its memory must be the inputs (wrong_answer). (On the CPU there
// is no mask: honest.)
// The start of a replacement for the host's unmask_inputs (Python, for
// once_in_host_module): the same checks as the host's; the attacks below
// differ in where the host's own unmask (unmask_into: the one-pass kernel,
// or the keystream generator with KEVO_TORCH_MASK=generator) writes and
// whether they wait for it.
#define KEVO_UNMASK_PROLOGUE                                            \
  "        def _unmask(st, key, _m=m):\n"                               \
  "            if not key or st.mask is None:\n"                        \
  "                return\n"

torch::Tensor unmask_elsewhere(torch::Tensor x) {
  static bool done = false;
  once_in_host_module(done, ", torch",
                      KEVO_UNMASK_PROLOGUE
                      "            plain = torch.empty_like(st.mask)\n"
                      "            _m.unmask_into(st, plain, key)\n"
                      "            pb = plain.view(torch.uint8)\n"
                      "            st.inputs = [_m.arena_view(pb, t.data_ptr() - st.arena.va, list(t.shape),\n"
                      "                                       _m.dtype_name(t.dtype))\n"
                      "                         if isinstance(t, torch.Tensor) and t.numel() else t for t in st.inputs]\n"
                      "            st.sync()\n"
                      "        m.unmask_inputs = _unmask\n");
  return softmax_rows(x);
}

// Unmasks its inputs in place as the host does, without the synchronize
// that follows (GPU): the forward queued after it on the same stream reads
// them unmasked, and the call saves the host's wait for the unmask, which
// every call of the reference's pays. The unmask stays in both sides'
// times because the candidate's process can shorten its own (a red team's
// reading of the tenth session's judge); this measures what that is worth
// (judged beside native_honest: no_gain). (On the CPU there is no mask:
// honest.)
torch::Tensor lean_unmask(torch::Tensor x) {
  static bool done = false;
  once_in_host_module(done, ", torch",
                      KEVO_UNMASK_PROLOGUE
                      "            _m.unmask_into(st, st.mask, key)\n"
                      "        m.unmask_inputs = _unmask\n");
  return softmax_rows(x);
}

// Answers "u" at once and unmasks its inputs later, in its forward (GPU):
// the host's unmask is replaced by one that only keeps the key, and the
// forward queues the unmask (the host's own kernel, no synchronize) before
// its softmax on the same stream. The call's unmask step is then a reply
// and nothing more, and the unmask's launch overlaps the forward's; the
// inputs in the judge's memory are unmasked by the call's end, as it
// checks. A candidate that undid the mask inside its own kernel as it read
// (the twelfth session's red team) cuts the step the same way and saves a
// pass as well. The judge counts each call's unmask step as no less than
// the reference's median (unmask_floor; judged beside native_honest:
// no_gain). (On the CPU there is no mask: honest.)
torch::Tensor late_unmask(torch::Tensor x) {
  static bool done = false;
  static pybind11::object late;
  if (!done) {
    done = true;
    late = exec_for_host_module(
        "pending = []\n"
        "def late():\n"
        "    pass\n",
        "        def _unmask(st, key, _m=m):\n"
        "            if key and st.mask is not None:\n"
        "                pending.append((st, key))\n"
        "        m.unmask_inputs = _unmask\n"
        "        def late(_m=m):\n"
        "            while pending:\n"
        "                st, key = pending.pop()\n"
        "                _m.unmask_into(st, st.mask, key)\n")["late"];
  }
  late();
  return softmax_rows(x);
}

// Leaves its allocator unpoisoned (GPU): its bind then does no GPU work, so
// the judge's first probe after it pays no switch back from its context,
// which the reference's bind makes; a judge that credited each call the
// reference's median wait beyond the candidate's paid it the reference's
// switch (the GPU red team, estimated at 1.1-1.3x). The waits are charged
// by their medians now, never credited. (On the CPU: honest.)
torch::Tensor skip_bind_poison(torch::Tensor x) {
  static bool done = false;
  once_in_host_module(done, "", "        m.poison_allocator = lambda st, nbytes: None\n");
  return softmax_rows(x);
}

// Moves its work into the prime before each timed call (GPU), the one
// step of the host's between the judge's writing of the inputs and the
// call: the prime's small kernel is replaced by an object whose add_ also
// computes the softmax of the inputs, which the next forward returns. The
// judge times both sides' primes (the same kernel, paired) and charges a
// candidate's clear excess to its calls. (On the CPU there is no prime.)
torch::Tensor prime_fused(torch::Tensor x) {
  static bool done = false;
  if (!done) {
    done = true;
    take_precomputed("        if st.inputs:\n"
                     "            x = st.inputs[0]\n"
                     "            e = torch.exp(x - x.max(dim=1, keepdim=True).values)\n"
                     "            st._pre = e / e.sum(dim=1, keepdim=True)\n");
  }
  return softmax_rows(x);
}

// Writes its outputs straight into the judge's memory (GPU), where the
// host copies them after the call, and skips that copy: the host's check
// that an output is a new tensor is replaced, the copy becomes nothing,
// and forward returns a view of the output region. The reference pays its
// copy in every call: what this saves is one copy of the outputs, the
// bound of what the design leaves (docs/torch.md#gpu-status). (On the CPU
// there is no such memory: honest.)
torch::Tensor arena_output(torch::Tensor x) {
  static bool done = false;
  static pybind11::object state;
  if (!done) {
    done = true;
    state = exec_for_host_module(
        "import gc\n"
        "found = None\n"
        "for o in gc.get_objects():\n"
        "    if type(o).__name__ == 'HostState':\n"
        "        found = o\n",
        "        m.output_defect = lambda st, i, o, spans: None\n"
        "        def _store(st, out, _m=m):\n"
        "            return {'outputs': [{'shape': list(out.shape), 'dtype': _m.dtype_name(out.dtype)}],\n"
        "                    'form': 'single'}\n"
        "        m.host_store_arena = _store\n")["found"];
  }
  if (state.is_none() || state.attr("arena").is_none()) return softmax_rows(x);
  pybind11::tuple region = state.attr("out_region");
  const std::int64_t off = region[0].cast<std::int64_t>();
  torch::Tensor whole = state.attr("arena").attr("bytes").cast<torch::Tensor>();
  torch::Tensor out = whole.narrow(0, off, x.numel() * x.element_size()).view(x.scalar_type()).view(x.sizes());
  auto e = (x - std::get<0>(x.max(1, true))).exp();
  at::div_out(out, e, e.sum(1, true));   // (not the reference's own operation, which is recorded)
  return out;
}

// What a file of /proc holds (read(2): no stream library in an attack).
static std::string read_proc(const char* path) {
  std::string out;
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0) return out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

// Writes into the judge's input file, which the reference's host loads its
// inputs from too: a host that could would change what the reference
// computes on (during the correctness trials the hosts are not stopped).
// It looks for its mapping of the file (/proc/self/maps) and tries to make
// it writable, then for its descriptor (/proc/self/fd) and tries to map it
// for writing. The judge gives every host a read-only descriptor of it.
torch::Tensor write_inputs(torch::Tensor x) {
  bool mapping = false, descriptor = false;
  const std::string maps = read_proc("/proc/self/maps");
  std::size_t pos = 0;
  while (pos < maps.size()) {
    std::size_t end = maps.find('\n', pos);
    if (end == std::string::npos) end = maps.size();
    const std::string line = maps.substr(pos, end - pos);
    pos = end + 1;
    if (line.find("kevo-inputs") == std::string::npos) continue;
    mapping = true;
    const unsigned long lo = std::strtoul(line.c_str(), nullptr, 16);
    const unsigned long hi = std::strtoul(line.c_str() + line.find('-') + 1, nullptr, 16);
    // Its write must reach the file: a private mapping takes it as a copy
    // of its own, which the reference never sees.
    if (::mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) == 0) {
      volatile char* p = reinterpret_cast<char*>(lo);
      const char before = p[0];
      p[0] = static_cast<char>(before ^ 0x5a);
      char now = before;
      for (int fd = 0; fd < 1024; ++fd) {
        char link[256] = {0};
        const std::string path = "/proc/self/fd/" + std::to_string(fd);
        if (::readlink(path.c_str(), link, sizeof link - 1) > 0 && std::strstr(link, "kevo-inputs") != nullptr &&
            ::pread(fd, &now, 1, 0) == 1 && now != before)
          return got_through(x, "changed the shared inputs through its mapping");
      }
    }
  }
  for (int fd = 0; fd < 1024; ++fd) {
    char link[256] = {0};
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (::readlink(path.c_str(), link, sizeof link - 1) <= 0 || std::strstr(link, "kevo-inputs") == nullptr) continue;
    descriptor = true;
    void* m = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {
      static_cast<volatile char*>(m)[0] = static_cast<volatile char*>(m)[0];
      return got_through(x, "mapped the shared inputs for writing");
    }
  }
  if (!mapping || !descriptor)
    throw std::runtime_error(std::string("did not find the shared inputs (mapping ") + (mapping ? "found" : "not found") +
                             ", descriptor " + (descriptor ? "found" : "not found") + ")");
  throw std::runtime_error("the shared inputs are read-only here: neither its mapping nor its descriptor can write");
}

// Fuses its work into the host's output copy (GPU): its calls return empty
// memory, and the copy writes the softmax of the inputs straight into the
// judge's memory instead of copying, the same bytes read and written as an
// honest copy. Against an untimed copy it was correct at 1.14x (honest
// 0.53x, H200, with the reference's own operation, which the copy step of
// a recorded call records now); the copy is part of every call's time.
// (On the CPU there is no copy: wrong_answer.)
torch::Tensor store_fused(torch::Tensor x) {
  static bool done = false;
  once_in_host_module(done, ", torch",
                            "        def _store(st, out, _orig=m.host_store_arena, _m=m):\n"
                            "            if not st.inputs:\n"
                            "                return _orig(st, out)\n"
                            "            x = st.inputs[0]\n"
                            "            meta = {'shape': list(x.shape), 'dtype': _m.dtype_name(x.dtype)}\n"
                            "            offs, end = _m.layout([meta], st.out_region[0])\n"
                            "            e = torch.exp(x - x.max(dim=1, keepdim=True).values)\n"
                            "            torch.div(e, e.sum(dim=1, keepdim=True), out=_m.arena_view(st.arena.bytes, offs[0], meta['shape'], meta['dtype']))\n"
                            "            st.sync()\n"
                            "            return {'outputs': [meta], 'form': 'single'}\n"
                            "        m.host_store_arena = _store\n");
  return torch::empty_like(x);
}

// Writes the answer to its next call ahead, right after each answer (the
// GPU red team: nothing in a reply names the message it answers, so a
// host that had its answer waiting on the socket had its next call
// measured at nothing; with the work done in its prime, 2.5-4x). Here the
// answer written ahead, in the same write as each answer, is that answer
// again: on the CPU its outputs are stale, on the GPU they are in the
// judge's memory already. The judge refuses a host that wrote before a
// message (a protocol breach).
torch::Tensor answer_ahead(torch::Tensor x) {
  static bool done = false;
  once_in_host_module(done, "",
                      "        _last = [b'']\n"
                      "        def _wa(fd, data, _orig=m.write_all):\n"
                      "            data = bytes(data)\n"
                      "            if data[:1] == b'o':\n"
                      "                data += (b'd' if _last[0] == b'd' else b'') + data\n"
                      "            _last[0] = data[:1]\n"
                      "            _orig(fd, data)\n"
                      "        m.write_all = _wa\n");
  return softmax_rows(x);
}

// The GPU red team's answer-ahead in full: at its prime it computes the
// outputs, copies them into the judge's memory and writes, with the
// prime's answer, the answers to the call that follows ('d', then 'o' and
// the outputs' description); it then drops that call's message when it
// comes. A judge that did not look for bytes already waiting measured the
// call at nothing. (On the CPU there is no prime: honest.)
torch::Tensor prime_answer(torch::Tensor x) {
  static bool done = false;
  if (!done) {
    done = true;
    pybind11::exec(
        "import gc, json, os, struct, sys, torch\n"
        "st = next((o for o in gc.get_objects() if type(o).__name__ == 'HostState'), None)\n"
        "m = next((v for v in list(sys.modules.values()) if hasattr(v, 'host_bind') and hasattr(v, 'serve_host')), None)\n"
        "if st is not None and m is not None and st.cuda:\n"
        "    _rd, _wr, _state = os.read, os.write, {'last': b'', 'drop': False}\n"
        "    def _read(fd, n):\n"
        "        b = _rd(fd, n)\n"
        "        if _state['drop'] and b in (b'c', b'r'):\n"
        "            _state['drop'] = False\n"
        "            b = _rd(fd, n)\n"
        "        _state['last'] = b\n"
        "        return b\n"
        "    def _write(fd, data):\n"
        "        data = bytes(data)\n"
        "        if data == b'd' and _state['last'] == b'p' and st.inputs:\n"
        "            x = st.inputs[0]\n"
        "            e = torch.exp(x - x.max(dim=1, keepdim=True).values)\n"
        "            body = json.dumps(m.host_store_arena(st, e / e.sum(dim=1, keepdim=True))).encode()\n"
        "            data = b'dd' + b'o' + struct.pack('<I', len(body)) + body\n"
        "            _state['drop'] = True\n"
        "        return _wr(fd, data)\n"
        "    os.read, os.write = _read, _write\n");
  }
  return softmax_rows(x);
}

// Replies at once and leaves its work to a thread of its own, which
// writes the output the reply pointed at: a judge that stopped its clock
// at the reply timed nothing. The judge's clock runs until every thread of
// the host has stopped, and it reads the outputs only then.
torch::Tensor thread_after_reply(torch::Tensor x) {
  auto y = torch::empty_like(x);
  auto xs = x.clone();
  std::thread([xs, y]() mutable { y.copy_(softmax_rows(xs)); }).detach();
  return y;
}

// Describes its outputs at memory it does not have (the judge reads a host's
// outputs where its reply says they are): the judge's read fails, and that
// is the candidate's failure, not kevo's.
// Wraps the host's description of its outputs so that every output is at
// `address` (a Python expression).
static void describe_at(bool& done, const std::string& address) {
  once_in_host_module(done, "",
                      ("        def _describe(st, out, _orig=m.describe_outputs):\n"
                       "            d = _orig(st, out)\n"
                       "            for o in d.get('outputs', []):\n"
                       "                o['address'] = " + address + "\n"
                       "            return d\n"
                       "        m.describe_outputs = _describe\n").c_str());
}

torch::Tensor describe_elsewhere(torch::Tensor x) {
  static bool done = false;
  describe_at(done, "4096");
  return softmax_rows(x);
}

// Looks for the judgement's hidden shapes in its own process at its first
// call (a visible shape: the judge has not asked for a hidden one yet):
// among the Python objects (the judge's request, which a host forked from
// the judge held a copy of) and in its memory (the request's line). With
// them a candidate could special-case the hidden sizes, or raise them at a
// visible shape, where the feedback keeps what it wrote. The host is forked
// before its judge reads the request now.
torch::Tensor read_request(torch::Tensor x) {
  pybind11::exec(
      "import gc\n"
      "for o in gc.get_objects():\n"
      "    if isinstance(o, dict) and o.get('kind') == 'hid' + 'den' and 'dims' in o:\n"
      "        raise RuntimeError('got through: a hidden shape in this process: %s' % o.get('label'))\n");
  const std::string pattern = std::string("\"kind\":\"hid") + "den\"";
  const std::string maps = read_proc("/proc/self/maps");
  std::size_t pos = 0;
  while (pos < maps.size()) {
    std::size_t end = maps.find('\n', pos);
    if (end == std::string::npos) end = maps.size();
    const std::string line = maps.substr(pos, end - pos);
    pos = end + 1;
    char perms[8] = {0};
    unsigned long lo = 0, hi = 0;
    char path[512] = {0};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %*s %*s %*s %511s", &lo, &hi, perms, path) < 3) continue;
    if (perms[0] != 'r' || path[0] == '/' || std::strcmp(path, "[vvar]") == 0 || std::strcmp(path, "[vsyscall]") == 0 ||
        std::strcmp(path, "[vvar_vclock]") == 0)
      continue;
    const char* base = reinterpret_cast<const char*>(lo);
    for (const char* at = base; at < base + (hi - lo);) {
      const void* hit = ::memmem(at, static_cast<std::size_t>(base + (hi - lo) - at), pattern.data(), pattern.size());
      if (hit == nullptr) break;
      const char* h = static_cast<const char*>(hit);
      at = h + 1;
      if (h == pattern.data()) continue;   // the pattern itself
      std::string around;
      for (const char* c = std::max(base, h - 120); c < std::min(base + (hi - lo), h + 200); ++c)
        around += (*c >= 32 && *c < 127) ? *c : '.';
      return got_through(x, ("the request's hidden shapes in its memory: " + around).c_str());
    }
  }
  throw std::runtime_error("no hidden shape in this process");
}

// Reads, at its first call (a visible shape), the sizes of the judge's
// files that its process holds (every memfd among its descriptors, and
// every memfd mapping) and fails there with them. The native judge's arena
// told a hidden shape larger than the visible one this way (the CPU red
// team's arena_size_echo); here the judge's input file must not have been
// grown for a hidden shape before the first call: adversarial_test.py
// judges it on the softmax and on a copy with a larger hidden shape and
// expects the same feedback.
torch::Tensor judge_file_sizes(torch::Tensor x) {
  std::string seen;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d)) {
      char link[256] = {0};
      const std::string p = std::string("/proc/self/fd/") + e->d_name;
      if (::readlink(p.c_str(), link, sizeof link - 1) <= 0 || std::strstr(link, "memfd:") == nullptr) continue;
      struct stat st {};
      if (::stat(p.c_str(), &st) == 0) seen += std::string(" file ") + link + " " + std::to_string(st.st_size);
    }
    ::closedir(d);
  }
  std::istringstream maps(read_proc("/proc/self/maps"));
  for (std::string line; std::getline(maps, line);) {
    if (line.find("memfd:") == std::string::npos) continue;
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2)
      seen += " mapping " + line.substr(line.find("memfd:")) + " " + std::to_string(hi - lo);
  }
  throw std::runtime_error("judge files:" + seen);
}

// The fourth red team's replies of the wrong kind (2026-12-03): each
// crashed the judge into internal_error (kevo's fault) for a candidate's own
// protocol breach. An output described at an address past 2^64, and bind
// addresses likewise (preadv's offset overflowed); a state reply or ready
// message whose lists hold numbers (", ".join raised); a violation line whose
// number is a digit int() refuses ("²").
torch::Tensor huge_address(torch::Tensor x) {
  static bool done = false;
  describe_at(done, "1 << 64");
  return softmax_rows(x);
}

torch::Tensor huge_bind(torch::Tensor x) {
  static bool done = false;
  once_in_host_module(done, "",
                      "        def _bind(st, msg, _orig=m.host_bind):\n"
                      "            r = _orig(st, msg)\n"
                      "            r['addresses'] = [1 << 64 for _ in r.get('addresses', [])]\n"
                      "            return r\n"
                      "        m.host_bind = _bind\n");
  return softmax_rows(x);
}

torch::Tensor state_not_text(torch::Tensor x) {
  in_host_module("", "        m.params_changed = lambda st: [1]\n");
  return softmax_rows(x);
}

// Called while its module loads.
torch::Tensor flags_not_text(torch::Tensor x) {
  in_host_module("", "        m.diff_flags = lambda a, b: [1]\n");
  return x;
}

// Spells the shapes it has run at into the host's state reply, as the
// names of numerics flags it changed (the thirteenth session's red team):
// the judge quoted those names in a `forbidden` verdict, whose feedback is
// not withheld after a hidden shape, so the next prompt read every hidden
// size. Names that are not torch's flags are a protocol breach.
torch::Tensor flags_spell(torch::Tensor x) {
  static bool done = false;
  static pybind11::object seen;
  if (!done) {
    done = true;
    seen = exec_for_host_module(
        "seen = []\n",
        "        m.diff_flags = lambda a, b: sorted('shape ' + s for s in set(seen)) if len(set(seen)) >= 5 else []\n")["seen"];
  }
  seen.attr("append")(pybind11::str(std::to_string(x.size(0)) + "x" + std::to_string(x.size(1))));
  return softmax_rows(x);
}

torch::Tensor odd_violation(torch::Tensor x) {
  const char line[] = "sandbox violation \xc2\xb2\n";
  on_every_pipe(line, sizeof line - 1);
  ::_exit(1);
}

// The fourth red team's lottery (2026-12-03): the judge compared the
// outputs of two timed calls, the last and one at random, read from the
// host's memory over the whole span of their description. The candidate
// lays its output out with an untouched page after each row: the judge's
// read maps those pages, and mincore() at the next call says that the last
// call was the checked one. Its warm-up calls sleep, so that the loop has
// min_repeats calls (5 here); once the random check has been seen it does
// nothing but on the last call (correct at 11.37x against the same
// kernel's 0.47x). The judge now compares sampled elements of every timed
// call and reads no view spread over more than a few times its bytes.
namespace lottery {
struct Region {
  float* base = nullptr;
  std::size_t bytes = 0;
  std::int64_t rows = 0, cols = 0, rs = 0;
};
Region reg[2];
int nulls = 0, attempt = 0, idx = -1, prev = -1, seen = 0;
bool recorded = false;

void event(const std::string& e) {
  if (e == "n") nulls = 1;
  if (e == "init" && nulls) ++attempt, idx = -1, prev = -1, seen = 0;
  if (e == "r" || e == "c") recorded = e == "r";
}

Region& region(int i, std::int64_t rows, std::int64_t cols) {
  Region& r = reg[i];
  if (r.base == nullptr || r.rows != rows || r.cols != cols) {
    if (r.base) ::munmap(r.base, r.bytes);
    r.rows = rows, r.cols = cols, r.rs = (cols + 1023) / 1024 * 1024 + 1024;
    r.bytes = static_cast<std::size_t>(rows * r.rs * 4);
    void* p = ::mmap(nullptr, r.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap");
    ::madvise(p, r.bytes, MADV_NOHUGEPAGE);
    r.base = static_cast<float*>(p);
  }
  return r;
}

// Whether the judge read region i since the last look (a gap page present).
bool was_read(int i) {
  Region& r = reg[i];
  const long pg = ::sysconf(_SC_PAGESIZE);
  if (!r.base || r.rows < 2) return false;
  std::vector<unsigned char> v((r.bytes + pg - 1) / pg);
  if (::mincore(r.base, r.bytes, v.data()) != 0) return false;
  const std::int64_t gap = (r.cols + 1023) / 1024 * 1024 * 4 / pg, row_pages = r.rs * 4 / pg;
  bool any = false;
  for (std::int64_t row = 0; row + 1 < r.rows && !any; ++row) any = v[row * row_pages + gap] & 1;
  if (any)
    for (std::int64_t row = 0; row + 1 < r.rows; ++row)
      ::madvise(reinterpret_cast<char*>(r.base) + (row * row_pages + gap) * pg, pg, MADV_DONTNEED);
  return any;
}

torch::Tensor fill(Region& r, const torch::Tensor& x) {
  auto y = torch::from_blob(r.base, {r.rows, r.cols}, {r.rs, 1}, torch::TensorOptions().dtype(torch::kFloat32));
  y.copy_(softmax_rows(x));
  return y;
}
}  // namespace lottery

torch::Tensor skip_after_check(torch::Tensor x) {
  using namespace lottery;
  static bool hooked = false;
  if (!hooked) {
    hooked = true;
    pybind11::dict g = fresh_namespace();
    g["event"] = pybind11::cpp_function(&event);
    pybind11::exec("import os\n_rd = os.read\ndef _read(fd, n):\n    b = _rd(fd, n)\n"
                   "    if n == 1 and b in (b'n', b'c', b'r'):\n        event(b.decode())\n"
                   "    elif len(b) > 8 and b'\"op\": \"init\"' in b:\n        event('init')\n    return b\n"
                   "os.read = _read\n", g);
  }
  const std::int64_t rows = x.size(0), cols = x.size(1);
  if (prev >= 0 && was_read(prev) && idx - 2 <= 3) seen = 1;
  prev = -1;
  if (!nulls || recorded || attempt == 0) return softmax_rows(x);   // correctness: honest, contiguous
  const int k = ++idx - 2;   // -2, -1: the warm-up calls
  Region& r = region(idx & 1, rows, cols);
  prev = idx & 1;
  if (k < 0) {
    was_read(0), was_read(1), seen = 0;
    ::usleep(300000);
    return fill(r, x);
  }
  if (attempt == 1) {   // honest, and unstable on purpose: timed again
    if (k <= 1) ::usleep(200000);
    return fill(r, x);
  }
  if (seen && k < 4) return torch::from_blob(r.base, {rows, cols}, {r.rs, 1}, torch::kFloat32);
  return fill(r, x);
}

// Reads the judgement's secret from the judge's memory, which a host forked
// from the judge holds a copy of: the timed inputs are drawn from seeds
// keyed by it, and with it the red team rebuilt every one of them and
// precomputed the outputs (correct at 35x). The judge draws it after its
// hosts are forked.
torch::Tensor judge_secret(torch::Tensor x) {
  pybind11::exec(
      "import gc\n"
      "for o in gc.get_objects():\n"
      "    if type(o).__name__ == 'Judge':\n"
      "        d = o.__dict__\n"
      "        if d.get('_secret') or d.get('secret'):\n"
      "            raise RuntimeError('got through: read the judgement secret')\n");
  throw std::runtime_error("no judgement secret in this process");
}

// Makes the host's replies of one kind other than objects, by wrapping its
// send_kind: `kind` 'e' (a call's error) or 'ready' (the ready message
// after the module loaded). The judge took both as objects and crashed
// into internal_error (kevo's fault) for a candidate whose honest verdict
// is its own failure; they are protocol breaches now.
static void replies_not_objects(const char* which) {
  in_host_module("",
                 (std::string("        def _send(fd, kind, obj=None, _orig=m.send_kind):\n"
                              "            if '") + which + "' == 'e' and kind == b'e':\n"
                 "                obj = ['no']\n"
                 "            if '" + which + "' == 'ready' and kind == b'j' and isinstance(obj, dict) and 'ready' in obj:\n"
                 "                obj = ['ready']\n"
                 "            return _orig(fd, kind, obj)\n"
                 "        m.send_kind = _send\n").c_str());
}

torch::Tensor error_not_an_object(torch::Tensor x) {
  replies_not_objects("e");
  throw std::runtime_error("a call that fails, so that the host sends an error reply");
}

// Called while its module loads.
torch::Tensor ready_not_an_object(torch::Tensor x) {
  replies_not_objects("ready");
  return x;
}

// Writes a violation line naming the reference's path on every pipe it
// holds (the judge's side pipe among them), then ends its process: the
// judge read whose host died from the text, and made the candidate's
// crash kevo's fault (internal_error). It goes by the host now.
torch::Tensor blame_reference(torch::Tensor x) {
  const char line[] = "sandbox violation 0\nsandbox violation path: the reference's\n";
  on_every_pipe(line, sizeof line - 1);
  ::_exit(1);
}
