#!/usr/bin/env python3
"""Where the noise of the torch judge's timed calls comes from on a GPU.

On the H200 the judge (backends/torch/python/kevo_torch_eval.py, time_shape)
measured a 1024 x 4096 fp32 softmax at 100-340 us per call with an IQR of
about 300 us, where KernelBench's CUDA events give about 20 us. This script
rebuilds the judge's timing loop from its parts, with two child processes
in the hosts' place, and switches the parts off one at a time:

  flush   the judge's L2 flush (its own context) before each side's turn
  stop    SIGSTOP after each side's turn, SIGCONT before the next
  drain   the judge's probes after each call until one is as fast as idle
  spin    the judge waits for a reply by polling rather than sleeping in read

and tries the flush in the child's own load instead of the judge's context.

Each child's step is a load (a host-to-device copy of the inputs and one
small kernel, then a synchronize) and a call (torch.softmax and a
synchronize); the call's round trip, less the median null round trip, is
what the judge would take as the call's time. Printed per variant: the
calls' percentiles and their IQR as a fraction of the median, beside the
child's own CUDA-event time of the same call.

  python3 tests/bench/torch_timing_noise.py [PAIRS]      (needs torch and a GPU)
"""
import os
import select
import signal
import struct
import subprocess
import sys
import time

PROBE_SLACK_NS = 5000


def child():
    import torch
    torch.cuda.set_device(0)
    host = torch.randn(1024, 4096)
    touch = torch.zeros(1, device="cuda")
    own_flush = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
    x = None
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    r, w = sys.stdin.buffer, sys.stdout.buffer
    last_event_us = 0.0
    while True:
        op = r.read(1)
        if not op:
            return
        if op in (b"L", b"F"):
            if op == b"F":
                own_flush.zero_()
            x = host.to("cuda", copy=True)
            touch.add_(1.0)
            torch.cuda.synchronize()
        elif op == b"C":
            a.record()
            y = torch.softmax(x, dim=1)
            b.record()
            torch.cuda.synchronize()
            last_event_us = a.elapsed_time(b) * 1e3
            del y
        elif op == b"N":
            torch.cuda.synchronize()
        elif op == b"E":
            w.write(struct.pack("<d", last_event_us))
            w.flush()
            continue
        w.write(b"d")
        w.flush()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child()
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    import torch
    if not torch.cuda.is_available():
        print("SKIP: no GPU")
        return 77
    torch.cuda.set_device(0)
    kids = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, bufsize=0) for _ in range(2)]
    flush_buf = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
    probe_buf = torch.zeros(256, device="cuda")
    torch.cuda.synchronize()

    def send(k, op, spin):
        fd_in, fd_out = k.stdin.fileno(), k.stdout.fileno()
        t0 = time.perf_counter_ns()
        os.write(fd_in, op)
        if spin:
            while not select.select([fd_out], [], [], 0)[0]:
                pass
        got = os.read(fd_out, 1)
        assert got == b"d", got
        return time.perf_counter_ns() - t0

    def event_us(k):
        os.write(k.stdin.fileno(), b"E")
        data = b""
        while len(data) < 8:
            data += os.read(k.stdout.fileno(), 8 - len(data))
        return struct.unpack("<d", data)[0]

    def probe():
        t0 = time.perf_counter_ns()
        probe_buf.add_(1.0)
        torch.cuda.synchronize()
        return time.perf_counter_ns() - t0

    for _ in range(50):
        probe()
    idle = sorted(probe() for _ in range(31))[15]

    def drain():
        deadline = time.monotonic() + 2
        while probe() > 1.5 * idle + PROBE_SLACK_NS and time.monotonic() < deadline:
            pass

    def flush():
        flush_buf.zero_()
        torch.cuda.synchronize()

    for k in kids:
        for _ in range(20):
            send(k, b"L", False)
            send(k, b"C", False)

    def pct(v, q):
        v = sorted(v)
        return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]

    variants = [("judge's loop (flush, stop, drain)", dict(flush=1, stop=1, drain=1, spin=0)),
                ("no stop/cont", dict(flush=1, stop=0, drain=1, spin=0)),
                ("no drain", dict(flush=1, stop=1, drain=0, spin=0)),
                ("no flush", dict(flush=0, stop=1, drain=1, spin=0)),
                ("the child flushes in its load", dict(flush=0, stop=1, drain=1, spin=0, child_flush=1)),
                ("none of them", dict(flush=0, stop=0, drain=0, spin=0)),
                ("judge's loop, spinning", dict(flush=1, stop=1, drain=1, spin=1)),
                ("none of them, spinning", dict(flush=0, stop=0, drain=0, spin=1))]
    print("device %s; idle probe %.1f us; %d pairs per variant" % (torch.cuda.get_device_name(0), idle / 1e3,
                                                                    pairs))
    print("%-36s %8s %8s %8s %8s %8s %8s %9s %9s" % ("variant", "null", "p10", "p25", "p50", "p75", "p90",
                                                      "iqr/p50", "event us"))
    for name, v in variants:
        nulls = []
        for k in kids:
            send(k, b"C", v["spin"])
            nulls += [send(k, b"N", v["spin"]) for _ in range(15)]
        null = pct(nulls, 0.5)
        calls, events = [], []
        for i in range(pairs):
            for k in (kids if i % 2 else kids[::-1]):
                if v["flush"]:
                    flush()
                if v["stop"]:
                    k.send_signal(signal.SIGCONT)
                send(k, b"F" if v.get("child_flush") else b"L", v["spin"])
                calls.append(send(k, b"C", v["spin"]) - null)
                if v["drain"]:
                    drain()
                events.append(event_us(k))
                if v["stop"]:
                    k.send_signal(signal.SIGSTOP)
        for k in kids:
            k.send_signal(signal.SIGCONT)
        p = [pct(calls, q) / 1e3 for q in (0.1, 0.25, 0.5, 0.75, 0.9)]
        print("%-36s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %9.2f %9.1f" % (
            name, null / 1e3, *p, (p[3] - p[1]) / p[2], pct(events, 0.5)))
    for k in kids:
        k.stdin.close()
        k.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
