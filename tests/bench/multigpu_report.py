#!/usr/bin/env python3
"""Candidates per minute, per-GPU duty cycle and device placement of kevo
runs with one island per GPU (issue 6; docs/benchmarks.md#multi-gpu).

  multigpu_report.py RUN_DIR [RUN_DIR...]   one run per GPU count, in order

Reads the lineage with h5py. A candidate counts when this rank judged it
(its own, not a migrant, not a duplicate, invalid or lost record). Its GPU is
the verdict's `device` text (name, PCI bus id, UUID, written by the worker
that judged it); `slot_seconds` is the time it held that GPU's exclusive
timing slot, so the duty cycle of a GPU is their sum over the search's wall
time. The wall time is from the first submission to the last finish over
all ranks. Prints one line per rank, one per run, and the scaling against
the first run (the 1-GPU one).
"""
import glob
import os
import sys

import h5py
import numpy as np

# Statuses that are not a judgement by the backend (verdict.hpp).
NOT_JUDGED = {0, 8, 9, 10}   # pending, duplicate, invalid, lost


def text_of(h, ref):
    if ref < 0:
        return ""
    t = h["text"][int(ref)]
    return t.decode() if isinstance(t, bytes) else t


def load(run_dir):
    ranks = []
    for f in sorted(glob.glob(os.path.join(run_dir, "lineage", "rank-*.h5"))):
        with h5py.File(f, "r", swmr=True) as h:
            rows = h["candidates"][:]
            own = rows[(rows["origin_rank"] == rows["rank"]) & ~np.isin(rows["status"].astype(int), list(NOT_JUDGED))]
            devices = {}
            for r in own:
                d = text_of(h, r["device"])
                devices.setdefault(d, [0, 0.0])
                devices[d][0] += 1
                devices[d][1] += float(r["slot_seconds"])
            ranks.append({"rank": int(h.attrs["rank"]), "n": len(own),
                          "correct": int((own["status"].astype(int) == 1).sum()),
                          "t0": float(own["t_submitted"].min()) if len(own) else 0.0,
                          "t1": float(own["t_finished"].max()) if len(own) else 0.0,
                          "devices": devices})
    if not ranks:
        sys.exit(f"no lineage under {run_dir}")
    return ranks


def main(dirs):
    base = None
    for d in dirs:
        ranks = load(d)
        t0 = min(r["t0"] for r in ranks if r["n"])
        t1 = max(r["t1"] for r in ranks if r["n"])
        wall = t1 - t0
        total = sum(r["n"] for r in ranks)
        per_gpu = {}
        ok = True
        for r in ranks:
            devs = [k for k in r["devices"] if k]
            if len(devs) != 1:
                ok = False
            print(f"  {os.path.basename(d)} rank {r['rank']}: {r['n']} judged ({r['correct']} correct) on "
                  f"{'; '.join(devs) or 'no device recorded'}")
            for k, (n, slot) in r["devices"].items():
                per_gpu.setdefault(k, [0, 0.0, set()])
                per_gpu[k][0] += n
                per_gpu[k][1] += slot
                per_gpu[k][2].add(r["rank"])
        for k, (n, slot, rk) in sorted(per_gpu.items()):
            if len(rk) != 1:
                ok = False
            print(f"    GPU {k or '(none)'}: {n} candidates from rank(s) {sorted(rk)}, timing slot busy "
                  f"{slot:.1f} s of {wall:.1f} s: duty cycle {100 * slot / wall:.1f}%")
        rate = 60.0 * total / wall if wall > 0 else 0.0
        gpus = len([k for k in per_gpu if k])
        line = f"{os.path.basename(d)}: {len(ranks)} rank(s) on {gpus} GPU(s): {total} candidates in {wall:.1f} s = {rate:.1f} per minute"
        if base is None:
            base = (rate, gpus)
        else:
            line += f"; scaling {rate / base[0]:.2f}x for {gpus / base[1]:.0f}x GPUs = {rate / base[0] / (gpus / base[1]):.2f} of linear"
        print(line)
        print(f"    every rank on exactly one GPU, no GPU shared: {'yes' if ok else 'NO'}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
