#!/usr/bin/env python3
"""Where a torch judge host's set-up seconds go on this machine (issue 18;
docs/torch.md#the-judge): the first use of an op recorder (TorchDispatchMode),
CUDA's initialisation in a forked process, and whether warming the recorder
in the zygote (on the CPU) keeps its forks able to use the GPU.

  torch_host_setup.py [--device cuda|cpu]

Prints one line per measurement; no GPU is needed with --device cpu."""
import argparse
import os
import sys
import time


def timed(label, fn):
    t = time.monotonic()
    r = fn()
    print("%-58s %8.3f s" % (label, time.monotonic() - t), flush=True)
    return r


def recorder_use(torch, device):
    from torch.utils._python_dispatch import TorchDispatchMode
    seen = set()

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
            seen.add(str(getattr(func, "overloadpacket", func)))
            return func(*args, **(kwargs or {}))

    with torch.no_grad(), Mode():
        t = torch.ones(8, 8, device=device)
        (torch.exp(t - t.max(dim=1, keepdim=True).values) / t.sum(dim=1, keepdim=True)).relu_()
    return seen


def in_child(label, fn):
    """fn in a forked child; its lines printed there."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            fn()
            os.write(w, b"ok")
        except BaseException as e:
            print("%s: %r" % (label, e), flush=True)
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    ok = os.read(r, 2) == b"ok"
    os.close(r)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    if a.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    torch = timed("import torch (+ nn, _python_dispatch)", lambda: __import__("torch"))
    import torch.nn  # noqa: F401
    from torch.utils import _python_dispatch  # noqa: F401
    n0 = len(sys.modules)

    def child_cold():
        if a.device == "cuda":
            timed("  fork, cold zygote: CUDA init (torch.empty on cuda)",
                  lambda: (torch.cuda.set_device(0), torch.empty(1, device="cuda"), torch.cuda.synchronize()))
        timed("  fork, cold zygote: first recorder use on %s" % a.device, lambda: recorder_use(torch, a.device))
        timed("  fork, cold zygote: second recorder use", lambda: recorder_use(torch, a.device))
        if a.device == "cuda":
            timed("  fork, cold zygote: import torch.utils.cpp_extension",
                  lambda: __import__("torch.utils.cpp_extension"))

    in_child("cold", child_cold)
    timed("zygote: first recorder use on the CPU (the warm-up)", lambda: recorder_use(torch, "cpu"))
    print("zygote: modules imported by the warm-up: %d (of %d)" % (len(sys.modules) - n0, len(sys.modules)))
    print("zygote: CUDA initialised after the warm-up: %s" % torch.cuda.is_initialized())
    import threading
    for when in ("after the warm-up", "1 s later"):
        if when != "after the warm-up":
            time.sleep(1.0)
        print("zygote: threads %s: %d in the kernel, Python's: %s" % (
            when, len(os.listdir("/proc/self/task")), [t.name for t in threading.enumerate()]), flush=True)
    bad = getattr(torch._C, "_cuda_isInBadFork", None)

    def child_warm():
        if bad is not None:
            print("  fork, warm zygote: torch's bad-fork mark: %s" % bad(), flush=True)
        if a.device == "cuda":
            timed("  fork, warm zygote: CUDA init",
                  lambda: (torch.cuda.set_device(0), torch.empty(1, device="cuda"), torch.cuda.synchronize()))
        timed("  fork, warm zygote: first recorder use on %s" % a.device, lambda: recorder_use(torch, a.device))
        if a.device == "cuda":
            timed("  fork, warm zygote: import torch.utils.cpp_extension",
                  lambda: __import__("torch.utils.cpp_extension"))

    in_child("warm", child_warm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
