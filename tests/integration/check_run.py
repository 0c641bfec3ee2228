#!/usr/bin/env python3
"""Checks a finished kevo run directory through h5py (a second tool reading
the lineage), against `kevo report --json`.

usage: check_run.py KEVO RUN_DIR [--min-sgemm-speedup X]
"""
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import h5py


def main():
    kevo, run_dir = sys.argv[1], Path(sys.argv[2])
    min_sgemm = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--min-sgemm-speedup" else None
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    for name in ["config.json", "report.json", "lineage/rank-0000.h5"]:
        check((run_dir / name).exists(), f"{name} missing")
    config = json.loads((run_dir / "config.json").read_text())

    with h5py.File(run_dir / "lineage" / "rank-0000.h5", "r") as f:
        rows = f["candidates"][:]
        tasks = [t.decode() if isinstance(t, bytes) else str(t) for t in f["tasks"][:]]
        status_enum = h5py.check_enum_dtype(f["candidates"].dtype["status"])
        status_name = {v: k for k, v in status_enum.items()}
        check(json.loads(f.attrs["config"]) == config, "config attribute differs from config.json")
        text = f["text"]
        # Every judged candidate's source is stored and starts with its params block.
        for r in rows[:50]:
            src = text[r["source"]]
            src = src.decode() if isinstance(src, bytes) else src
            check(len(src) > 0, f"candidate {r['id']} has no source")

    ids = [int(i) for i in rows["id"]]
    check(len(ids) == len(set(ids)), "duplicate candidate ids")
    idset = set(ids)
    for r in rows:
        for p in (int(r["parent0"]), int(r["parent1"])):
            check(p == -1 or p in idset, f"candidate {r['id']}: parent {p} not in the lineage")
        if int(r["duplicate_of"]) != -1:
            check(int(r["duplicate_of"]) in idset, f"candidate {r['id']}: duplicate_of missing")
    check(all(status_name[int(s)] != "pending" for s in rows["status"]), "a pending row was written")

    report = json.loads(subprocess.run([kevo, "report", str(run_dir), "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    for t in report["tasks"]:
        idx = tasks.index(t["task"])
        mine = rows[rows["task"] == idx]
        counts = Counter(status_name[int(s)] for s in mine["status"])
        for st, n in t["status"].items():
            check(counts.get(st, 0) == n, f"{t['task']}: {st} count {counts.get(st, 0)} in h5py vs {n} in report")
        check(t["candidates"] == len(mine), f"{t['task']}: candidate count differs")
        correct = mine[[status_name[int(s)] == "correct" for s in mine["status"]]]
        if len(correct):
            best = correct[correct["speedup"].argmax()]
            check(abs(float(best["speedup"]) - t["best_speedup"]) < 1e-9, f"{t['task']}: best speedup differs")
            check((run_dir / "best" / f"{t['task']}.cpp").exists(), f"best/{t['task']}.cpp missing")
        if min_sgemm is not None and t["task"] == "sgemm":
            check(t["best_speedup"] is not None and t["best_speedup"] > min_sgemm,
                  f"sgemm best speedup {t['best_speedup']} not above {min_sgemm}")

    if failures:
        print("FAILED:\n  " + "\n  ".join(failures[:30]))
        sys.exit(1)
    print(f"ok: {len(rows)} rows, {len(report['tasks'])} tasks, lineage consistent with the report")


if __name__ == "__main__":
    main()
