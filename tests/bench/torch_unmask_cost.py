#!/usr/bin/env python3
"""What a GPU host's unmask of its inputs costs (docs/torch.md, "on the
GPU"; issue 18): the step that opens every timed call on both sides, in the
two designs, side by side in one process:

  generator  torch's generator draws the keystream into a buffer
             (manual_seed, random_), bitwise_xor_ XORs it in: two kernels,
             three passes over the span (KEVO_TORCH_MASK=generator);
  fused      kevo_torch_mask's kernel: Philox4x32-10 XORed in as it goes,
             one read and one write of the span (the default).

For each span size (the softmax task's input is 16 MiB) and each design, in
turn, call after call: the host's step as the judge's clock sees it (the
unmask and the synchronize after it, wall time on the CPU, the GPU idle
before it), its kernels' time by CUDA events with the launches queued
behind other work (so that the events see the GPU's time, not the CPU's
launch), and for the fused kernel the launch alone (no synchronize).
Medians of the calls, and generator / fused.

  python3 tests/bench/torch_unmask_cost.py [CALLS]      (needs torch and a GPU)
"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "backends", "torch", "python"))


def main():
    import torch
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 77
    import kevo_torch_mask as km
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    kernel = km.MaskKernel()
    gen = torch.Generator(device=dev)
    print("device: %s; %d calls per design and size, in turn" % (torch.cuda.get_device_name(), calls))
    print("%-8s %-10s %14s %14s %16s" % ("MiB", "design", "step wall us", "kernels us", "launch only us"))
    for mib in (4, 16, 64):
        n = mib * (1 << 20) // 8
        span = torch.randint(-2 ** 62, 2 ** 62, (n,), dtype=torch.int64, device=dev)
        busy = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
        words = torch.empty(n, dtype=torch.int64, device=dev)
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        res = {"generator": ([], []), "fused": ([], []), "launch": ([], [])}
        key = 1

        def generator_step(k):
            gen.manual_seed(k)
            span.bitwise_xor_(words.random_(-2 ** 63, None, generator=gen))

        def fused_step(k):
            kernel.xor(span.data_ptr(), span.data_ptr(), n, k)

        steps = {"generator": generator_step, "fused": fused_step}
        for i in range(calls + 10):
            for name, step in steps.items():
                key += 2
                torch.cuda.synchronize()
                t0 = time.perf_counter_ns()
                step(key)
                torch.cuda.synchronize()
                wall = time.perf_counter_ns() - t0
                busy.fill_(1)
                ev[0].record()
                step(key + 1)
                ev[1].record()
                torch.cuda.synchronize()
                if i >= 10:
                    res[name][0].append(wall / 1e3)
                    res[name][1].append(ev[0].elapsed_time(ev[1]) * 1e3)
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            fused_step(key + 1)
            launch = time.perf_counter_ns() - t0
            torch.cuda.synchronize()
            if i >= 10:
                res["launch"][0].append(launch / 1e3)
        med = {k: (statistics.median(v[0]), statistics.median(v[1]) if v[1] else float("nan")) for k, v in res.items()}
        for name in ("generator", "fused"):
            print("%-8d %-10s %14.1f %14.1f %16s" % (
                mib, name, med[name][0], med[name][1], "%.1f" % med["launch"][0] if name == "fused" else "-"))
        print("%-8d generator / fused: step %.2fx, kernels %.2fx" % (
            mib, med["generator"][0] / med["fused"][0], med["generator"][1] / med["fused"][1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
