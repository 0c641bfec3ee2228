#!/usr/bin/env python3
"""Plots of one kevo run (docs/plot.md).

    kevo_plot.py RUN_DIR [--out DIR] [--format png,svg] [--task NAME ...]

RUN_DIR is a run directory (every lineage/rank-*.h5 is read) or one lineage
file (a rank file, or the merged file of `kevo merge`). DIR (default
RUN_DIR/plots, or FILE's folder/plots for a file) gets, per task:

  best_<task>.{png,svg}       best correct speedup so far against evaluations
                              and against wall time since the run's first
                              submission (only where a candidate is correct)
  lineage_<task>.{png,svg}    ancestry of the task's best kernel back to its
                              seed(s), laid out by generation depth
  operators_<task>.{png,svg}  verdicts per operator (stacked by status) and
                              each operator's success rate
  speedups_<task>.{png,svg}   histogram of the correct candidates' speedups
                              on a log axis (only where one is correct)
  best_lineage_<task>.json    the lineage tree's nodes and edges

and summary.json (counts per task, operator and status; best candidates;
files) and index.md (every file, with notes).

Exit status: 0 done; 2 bad input (no lineage, an unreadable or foreign
file, a bad option, an unknown --task, an output folder that cannot be
written), with a message naming the path; 1 anything else.
"""
import argparse
import glob
import json
import math
import os
import sys
import time

from kevo_json import jsonable  # next to this script

PROG = "kevo_plot"
FORMAT = "kevo-plot/1"
NO_ID = 2**64 - 1
# Statuses in the order the docs give them (docs/lineage.md).
STATUSES = ("pending", "correct", "wrong_answer", "compile_error", "runtime_error", "timeout", "memory_limit",
            "output_limit", "duplicate", "invalid", "lost", "internal_error", "forbidden")
# Rows that are no evaluation and no judgement of the operator's work.
NOT_JUDGED = ("duplicate", "invalid", "lost", "pending")
FORMATS = ("png", "svg")
STATUS_COLORS = {
    "correct": "#2ca02c", "wrong_answer": "#d62728", "compile_error": "#ff7f0e", "runtime_error": "#9467bd",
    "timeout": "#8c564b", "memory_limit": "#e377c2", "output_limit": "#bcbd22", "duplicate": "#c7c7c7",
    "invalid": "#7f7f7f", "lost": "#17becf", "internal_error": "#000000", "forbidden": "#aec7e8",
    "pending": "#ffffff",
}


class InputError(Exception):
    """Bad input: exit 2 with this message."""


# ---------------------------------------------------------------- reading

def lineage_files(path):
    """The lineage files of RUN_DIR (or the one file given)."""
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise InputError("%s: no such run directory or lineage file" % path)
    files = sorted(glob.glob(os.path.join(path, "lineage", "rank-*.h5")))
    if not files:
        merged = os.path.join(path, "merged.h5")
        if os.path.isfile(merged):
            return [merged]
        raise InputError("%s: no lineage files (lineage/rank-*.h5); is it a run directory made by `kevo run`?"
                         % os.path.join(path, "lineage"))
    return files


def _read_file(path, tries=40):
    """Rows, tasks and start time of one lineage file, also one a run still
    writes (swmr, no lock, retried: docs/lineage.md, Reading with h5py)."""
    import h5py
    if not os.access(path, os.R_OK):
        raise InputError("%s: cannot read the file" % path)
    if not h5py.is_hdf5(path):
        raise InputError("%s: not an HDF5 file (a kevo lineage file is expected)" % path)

    def read(f):
        if "candidates" not in f or "tasks" not in f:
            raise InputError("%s: not a kevo lineage file (no /candidates or /tasks; format %r)"
                             % (path, f.attrs.get("format", "none")))
        ds = f["candidates"]
        rows = ds[:]
        rows = rows[rows["id"] != NO_ID]
        rows = rows[rows["origin_rank"] == rows["rank"]]   # a migrant counts once, where it was made
        enum = h5py.check_enum_dtype(ds.dtype["status"]) or {}
        names = {int(v): k for k, v in enum.items()}
        tasks = [t.decode("utf-8", "replace") if isinstance(t, bytes) else str(t) for t in f["tasks"][:]]
        start = float(f.attrs["start_time"]) if "start_time" in f.attrs else None
        out = []
        for r in rows:
            ti = int(r["task"])
            out.append({
                "id": int(r["id"]), "task": tasks[ti] if ti < len(tasks) else "task%d" % ti,
                "op": bytes(r["op"]).split(b"\0", 1)[0].decode("utf-8", "replace"),
                "status": names.get(int(r["status"]), "status%d" % int(r["status"])),
                "parent0": int(r["parent0"]), "parent1": int(r["parent1"]),
                "speedup": float(r["speedup"]), "t_submitted": float(r["t_submitted"]),
                "t_finished": float(r["t_finished"]), "t_created": float(r["t_created"])})
        return out, tasks, start

    last = None
    for _ in range(tries):
        try:
            with h5py.File(path, "r", swmr=True, locking=False) as f:
                return read(f)
        except OSError as e:   # a flush of a running writer holds the file for a moment
            last = e
            time.sleep(0.05)
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise InputError("%s: not a readable kevo lineage file: %s" % (path, e))
    raise InputError("%s: cannot read the lineage file: %s" % (path, last))


def read_run(path):
    """(rows in id order, tasks in run order) of every lineage file."""
    rows, tasks, seen = [], [], set()
    for p in lineage_files(path):
        r, t, _ = _read_file(p)
        for x in t:
            if x not in tasks:
                tasks.append(x)
        for row in r:
            if row["id"] not in seen:   # a merged file may list a row of each rank file once
                seen.add(row["id"])
                rows.append(row)
    rows.sort(key=lambda r: r["id"])
    return rows, tasks


# ---------------------------------------------------------------- analysis

def best_of(rows):
    """The best correct row (largest finite-or-inf speedup, lowest id on a tie) or None."""
    correct = [r for r in rows if r["status"] == "correct" and not math.isnan(r["speedup"])]
    if not correct:
        return None
    return max(correct, key=lambda r: (r["speedup"], -r["id"]))


def ancestry(best, by_id):
    """Nodes (dicts) and edges (parent, child, which, op) of best's ancestry:
    parent0 and, for crossovers, parent1, back to rows without parents.
    Parents the lineage does not hold are nodes with status "missing"."""
    nodes, edges, todo = {}, [], [best["id"]]
    while todo:
        i = todo.pop()
        if i in nodes:
            continue
        r = by_id.get(i)
        if r is None:
            nodes[i] = {"id": i, "op": "", "status": "missing", "speedup": None, "parent0": -1, "parent1": -1}
            continue
        nodes[i] = {"id": i, "op": r["op"], "status": r["status"], "speedup": r["speedup"],
                    "parent0": r["parent0"], "parent1": r["parent1"]}
        for which in ("parent0", "parent1"):
            p = r[which]
            if p >= 0:
                edges.append((p, i, which, r["op"]))
                todo.append(p)
    # generation depth: 0 for nodes without parents, else 1 + deepest parent
    depth = {}

    def d(i):
        if i not in depth:
            n = nodes[i]
            ps = [n[w] for w in ("parent0", "parent1") if n[w] >= 0]
            depth[i] = 1 + max(d(p) for p in ps) if ps else 0
        return depth[i]

    sys.setrecursionlimit(max(1000, 4 * len(nodes) + 100))
    for i in nodes:
        nodes[i]["depth"] = d(i)
    edges.sort()
    return [nodes[i] for i in sorted(nodes)], edges


def counts_by_op(rows):
    """{op: {status: n}} in order of the operators' first candidate."""
    out = {}
    for r in rows:
        c = out.setdefault(r["op"], {})
        c[r["status"]] = c.get(r["status"], 0) + 1
    return out


def success_rate(c):
    judged = sum(n for s, n in c.items() if s not in NOT_JUDGED)
    return (c.get("correct", 0) / judged if judged else None), judged


def curves(rows, t0):
    """Best-so-far of the judged rows: by evaluation (id order) and by
    finish time (seconds since t0). None until a row is correct."""
    judged = [r for r in rows if r["status"] not in NOT_JUDGED]
    by_eval, best = [], None
    for r in judged:
        if r["status"] == "correct" and not math.isnan(r["speedup"]) and (best is None or r["speedup"] > best):
            best = r["speedup"]
        by_eval.append(best)
    by_time, best = [], None
    for r in sorted(judged, key=lambda r: (r["t_finished"], r["id"])):
        if r["status"] == "correct" and not math.isnan(r["speedup"]) and (best is None or r["speedup"] > best):
            best = r["speedup"]
        by_time.append((r["t_finished"] - t0, best))
    return judged, by_eval, by_time


def file_safe(name):
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def fmt_speedup(s):
    if s is None or math.isnan(s):
        return "-"
    if math.isinf(s):
        return "inf x"
    return "%.0fx" % s if s >= 100 else "%.3gx" % s


# ---------------------------------------------------------------- plots

class Plotter:
    def __init__(self, out, formats, run_name):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        matplotlib.rcParams["svg.hashsalt"] = "kevo"
        matplotlib.rcParams["svg.fonttype"] = "none"   # text stays text: searchable, smaller
        self.plt = plt
        self.out, self.formats, self.run = out, formats, run_name
        self.files = []   # (file name, description, task)

    def save(self, fig, stem, what, task):
        fig.tight_layout()
        for ext in self.formats:
            name = stem + "." + ext
            if ext == "png":
                fig.savefig(os.path.join(self.out, name), dpi=100, metadata={"Software": None})
            else:
                fig.savefig(os.path.join(self.out, name), metadata={"Date": None})
            self.files.append((name, what, task))
        self.plt.close(fig)

    def title(self, task, what):
        return "run %s, task %s: %s" % (self.run, task, what)

    def best_so_far(self, task, rows, judged, by_eval, by_time):
        fig, axes = self.plt.subplots(1, 2, figsize=(11, 4.2))
        fig.suptitle(self.title(task, "best correct speedup so far"))
        ax = axes[0]
        x = list(range(1, len(by_eval) + 1))
        y = [float("nan") if b is None else b for b in by_eval]
        ax.step(x, y, where="post", color="C0", label="best so far")
        cx = [i + 1 for i, r in enumerate(judged) if r["status"] == "correct" and math.isfinite(r["speedup"])]
        cy = [judged[i - 1]["speedup"] for i in cx]
        ax.scatter(cx, cy, s=12, color="C2", alpha=0.6, label="correct candidate")
        ax.set_xlabel("evaluations (judged candidates, in id order)")
        ax = axes[1]
        tx = [t for t, _ in by_time]
        ty = [float("nan") if b is None else b for _, b in by_time]
        ax.step(tx, ty, where="post", color="C0", label="best so far")
        corr = [r for r in judged if r["status"] == "correct" and math.isfinite(r["speedup"])]
        ax.scatter([r["t_finished"] - self.t0 for r in corr], [r["speedup"] for r in corr], s=12, color="C2",
                   alpha=0.6, label="correct candidate")
        ax.set_xlabel("wall time since the run's first submission (s)")
        for ax in axes:
            ax.axhline(1.0, color="grey", linestyle=":", linewidth=1, label="reference (1x)")
            ax.set_ylabel("speedup (x over the reference)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="lower right")
        axes[0].set_title("against evaluations", fontsize=10)
        axes[1].set_title("against wall time", fontsize=10)
        self.save(fig, "best_" + file_safe(task), "best correct speedup so far of %s" % task, task)

    def lineage(self, task, nodes, edges, best_id):
        layers = {}
        for n in nodes:
            layers.setdefault(n["depth"], []).append(n)
        nl = max(layers) + 1
        width = max(len(v) for v in layers.values())
        pos = {}
        for dpt, ns in layers.items():
            ns.sort(key=lambda n: n["id"])
            for k, n in enumerate(ns):
                pos[n["id"]] = (k - (len(ns) - 1) / 2.0, -dpt)
        fig_w = max(8.0, min(40.0, 2.0 * width + 4))
        fig_h = max(4.0, min(60.0, 0.9 * nl + 2.5))
        fig, ax = self.plt.subplots(figsize=(fig_w, fig_h))
        ax.set_title("run %s, task %s:\nancestry of the best kernel #%d (%d nodes)" % (self.run, task, best_id,
                                                                                      len(nodes)))
        depth_of = {n["id"]: n["depth"] for n in nodes}
        bend = 0.0
        for p, c, which, op in edges:
            (x0, y0), (x1, y1) = pos[p], pos[c]
            y0, y1 = y0 - 0.2, y1 + 0.2   # from the parent box's bottom to the child box's top
            style = "-" if which == "parent0" else "--"
            label = op if which == "parent0" else op + " (2nd parent)"
            if depth_of[c] - depth_of[p] == 1:   # next layer: a straight edge crosses no node
                ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                            arrowprops=dict(arrowstyle="->", linestyle=style, color="#555555", linewidth=1))
                lx, ly = (x0 + x1) / 2, (y0 + y1) / 2
            else:   # skips layers: a curve beside the nodes between (parent1 right, parent0 left)
                off = (0.45 + 0.08 * min(depth_of[c] - depth_of[p], 6)) * (1 if which == "parent1" else -1)
                cx, cy = (x0 + x1) / 2 + 2 * off, (y0 + y1) / 2
                t = [k / 24.0 for k in range(25)]
                bx = [(1 - u) ** 2 * x0 + 2 * u * (1 - u) * cx + u * u * x1 for u in t]
                by = [(1 - u) ** 2 * y0 + 2 * u * (1 - u) * cy + u * u * y1 for u in t]
                ax.plot(bx[:-1], by[:-1], linestyle=style, color="#555555", linewidth=1)
                ax.annotate("", xy=(bx[-1], by[-1]), xytext=(bx[-3], by[-3]),
                            arrowprops=dict(arrowstyle="->", color="#555555", linewidth=1))
                lx, ly = bx[12], by[12]
                bend = max(bend, abs(lx - (x0 + x1) / 2))
            ax.text(lx, ly, label, fontsize=7, ha="center", va="center", color="#333333",
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85))
        for n in nodes:
            x, y = pos[n["id"]]
            status = n["status"]
            label = "#%d\n%s" % (n["id"], fmt_speedup(n["speedup"]) if status == "correct" else status)
            fc = "#ffd966" if n["id"] == best_id else ("#d9ead3" if status == "correct" else "#f4cccc")
            ax.text(x, y, label, fontsize=8, ha="center", va="center",
                    bbox=dict(boxstyle="round,pad=0.3", fc=fc, ec="#333333"))
        xs = [p[0] for p in pos.values()]
        ax.set_xlim(min(xs) - 0.8 - bend, max(xs) + 0.8 + bend)
        ax.set_ylim(-(nl - 1) - 0.6, 0.6)
        ax.set_yticks([-d for d in range(nl)])
        ax.set_yticklabels([str(d) for d in range(nl)])
        ax.set_ylabel("generation depth (0 = seed)")
        ax.set_xticks([])
        for side in ("top", "right", "bottom"):
            ax.spines[side].set_visible(False)
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
        handles = [Patch(fc="#ffd966", ec="#333333", label="best kernel (id, speedup x over the reference)"),
                   Patch(fc="#d9ead3", ec="#333333", label="correct ancestor"),
                   Line2D([], [], color="#555555", label="parent0 -> child (child's operator)"),
                   Line2D([], [], color="#555555", linestyle="--", label="parent1 -> child (crossover)")]
        if any(n["status"] != "correct" for n in nodes):
            handles.insert(2, Patch(fc="#f4cccc", ec="#333333", label="ancestor not correct / missing"))
        ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2,
                  frameon=False)
        self.save(fig, "lineage_" + file_safe(task), "lineage tree of the best kernel of %s" % task, task)

    def operators(self, task, counts):
        ops = list(counts)
        fig, axes = self.plt.subplots(1, 2, figsize=(max(10.0, 1.3 * len(ops) * 2 + 3), 4.6))
        fig.suptitle(self.title(task, "verdicts per operator"))
        ax = axes[0]
        bottom = [0] * len(ops)
        for s in STATUSES:
            h = [counts[o].get(s, 0) for o in ops]
            if any(h):
                ax.bar(ops, h, bottom=bottom, label=s, color=STATUS_COLORS.get(s), edgecolor="#333333",
                       linewidth=0.5)
                bottom = [b + v for b, v in zip(bottom, h)]
        extra = sorted({s for o in ops for s in counts[o] if s not in STATUSES})
        for s in extra:
            h = [counts[o].get(s, 0) for o in ops]
            ax.bar(ops, h, bottom=bottom, label=s)
            bottom = [b + v for b, v in zip(bottom, h)]
        ax.set_xlabel("operator")
        ax.set_ylabel("candidates (count)")
        ax.set_title("verdicts (stacked by status)", fontsize=10)
        ax.legend(fontsize=7, title="status", title_fontsize=8)
        ax = axes[1]
        rates = [success_rate(counts[o]) for o in ops]
        ax.bar(ops, [r if r is not None else 0 for r, _ in rates], color="C0", label="correct / judged")
        for k, (r, n) in enumerate(rates):
            ax.text(k, (r or 0) + 0.02, "%s\n(%d judged)" % ("-" if r is None else "%.0f%%" % (100 * r), n),
                    ha="center", va="bottom", fontsize=7)
        ax.set_ylim(0, 1.2)
        ax.set_xlabel("operator")
        ax.set_ylabel("success rate (share correct of judged)")
        ax.set_title("success rate (judged: without duplicate, invalid, lost)", fontsize=10)
        ax.legend(fontsize=7, loc="upper right")
        for ax in axes:
            ax.tick_params(axis="x", labelrotation=20, labelsize=8)
            ax.grid(axis="y", alpha=0.3)
        self.save(fig, "operators_" + file_safe(task), "verdicts and success rate per operator of %s" % task, task)

    def speedups(self, task, rows):
        import numpy as np
        s = np.array([r["speedup"] for r in rows if r["status"] == "correct"], dtype=float)
        s = s[np.isfinite(s) & (s > 0)]
        if s.size == 0:
            return False
        lo, hi = float(s.min()), float(s.max())
        if hi / lo < 1.5:
            lo, hi = lo / 1.25, hi * 1.25
        bins = np.logspace(math.log10(lo), math.log10(hi), min(30, max(5, s.size // 2)) + 1)
        fig, ax = self.plt.subplots(figsize=(7, 4.2))
        ax.hist(s, bins=bins, color="C2", edgecolor="#333333", linewidth=0.5,
                label="correct candidates (%d)" % s.size)
        ax.set_xscale("log")
        ax.axvline(1.0, color="grey", linestyle=":", label="reference (1x)")
        ax.axvline(float(s.max()), color="C1", linestyle="--",
                   label="best %s" % fmt_speedup(float(s.max())))
        ax.set_xlabel("speedup (x over the reference, log scale)")
        ax.set_ylabel("candidates (count)")
        ax.set_title(self.title(task, "speedups of the correct candidates"))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        self.save(fig, "speedups_" + file_safe(task), "speedup distribution of the correct candidates of %s" % task, task)
        return True


# ---------------------------------------------------------------- main

def parse_formats(text):
    fs = [f.strip().lower() for f in text.split(",") if f.strip()]
    bad = [f for f in fs if f not in FORMATS]
    if not fs or bad:
        raise InputError("--format %r: expected a comma-separated list of %s" % (text, ", ".join(FORMATS)))
    return list(dict.fromkeys(fs))


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(jsonable(obj), f, indent=1, sort_keys=True, allow_nan=False)
        f.write("\n")


def run(args):
    formats = parse_formats(args.format)
    rows, tasks = read_run(args.run_dir)
    if args.task:
        unknown = [t for t in args.task if t not in tasks]
        if unknown:
            raise InputError("%s: no task %s in this run; its tasks: %s" % (
                args.run_dir, ", ".join(repr(t) for t in unknown), ", ".join(tasks) or "none"))
        chosen = [t for t in tasks if t in args.task]
    else:
        chosen = tasks
    base = args.run_dir if os.path.isdir(args.run_dir) else os.path.dirname(os.path.abspath(args.run_dir))
    out = args.out or os.path.join(base, "plots")
    try:
        os.makedirs(out, exist_ok=True)
        probe = os.path.join(out, ".kevo_plot_probe")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise InputError("%s: cannot write the output folder: %s" % (out, e.strerror or e))
    name = os.path.basename(os.path.normpath(os.path.abspath(args.run_dir)))
    if os.path.isfile(args.run_dir):
        name = os.path.basename(os.path.dirname(os.path.abspath(args.run_dir))) + "/" + name

    plot = Plotter(out, formats, name)
    subs = [r["t_submitted"] for r in rows if r["t_submitted"] > 0]
    plot.t0 = min(subs) if subs else min((r["t_created"] for r in rows), default=0.0)
    by_id = {r["id"]: r for r in rows}
    summary = {"format": FORMAT, "run": name, "tasks": {}, "first_submission": plot.t0,
               "statuses_not_judged": list(NOT_JUDGED)}
    notes = {}
    for task in chosen:
        trows = [r for r in rows if r["task"] == task]
        counts = counts_by_op(trows)
        judged, by_eval, by_time = curves(trows, plot.t0)
        best = best_of(trows)
        ts = {"candidates": len(trows), "evaluations": len(judged),
              "correct": sum(1 for r in trows if r["status"] == "correct"),
              "by_status": {s: sum(1 for r in trows if r["status"] == s)
                            for s in sorted({r["status"] for r in trows})},
              "operators": {o: {"counts": dict(sorted(c.items())), "judged": success_rate(c)[1],
                                "success_rate": success_rate(c)[0]} for o, c in counts.items()},
              "best": None, "note": ""}
        task_notes = []
        if best is None:
            ts["note"] = ("no correct candidate (%d candidates, %d judged): no best-so-far, lineage or "
                          "speedup plot" % (len(trows), len(judged)))
            task_notes.append(ts["note"])
        else:
            nodes, edges = ancestry(best, by_id)
            ts["best"] = {"id": best["id"], "speedup": best["speedup"], "op": best["op"],
                          "ancestry_nodes": len(nodes)}
            lin = {"format": FORMAT, "run": name, "task": task, "best": best["id"], "nodes": nodes,
                   "edges": [{"parent": p, "child": c, "which": w, "op": o} for p, c, w, o in edges]}
            lname = "best_lineage_%s.json" % file_safe(task)
            write_json(os.path.join(out, lname), lin)
            plot.best_so_far(task, trows, judged, by_eval, by_time)
            plot.lineage(task, nodes, edges, best["id"])
            plot.files.append((lname, "nodes and edges of the lineage tree of %s" % task, task))
            missing = [n["id"] for n in nodes if n["status"] == "missing"]
            if missing:
                task_notes.append("ancestors not in the lineage: %s" % ", ".join(map(str, missing)))
        if trows:
            plot.operators(task, counts)
        else:
            task_notes.append("no candidates")
        if best is not None:
            plot.speedups(task, trows)
        notes[task] = task_notes
        summary["tasks"][task] = ts

    summary["files"] = [f for f, _, _ in plot.files] + ["summary.json", "index.md"]
    write_json(os.path.join(out, "summary.json"), summary)
    lines = ["# Plots of run %s" % name, "", "Made by `kevo plot` (docs/plot.md) from %d candidates of %d task%s."
             % (len(rows), len(chosen), "" if len(chosen) == 1 else "s"), ""]
    for task in chosen:
        ts = summary["tasks"][task]
        lines += ["## %s" % task, "",
                  "%d candidates, %d judged, %d correct; best: %s." % (
                      ts["candidates"], ts["evaluations"], ts["correct"],
                      "#%d, %s" % (ts["best"]["id"], fmt_speedup(ts["best"]["speedup"])) if ts["best"] else "none"),
                  ""]
        lines += ["Note: %s." % n for n in notes[task]]
        if notes[task]:
            lines.append("")
        for f, what, t in plot.files:
            if t == task:
                lines.append("- [%s](%s): %s" % (f, f, what))
        lines.append("")
    lines += ["## Run", "", "- [summary.json](summary.json): counts per task, operator and status; best candidates",
              "- [index.md](index.md): this list", ""]
    with open(os.path.join(out, "index.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print("kevo plot: %s (%d files, %d task%s)" % (out, len(summary["files"]), len(chosen),
                                                 "" if len(chosen) == 1 else "s"))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="kevo plot", description="Plots of one kevo run (docs/plot.md)")
    ap.add_argument("run_dir", metavar="RUN_DIR", help="run directory (or one lineage .h5 file)")
    ap.add_argument("--out", metavar="DIR", help="output folder (default RUN_DIR/plots)")
    ap.add_argument("--format", default="png,svg", help="comma-separated: png, svg (default png,svg)")
    ap.add_argument("--task", action="append", metavar="NAME", help="only this task (repeatable; default every task)")
    args = ap.parse_args(argv)   # a bad option: usage and exit 2
    try:
        import h5py  # noqa: F401
        import numpy  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError as e:
        print("%s: %s: %s needs h5py, numpy and matplotlib (kevo plot --python P)" % (PROG, e, sys.executable),
              file=sys.stderr)
        return 1
    try:
        return run(args)
    except InputError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
