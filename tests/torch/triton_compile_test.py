#!/usr/bin/env python3
"""A Triton compile inside kevo's sandboxed candidate host, without a GPU
(docs/torch.md#triton-candidates).

  triton_compile_test.py KEVO PYTHON SOURCE_DIR WORK_DIR

Triton (scripts/setup-triton.sh: its wheel in a folder of its own, on
PYTHONPATH for this test only; skipped, 77, without it) compiles the two
honest Triton candidates of tests/torch/gpu to PTX for sm_90 in a host made
as the judge makes a candidate's: forked through libkevo_pyhost into its
namespaces, a private read-only root, kevo_torch_triton's in-memory compile,
then the `cuda` system-call policy. The parent is the zygote's stand-in.

* sandboxed: the parent made kevo_torch_triton.warm_compile() first, with
  Triton's cache folder already holding that kernel (another process
  compiled it: a later kevo run on the same machine); the host compiles
  both kernels under the policy and hands back PTX.
* signal: after the warm compile a SIGTERM to the host meets the host's own
  disposition, not LLVM's handler, which would put back every disposition
  it replaced, SIGSYS's among them: a violation (warm_compile takes LLVM's
  handlers back).
* control: the parent made no warm compile; the host's first compile has
  Triton's LLVM install its crash handlers, rt_sigaction(SIGSYS), which the
  policy traps: a violation naming system call 13. (On the H200, where the
  warm compile was a cache hit, every Triton candidate died so.)
"""
import ctypes
import json
import linecache
import os
import signal
import subprocess
import sys
import time
import types

KERNELS = [
    ("softmax_triton.py", "softmax_rows",
     {"x_ptr": "*fp32", "y_ptr": "*fp32", "row_stride": "i32", "cols": "i32", "BLOCK": "constexpr"}, {"BLOCK": 4096}),
    ("layernorm_triton.py", "layernorm_rows",
     {"x_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "y_ptr": "*fp32", "row_stride": "i32", "cols": "i32",
      "eps": "fp32", "BLOCK": "constexpr"}, {"BLOCK": 2048}),
]


def triton_site(src):
    """Where scripts/setup-triton.sh puts Triton (it says, installing nothing)."""
    p = subprocess.run(["bash", os.path.join(src, "scripts", "setup-triton.sh"), "--site"], capture_output=True,
                       text=True)
    return p.stdout.strip()


def host(scripts, src, mode):
    """In a child of the test (the zygote's stand-in): make the host, compile
    in it, print one JSON line."""
    sys.path.insert(0, scripts)
    import torch  # noqa: F401  (the zygote has it)
    import kevo_torch_eval as kte
    import kevo_torch_triton as ktt
    from triton.runtime import build
    from triton.backends.nvidia import compiler as nc
    lib = kte.PYHOST = kte.load_pyhost(os.path.join(scripts, "libkevo_pyhost.so"))
    buf = ctypes.create_string_buffer(512)
    lib.kevo_pyhost_namespace_ids(buf, len(buf))
    parent_ns = buf.value.decode()
    build.platform_key()
    nc.get_ptxas_version(90)
    if mode == "populate":
        ktt.warm_compile()
        print(json.dumps({"populated": True}))
        return 0
    if mode in ("sandboxed", "signal"):
        ktt.warm_compile()
    sources = {f: open(os.path.join(src, "tests", "torch", "gpu", f)).read() for f, _, _, _ in KERNELS}
    viol_r, viol_w = os.pipe()
    out_r, out_w = os.pipe()
    report = ctypes.create_string_buffer(8192)
    ctypes.pythonapi.PyOS_BeforeFork()
    pid = lib.kevo_pyhost_clone(1, report, len(report))
    if pid == 0:
        ctypes.pythonapi.PyOS_AfterFork_Child()
        try:
            os.close(viol_r)
            os.close(out_r)
            b = ctypes.create_string_buffer(1024)
            if os.getpid() == 1 and lib.kevo_pyhost_mount_proc(b, len(b)) != 0:
                raise RuntimeError("mount_proc: " + b.value.decode())
            ktt.compile_in_memory()
            opts = {"device": "cuda", "parent_ns": parent_ns, "binds": [], "seccomp": True}
            iso = kte.isolate_self(opts, viol_w)
            lock = kte.lockdown(opts, iso, viol_w)
            if mode == "signal":
                # A SIGTERM to itself (a host is its PID namespace's first
                # process: with no handler of its own the signal is ignored).
                # LLVM's handler, were it still there, would put back every
                # disposition it replaced, SIGSYS's among them: the violation.
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.2)
                os.write(out_w, json.dumps({"survived": True}).encode())
                os._exit(42)
            import triton
            from triton.compiler import ASTSource
            from triton.backends.compiler import GPUTarget
            got = {"isolation": {k: iso.get(k) for k in ("private_root", "read_only_fs", "pid_ns", "mount_ns")},
                   "seccomp": lock.get("seccomp"), "ptx": {}}
            for f, kernel, sig, const in KERNELS:
                linecache.cache[f] = (len(sources[f]), None, sources[f].splitlines(True), f)
                mod = types.ModuleType(f[:-3])
                mod.__file__ = f
                exec(compile(sources[f], f, "exec"), mod.__dict__)
                k = triton.compile(ASTSource(getattr(mod, kernel), sig, const), target=GPUTarget("cuda", 90, 32),
                                   options={"num_warps": 8})
                got["ptx"][kernel] = k.asm["cubin"].decode(errors="replace")
            os.write(out_w, json.dumps(got).encode())
            os._exit(0)
        except BaseException as e:   # noqa: BLE001
            os.write(out_w, json.dumps({"error": "%s: %s" % (type(e).__name__, e)}).encode())
            os._exit(3)
    ctypes.pythonapi.PyOS_AfterFork_Parent()
    if pid < 0:
        print(json.dumps({"error": "clone: " + report.value.decode()}))
        return 1
    os.close(viol_w)
    os.close(out_w)
    data = b""
    while True:
        c = os.read(out_r, 1 << 20)
        if not c:
            break
        data += c
    _, st = os.waitpid(pid, 0)
    side = b""
    while True:
        c = os.read(viol_r, 4096)
        if not c:
            break
        side += c
    res = json.loads(data.decode() or "{}")
    res["status"] = ("signal %d" % os.WTERMSIG(st)) if os.WIFSIGNALED(st) else ("exit %d" % os.WEXITSTATUS(st))
    res["violation"] = [ln for ln in side.decode(errors="replace").splitlines() if "violation" in ln]
    print(json.dumps(res))
    return 0


def run(python, scripts, src, mode, env):
    p = subprocess.run([python, os.path.abspath(__file__), "--host", scripts, src, mode], capture_output=True,
                       text=True, env=env, timeout=600)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        raise SystemExit("%s: exit %d\n%s" % (mode, p.returncode, (p.stdout + p.stderr)[-3000:]))
    return json.loads(lines[-1])


def main():
    if sys.argv[1] == "--host":
        return host(*sys.argv[2:5])
    kevo, python, src, work = sys.argv[1:5]
    site = triton_site(src)
    env = dict(os.environ, PYTHONPATH=site, TRITON_CACHE_DIR=os.path.join(os.path.abspath(work), "triton-cache"))
    if subprocess.run([python, "-c", "import torch, triton"], env=env, capture_output=True).returncode != 0:
        print("SKIP: %s cannot import torch and triton (from %s: scripts/setup-triton.sh)" % (python, site))
        return 77
    os.makedirs(work, exist_ok=True)
    scripts = os.path.dirname(os.path.abspath(kevo))
    fails = []
    run(python, scripts, src, "populate", env)
    got = run(python, scripts, src, "sandboxed", env)
    print("sandboxed: %s %s seccomp=%s %s" % (got["status"], got.get("isolation"), got.get("seccomp"),
                                              got.get("error") or got["violation"]))
    if got["status"] != "exit 0" or "ptx" not in got:
        fails.append("the host could not compile under the sandbox: %s %s %s" % (
            got["status"], got.get("error"), got["violation"]))
    else:
        if not all(got["isolation"].values()) or not got["seccomp"]:
            fails.append("the host was not fully sandboxed: %s seccomp=%s" % (got["isolation"], got["seccomp"]))
        for _, kernel, _, _ in KERNELS:
            ptx = got["ptx"].get(kernel, "")
            if ".entry %s" % kernel not in ptx or ".target sm_90a" not in ptx:
                fails.append("%s: no PTX entry for sm_90a (%d bytes)" % (kernel, len(ptx)))
            else:
                print("  %s: %d bytes of PTX for sm_90a" % (kernel, len(ptx)))
    ctl = run(python, scripts, src, "control", env)
    sig = run(python, scripts, src, "signal", env)
    print("a SIGTERM to a host forked after the warm compile: %s %s" % (sig["status"], sig["violation"]))
    if sig["status"] != "exit 42" or sig["violation"]:
        fails.append("a SIGTERM after the warm compile should meet the host's own disposition (LLVM's handlers "
                     "taken back), got %s %s" % (sig["status"], sig["violation"]))
    sys.path.insert(0, scripts)
    import kevo_torch_eval as kte
    kte.PYHOST = kte.load_pyhost(os.path.join(scripts, "libkevo_pyhost.so"))
    names = [kte.syscall_name(int(v.split()[-1])) for v in ctl["violation"] if v.split()[-1].isdigit()]
    print("control (no warm compile): %s %s %s" % (ctl["status"], ctl["violation"], names))
    if ctl["status"] != "exit 159" or "rt_sigaction" not in names:
        fails.append("without the warm compile the host's first compile should be the violation rt_sigaction: "
                     "%s %s %s %s" % (ctl["status"], ctl["violation"], names, ctl.get("error")))
    if fails:
        print("FAILED:\n  " + "\n  ".join(fails))
        return 1
    print("Triton compiles under the sandbox (no GPU): every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
