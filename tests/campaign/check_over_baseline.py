#!/usr/bin/env python3
"""The over-baseline columns of a campaign report recomputed from the
campaign's own files, apart from kevo_campaign_report.py: for each cell,
the best correct candidate of its lineage (largest speedup) and the fastest
correct baseline of its baselines.json (torch eager, torch.compile, each
source baseline whose status is correct), their ratio, and the geomean of
those ratios per configuration. Used by tests/campaign/run_gpu_campaign.sh
on baselines measured on a GPU (docs/campaigns.md).

  check_over_baseline.py CAMPAIGN_DIR REPORT_DIR

Prints one line per cell and exits 1 when a figure differs from the
report's (relative 1e-9), or when a cell with measured baselines has no
figure in the report; 0 when every one agrees."""
import glob
import json
import math
import os
import sys

import h5py


def best_correct(run_dir):
    """{task name: (speedup, candidate median ns)} of the best correct
    candidate per task, over every rank's lineage file."""
    best = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "lineage", "*.h5"))):
        with h5py.File(path, "r") as f:
            status = h5py.check_enum_dtype(f["candidates"].dtype["status"])
            names = list(f["tasks"].asstr()[:])
            for r in f["candidates"][:]:
                if r["status"] != status["correct"]:
                    continue
                t = names[int(r["task"])]
                if float(r["speedup"]) > best.get(t, (0.0, 0.0))[0]:
                    best[t] = (float(r["speedup"]), float(r["cand_median_ns"]))
    return best


def fastest_baseline(entry):
    """(ms, name) of the fastest correct baseline of one task's entry."""
    found = []
    for key, name in (("eager", "torch eager"), ("compile", "torch.compile")):
        b = entry.get(key)
        if b and b.get("check") == "ok" and b.get("median_ms"):
            found.append((float(b["median_ms"]), name))
    for name, s in sorted(entry.get("sources", {}).items()):
        if s.get("status") == "correct" and s.get("median_ms"):
            found.append((float(s["median_ms"]), name))
    return min(found) if found else None


def main():
    campaign, report_dir = sys.argv[1:3]
    with open(os.path.join(report_dir, "report.json")) as f:
        report = json.load(f)
    reported = {(r["cell"], r["task"]): r for r in report["results"]}
    failures, per_config = [], {}
    for cell_dir in sorted(glob.glob(os.path.join(campaign, "cells", "*"))):
        cell = os.path.basename(cell_dir)
        bpath = os.path.join(cell_dir, "baselines.json")
        if not os.path.exists(bpath):
            continue
        with open(bpath) as f:
            baselines = json.load(f)
        best = best_correct(cell_dir)
        for task, entry in sorted(baselines.get("tasks", {}).items()):
            fast = fastest_baseline(entry)
            r = reported.get((cell, task))
            if fast is None or task not in best:
                print("%-24s %-30s no correct baseline or kernel" % (cell, task))
                continue
            ratio = fast[0] * 1e6 / best[task][1]
            config = r["configuration"] if r else cell.rsplit(".", 1)[0]
            per_config.setdefault(config, []).append(ratio)
            got = (r or {}).get("baseline")
            ok = got is not None and got["name"] == fast[1] and math.isclose(got["speedup"], ratio, rel_tol=1e-9)
            print("%-24s %-30s best %.1f us, fastest baseline %s %.1f us: %.4fx; report %s  %s" % (
                cell, task, best[task][1] / 1e3, fast[1], fast[0] * 1e3, ratio,
                "%.4fx (%s)" % (got["speedup"], got["name"]) if got else "none", "ok" if ok else "DIFFERS"))
            if not ok:
                failures.append("%s %s" % (cell, task))
    for config, ratios in sorted(per_config.items()):
        g = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        got = report["configurations"].get(config, {}).get("geomean_speedup_over_baseline", {}).get("value")
        ok = got is not None and math.isclose(got, g, rel_tol=1e-9)
        print("configuration %-16s geomean over the fastest baseline %.4fx over %d; report %s  %s" % (
            config, g, len(ratios), "%.4fx" % got if got is not None else "none", "ok" if ok else "DIFFERS"))
        if not ok:
            failures.append("configuration " + config)
    if not per_config:
        print("no cell with measured baselines and a correct kernel")
        return 1
    if failures:
        print("DIFFERS: " + ", ".join(failures))
        return 1
    print("every over-baseline figure of the report agrees with the lineage and baselines.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
