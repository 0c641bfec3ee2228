#!/usr/bin/env python3
"""ncu profiles of torch candidates for the analyst (docs/torch.md#profiler).

  profile_test.py KEVO PYTHON SOURCE_DIR WORK_DIR [DEVICE]

Everywhere (CI has no GPU and no ncu):
* `profile.every` on device cpu is an input error naming its key;
* the profiler's sandbox (kevo_torch_profile.py --launch) with a stand-in
  for ncu (tests/torch/profile/fake_ncu, tests only), which reports what it
  finds there: PID 1 of its namespace, none of the source tree, a read-only
  root, a writable /tmp and /dev/shm, thread names settable in /proc (the CUDA driver's
  start needs it), no capabilities, a working loopback and no network;
  it runs the target as ncu would (the softmax task's seed at a small
  shape, on the CPU), and its raw page comes back on stdout;
* an attacker's candidate there (tests/torch/profile/escape.py: no policy
  holds it, so it does from Python what native code could) finds the
  source tree, /etc/passwd, home folders, processes outside, the network
  and abstract sockets outside out of reach, and cannot write outside the
  tmpfs or mount.

On a GPU (DEVICE cuda, tests/torch/run_h200.sh profile): `kevo eval` of a
CUDA (load_inline) and a Triton softmax with `profile.every` 1, each verdict
correct with a profile from the real ncu: its kernels, their time, DRAM and
SM throughput.
"""
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_test_args import args_or_skip, outcome, verdicts_of  # noqa: E402

CHECKS = ("options", "pid-1-of-its-namespace", "no-source-tree", "read-only-root", "writable-tmp", "writable-shm",
          "thread-names", "proc-sys-read-only", "sysrq-read-only", "no-capabilities", "loopback", "no-network")


ESCAPES = ("read-source-tree", "read-passwd", "read-home", "write-usr", "write-root", "see-other-processes",
           "signal-outside", "connect-out", "unix-socket-outside", "loopback-outside", "mount")


def launch(kevo, python, src, candidate_path, subst=None):
    """kevo_torch_profile.py --launch with the stand-in ncu on the softmax
    task at a small shape, the candidate given (its @NAME@ placeholders
    replaced from subst): the finished process."""
    bindir = os.path.dirname(os.path.realpath(kevo))
    task = os.path.join(src, "configs", "tasks", "torch", "torch_softmax")
    with open(candidate_path) as f:
        seed = f.read()
    for k, v in (subst or {}).items():
        seed = seed.replace("@%s@" % k, str(v))
    with open(os.path.join(task, "reference.py")) as f:
        reference = f.read()
    spec = {"ncu": os.path.join(src, "tests", "torch", "profile", "fake_ncu"), "python": python,
            "pyhost": os.path.join(bindir, "libkevo_pyhost.so"), "namespaces": True, "source": seed,
            "reference_source": reference, "extensions": [], "dims": {"rows": 64, "cols": 256}, "seed": 5,
            "device": "cpu"}
    p = subprocess.run([python, "-s", os.path.join(bindir, "kevo_torch_profile.py"), "--launch"],
                       input=json.dumps(spec), capture_output=True, text=True, timeout=300)
    print("launcher exit %d\nstdout:\n%s\nstderr (tail):\n%s" % (p.returncode, p.stdout, p.stderr[-3000:]))
    return p


def escapes_blocked(kevo, python, src):
    """tests/torch/profile/escape.py: what an attacker's code tries under the
    profiler, each attempt blocked by the sandbox."""
    # What it reaches for is there: the source tree's root, an abstract
    # socket and a TCP port listening on this machine.
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0kevo-profile-escape-%d" % os.getpid())
    abstract.listen(1)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(1)
    try:
        p = launch(kevo, python, src, os.path.join(src, "tests", "torch", "profile", "escape.py"),
                   {"SOURCE_TREE": os.path.abspath(src), "ABSTRACT": "kevo-profile-escape-%d" % os.getpid(),
                    "PORT": tcp.getsockname()[1]})
    finally:
        abstract.close()
        tcp.close()
    fails = []
    for name in ESCAPES:
        if "escape: %s blocked" % name not in p.stderr:
            fails.append("the profiler's sandbox let the attacker's candidate through: %s" % name)
    return fails


def launcher_with_stand_in(kevo, python, src):
    p = launch(kevo, python, src, os.path.join(src, "configs", "tasks", "torch", "torch_softmax", "seed.py"))
    fails = []
    if p.returncode != 0:
        fails.append("the launcher with the stand-in ncu exited %d" % p.returncode)
    for c in CHECKS:
        if "fake-ncu: check %s ok" % c not in p.stderr:
            fails.append("the profiler's sandbox: check %s did not pass" % c)
    if "kevo-profile: profiled one call at" not in p.stderr:
        fails.append("the target did not run the candidate")
    if '"fake_kernel(float const*, float*)"' not in p.stdout:
        fails.append("the raw page did not come back on stdout")
    return fails


def cpu_profile_is_an_input_error(kevo, python, src, work):
    task = os.path.join(src, "configs", "tasks", "torch", "torch_softmax")
    p = subprocess.run([kevo, "eval", task, os.path.join(task, "seed.py"), "--no-prepare", "--set", "device=cpu",
                        "python=" + python, "cache_dir=" + os.path.join(work, "cache"), "profile.every=1"],
                       capture_output=True, text=True, timeout=300)
    print("profile.every on the CPU: exit %d: %s" % (p.returncode, p.stderr.strip()[-400:]))
    if p.returncode != 2 or "/profile/every" not in p.stderr or "cuda" not in p.stderr:
        return ["profile.every 1 on device cpu: exit %d, %s" % (p.returncode, p.stderr[-300:])]
    return []


def gpu_profiles(kevo, python, src, work, more=()):
    task = os.path.join(src, "configs", "tasks", "torch", "torch_softmax")
    gpu = os.path.join(src, "tests", "torch", "gpu")
    files = [os.path.join(gpu, "softmax_cuda.py"), os.path.join(gpu, "softmax_triton.py")]
    p = subprocess.run([kevo, "eval", task] + files + ["--json", "--no-prepare", "--seed", "5", "--set",
                        "device=cuda", "python=" + python, "cache_dir=" + os.path.join(work, "cache"),
                        "profile.every=1"] + list(more), capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        return ["kevo eval exited %d: %s" % (p.returncode, p.stderr[-2000:])]
    fails = []
    for path, v in verdicts_of(p.stdout, files).items():
        name = os.path.basename(path)
        prof = v.get("profile", "")
        print("%s: %s %.3fx (%.1f s judged)\n%s\n" % (name, v["status"], v.get("speedup", 0),
                                                      v.get("worker_seconds", 0), prof))
        if v["status"] != "correct":
            fails.append("%s: %s %s" % (name, v["status"], v["message"][:300]))
        elif not prof.startswith("[profiled: every timed candidate (profile.every 1)]\nkernel ") or \
                " us" not in prof or "% of peak" not in prof:
            fails.append("%s: no ncu summary in its profile: %r" % (name, prof[:500]))
    return fails


def main():
    a = args_or_skip()
    if a is None:
        return 77
    kevo, python, src, work, device = a
    os.makedirs(work, exist_ok=True)
    fails = cpu_profile_is_an_input_error(kevo, python, src, work)
    fails += launcher_with_stand_in(kevo, python, src)
    fails += escapes_blocked(kevo, python, src)
    if device == "cuda":
        gpu_fails = gpu_profiles(kevo, python, src, work)
        if gpu_fails:
            # For the reader: the same without the profiler's namespaces
            # (ncu as it runs on this machine; the test still fails).
            print("-- again with sandbox.namespaces false, to tell ncu's failure from the sandbox's:")
            gpu_profiles(kevo, python, src, work, ["sandbox.namespaces=false", "sandbox.seccomp=false"])
        fails += gpu_fails
    return outcome(fails, "profiles (%s): every check passed" % device)


if __name__ == "__main__":
    sys.exit(main())
