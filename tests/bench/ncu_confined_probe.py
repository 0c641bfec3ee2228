#!/usr/bin/env python3
"""Runs ncu on a small CUDA program under Landlock rules like the CUDA
worker's confined profile child (backends/cuda/worker/main.cpp,
profile_command), and prints what ncu says, for each variant of the
rules: finds the paths a confined ncu needs (docs/cuda.md#profiler-feedback).

  ncu_confined_probe.py [NCU]

PROBE_QUICK=1 runs only the spawner's rules and the unconfined control; run
that way inside namespaces (`unshare --user --map-root-user`, `unshare --pid
--fork --mount-proc`, as an unprivileged user) to find which of the worker's
surroundings the confined ncu fails in. PROBE_BISECT=1 adds one tree at a
time to the spawner's rules, readable or writable (it found `/proc`
writable to be what ncu's injected library needs; docs/cuda.md).
"""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

LANDLOCK_CREATE_RULESET, LANDLOCK_ADD_RULE, LANDLOCK_RESTRICT_SELF = 444, 445, 446
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1, 2, 4, 8
WRITES = WRITE_FILE | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12)
READS = EXECUTE | READ_FILE | READ_DIR
libc = ctypes.CDLL(None, use_errno=True)


REFER, TRUNCATE = 1 << 13, 1 << 14


def confine(reads, writes, extra=0):
    """In the child, before exec: Landlock with these folders (ABI 1 rights, and `extra`
    handled too: the spawner's make_ruleset handles REFER and TRUNCATE where the kernel has them)."""
    handled = READS | WRITES | extra
    attr = ctypes.c_uint64(handled)
    fd = libc.syscall(LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if fd < 0:
        os.write(2, b"landlock_create_ruleset failed\n")
        os._exit(90)

    class Rule(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]
    for paths, access in ((reads, READS), (writes, handled)):
        for p in paths:
            try:
                pfd = os.open(p, os.O_PATH)
            except OSError:
                continue
            a = access if os.path.isdir(p) else access & (EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE)
            r = Rule(a, pfd)
            if libc.syscall(LANDLOCK_ADD_RULE, fd, 1, ctypes.byref(r), 0) != 0:
                os.write(2, ("landlock_add_rule(%s) failed\n" % p).encode())
            os.close(pfd)
    libc.prctl(38, 1, 0, 0, 0)   # PR_SET_NO_NEW_PRIVS
    if libc.syscall(LANDLOCK_RESTRICT_SELF, fd, 0) != 0:
        os.write(2, b"landlock_restrict_self failed\n")
        os._exit(91)


def main():
    ncu = sys.argv[1] if len(sys.argv) > 1 else (shutil.which("ncu") or "/usr/local/cuda/bin/ncu")
    ncu_dir = os.path.dirname(os.path.realpath(ncu))
    work = tempfile.mkdtemp(prefix="ncu-probe-")
    src = os.path.join(work, "k.cu")
    with open(src, "w") as f:
        f.write('#include <cstdio>\n__global__ void k(float* x){x[threadIdx.x]+=1;}\n'
                'int main(){float* d; cudaMalloc(&d, 1024); k<<<1,32>>>(d); cudaDeviceSynchronize();'
                'printf("ran\\n"); return 0;}\n')
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    exe = os.path.join(work, "k")
    subprocess.run([nvcc, "-o", exe, src], check=True)
    base_reads = ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/run",
                  ncu_dir, exe]
    abi = libc.syscall(LANDLOCK_CREATE_RULESET, None, 0, 1)
    print("Landlock ABI %d" % abi)
    spawner = (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)
    variants = [
        ("as the worker (writes: its folder, /dev)", base_reads, [work, "/dev"]),
        ("as the spawner: ABI 2-3 rights handled (refer, truncate)", base_reads, [work, "/dev"], spawner),
        ("as the spawner + refer/truncate on /tmp", base_reads, [work, "/dev", "/tmp"], spawner),
        ("+ /tmp writable", base_reads, [work, "/dev", "/tmp"]),
        ("+ /tmp and HOME writable", base_reads, [work, "/dev", "/tmp", os.path.expanduser("~")]),
        ("unconfined", None, None),
    ]
    variants[-1:-1] = [
        ("no_new_privs alone (no Landlock)", "nnp", None),
        ("Landlock allowing everything (/ readable and writable)", ["/"], ["/"], spawner),
    ]
    if os.environ.get("PROBE_QUICK"):   # the worker's rules, the two separations, the control
        variants = [variants[1]] + variants[-3:]
    if os.environ.get("PROBE_BISECT"):   # the worker's rules plus one more readable (or writable) tree each
        variants = [("+ %s readable" % d, base_reads + [d], [work, "/dev"], spawner)
                    for d in ["/", "/var", "/tmp", "/root", "/home", "/dev/shm", "/srv", "/mnt"]]
        variants.append(("+ / writable", base_reads, [work, "/dev", "/"], spawner))
        variants += [("+ %s writable" % d, base_reads, [work, "/dev", d], spawner)
                     for d in ["/proc", "/sys", "/run", "/var", "/opt", "/usr", "/etc", "/cache", "/tmp", "/root"]]
    strace = shutil.which("strace")
    if strace:   # the confined run once more under strace: the paths refused
        variants.insert(1, ("as the worker, under strace", base_reads, [work, "/dev"]))
    for v in variants:
        name, reads, writes = v[:3]
        extra = v[3] if len(v) > 3 else 0
        env = dict(os.environ, TMPDIR=work)
        argv = [ncu, "--clock-control", "none", "--target-processes", "all", "--section", "SpeedOfLight",
                "--csv", "--page", "raw", exe]
        if "strace" in name:
            argv = [strace, "-f", "-e", "trace=%file,%desc,%network", "-o", os.path.join(work, "trace")] + argv
        if reads == "nnp":
            pre = lambda: libc.prctl(38, 1, 0, 0, 0)   # PR_SET_NO_NEW_PRIVS
        else:
            pre = (lambda r=reads, w=writes, x=extra: confine(r, w, x)) if reads is not None else None
        p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=work, preexec_fn=pre, timeout=120)
        out = p.stdout + p.stderr
        print("=== %s: exit %d, %s" % (name, p.returncode, "NO KERNEL PROFILED" if "No kernels were profiled" in out
                                      else "profiled" if p.returncode == 0 else "failed"))
        print((p.stdout + p.stderr)[-1500:])
        if "strace" in name and os.path.exists(os.path.join(work, "trace")):
            with open(os.path.join(work, "trace")) as f:
                refused = sorted({line.split(None, 1)[1][:160] for line in f if "EACCES" in line or "EPERM" in line})
            print("refused (%d):" % len(refused))
            print("\n".join(refused[:60]))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
