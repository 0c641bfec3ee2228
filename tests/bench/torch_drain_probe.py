#!/usr/bin/env python3
"""Checks on a GPU the assumption behind the torch judge's drain
(backends/torch/python/kevo_torch_eval.py, Judge.drain): a candidate's host
that replies while its kernels are still queued leaves work that a probe from
the judge's own CUDA context has to wait for, because two processes' contexts
share the GPU by time slices.

A child process plays that host: on each request it queues kernels of a given
total length and replies at once (early), or after synchronizing (honest).
The judge then probes until a probe is as fast as on an idle GPU, as the
judge does, and in variants: a sleep before each probe (letting the GPU
switch back to the child) and several fast probes in a row. Printed per
variant and workload: the child's GPU time (CUDA events), the drains after
honest and early replies, and the share of the early reply's work that the
drain charges (1.00 would be all of it). On the H200 (docs/torch.md#gpu-status)
the judge's rule charged 0-44%: a probe gets a time slice while the other
context's work is still queued.

Then the context switch that the judge's timing order avoids: the round
trip of a child call (a tiny kernel and a synchronize) right after the
judge's own L2 flush, against the same right after another child call.

  python3 tests/bench/torch_drain_probe.py        (needs torch and a GPU)
"""
import os
import struct
import subprocess
import sys
import time

PROBE_SLACK_NS = 5000


def child():
    import torch
    torch.cuda.set_device(0)
    x = torch.randn(1024, 4096, device="cuda")
    torch.cuda.synchronize()
    r, w = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = r.read(8)
        if len(head) < 8:
            return
        reps, early = struct.unpack("<ii", head)
        if reps == 0:
            x[0, :1].add_(1.0)
            torch.cuda.synchronize()
            w.write(b"d")
            w.flush()
            continue
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            e = torch.exp(x - x.max(dim=1, keepdim=True).values)
            y = e / e.sum(dim=1, keepdim=True)
        b.record()
        if not early:
            torch.cuda.synchronize()
        w.write(b"d")
        w.flush()
        b.synchronize()
        del y
        w.write(struct.pack("<d", a.elapsed_time(b) * 1e3))
        w.flush()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child()
    import torch
    if not torch.cuda.is_available():
        print("SKIP: no GPU")
        return 77
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    torch.cuda.set_device(0)
    buf = torch.zeros(256, device="cuda")
    torch.cuda.synchronize()

    def probe():
        t0 = time.perf_counter_ns()
        buf.add_(1.0)
        torch.cuda.synchronize()
        return time.perf_counter_ns() - t0

    for _ in range(50):
        probe()
    idle = sorted(probe() for _ in range(31))[15]
    print("device %s; one probe on an idle GPU: %.1f us" % (torch.cuda.get_device_name(0), idle / 1e3))

    def drain(gap_us, streak):
        """Probes until `streak` probes in a row are as fast as on an idle
        GPU, sleeping `gap_us` before each (letting the GPU switch back to
        another context that still has work); returns the time from the
        reply to the end of the streak's first probe, less its idle time."""
        t0 = time.perf_counter_ns()
        deadline = time.monotonic() + 5
        fast, first_fast_end, n = 0, 0, 0
        while True:
            if gap_us:
                time.sleep(gap_us / 1e6)
            dt = probe()
            n += 1
            if dt <= 1.5 * idle + PROBE_SLACK_NS:
                if fast == 0:
                    first_fast_end = time.perf_counter_ns()
                fast += 1
            else:
                fast = 0
            if fast >= streak or time.monotonic() > deadline:
                return first_fast_end - t0 - idle, n

    variants = [(0, 1), (200, 1), (0, 3), (200, 3), (1000, 2), (2000, 1)]
    print("charged = (early drain - honest drain) / child GPU time; 1.00 would charge all queued work")
    print("%-10s %6s %12s %12s %12s %8s %7s" % ("gap,streak", "reps", "child GPU us", "honest us", "early us",
                                               "charged", "probes"))
    for gap, streak in variants:
        for reps in (1, 4, 16, 64, 256):
            med = {}
            for early in (0, 1):
                gpu, dr, probes = [], [], []
                for _ in range(9):
                    p.stdin.write(struct.pack("<ii", reps, early))
                    p.stdin.flush()
                    assert p.stdout.read(1) == b"d"
                    d, n = drain(gap, streak)
                    gpu.append(struct.unpack("<d", p.stdout.read(8))[0])
                    dr.append(d / 1e3)
                    probes.append(n)
                med[early] = (sorted(gpu)[4], sorted(dr)[4], sorted(probes)[4])
            g = med[0][0]
            print("%-10s %6d %12.1f %12.1f %12.1f %8.2f %7d" % ("%d,%d" % (gap, streak), reps, g, med[0][1],
                  med[1][1], (med[1][1] - med[0][1]) / g, med[1][2]))

    def tiny_call():
        t0 = time.perf_counter_ns()
        p.stdin.write(struct.pack("<ii", 0, 0))
        p.stdin.flush()
        assert p.stdout.read(1) == b"d"
        return time.perf_counter_ns() - t0

    flush = torch.empty(64 << 20, device="cuda")
    after_call, after_flush = [], []
    for _ in range(41):
        tiny_call()
        after_call.append(tiny_call())
        flush.zero_()
        torch.cuda.synchronize()
        after_flush.append(tiny_call())
    a, f = sorted(after_call)[20], sorted(after_flush)[20]
    print("a child's tiny call: %.1f us after another child call, %.1f us right after the judge's flush "
          "(the switch: %.1f us)" % (a / 1e3, f / 1e3, (f - a) / 1e3))
    p.stdin.close()
    p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
