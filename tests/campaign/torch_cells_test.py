#!/usr/bin/env python3
"""kevo_campaign_report.task_result on cells of a torch run: the seed (the
reference program itself) solves nothing; an evolved candidate does; a
cell of another backend counts its seed as before.

  torch_cells_test.py SOURCE_DIR
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(sys.argv[1], "engine", "python"))
import kevo_campaign_report as cr  # noqa: E402


def row(i, op, status, speedup, ms=1.0):
    return {"id": i, "task": "t", "op": op, "status": status, "speedup": speedup, "cand_ms": ms,
            "worker_seconds": 1.0, "slot_seconds": 0.0, "t_finished": float(i), "t_created": float(i)}


def cell(rows, torch_run):
    return {"state": "done", "rows": rows, "baselines": None, "start": 0.0, "seed_is_reference": torch_run}


def main():
    fails = []
    seed_only = [row(1, "seed", "correct", 1.02), row(2, "llm_rewrite", "wrong_answer", 0.0)]
    r = cr.task_result(cell(seed_only, True), "t")
    if r["correct"] or r["best_speedup"] != 0.0 or max(r["curve_evals"]) != 0.0:
        fails.append("a torch run's seed counted as solved: %s" % r)
    r = cr.task_result(cell(seed_only, False), "t")
    if not r["correct"] or r["best_speedup"] != 1.02:
        fails.append("another backend's seed no longer counts: %s" % r)
    evolved = seed_only + [row(3, "llm_fix", "correct", 1.7, 0.5)]
    r = cr.task_result(cell(evolved, True), "t")
    if not r["correct"] or r["best_speedup"] != 1.7 or r["best_id"] != 3 or r["curve_evals"] != [0.0, 0.0, 1.7]:
        fails.append("the evolved candidate is not the best: %s" % r)
    print("\n".join(fails) or "torch cells: the seed solves nothing, evolved candidates count")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
