# An attacker's candidate for the profiler's sandbox (tests/torch/profile_test.py).
# Under the profiler the candidate's code runs without the system-call
# policy (docs/torch.md#profiler); native code of a candidate can do all a
# process can, so this file does it from Python directly (the static checks
# that would refuse it run in the judge, before the profile; this test hands
# the source to the profiler itself). It tries, in its constructor, what a
# cheater or an attacker would want from there, and reports each attempt on
# stderr as "escape: NAME blocked|OPEN detail".
import os
import socket
import sys

import torch
import torch.nn as nn


def attempt(name, fn):
    try:
        detail = fn()
        sys.stderr.write("escape: %s OPEN %s\n" % (name, str(detail)[:200]))
    except Exception as e:   # noqa: BLE001 (any failure is the sandbox working)
        sys.stderr.write("escape: %s blocked %s\n" % (name, type(e).__name__ + ": " + str(e)[:120]))


def read(path):
    with open(path, "rb") as f:
        return f.read(64)


def write(path):
    with open(path, "wb") as f:
        f.write(b"x")
    return path


def other_processes():
    # Processes of the machine outside the profiler's PID namespace (the
    # judge, the engine): none should be visible.
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    outside = [p for p in pids if p > 64]
    if outside:
        return "pids %s" % outside[:5]
    raise PermissionError("only %s" % sorted(pids))


def signal_parent_namespace():
    # The judge's process group (a number in the machine's PID space).
    os.kill(os.getppid() if os.getppid() > 1 else 999999, 0)
    if os.getppid() <= 1:
        raise ProcessLookupError("no parent outside")
    return "parent %d reachable" % os.getppid()


def connect_out():
    socket.create_connection(("192.0.2.1", 80), timeout=2).close()
    return "connected"


def unix_socket_outside():
    # An abstract socket the test listens on, in the machine's network namespace.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0" + "@ABSTRACT@")
    return "connected"


def loopback_outside():
    # A TCP port the test listens on, on the machine's loopback.
    socket.create_connection(("127.0.0.1", int("@PORT@")), timeout=2).close()
    return "connected"


def mount_something():
    # (On a folder of its own: run outside a sandbox, as root, a mount over
    # /tmp would hide the machine's.)
    import ctypes
    os.makedirs("/tmp/kevo-escape-mount", exist_ok=True)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"none", b"/tmp/kevo-escape-mount", b"tmpfs", 0, None) != 0:
        raise PermissionError(os.strerror(ctypes.get_errno()))
    return "mounted"


# The test writes in the source tree's root (an attacker may know or guess it).
SOURCE_TREE = "@SOURCE_TREE@"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        attempt("read-source-tree", lambda: read(os.path.join(SOURCE_TREE, "README.md")))
        attempt("read-passwd", lambda: read("/etc/passwd"))
        attempt("read-home", lambda: os.listdir("/root") or os.listdir("/home"))
        attempt("write-usr", lambda: write("/usr/kevo-escape"))
        attempt("write-root", lambda: write("/kevo-escape"))
        attempt("see-other-processes", other_processes)
        attempt("signal-outside", signal_parent_namespace)
        attempt("connect-out", connect_out)
        attempt("unix-socket-outside", unix_socket_outside)
        attempt("loopback-outside", loopback_outside)
        attempt("mount", mount_something)

    def forward(self, x):
        return torch.softmax(x, dim=1)
