#!/usr/bin/env python3
"""ncu on a torch candidate's kernels, for the LLM analyst
(docs/torch.md#profiler).

The judge (kevo_torch_eval.py) starts this after a correct, timed judgement
whose request asks for a profile, on the GPU. Two modes:

  kevo_torch_profile.py --launch
      reads a spec (JSON) on stdin; the candidate's prebuilt libraries are
      inherited descriptors named in it. Makes a sandbox for the profiler
      (libkevo_pyhost: user, PID, mount, IPC, network and UTS namespaces, a
      private read-only root holding the system's and the interpreter's
      trees, the GPU's device files, ncu's own tree and kevo's scripts, a
      writable tmpfs at /tmp and at /dev/shm, the loopback up, every capability dropped, no
      new privileges; no system-call policy: ncu's injected library needs
      more than the candidate host's allow-list), writes the candidate's
      program into /tmp there, and executes ncu on `--target`. ncu's raw CSV
      page comes out on stdout; this process's exit status is ncu's.
  kevo_torch_profile.py --target SPEC
      what ncu runs: loads the candidate as its host does (the prebuilt
      libraries through load_inline), builds ModelNew at the first visible
      shape, calls it twice, then once between cudaProfilerStart and
      cudaProfilerStop (ncu runs with --profile-from-start off), and exits.

No torch in --launch (it starts within the judge's time; the target
imports torch).
"""
import ctypes
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import kevo_torch_common as kc  # noqa: E402 (no torch)

# What ncu collects (the CUDA backend's sections, docs/cuda.md#profiler-feedback)
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats")
LAUNCH_COUNT = 4   # kernel launches profiled: the summary shows up to three and counts the rest
ROOM = "/tmp/kevo-profile"


def fail(why, code=2):
    sys.stderr.write("kevo-profile: %s\n" % why)
    sys.stderr.flush()
    os._exit(code)


def ncu_argv(ncu, python, spec_path):
    argv = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--launch-count", str(LAUNCH_COUNT),
            "--csv", "--page", "raw", "--target-processes", "all"]
    for s in SECTIONS:
        argv += ["--section", s]
    return argv + [python, "-s", os.path.join(HERE, "kevo_torch_profile.py"), "--target", spec_path]


def ncu_trees(ncu):
    """The folders to bind for ncu: its own (a link resolved), and where
    CUDA's `ncu` wrapper script looks for Nsight Compute: nsight-compute*
    beside CUDA's bin folder, and /opt/nvidia/nsight-compute."""
    top = os.path.dirname(os.path.realpath(ncu))
    return [top] + glob.glob(os.path.join(os.path.dirname(top), "nsight-compute*")) + \
        glob.glob("/opt/nvidia/nsight-compute")


def interpreter_paths(python):
    """The target interpreter's module folders, as it finds them run here
    (its user site depends on HOME, which the sandbox changes): bound into
    the root and given to the target as PYTHONPATH."""
    p = subprocess.run([python, "-c", "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix] + "
                        "[p for p in sys.path if p]))"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("the interpreter %s does not start: %s" % (python, p.stderr.strip()[-300:]))
    return json.loads(p.stdout)


def write_room(spec, room):
    """The program's files in the profiler's /tmp: the candidate's and the
    reference's source, the libraries copied from their descriptors."""
    os.makedirs(room, exist_ok=True)
    with open(os.path.join(room, "candidate.py"), "w", encoding="utf-8") as f:
        f.write(spec["source"])
    with open(os.path.join(room, "reference.py"), "w", encoding="utf-8") as f:
        f.write(spec["reference_source"])
    exts = []
    for i, e in enumerate(spec.get("extensions", [])):
        path = os.path.join(room, "ext%d_%s.so" % (i, e["name"]))
        with os.fdopen(e.pop("fd"), "rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        exts.append(dict(e, path=path))
    target = {"extensions": exts, "dims": spec["dims"], "seed": spec["seed"], "device": spec.get("device", "cuda"),
              "room": room}
    path = os.path.join(room, "spec.json")
    with open(path, "w") as f:
        json.dump(target, f)
    return path


def enter_sandbox(spec, python, modules, env, before_lockdown, skip=frozenset()):
    """The profiler's sandbox (docs/torch.md#profiler), made with
    libkevo_pyhost: returns in the sandboxed child, after its lockdown
    (`before_lockdown()` runs just before it, in the private root with its
    writable /tmp); the calling process becomes its parent, waits for it
    and exits with its status. `env["PYTHONPATH"]` is set to the module
    folders that the root holds. `skip` is for the diagnosis of the
    sandbox on a GPU machine only (tests/torch/profile/sandbox_cuinit.py):
    any of "namespaces", "proc", "root", "loopback", "lockdown", and
    "proc_read_only" (the root's /proc remounted read-only, as before
    2026-12-07); the product passes none."""
    ncu = spec["ncu"]
    lib = ctypes.PyDLL(spec["pyhost"])
    for fn in ("kevo_pyhost_clone", "kevo_pyhost_harden", "kevo_pyhost_lockdown", "kevo_pyhost_mount_proc",
               "kevo_pyhost_loopback_up", "kevo_pyhost_namespace_ids"):
        getattr(lib, fn).restype = ctypes.c_int
    buf = ctypes.create_string_buffer(8192)
    lib.kevo_pyhost_namespace_ids(buf, len(buf))
    parent_ns = buf.value.decode()
    ctypes.pythonapi.PyOS_BeforeFork()
    pid = lib.kevo_pyhost_clone(0 if "namespaces" in skip else 1, buf, len(buf))
    if pid != 0:
        ctypes.pythonapi.PyOS_AfterFork_Parent()
        if pid < 0:
            fail("cannot start the profiler's sandbox: %s" % buf.value.decode())
        report = json.loads(buf.value.decode() or "{}")
        for e in spec.get("extensions", []):
            os.close(e["fd"])
        _, status = os.waitpid(pid, 0)
        if not report.get("user_ns") or not report.get("net_ns"):
            sys.stderr.write("kevo-profile: namespaces: %s\n" % json.dumps(report.get("notes", [])))
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)
    ctypes.pythonapi.PyOS_AfterFork_Child()

    def step(fn, *args):
        b = ctypes.create_string_buffer(8192)
        if getattr(lib, fn)(*args, b, len(b)) != 0:
            fail("%s: %s" % (fn, b.value.decode()))
        return json.loads(b.value.decode() or "{}")

    if os.getpid() == 1 and "proc" not in skip:
        step("kevo_pyhost_mount_proc")
    kept, left_out = kc.sandbox_binds([sys.prefix, sys.base_prefix, sys.exec_prefix, HERE,
                                       os.path.dirname(os.path.realpath(python))] + modules + ncu_trees(ncu) +
                                      spec.get("binds", []) + glob.glob("/dev/nvidia*"), HERE)
    env["PYTHONPATH"] = ":".join(p for p in modules if os.path.isdir(p) and os.path.realpath(p) not in left_out)
    if left_out:
        sys.stderr.write("kevo-profile: left out of the private root (they hold kevo's tree, the working folder "
                         "or the home folder): %s\n" % ", ".join(left_out))
    if "root" not in skip:
        rep = step("kevo_pyhost_harden", parent_ns.encode(),
                   json.dumps({"binds": kept, "scratch": ["/tmp", "/dev/shm"],
                               "scratch_mb": int(spec.get("scratch_mb", 512)),
                               # the driver names its threads in /proc/self/task/N/comm:
                               # under a read-only /proc, cuInit fails (error 304)
                               "writable_proc": "proc_read_only" not in skip}).encode(),
                   -1)
        if not rep.get("private_root"):
            fail("no private root for the profiler: %s" % json.dumps(rep.get("notes", [])))
    if "loopback" not in skip:
        step("kevo_pyhost_loopback_up")
    before_lockdown()
    if "lockdown" not in skip:
        step("kevo_pyhost_lockdown", b"cuda", 1, -1, 0)   # capabilities dropped, no new privileges; no policy


def launch():
    spec = json.loads(sys.stdin.read())
    ncu = spec["ncu"]
    python = shutil.which(spec.get("python") or sys.executable) or spec.get("python")
    modules = [p for p in interpreter_paths(python) if os.path.isabs(p)]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "USER": "kevo-candidate",
           "LOGNAME": "kevo-candidate", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
           "TRITON_CACHE_DIR": "/tmp/triton", "TORCHINDUCTOR_CACHE_DIR": "/tmp/inductor",
           "TORCH_EXTENSIONS_DIR": "/tmp/torch_extensions"}
    for k in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
              "NVSHMEM_DISABLE_NVLS"):
        if os.environ.get(k):
            env[k] = os.environ[k]
    if not spec.get("pyhost") or not spec.get("namespaces", True):
        # No sandbox (sandbox.namespaces false, for experiments): a folder
        # of this machine's /tmp, and ncu run as is.
        import tempfile
        room = tempfile.mkdtemp(prefix="kevo-profile-")
        env.update(TMPDIR=room, HOME=room, TRITON_CACHE_DIR=os.path.join(room, "triton"),
                   TORCHINDUCTOR_CACHE_DIR=os.path.join(room, "inductor"))
        spec_path = write_room(spec, room)
        env["PYTHONPATH"] = ":".join(p for p in modules if os.path.isdir(p))
        sys.stderr.write("kevo-profile: without namespaces (sandbox.namespaces false)\n")
        sys.stderr.flush()
        os.execve(ncu, ncu_argv(ncu, python, spec_path), env)
    enter_sandbox(spec, python, modules, env, lambda: write_room(spec, ROOM))
    spec_path = os.path.join(ROOM, "spec.json")
    os.chdir("/tmp")
    try:
        os.execve(ncu, ncu_argv(ncu, python, spec_path), env)
    except OSError as e:
        fail("cannot run ncu (%s) in the profiler's sandbox: %s" % (ncu, e.strerror or e))


def target(spec_path):
    """The profiled process: the candidate at the first visible shape."""
    os.dup2(2, 1)   # what the program prints is not ncu's report
    with open(spec_path) as f:
        spec = json.load(f)
    import torch
    import kevo_torch_eval as ke
    ke.torch = torch
    cuda = spec["device"] == "cuda"
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(0)
        torch.empty(1, device=device)
    ke.pin_flags(cuda)
    room = spec["room"]
    ref = ke.exec_module(os.path.join(room, "reference.py"), "kevo_profile_reference",
                         globals_={"__name__": "kevo_profile_reference"})
    for k, v in spec["dims"].items():
        ref.__dict__[k] = int(v)
    import torch.utils.cpp_extension as ce
    ce.load_inline = ke.shim_load_inline(room, spec["extensions"])
    cand = ke.exec_module(os.path.join(room, "candidate.py"), "kevo_candidate", globals_={"__name__": "kevo_candidate"})
    for k, v in spec["dims"].items():
        if k in cand.__dict__:
            cand.__dict__[k] = int(v)
    torch.manual_seed(spec["seed"])
    if cuda:
        torch.cuda.manual_seed_all(spec["seed"])
    model = cand.ModelNew(*ref.get_init_inputs()).to(device)
    model.eval()
    import contextlib
    # (torch.device is a context manager since torch 2.0: tensors made on it)
    with device if hasattr(device, "__enter__") else contextlib.nullcontext():
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    with torch.no_grad():
        for _ in range(2):
            model(*inputs)
        sync()
        if cuda:
            torch.cuda.cudart().cudaProfilerStart()
        model(*inputs)
        sync()
        if cuda:
            torch.cuda.cudart().cudaProfilerStop()
    sys.stderr.write("kevo-profile: profiled one call at %s\n" % json.dumps(spec["dims"]))
    sys.stderr.flush()
    os._exit(0)


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--launch":
        launch()
    elif len(sys.argv) == 3 and sys.argv[1] == "--target":
        target(sys.argv[2])
    else:
        fail("usage: kevo_torch_profile.py --launch | --target SPEC")


if __name__ == "__main__":
    main()
