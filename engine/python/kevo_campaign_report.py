#!/usr/bin/env python3
"""Report of a kevo campaign (docs/campaign-report.md).

    kevo_campaign_report.py DIR [--out OUTDIR] [--seed S] [--resamples N]

DIR is what `kevo campaign run FILE --out DIR` wrote: campaign.json, one
ordinary run directory per cell under cells/, one status file per cell under
status/. The report reads every cell's lineage (lineage/rank-*.h5) for the
candidates, report.json for the LLM spend and baselines.json (where a run
measured library baselines) and writes OUTDIR (default DIR/report):
report.md, report.html (plots embedded), report.csv, report.json (every
number, sorted keys, no timestamps: the same DIR and --seed give the same
bytes) and plots/*.png, plots/*.svg.

Statistics: fast_p, the geometric mean speedup and paired comparisons of
configurations, each with a percentile bootstrap interval over (task, seed)
pairs drawn with numpy's Generator seeded with --seed.

Exit status: 0 done; 2 DIR has no usable campaign.json (the message names
the file and what is wrong) or OUTDIR cannot be written; 1 anything else.
"""
import argparse
import base64
import csv
import glob
import html
import json
import math
import os
import re
import sys
import time

from kevo_json import jsonable  # next to this script

import h5py
import numpy as np

FORMAT = "kevo-campaign-report/1"
THRESHOLDS = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
STATES = ("pending", "running", "done", "failed")
NO_ID = 2**64 - 1
# Rows that are no evaluation (kevo report counts evaluations the same way).
NOT_EVALUATED = ("duplicate", "invalid", "lost", "pending")
# Points of the wall-time grid of the best-so-far curves.
TIME_POINTS = 200


class CampaignError(Exception):
    """DIR is no campaign directory: exit 2 with this message."""


# ---------------------------------------------------------------- reading

def _require(cond, path, what):
    if not cond:
        raise CampaignError("%s: %s" % (path, what))


def load_campaign(campaign_dir):
    """campaign.json, checked against the contract (docs/campaign-report.md)."""
    path = os.path.join(campaign_dir, "campaign.json")
    if not os.path.isfile(path):
        raise CampaignError("%s: no such file (is %s a campaign directory made by `kevo campaign run`?)"
                            % (path, campaign_dir))
    try:
        with open(path, encoding="utf-8") as f:
            c = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise CampaignError("%s: not valid JSON: %s" % (path, e))
    _require(isinstance(c, dict), path, "not a JSON object")
    _require(isinstance(c.get("name"), str), path, "'name' must be a string")
    for key in ("file", "base_config"):
        if key in c:
            _require(isinstance(c[key], str), path, "'%s' must be a string" % key)
    if "tasks" in c:
        _require(isinstance(c["tasks"], list) and all(isinstance(t, str) for t in c["tasks"]),
                 path, "'tasks' must be an array of strings")
    if "budget" in c:
        _require(isinstance(c["budget"], dict), path, "'budget' must be an object")
    confs = c.get("configurations")
    _require(isinstance(confs, list) and confs, path, "'configurations' must be a non-empty array")
    names = []
    for i, conf in enumerate(confs):
        _require(isinstance(conf, dict) and isinstance(conf.get("name"), str) and conf["name"],
                 path, "configurations[%d] needs a 'name' string" % i)
        _require(isinstance(conf.get("set", []), list) and all(isinstance(s, str) for s in conf.get("set", [])),
                 path, "configurations[%d].set must be an array of strings" % i)
        _require(conf["name"] not in names, path, "configuration '%s' appears twice" % conf["name"])
        names.append(conf["name"])
    seeds = c.get("seeds")
    _require(isinstance(seeds, list) and seeds and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds),
             path, "'seeds' must be a non-empty array of integers")
    cells = c.get("cells")
    _require(isinstance(cells, list) and cells, path, "'cells' must be a non-empty array")
    ids = set()
    for i, cell in enumerate(cells):
        _require(isinstance(cell, dict), path, "cells[%d] is not an object" % i)
        _require(isinstance(cell.get("id"), str) and cell["id"], path, "cells[%d] needs an 'id' string" % i)
        _require(cell["id"] not in ids, path, "cell '%s' appears twice" % cell["id"])
        ids.add(cell["id"])
        _require(cell.get("configuration") in names, path,
                 "cells[%d].configuration %r is not one of the configurations" % (i, cell.get("configuration")))
        seed = cell.get("seed")
        _require(isinstance(seed, int) and not isinstance(seed, bool), path, "cells[%d].seed must be an integer" % i)
        rd = cell.get("run_dir")
        _require(isinstance(rd, str) and rd and not os.path.isabs(rd) and ".." not in rd.split("/"),
                 path, "cells[%d].run_dir must be a path relative to the campaign directory" % i)
    return c


def read_status(campaign_dir, cell_id):
    """The cell's status file, or a pending one where there is none."""
    path = os.path.join(campaign_dir, "status", cell_id + ".json")
    base = {"state": "pending", "exit_code": None, "error": "", "attempts": 0, "started": None, "finished": None}
    if not os.path.isfile(path):
        base["error"] = "no status file status/%s.json" % cell_id
        return base
    try:
        with open(path, encoding="utf-8") as f:
            s = json.load(f)
        if not isinstance(s, dict) or s.get("state") not in STATES:
            raise ValueError("'state' must be one of %s" % ", ".join(STATES))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        base.update(state="failed", error="status/%s.json unreadable: %s" % (cell_id, e))
        return base
    for key in base:
        if key in s:
            base[key] = s[key]
    if not isinstance(base["error"], str):
        base["error"] = str(base["error"])
    return base


def _open_h5(path, read, tries=40):
    """read(f) of a lineage file, also one a run still writes (docs/lineage.md)."""
    last = None
    for _ in range(tries):
        try:
            with h5py.File(path, "r", swmr=True, locking=False) as f:
                return read(f)
        except OSError as e:
            last = e
            time.sleep(0.05)
    raise OSError("%s: %s" % (path, last))


def _read_rank(f):
    rows = f["candidates"][:]
    rows = rows[rows["id"] != NO_ID]
    rows = rows[rows["origin_rank"] == rows["rank"]]   # a migrant counts once, where it was made
    status = {v: k for k, v in h5py.check_enum_dtype(f["candidates"].dtype["status"]).items()}
    tasks = [t.decode() if isinstance(t, bytes) else t for t in f["tasks"][:]]
    start = float(f.attrs["start_time"]) if "start_time" in f.attrs else None
    return [{"id": int(r["id"]), "task": tasks[r["task"]] if r["task"] < len(tasks) else "task%d" % r["task"],
             "status": status.get(int(r["status"]), "?"), "speedup": float(r["speedup"]),
             "cand_ms": float(r["cand_median_ns"]) / 1e6, "worker_seconds": float(r["worker_seconds"]),
             "slot_seconds": float(r["slot_seconds"]), "t_finished": float(r["t_finished"]),
             "t_created": float(r["t_created"]), "op": _op(r["op"])} for r in rows], tasks, start


def _op(raw):
    return (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)).rstrip("\x00")


def read_lineage(run_dir):
    """Rows of every rank file of a run, in id order; its tasks; its start."""
    files = sorted(glob.glob(os.path.join(run_dir, "lineage", "rank-*.h5")))
    if not files:
        raise OSError("%s: no lineage files" % os.path.join(run_dir, "lineage"))
    rows, tasks, starts = [], [], []
    for path in files:
        r, t, s = _open_h5(path, _read_rank)
        rows += r
        tasks += [x for x in t if x not in tasks]
        if s is not None:
            starts.append(s)
    rows.sort(key=lambda r: r["id"])
    start = min(starts) if starts else min((r["t_created"] for r in rows), default=0.0)
    return rows, tasks, start


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def fastest_baseline(baselines, task):
    """(ms, name) of the task's fastest correct library baseline, or None
    (the rule of `kevo report`: torch eager/compile whose check is ok, and
    source baselines without an error)."""
    if not isinstance(baselines, dict) or not isinstance(baselines.get("tasks"), dict):
        return None
    entry = baselines["tasks"].get(task)
    if not isinstance(entry, dict):
        return None
    best = None

    def consider(b, name, need_check):
        nonlocal best
        if not isinstance(b, dict) or "error" in b:
            return
        ms = b.get("median_ms")
        if not isinstance(ms, (int, float)) or ms <= 0:
            return
        if need_check and b.get("check", "ok") != "ok":
            return
        if best is None or ms < best[0]:
            best = (float(ms), name)

    for key, label in (("eager", "torch eager"), ("compile", "torch.compile")):
        consider(entry.get(key), label, True)
    if isinstance(entry.get("sources"), dict):
        for name in sorted(entry["sources"]):
            consider(entry["sources"][name], name, False)
    return best


def llm_spend(report):
    """(tokens, usd) over the run's models in report.json (0 without LLM)."""
    tokens, usd = 0, 0.0
    llm = report.get("llm") if isinstance(report, dict) else None
    if isinstance(llm, dict) and isinstance(llm.get("by_model"), dict):
        for m in llm["by_model"].values():
            if isinstance(m, dict):
                tokens += int(m.get("input_tokens", 0) or 0) + int(m.get("output_tokens", 0) or 0)
                usd += float(m.get("usd", 0) or 0)
    return tokens, usd


def load_cell(campaign_dir, cell):
    """Everything the report uses of one cell."""
    status = read_status(campaign_dir, cell["id"])
    run_dir = os.path.join(campaign_dir, cell["run_dir"])
    out = {"id": cell["id"], "configuration": cell["configuration"], "seed": cell["seed"],
           "run_dir": cell["run_dir"], "state": status["state"], "error": status["error"],
           "exit_code": status["exit_code"], "attempts": status["attempts"],
           "rows": [], "tasks": [], "start": None, "report": None, "baselines": None, "seed_is_reference": False}
    if os.path.isdir(run_dir):
        try:
            out["rows"], out["tasks"], out["start"] = read_lineage(run_dir)
        except (OSError, KeyError, ValueError) as e:
            if out["state"] == "done":
                out["state"] = "failed"
                out["error"] = "state done, but its lineage cannot be read: %s" % e
        out["report"] = _read_json(os.path.join(run_dir, "report.json"))
        out["baselines"] = _read_json(os.path.join(run_dir, "baselines.json"))
        # A torch run's seeds are the reference programs themselves
        # (docs/torch.md): they count as nothing solved, as in `kevo report`.
        config = _read_json(os.path.join(run_dir, "config.json"))
        backend = config.get("backend") if isinstance(config, dict) else None
        out["seed_is_reference"] = isinstance(backend, dict) and backend.get("type") == "torch"
    elif out["state"] == "done":
        out["state"] = "failed"
        out["error"] = "state done, but there is no run directory %s" % cell["run_dir"]
    if out["state"] == "done" and isinstance(out["report"], dict):
        out["tasks"] += [t["task"] for t in out["report"].get("tasks", [])
                         if isinstance(t, dict) and isinstance(t.get("task"), str) and t["task"] not in out["tasks"]]
    return out


# ---------------------------------------------------------------- per cell

def task_result(cell, task):
    """Best speedup, correctness, evaluations and best-so-far curves of one
    task in one cell. Cells that are not done count as unsolved."""
    rows = [r for r in cell["rows"] if r["task"] == task]
    evaluated = [r for r in rows if r["status"] not in NOT_EVALUATED]
    counts = [r for r in evaluated if not (cell.get("seed_is_reference") and r.get("op") == "seed")]
    correct = [r for r in counts if r["status"] == "correct"]
    counted = {r["id"] for r in counts}
    res = {"evaluations": len(evaluated), "candidates": len(rows), "correct": False, "best_speedup": 0.0,
           "best_ms": None, "best_id": None}
    if cell["state"] == "done" and correct:
        best = max(correct, key=lambda r: (r["speedup"], -r["id"]))
        res.update(correct=True, best_speedup=best["speedup"], best_id=best["id"],
                   best_ms=best["cand_ms"] if best["cand_ms"] > 0 else None)
        b = fastest_baseline(cell["baselines"], task)
        if b and res["best_ms"]:
            res["baseline"] = {"name": b[1], "ms": b[0], "speedup": b[0] / res["best_ms"]}
    # Best so far after each evaluation (0 until one is correct), and at the
    # finish time of each evaluation (seconds since the run started).
    by_eval, at_time, best = [], [], 0.0
    for r in evaluated:
        if r["id"] in counted and r["status"] == "correct" and r["speedup"] > best:
            best = r["speedup"]
        by_eval.append(best)
        at_time.append((r["t_finished"] - (cell["start"] or 0.0), best))
    res["curve_evals"] = by_eval
    res["curve_time"] = at_time
    return res


# ---------------------------------------------------------------- statistics

def percentile_interval(values):
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return [None, None]
    lo, hi = np.percentile(v, [2.5, 97.5])
    return [float(lo), float(hi)]


def geomean(speedups):
    s = np.asarray(speedups, dtype=float)
    if s.size == 0:
        return float("nan")
    return float(np.exp(np.mean(np.log(s))))


def config_stats(correct, speedup, idx):
    """fast_p and geomean of one configuration's (task, seed) pairs, with
    their bootstrap intervals; idx: the (resamples, n) index matrix."""
    n = correct.size
    out = {"pairs": int(n), "correct_pairs": int(correct.sum()), "fast_p": {}}
    for p in THRESHOLDS:
        hit = correct & (speedup > p) if p > 0 else correct.copy()
        point = float(hit.mean()) if n else float("nan")
        boot = hit[idx].mean(axis=1) if n else np.array([])
        out["fast_p"][_pkey(p)] = {"value": point, "ci95": percentile_interval(boot)}
    logs = np.where(correct, np.log(np.where(correct, speedup, 1.0)), 0.0)
    point = geomean(speedup[correct])
    if n:
        counts = correct[idx].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = np.exp(logs[idx].sum(axis=1) / counts)
        boot[counts == 0] = np.nan
        empty = int((counts == 0).sum())
    else:
        boot, empty = np.array([]), 0
    out["geomean_speedup"] = {"value": point, "ci95": percentile_interval(boot),
                              "resamples_without_correct": empty}
    return out


def paired_stats(diff, idx):
    """Mean log-speedup difference of paired (task, seed) pairs, bootstrap."""
    m = diff.size
    if m == 0:
        return {"mean_log_diff": float("nan"), "ci95": [None, None], "ratio": float("nan"), "ratio_ci95": [None, None]}
    point = float(diff.mean())
    ci = percentile_interval(diff[idx].mean(axis=1))
    return {"mean_log_diff": point, "ci95": ci, "ratio": math.exp(point),
            "ratio_ci95": [math.exp(ci[0]), math.exp(ci[1])]}


def _pkey(p):
    return "%g" % p


def analyse(campaign, cells, seed, resamples):
    """Every number of the report, as one JSON-ready dict."""
    conf_names = [c["name"] for c in campaign["configurations"]]
    tasks = sorted({t for cell in cells for t in cell["tasks"]})
    if not tasks:   # nothing ran: name the task folders
        tasks = sorted({os.path.basename(t.rstrip("/")) for t in campaign.get("tasks", [])})
    rng = np.random.default_rng(seed)

    results = []   # one per configuration x seed x task
    per_cell = {}
    for cell in cells:
        per_cell[cell["id"]] = {t: task_result(cell, t) for t in tasks}
        for t in tasks:
            r = per_cell[cell["id"]][t]
            row = {"configuration": cell["configuration"], "seed": cell["seed"], "task": t,
                   "cell": cell["id"], "cell_state": cell["state"], "correct": r["correct"],
                   "best_speedup": r["best_speedup"], "best_ms": r["best_ms"], "best_id": r["best_id"],
                   "evaluations": r["evaluations"], "candidates": r["candidates"]}
            if "baseline" in r:
                row["baseline"] = r["baseline"]
            results.append(row)
    order = {n: i for i, n in enumerate(conf_names)}
    results.sort(key=lambda r: (order[r["configuration"]], r["seed"], r["task"], r["cell"]))

    configs = {}
    pairs_of = {}
    for name in conf_names:
        rows = [r for r in results if r["configuration"] == name]
        correct = np.array([r["correct"] for r in rows], dtype=bool)
        speedup = np.array([r["best_speedup"] for r in rows], dtype=float)
        idx = rng.integers(0, len(rows), size=(resamples, len(rows))) if rows else None
        st = config_stats(correct, speedup, idx)
        mine = [c for c in cells if c["configuration"] == name]
        st["cells"] = {s: sum(1 for c in mine if c["state"] == s) for s in STATES}
        st["cost"] = cost(mine, st["correct_pairs"])
        over = [r["baseline"]["speedup"] for r in rows if "baseline" in r]
        if over:
            st["geomean_speedup_over_baseline"] = {"value": geomean(over), "pairs": len(over)}
        configs[name] = st
        pairs_of[name] = {(r["task"], r["seed"]): r for r in rows}

    comparisons = []
    for i, a in enumerate(conf_names):
        for b in conf_names[i + 1:]:
            keys = sorted(set(pairs_of[a]) & set(pairs_of[b]))
            both = [k for k in keys if pairs_of[a][k]["correct"] and pairs_of[b][k]["correct"]]
            diff = np.array([math.log(pairs_of[a][k]["best_speedup"]) - math.log(pairs_of[b][k]["best_speedup"])
                             for k in both], dtype=float)
            idx = rng.integers(0, len(both), size=(resamples, len(both))) if both else None
            c = {"a": a, "b": b, "pairs": len(both)}
            c.update(paired_stats(diff, idx))
            c["pair_wins"] = {a: int((diff > 0).sum()), b: int((diff < 0).sum()), "tie": int((diff == 0).sum())}
            task_wins = {a: 0, b: 0, "tie": 0}
            for t in sorted({k[0] for k in both}):
                d = float(np.mean([x for k, x in zip(both, diff) if k[0] == t]))
                task_wins[a if d > 0 else b if d < 0 else "tie"] += 1
            c["task_wins"] = task_wins
            c["only_a_correct"] = sum(1 for k in keys if pairs_of[a][k]["correct"] and not pairs_of[b][k]["correct"])
            c["only_b_correct"] = sum(1 for k in keys if pairs_of[b][k]["correct"] and not pairs_of[a][k]["correct"])
            comparisons.append(c)

    curves = {t: {} for t in tasks}
    for t in tasks:
        for name in conf_names:
            done = [c for c in cells if c["configuration"] == name and c["state"] == "done"]
            curves[t][name] = curve_summary([per_cell[c["id"]][t] for c in sorted(done, key=lambda c: c["seed"])])

    failed = [{"id": c["id"], "configuration": c["configuration"], "seed": c["seed"], "state": c["state"],
               "exit_code": c["exit_code"], "attempts": c["attempts"], "error": c["error"]}
              for c in cells if c["state"] != "done"]
    return {
        "format": FORMAT,
        "campaign": {"name": campaign["name"], "file": campaign.get("file", ""),
                     "configurations": campaign["configurations"], "seeds": campaign["seeds"],
                     "tasks": tasks, "budget": campaign.get("budget", {})},
        "method": {"bootstrap": "percentile", "resamples": resamples, "seed": seed, "confidence": 0.95,
                   "unit": "(task, seed) pair", "rng": "numpy.random.default_rng(seed)",
                   "thresholds": list(THRESHOLDS)},
        "cells": {"total": len(cells), **{s: sum(1 for c in cells if c["state"] == s) for s in STATES}},
        "not_done": failed,
        "results": results,
        "configurations": configs,
        "comparisons": comparisons,
        "curves": curves,
    }


def cost(cells, solved):
    """What a configuration's cells spent (all of them, failed ones too)."""
    evals = sum(1 for c in cells for r in c["rows"] if r["status"] not in NOT_EVALUATED)
    worker = sum(r["worker_seconds"] for c in cells for r in c["rows"]) / 3600.0
    slot = sum(r["slot_seconds"] for c in cells for r in c["rows"]) / 3600.0
    tokens, usd, wall = 0, 0.0, 0.0
    for c in cells:
        t, u = llm_spend(c["report"])
        tokens += t
        usd += u
        if isinstance(c["report"], dict) and isinstance(c["report"].get("elapsed_seconds"), (int, float)):
            wall += float(c["report"]["elapsed_seconds"])
    out = {"evaluations": evals, "worker_hours": worker, "gpu_slot_hours": slot, "llm_tokens": tokens,
           "llm_usd": usd, "wall_hours": wall / 3600.0, "tasks_solved": solved}
    out["per_task_solved"] = {k: (out[k] / solved if solved else None)
                              for k in ("evaluations", "worker_hours", "gpu_slot_hours", "llm_tokens", "llm_usd")}
    return out


def curve_summary(results):
    """Median and min-max over seeds of the best-so-far curves."""
    if not results:
        return {"seeds": 0}
    n = max(len(r["curve_evals"]) for r in results)
    ev = np.zeros((len(results), n))
    for i, r in enumerate(results):
        c = r["curve_evals"]
        if c:
            ev[i, :len(c)] = c
            ev[i, len(c):] = c[-1]
    t_end = max((r["curve_time"][-1][0] for r in results if r["curve_time"]), default=0.0)
    grid = np.linspace(0.0, t_end, TIME_POINTS) if t_end > 0 else np.zeros(1)
    tm = np.zeros((len(results), grid.size))
    for i, r in enumerate(results):
        if r["curve_time"]:
            ts = np.array([p[0] for p in r["curve_time"]])
            bs = np.array([p[1] for p in r["curve_time"]])
            # best so far is non-decreasing in id order; take the best of all
            # evaluations finished by each grid time
            order = np.argsort(ts, kind="stable")
            ts, bs = ts[order], np.maximum.accumulate(bs[order])
            k = np.searchsorted(ts, grid, side="right")
            tm[i] = np.where(k > 0, bs[np.maximum(k - 1, 0)], 0.0)
    return {"seeds": len(results),
            "evaluations": {"x": list(range(1, n + 1)), "median": np.median(ev, axis=0).tolist(),
                            "min": ev.min(axis=0).tolist(), "max": ev.max(axis=0).tolist()},
            "wall_seconds": {"x": grid.tolist(), "median": np.median(tm, axis=0).tolist(),
                             "min": tm.min(axis=0).tolist(), "max": tm.max(axis=0).tolist()}}


# ---------------------------------------------------------------- plots

def make_plots(rep, plot_dir):
    """plots/*.png and *.svg; returns [(title, png file name)]."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["svg.hashsalt"] = "kevo"
    os.makedirs(plot_dir, exist_ok=True)
    names = [c["name"] for c in rep["campaign"]["configurations"]]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    made = []

    def save(fig, stem, title):
        fig.tight_layout()
        fig.savefig(os.path.join(plot_dir, stem + ".png"), dpi=110, metadata={"Software": None})
        fig.savefig(os.path.join(plot_dir, stem + ".svg"), metadata={"Date": None})
        plt.close(fig)
        made.append((title, stem + ".png"))

    # fast_p against p, one line per configuration, with its intervals.
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, name in enumerate(names):
        fp = rep["configurations"][name]["fast_p"]
        y = [_num(fp[_pkey(p)]["value"]) for p in THRESHOLDS]
        lo = [fp[_pkey(p)]["ci95"][0] for p in THRESHOLDS]
        hi = [fp[_pkey(p)]["ci95"][1] for p in THRESHOLDS]
        err = [[max(v - (l if l is not None else v), 0) for v, l in zip(y, lo)],
               [max((h if h is not None else v) - v, 0) for v, h in zip(y, hi)]]
        ax.errorbar([p + (i - (len(names) - 1) / 2) * 0.03 for p in THRESHOLDS], y, yerr=err, marker="o",
                    capsize=3, label=name, color=colors[i % len(colors)])
    ax.set_title("fast_p: share of (task, seed) pairs correct and > p x the reference")
    ax.set_xlabel("speedup threshold p (x reference)")
    ax.set_ylabel("fast_p (share of pairs)")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(title="configuration (95% bootstrap CI)")
    save(fig, "fast_p", "fast_p by configuration")

    for task in rep["campaign"]["tasks"]:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for i, name in enumerate(names):
            cs = rep["curves"][task][name]
            if not cs.get("seeds"):
                continue
            color = colors[i % len(colors)]
            label = "%s (median of %d seed%s, min-max shaded)" % (name, cs["seeds"], "s" if cs["seeds"] != 1 else "")
            for ax, key in zip(axes, ("evaluations", "wall_seconds")):
                c = {k: [_num(v) for v in cs[key][k]] for k in ("x", "median", "min", "max")}
                step = "post" if key == "evaluations" else None
                ax.fill_between(c["x"], c["min"], c["max"], alpha=0.2, color=color, step=step, linewidth=0)
                if step:
                    ax.step(c["x"], c["median"], where="post", color=color, label=label)
                else:
                    ax.plot(c["x"], c["median"], color=color, label=label)
        axes[0].set_xlabel("evaluations (judged candidates)")
        axes[1].set_xlabel("wall time since the run started (s)")
        for ax in axes:
            ax.set_ylabel("best correct speedup so far (x reference)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="lower right")
        axes[0].set_title("%s: best so far vs evaluations" % task)
        axes[1].set_title("%s: best so far vs wall time" % task)
        save(fig, "curves-" + _file_safe(task), "best so far: " + task)
    return made


def _num(v):
    """A number of report.json back to a float ("inf" -> inf, null -> nan)."""
    return float("nan") if v is None else float(v)


def _file_safe(name):
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


# ---------------------------------------------------------------- writing

def _f(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, float):
        if math.isnan(x):
            return "-"
        return "%.*f" % (digits, x)
    return str(x)


def _ci(ci, digits=3):
    if not ci or ci[0] is None:
        return "-"
    return "[%s, %s]" % (_f(ci[0], digits), _f(ci[1], digits))


def tables(rep):
    """The report's tables as (heading, header, rows, note) — one source for
    report.md and report.html."""
    out = []
    names = [c["name"] for c in rep["campaign"]["configurations"]]
    cf = rep["configurations"]
    header = ["configuration", "pairs", "correct"] + ["fast_%g" % p for p in THRESHOLDS] + ["geomean speedup"]
    rows = []
    for n in names:
        c = cf[n]
        rows.append([n, str(c["pairs"]), str(c["correct_pairs"])] +
                    ["%s %s" % (_f(c["fast_p"][_pkey(p)]["value"], 2), _ci(c["fast_p"][_pkey(p)]["ci95"], 2))
                     for p in THRESHOLDS] +
                    ["%sx %s" % (_f(c["geomean_speedup"]["value"], 2), _ci(c["geomean_speedup"]["ci95"], 2))])
    out.append(("fast_p and geometric mean speedup", header, rows,
                "fast_p: share of (task, seed) pairs with a correct kernel faster than p x the reference "
                "(fast_0: share correct). Geomean over the correct pairs only. Brackets: 95% percentile "
                "bootstrap interval."))
    if any("geomean_speedup_over_baseline" in cf[n] for n in names):
        rows = [[n, _f(cf[n]["geomean_speedup_over_baseline"]["value"], 2) + "x",
                 str(cf[n]["geomean_speedup_over_baseline"]["pairs"])]
                for n in names if "geomean_speedup_over_baseline" in cf[n]]
        out.append(("Speedup over the fastest library baseline", ["configuration", "geomean", "pairs"], rows,
                    "Fastest correct baseline of baselines.json (torch eager, torch.compile, source baselines) "
                    "over the best kernel's time; only pairs whose run measured one."))
    rows = []
    for c in rep["comparisons"]:
        a, b = c["a"], c["b"]
        rows.append(["%s vs %s" % (a, b), str(c["pairs"]), _f(c["mean_log_diff"], 3), _ci(c["ci95"], 3),
                     _f(c["ratio"], 3) + "x", _ci(c["ratio_ci95"], 3),
                     "%d / %d / %d" % (c["pair_wins"][a], c["pair_wins"][b], c["pair_wins"]["tie"]),
                     "%d / %d / %d" % (c["task_wins"][a], c["task_wins"][b], c["task_wins"]["tie"]),
                     "%d / %d" % (c["only_a_correct"], c["only_b_correct"])])
    if rows:
        out.append(("Paired comparisons", ["a vs b", "pairs both correct", "mean log(a/b)", "95% CI",
                                           "ratio exp(mean)", "ratio 95% CI", "pair wins a / b / tie",
                                           "task wins a / b / tie", "correct only in a / b"], rows,
                    "On the (task, seed) pairs where both configurations have a correct kernel. Ratio above 1: "
                    "a is faster. A task is won by the configuration with the larger mean log speedup over "
                    "its paired seeds."))
    rows = []
    for n in names:
        k = cf[n]["cost"]
        p = k["per_task_solved"]
        rows.append([n, str(k["evaluations"]), _f(k["worker_hours"], 4), _f(k["gpu_slot_hours"], 4),
                     str(k["llm_tokens"]), _f(k["llm_usd"], 4), _f(k["wall_hours"], 4), str(k["tasks_solved"]),
                     _f(p["evaluations"], 1), _f(p["worker_hours"], 4), _f(p["gpu_slot_hours"], 4),
                     _f(p["llm_tokens"], 0), _f(p["llm_usd"], 4)])
    out.append(("Cost", ["configuration", "evaluations", "worker h", "GPU slot h", "LLM tokens", "LLM USD",
                         "run wall h", "solved pairs", "evals / solved", "worker h / solved",
                         "slot h / solved", "tokens / solved", "USD / solved"], rows,
                "Sums over every cell of the configuration, failed ones included: worker h = lineage "
                "worker_seconds / 3600, GPU slot h = slot_seconds / 3600, LLM from each report.json. "
                "'/ solved': divided by the number of correct (task, seed) pairs."))
    rows = [[r["configuration"], str(r["seed"]), r["task"], r["cell_state"], "yes" if r["correct"] else "no",
             _f(r["best_speedup"], 3) + "x", str(r["evaluations"]),
             (_f(r["baseline"]["speedup"], 3) + "x (" + r["baseline"]["name"] + ")") if "baseline" in r else "-"]
            for r in rep["results"]]
    out.append(("Per task, configuration and seed", ["configuration", "seed", "task", "cell", "correct",
                                                      "best speedup", "evaluations", "vs baseline"], rows,
                "Best speedup over the reference of the correct candidates (0 when none, or when the cell "
                "is not done)."))
    return out


def method_text(rep):
    m = rep["method"]
    return ("Intervals are 95%% percentile bootstrap intervals (2.5th and 97.5th percentiles, numpy's "
            "linear interpolation) from %d resamples. The unit of resampling is the (task, seed) pair, "
            "drawn with replacement: for each configuration, in the campaign's order, one matrix of "
            "resample indices is drawn and used for every fast_p and for the geomean; then one per "
            "paired comparison (configuration pairs in order), over the pairs where both are correct. "
            "The generator is numpy.random.default_rng(%d) (--seed); the same campaign and seed give "
            "the same numbers. Resamples without a correct pair give no geomean and are left out of its "
            "interval. Cells that are not done count as unsolved (speedup 0, not correct) in every "
            "statistic; their costs count." % (m["resamples"], m["seed"]))


def not_done_lines(rep, with_error=True):
    return ["%s (configuration %s, seed %s): %s%s%s" % (
        c["id"], c["configuration"], c["seed"], c["state"],
        ", exit code %s" % c["exit_code"] if c["exit_code"] is not None else "",
        ": " + c["error"] if c["error"] and with_error else "") for c in rep["not_done"]]


def md_code_block(text):
    """`text` as a fenced Markdown code block whose fence is longer than any
    run of backticks in it: none of it is read as Markdown or HTML (a cell's
    error is the end of its log, which can quote an LLM server's reply)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


def write_md(rep, plots, path):
    cells = rep["cells"]
    lines = ["# Campaign report: %s" % rep["campaign"]["name"], "",
             "Configurations: %s. Seeds: %s. Tasks: %s." % (
                 ", ".join(c["name"] for c in rep["campaign"]["configurations"]),
                 ", ".join(str(s) for s in rep["campaign"]["seeds"]), ", ".join(rep["campaign"]["tasks"])),
             "",
             "Cells: %d, done %d, failed %d, pending %d, running %d." % (
                 cells["total"], cells["done"], cells["failed"], cells["pending"], cells["running"]), ""]
    if rep["not_done"]:
        lines += ["## Failed and pending cells", "",
                  "Their tasks count as not solved (speedup 0, not correct).", ""]
        for c, text in zip(rep["not_done"], not_done_lines(rep, with_error=False)):
            lines.append("- " + text.replace("\n", " / "))
            if c["error"]:
                lines += [""] + md_code_block(c["error"]) + [""]
        lines.append("")
    for title, header, rows, note in tables(rep):
        lines += ["## " + title, "", note, "",
                  "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(x.replace("|", "\\|") for x in r) + " |" for r in rows]
        lines.append("")
    lines += ["## Method", "", method_text(rep), "", "## Plots", ""]
    lines += ["![%s](plots/%s)" % (t, f) for t, f in plots]
    lines.append("")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def write_html(rep, plots, plot_dir, path):
    e = html.escape
    cells = rep["cells"]
    parts = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">",
             "<title>Campaign report: %s</title>" % e(rep["campaign"]["name"]),
             "<style>body{font-family:sans-serif;max-width:1200px;margin:1em auto}"
             "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:2px 6px;"
             "font-size:13px}th{background:#eee}.bad{color:#a00}img{max-width:100%}</style>",
             "</head><body>", "<h1>Campaign report: %s</h1>" % e(rep["campaign"]["name"]),
             "<p>Cells: %d, done %d, failed %d, pending %d, running %d.</p>" % (
                 cells["total"], cells["done"], cells["failed"], cells["pending"], cells["running"])]
    if rep["not_done"]:
        parts.append("<h2>Failed and pending cells</h2><p>Their tasks count as not solved.</p><ul>")
        parts += ["<li class=\"bad\"><pre>%s</pre></li>" % e(t) for t in not_done_lines(rep)]
        parts.append("</ul>")
    for title, header, rows, note in tables(rep):
        parts.append("<h2>%s</h2><p>%s</p><table><tr>%s</tr>" % (
            e(title), e(note), "".join("<th>%s</th>" % e(h) for h in header)))
        parts += ["<tr>%s</tr>" % "".join("<td>%s</td>" % e(x) for x in r) for r in rows]
        parts.append("</table>")
    parts += ["<h2>Method</h2>", "<p>%s</p>" % e(method_text(rep)), "<h2>Plots</h2>"]
    for title, name in plots:
        with open(os.path.join(plot_dir, name), "rb") as f:
            data = base64.b64encode(f.read()).decode("ascii")
        parts.append("<figure><img alt=\"%s\" src=\"data:image/png;base64,%s\"><figcaption>%s</figcaption></figure>"
                     % (e(title), data, e(title)))
    parts.append("</body></html>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts) + "\n")


def write_csv(rep, path):
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["configuration", "seed", "task", "correct", "best_speedup", "evaluations", "cell_state"])
        for r in rep["results"]:
            w.writerow([r["configuration"], r["seed"], r["task"], int(r["correct"]), repr(float(r["best_speedup"])),
                        r["evaluations"], r["cell_state"]])


def main(argv=None):
    ap = argparse.ArgumentParser(description="Report of a kevo campaign directory (docs/campaign-report.md)")
    ap.add_argument("dir", help="campaign directory (written by `kevo campaign run`)")
    ap.add_argument("--out", help="output folder (default DIR/report)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the bootstrap's generator (default 1)")
    ap.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    args = ap.parse_args(argv)
    if args.resamples < 1:
        ap.error("--resamples must be at least 1")
    try:
        campaign = load_campaign(args.dir)
    except CampaignError as e:
        print("kevo_campaign_report: %s" % e, file=sys.stderr)
        return 2
    out = args.out or os.path.join(args.dir, "report")
    plot_dir = os.path.join(out, "plots")
    try:
        os.makedirs(plot_dir, exist_ok=True)
    except OSError as e:
        print("kevo_campaign_report: %s: cannot create: %s" % (plot_dir, e.strerror), file=sys.stderr)
        return 2
    cells = [load_cell(args.dir, c) for c in campaign["cells"]]
    rep = jsonable(analyse(campaign, cells, args.seed, args.resamples))
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as f:
        json.dump(rep, f, sort_keys=True, indent=1, allow_nan=False)
        f.write("\n")
    write_csv(rep, os.path.join(out, "report.csv"))
    plots = make_plots(rep, plot_dir)
    write_md(rep, plots, os.path.join(out, "report.md"))
    write_html(rep, plots, plot_dir, os.path.join(out, "report.html"))
    print("campaign report: %s (%d cells, %d not done)" % (out, rep["cells"]["total"], len(rep["not_done"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
