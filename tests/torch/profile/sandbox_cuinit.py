#!/usr/bin/env python3
"""Which step of the profiler's sandbox keeps the CUDA driver from starting
(docs/torch.md#profiler; a diagnosis for the GPU machine, run by
tests/torch/run_h200.sh profile_diag, not a test).

  sandbox_cuinit.py BINDIR PYTHON SHIM_SO

For each variant below, the profiler's sandbox is made as
kevo_torch_profile.py --launch makes it (its enter_sandbox), with the
variant's steps left out or its extra binds added, and a probe run in it
calls cuInit and cuDeviceGetCount through libcuda, with
failed_calls_shim.so preloaded (the driver's failing library calls on
stderr: the machine has no strace). One line per variant:
"variant NAME: cuInit R, cuDeviceGetCount R N", then the probe's output.
"""
import json
import os
import shutil
import subprocess
import sys

VARIANTS = [
    ("no-sandbox", ("all",), []),
    ("as-the-product", (), []),
    ("proc-read-only", ("proc_read_only",), []),
    ("no-lockdown", ("lockdown",), []),
    ("no-root", ("root",), []),
    ("no-root-no-lockdown", ("root", "lockdown"), []),
    ("no-namespaces", ("namespaces", "root"), []),
    ("no-namespaces-no-lockdown", ("namespaces", "root", "lockdown"), []),
    ("root-with-run-var-sys", (), ["/run", "/var", "/sys/bus", "/sys/class", "/sys/dev", "/sys/module",
                                   "/sys/devices/pci0000:00", "/sys/devices/virtual", "/sys/firmware"]),
]

PROBE = r"""
import ctypes, glob, os, sys
print("probe: uid %d euid %d gid %d pid %d groups %s" % (os.getuid(), os.geteuid(), os.getgid(), os.getpid(),
      os.getgroups()))
for d in sorted(glob.glob("/dev/nvidia*")):
    st = os.stat(d)
    print("probe: %s uid %d gid %d mode %o" % (d, st.st_uid, st.st_gid, st.st_mode))
try:
    print("probe: params: " + " ".join(l.strip() for l in open("/proc/driver/nvidia/params") if "DeviceFile" in l
                                       or "ModifyDeviceFiles" in l))
except OSError as e:
    print("probe: /proc/driver/nvidia/params: %s" % e)
with open("/proc/self/status") as f:
    print("probe: " + " ".join(l.strip() for l in f if l.startswith(("CapEff", "NoNewPrivs", "Seccomp"))))
sys.stdout.flush()
sys.stderr.write("probe: the driver starts\n")
sys.stderr.flush()
cuda = ctypes.CDLL("libcuda.so.1")
r = cuda.cuInit(0)
n = ctypes.c_int(-1)
r2 = cuda.cuDeviceGetCount(ctypes.byref(n))
print("RESULT cuInit %d, cuDeviceGetCount %d %d" % (r, r2, n.value))
"""


def child(bindir, python, shim, name):
    sys.path.insert(0, bindir)
    import kevo_torch_profile as kp
    skip, binds = next((s, b) for n, s, b in VARIANTS if n == name)
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    spec = {"ncu": ncu, "pyhost": os.path.join(bindir, "libkevo_pyhost.so"), "binds": binds, "extensions": []}
    modules = [p for p in kp.interpreter_paths(python) if os.path.isabs(p)]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp"}
    for k in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"):
        if os.environ.get(k):
            env[k] = os.environ[k]
    with open(shim, "rb") as f:
        shim_bytes = f.read()
    room = "/tmp/kevo-cuinit-%d" % os.getpid()

    def place_shim():
        os.makedirs(room, exist_ok=True)
        with open(os.path.join(room, "shim.so"), "wb") as f:
            f.write(shim_bytes)

    if "all" in skip:
        place_shim()
    else:
        kp.enter_sandbox(spec, python, modules, env, place_shim, skip=frozenset(skip))
    env["LD_PRELOAD"] = os.path.join(room, "shim.so")
    os.execve(python, [python, "-s", "-c", PROBE], env)


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
        return
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    bindir, python, shim = sys.argv[1:]
    python = shutil.which(python) or python
    for name, skip, binds in VARIANTS:
        p = subprocess.run([python, "-s", os.path.abspath(__file__), "--child", bindir, python, os.path.abspath(shim),
                            name], capture_output=True, text=True, timeout=120)
        result = [l for l in p.stdout.splitlines() if l.startswith("RESULT")]
        print("variant %s (left out: %s; binds added: %s): exit %d, %s" %
              (name, ",".join(skip) or "nothing", ",".join(binds) or "none", p.returncode,
               result[0] if result else "no result"))
        for line in p.stdout.splitlines():
            if not line.startswith("RESULT"):
                print("    " + line)
        err = p.stderr.splitlines()
        start = err.index("probe: the driver starts") + 1 if "probe: the driver starts" in err else 0
        shim_lines = [l for l in err[start:] if l.startswith("shim:")]
        other = [l for l in p.stderr.splitlines() if not l.startswith("shim:")]
        print("    (%d shim lines from the driver's start; the last 80)" % len(shim_lines))
        for line in shim_lines[-80:]:
            print("    " + line)
        for line in other[-15:]:
            print("    stderr: " + line)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
