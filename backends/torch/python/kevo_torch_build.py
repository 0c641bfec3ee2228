#!/usr/bin/env python3
"""The build stage of kevo's torch backend (docs/torch.md#build-stage).

kevo runs it for every candidate, in its compile stage (the sandbox runner:
own process group, wall-clock limit, no secrets in the environment), before
the candidate reaches the GPU:

  kevo_torch_build.py --version [--device D] [--arch A]
  kevo_torch_build.py --source FILE --out DIR --task TASK_DIR [--device cuda|cpu]
                      [--arch 9.0] [--objects DIR [--no-pch] [--warm-pch]]

It never runs the candidate. It parses it, checks it statically (imports,
names, attributes: kevo_torch_common.check_source), reads every
load_inline(...) call from the syntax tree with its arguments folded to
constants (anything computed at run time is a compile error saying so), and
builds each into OUT/ext/<key>/<name>.so with the compilers itself:

* the C++ part (main.cpp: <torch/extension.h>, the cpp_sources and the
  pybind11 bindings of `functions`, as load_inline writes it) with g++;
* the CUDA part (cuda.cu) with nvcc; when the CUDA sources never mention
  torch (raw pointers, the tensor binding in the C++ part) they are compiled
  without torch's headers, which is what makes a build take seconds
  instead of a minute;
* each object is cached under --objects by a SHA-256 of its compiler
  command, compiler identity and source, so a child that keeps its
  parent's C++ binding pays only for its CUDA file;
* <torch/extension.h> is precompiled once per compiler command (a g++
  PCH under --objects/pch/, built by the first build that needs it while
  the others wait on a lock) and main.cpp is compiled with it when the
  call's flags leave that command unchanged but for the optimisation level:
  about half of main.cpp's time (docs/torch.md#build-stage).

OUT/kevo_build.json says what was built (the judge's candidate host maps
each load_inline call to its library by the same key) or, for a candidate
that uses what a kernel may not, why it is forbidden (the judge answers
`forbidden` with it). Exit 0: built (or forbidden); 1: compile error, with
the reason on stdout.
"""
import argparse
import fcntl
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kevo_torch_common as kc  # noqa: E402

FORMAT = "kevo-torch-build/1"
TORCH_HINTS = ("torch", "at::", "c10", "Tensor", "TORCH_", "AT_DISPATCH", "PYBIND11")


def fail(message):
    sys.stdout.write(message.rstrip() + "\n")
    sys.stdout.flush()
    sys.exit(1)


def tool_line(argv):
    try:
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, text=True).stdout
        lines = [l for l in out.splitlines() if l.strip()]
        return lines[-1] if lines else "?"
    except (OSError, subprocess.SubprocessError) as e:
        return "unavailable (%s)" % e


def first_line(argv):
    try:
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, text=True).stdout
        return (out.splitlines() or ["?"])[0]
    except (OSError, subprocess.SubprocessError) as e:
        return "unavailable (%s)" % e


def toolchain(device, arch):
    import torch
    from torch.utils import cpp_extension as ce
    nvcc = os.path.join(ce.CUDA_HOME, "bin", "nvcc") if ce.CUDA_HOME else shutil.which("nvcc") or "nvcc"
    return {
        "format": FORMAT,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cxx": first_line([os.environ.get("CXX", "g++"), "--version"]),
        "nvcc": tool_line([nvcc, "--version"]) if device == "cuda" else None,
        "nvcc_path": nvcc if device == "cuda" else None,
        "device": device,
        "arch": arch,
    }


def cuda_home():
    """Where torch's cpp_extension finds CUDA, found the same way without
    importing torch: CUDA_HOME or CUDA_PATH, else the folder above the nvcc
    on PATH, else /usr/local/cuda when it exists."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if not home:
        nvcc = shutil.which("nvcc")
        home = os.path.dirname(os.path.dirname(nvcc)) if nvcc else "/usr/local/cuda"
    return home if os.path.exists(home) else None


def toolchain_identity(device, arch):
    """What --version prints (the command backend keys its build cache by
    it), without importing torch: on the H200 the import of
    torch.utils.cpp_extension took 4.2 s of every kevo process's start.
    Torch is named by its version.py (the version with its CUDA tag, the
    git revision) and where it is; the compilers by their --version."""
    import importlib.util
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        fail("this Python has no torch")
    where = list(spec.submodule_search_locations)[0]
    try:
        with open(os.path.join(where, "version.py"), "r", encoding="utf-8", errors="replace") as f:
            version = kc.sha256_text("torch-version-py", f.read())
    except OSError:
        version = "no version.py"
    home = cuda_home() if device == "cuda" else None
    nvcc = os.path.join(home, "bin", "nvcc") if home else shutil.which("nvcc") or "nvcc"
    return {
        "format": FORMAT,
        "python": platform.python_version(),
        "torch": {"path": os.path.realpath(where), "version_py": version},
        "cxx": first_line([os.environ.get("CXX", "g++"), "--version"]),
        "nvcc": tool_line([nvcc, "--version"]) if device == "cuda" else None,
        "device": device,
        "arch": arch,
    }


def python_include():
    import sysconfig
    return sysconfig.get_paths()["include"]


def torch_paths(fn, cuda):
    """cpp_extension.include_paths / library_paths for CPU or CUDA builds. Newer
    torch takes device_type="cuda" where older took cuda=True (a True handed to
    the newer one reads as the CPU: no CUDA headers, and a cpp_sources that
    includes ATen/cuda fails to find cuda_runtime_api.h)."""
    import inspect
    from torch.utils import cpp_extension as ce
    if "device_type" in inspect.signature(fn).parameters:
        paths = list(fn(device_type="cuda" if cuda else "cpu"))
    else:
        paths = list(fn(cuda))
    if cuda and ce.CUDA_HOME:
        want = os.path.join(ce.CUDA_HOME, "include" if fn is ce.include_paths else "lib64")
        if os.path.isdir(want) and want not in paths and want != "/usr/include":
            paths.append(want)
    return paths


def common_flags(name, cuda):
    """Torch's defines and include paths; with a name, TORCH_EXTENSION_NAME
    too (nvcc's command for CUDA sources that use torch). main.cpp defines
    the name in its text instead, so that its command is the same for every
    extension and the precompiled header fits all of them."""
    import torch
    from torch.utils import cpp_extension as ce
    flags = (["-DTORCH_EXTENSION_NAME=%s" % name] if name else []) + ["-DTORCH_API_INCLUDE_EXTENSION_H",
             "-D_GLIBCXX_USE_CXX11_ABI=%d" % int(torch._C._GLIBCXX_USE_CXX11_ABI)]
    for key in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
        v = getattr(torch._C, "_PYBIND11_" + key, None)
        if v is not None:
            flags.append('-DPYBIND11_%s="%s"' % (key, v))
    flags += ["-I" + p for p in torch_paths(ce.include_paths, cuda)] + ["-I" + python_include()]
    return flags


def gencode(arch):
    a = arch.replace(".", "")
    return ["-gencode=arch=compute_%s,code=sm_%s" % (a, a)]


def needs_torch(cuda_sources):
    text = "\n".join(cuda_sources)
    return any(h in text for h in TORCH_HINTS)


def main_cpp(call):
    parts = ["#include <torch/extension.h>", "#define TORCH_EXTENSION_NAME %s" % call["name"]] + call["cpp_sources"]
    if call["functions"]:
        parts.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
        for f, doc in call["functions"]:
            wrapped = "torch::wrap_pybind_function(%s)" % f if call["with_pytorch_error_handling"] else f
            parts.append('m.def("%s", %s, %s);' % (f, wrapped, json.dumps(doc)))
        parts.append("}")
    return "\n".join(parts) + "\n"


def cxx_command(cxx, call, common):
    """g++'s command for main.cpp, without its input and output. With CUDA
    sources the C++ part is the tensor binding (the kernels are in cuda.cu):
    -O1 builds it in half the time of -O3 (torch's headers and pybind11's
    templates are most of it); a C++ part that computes asks for more in its
    extra_cflags, which come later on the line and win."""
    return cxx_base(cxx, call, common) + ["-I" + p for p in call["extra_include_paths"]] + call["extra_cflags"]


def cxx_base(cxx, call, common):
    return [cxx, "-fPIC", "-std=c++17", "-O1" if call["cuda_sources"] else "-O3", "-w"] + common


def pch_command(cxx, call, common):
    """The command main.cpp can share with a precompiled <torch/extension.h>,
    or None. g++ takes a PCH only when the command that built it matches
    (a -D, -m or -f of the call's makes it silently ignore the PCH, or, for
    an optimisation level that differs, g++ 12 crashed with an internal
    error in our trials): so the PCH is built with the call's own command,
    which may differ from the default only by a later -O level."""
    if call["extra_include_paths"]:
        return None
    base = cxx_base(cxx, call, common)
    for f in call["extra_cflags"]:
        if f not in OPT_LEVELS:
            return None
        base[3] = f
    return base


OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Og", "-Ofast", "-O")
PCH_HEADER = "kevo_torch_extension.h"
PCH_WAIT_SECONDS = 300


class Pch:
    """Precompiled <torch/extension.h> under OBJECTS/pch/<key>/, one per
    compiler command. The first build that needs one builds it, holding a
    lock that the others wait on (up to PCH_WAIT_SECONDS; then they compile
    without it), and checks that g++ takes it (`-H` marks a used PCH with
    "!"); a PCH that failed or was refused leaves a note, so no build tries
    it again, and every build goes on without it."""

    def __init__(self, root, tools):
        self.root = os.path.join(root, "pch") if root else None
        self.tools = json.dumps(tools, sort_keys=True)
        self.built_seconds = None
        self.waited_seconds = 0.0
        self.error = None

    def header_for(self, argv, wait=True):
        """The header to -include for main.cpp's command `argv`, or None.
        wait=False (the warm-up): None at once when another build holds the
        lock (it is building the PCH)."""
        if not self.root or argv is None:
            return None
        key = kc.sha256_text("kevo-torch-pch-1", self.tools, json.dumps(argv))
        d = os.path.join(self.root, key[:32])
        header, gch, failed = os.path.join(d, PCH_HEADER), os.path.join(d, PCH_HEADER + ".gch"), os.path.join(d, "failed")
        if os.path.exists(gch):
            return header
        if os.path.exists(failed):
            return None
        os.makedirs(d, exist_ok=True)
        fd = os.open(os.path.join(d, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            t0 = time.monotonic()
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not wait:
                        return None
                    if time.monotonic() - t0 > PCH_WAIT_SECONDS:
                        self.error = "waited %d s for another build's precompiled header" % PCH_WAIT_SECONDS
                        return None
                    time.sleep(0.2)
            self.waited_seconds += time.monotonic() - t0
            if os.path.exists(gch):
                return header
            if os.path.exists(failed):
                return None
            self._build(argv, d, header, gch, failed)
            return header if os.path.exists(gch) else None
        finally:
            os.close(fd)

    def _build(self, argv, d, header, gch, failed):
        t0 = time.monotonic()
        for left in os.listdir(d):   # of a build killed while it held the lock
            if ".gch.tmp" in left:
                os.remove(os.path.join(d, left))
        with open(header, "w", encoding="utf-8") as f:
            f.write("#include <torch/extension.h>\n")
        tmp = gch + ".tmp%d" % os.getpid()
        r = subprocess.run(argv + ["-x", "c++-header", header, "-o", tmp],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        why = None
        if r.returncode != 0:
            why = "g++ could not precompile <torch/extension.h> (exit %d): %s" % (r.returncode, r.stdout[-2000:])
        else:
            os.replace(tmp, gch)
            probe = os.path.join(d, "probe%d.cpp" % os.getpid())
            with open(probe, "w", encoding="utf-8") as f:
                f.write("int kevo_probe;\n")
            r = subprocess.run(argv + ["-include", header, "-H", "-fsyntax-only", probe],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            os.remove(probe)
            if not any(l.startswith("! ") and l.endswith(".gch") for l in r.stdout.splitlines()):
                why = "g++ does not take the precompiled header it built (-H): %s" % r.stdout[-600:]
                os.remove(gch)
        if os.path.exists(tmp):
            os.remove(tmp)
        if why:
            self.error = why
            with open(failed, "w", encoding="utf-8") as f:
                f.write(why + "\n")
        else:
            self.built_seconds = round(time.monotonic() - t0, 3)


def cuda_cu(call):
    if needs_torch(call["cuda_sources"]):
        head = ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
    else:
        head = ["#include <cuda.h>", "#include <cuda_runtime.h>"]
    return "\n".join(head + call["cuda_sources"]) + "\n"


class ObjectCache:
    def __init__(self, root, tools):
        self.root = root
        self.tools = json.dumps(tools, sort_keys=True)
        self.hits = 0
        self.built = 0
        if root:
            os.makedirs(root, exist_ok=True)

    def key(self, argv, source):
        return kc.sha256_text("kevo-torch-object-1", self.tools, json.dumps(argv), source)

    def path(self, key):
        return os.path.join(self.root, key[:2], key + ".o") if self.root else None


def start_compile(argv_without_io, source_text, src_path, obj_path, cache, extra=(), key=None):
    """Starts one compile, or takes the object from the cache. Returns
    (process or None, final object path, key). `extra` (the PCH's -include)
    is not part of the key: it changes how long the compile takes, not the
    object. `key`: cache.key(argv_without_io, source_text), when the caller
    has it."""
    with open(src_path, "w", encoding="utf-8") as f:
        f.write(source_text)
    key = key or cache.key(argv_without_io, source_text)
    cached = cache.path(key)
    if cached and os.path.exists(cached):
        cache.hits += 1
        shutil.copyfile(cached, obj_path)
        return None, obj_path, key
    argv = argv_without_io + list(extra) + ["-c", src_path, "-o", obj_path]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    p.kevo_argv = argv
    return p, obj_path, key


def finish_compile(p, obj_path, key, cache, what):
    if p is None:
        return
    out, _ = p.communicate()
    if p.returncode != 0:
        # The build folder's path means nothing to the candidate's author
        # (it reaches LLM repair prompts): main.cpp:25:5, not /cache/.../main.cpp:25:5.
        out = out.replace(os.path.dirname(obj_path) + os.sep, "")
        fail("%s failed (exit %d):\n%s" % (what, p.returncode, out[-16000:]))
    cache.built += 1
    cached = cache.path(key)
    if cached:
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(cached), suffix=".tmp")
        os.close(fd)
        shutil.copyfile(obj_path, tmp)
        os.replace(tmp, cached)


def warm_pch(pch, device):
    """Builds the PCH that a typical candidate's main.cpp takes: the tensor
    binding of CUDA sources on a CUDA device, a C++ kernel at -O3 on the CPU
    (no flags of the call's). kevo's torch backend asks for it when it
    builds a task's reference (the task's prepare, before any candidate)."""
    call = {"cuda_sources": ["-"] if device == "cuda" else [], "extra_cflags": [], "extra_include_paths": []}
    return pch.header_for(pch_command(os.environ.get("CXX", "g++"), call, common_flags(None, device == "cuda")),
                          wait=False)


def build_extension(call, out_dir, device, arch, tools, cache, pch):
    from torch.utils import cpp_extension as ce
    if call["cuda_sources"] and device != "cuda":
        fail("load_inline '%s' has CUDA sources, and this task runs on the CPU (backend.torch.device %s)"
             % (call["name"], device))
    key = kc.load_inline_key(call)
    edir = os.path.join(out_dir, "ext", key[:16])
    os.makedirs(edir, exist_ok=True)
    cuda = bool(call["cuda_sources"])
    cxx = os.environ.get("CXX", "g++")
    common = common_flags(None, cuda)
    cflags = cxx_command(cxx, call, common)
    jobs = []
    objs = [os.path.join(edir, "main.o")]
    if cuda:
        raw = not needs_torch(call["cuda_sources"])
        nvcc = [tools["nvcc_path"], "-std=c++17", "-O3", "--expt-relaxed-constexpr", "-Xcompiler", "-fPIC", "-w"] + \
            gencode(arch)
        if raw:
            nvcc += ["-I" + p for p in call["extra_include_paths"]]
        else:
            nvcc += ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                     "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"] + \
                common_flags(call["name"], True) + ["-I" + p for p in call["extra_include_paths"]]
        nvcc += call["extra_cuda_cflags"]
        jobs.append(start_compile(nvcc, cuda_cu(call), os.path.join(edir, "cuda.cu"), os.path.join(edir, "cuda.o"), cache)
                    + ("nvcc on load_inline '%s' (cuda_sources%s)" % (call["name"], ", without torch's headers" if raw else ""),))
        objs.append(os.path.join(edir, "cuda.o"))
    # After nvcc has started: this may wait for another build's PCH. The
    # object's key is the command without the PCH (the same object either way).
    header = None
    source = main_cpp(call)
    main_key = cache.key(cflags, source)
    if not os.path.exists(cache.path(main_key) or ""):
        header = pch.header_for(pch_command(cxx, call, common))
    jobs.insert(0, start_compile(cflags, source, os.path.join(edir, "main.cpp"), objs[0], cache,
                                 ["-include", header] if header else [], key=main_key)
                + ("g++ on load_inline '%s' (cpp_sources)" % call["name"],))
    for p, obj, k, what in jobs:
        finish_compile(p, obj, k, cache, what)
    libs = ["-L" + p for p in torch_paths(ce.library_paths, cuda)] + ["-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"]
    if cuda:
        libs += ["-lc10_cuda", "-ltorch_cuda", "-L" + os.path.join(ce.CUDA_HOME, "lib64"), "-lcudart"]
    so = os.path.join(edir, call["name"] + ".so")
    link = [cxx, "-shared"] + objs + ["-o", so] + libs + call["extra_ldflags"]
    r = subprocess.run(link, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        fail("linking load_inline '%s' failed (exit %d):\n%s" % (call["name"], r.returncode,
                                                                r.stdout.replace(edir + os.sep, "")[-16000:]))
    for tmp in ("main.o", "cuda.o"):
        try:
            os.remove(os.path.join(edir, tmp))
        except OSError:
            pass
    return {"key": key, "name": call["name"], "path": os.path.relpath(so, out_dir),
            "functions": [f for f, _ in call["functions"]], "raw_cuda": cuda and not needs_torch(call["cuda_sources"]),
            "pch": bool(header)}


# Landlock (Linux 5.13+), by its system calls (the same numbers on every
# architecture): access rights of ABI 1, and REFER (2) and TRUNCATE (3).
LL_EXECUTE, LL_WRITE_FILE, LL_READ_FILE, LL_READ_DIR = 1, 2, 4, 8
LL_ABI1 = (1 << 13) - 1
LL_REFER, LL_TRUNCATE = 1 << 13, 1 << 14
LL_FILE_RIGHTS = LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446


def read_dirs(device):
    """What the build and its compilers may read: the system's trees, the
    interpreter's, torch's and CUDA's, and the compilers' own prefixes.
    Not the user's files, the task's folder (its hidden shapes), kevo's run
    folder or /proc (the environments of kevo's ancestors)."""
    import sysconfig
    import torch
    from torch.utils import cpp_extension as ce
    dirs = ["/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc/ld.so.cache", "/etc/ld.so.conf",
            "/etc/ld.so.conf.d", "/etc/alternatives", sys.prefix, sys.base_prefix, sys.exec_prefix,
            os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))]
    dirs += [p for p in sys.path if p] + list(sysconfig.get_paths().values())
    tools = [os.environ.get("CXX", "g++")]
    if device == "cuda" and ce.CUDA_HOME:
        dirs.append(ce.CUDA_HOME)
        tools.append(os.path.join(ce.CUDA_HOME, "bin", "nvcc"))
    for t in tools:
        path = shutil.which(t)
        if path:
            dirs.append(os.path.dirname(os.path.dirname(os.path.realpath(path))))
    # (An entry of sys.path that holds the user's files or kevo's tree, a
    # broad PYTHONPATH, is left out: the adversarial suite's include_secret
    # read a file of the user's through one.)
    return kc.sandbox_binds(dirs, os.path.dirname(os.path.abspath(__file__)))[0]


def confine(reads, writes):
    """Puts this process and the compilers it starts under a Landlock
    ruleset: reading only beneath `reads` and `writes`, writing only beneath
    `writes`. Returns None, or why it could not (the build goes on
    unconfined and says so)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return "Landlock is not available (%s)" % os.strerror(ctypes.get_errno())
    handled = LL_ABI1 | (LL_REFER if abi >= 2 else 0) | (LL_TRUNCATE if abi >= 3 else 0)
    attr = ctypes.c_uint64(handled)
    fd = libc.syscall(ctypes.c_long(SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if fd < 0:
        return "landlock_create_ruleset: %s" % os.strerror(ctypes.get_errno())

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    try:
        for dirs, access in ((reads, LL_EXECUTE | LL_READ_FILE | LL_READ_DIR), (writes, handled)):
            for d in dirs:
                try:
                    dfd = os.open(d, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    rule = PathBeneath(access if os.path.isdir(d) else access & LL_FILE_RIGHTS, dfd)
                    if libc.syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(fd), ctypes.c_int(1),
                                    ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                        return "landlock_add_rule(%s): %s" % (d, os.strerror(ctypes.get_errno()))
                finally:
                    os.close(dfd)
        if libc.prctl(38, 1, 0, 0, 0) != 0:   # PR_SET_NO_NEW_PRIVS
            return "PR_SET_NO_NEW_PRIVS: %s" % os.strerror(ctypes.get_errno())
        if libc.syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            return "landlock_restrict_self: %s" % os.strerror(ctypes.get_errno())
    finally:
        os.close(fd)
    return None


def uses_triton(tree):
    import ast
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(n.split(".")[0] == "triton" for n in names):
                return True
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", action="store_true")
    ap.add_argument("--source")
    ap.add_argument("--out")
    ap.add_argument("--task")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--arch", default="9.0")
    ap.add_argument("--objects", default="")
    ap.add_argument("--no-pch", action="store_true", help="never precompile <torch/extension.h>")
    ap.add_argument("--warm-pch", action="store_true",
                    help="when SOURCE is the task's reference, build the usual PCH (unless another build is)")
    a = ap.parse_args()
    if a.version:
        print(json.dumps(toolchain_identity(a.device, a.arch), sort_keys=True))
        return 0
    if not (a.source and a.out and a.task):
        ap.error("--source, --out and --task are required")
    t0 = time.monotonic()
    with open(a.source, "r", encoding="utf-8", errors="replace") as f:
        source = f.read()
    info = kc.torch_section(a.task)
    with open(info["reference"], "r", encoding="utf-8") as f:
        reference = f.read()
    result = {"format": FORMAT, "role": "candidate", "forbidden": None, "extensions": [], "uses_triton": False}
    if source == reference:
        # The task's own reference: trusted, judged as itself; nothing to
        # build but, when asked, the PCH that the candidates will want.
        result["role"] = "reference"
        if a.warm_pch and a.objects and not a.no_pch:
            pch = Pch(a.objects, toolchain(a.device, a.arch))
            result["pch"] = {"warm": bool(warm_pch(pch, a.device)), "built_seconds": pch.built_seconds,
                             "error": pch.error}
    else:
        try:
            tree = kc.check_source(source, "candidate.py", info["languages"])
        except kc.BuildError as e:
            fail(str(e))
        except kc.StaticViolation as e:
            result["forbidden"] = str(e)
            tree = None
        if tree is not None:
            try:
                calls = kc.load_inline_calls(tree, "candidate.py")
            except kc.BuildError as e:
                fail(str(e))
            if calls and "cuda" not in info["languages"] and any(c["cuda_sources"] for c in calls):
                result["forbidden"] = "candidate.py: uses CUDA through load_inline (this task allows %s)" % ", ".join(info["languages"])
                calls = []
            seen = set()
            tools = toolchain(a.device, a.arch) if calls else None
            cache = ObjectCache(a.objects, tools) if calls else None
            pch = Pch("" if a.no_pch else a.objects, tools) if calls else None
            if calls:
                # The compilers read what the sources name (#include, .incbin,
                # -I): a file of the user's, the task's own folder with its
                # hidden shapes, or another process's environment in /proc
                # would show in the compile log or in the library.
                out = os.path.realpath(a.out)
                os.environ["TMPDIR"] = out
                why = confine(read_dirs(a.device), [out, "/dev/null", "/dev/zero", "/dev/urandom"] + ([os.path.realpath(a.objects)] if a.objects else []))
                if why:
                    result["confinement"] = "reads not confined: " + why
            for c in calls:
                k = kc.load_inline_key(c)
                if k in seen:
                    continue
                seen.add(k)
                result["extensions"].append(build_extension(c, a.out, a.device, a.arch, tools, cache, pch))
            result["uses_triton"] = uses_triton(tree)
            if cache:
                result["object_cache"] = {"hits": cache.hits, "built": cache.built}
                result["pch"] = {"built_seconds": pch.built_seconds, "waited_seconds": round(pch.waited_seconds, 3),
                                 "error": pch.error}
    result["seconds"] = round(time.monotonic() - t0, 3)
    with open(os.path.join(a.out, "kevo_build.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print("kevo torch build: %s, %d extension(s)%s in %.2f s%s" % (
        result["role"], len(result["extensions"]), ", forbidden" if result["forbidden"] else "", result["seconds"],
        " (%s)" % result["confinement"] if result.get("confinement") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
