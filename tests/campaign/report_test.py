"""The campaign report (engine/python/kevo_campaign_report.py) on a campaign
directory made here by hand as `kevo campaign run` makes it (docs/campaign-report.md):
2 configurations x 3 seeds on 2 bundled CPU tasks, four cells run by
`kevo run`, one failed cell without a run directory and one pending.

    report_test.py KEVO SOURCE_DIR WORK_DIR

Checks: fast_p, geomean and the paired comparison recomputed here from the
lineage files (not from report.json) match report.json, bootstrap intervals
included; the same seed gives the same report.json bytes and another seed
other intervals with the same point estimates; report.html parses and
embeds every plot; report.csv has one row per configuration x seed x task;
the failed cell is in report.md with its error and counts as unsolved; a
folder without campaign.json, or with a malformed one, exits 2 naming the
file. Exit 77 (skipped) where matplotlib is missing.
"""
import base64
import csv
import html.parser
import json
import math
import os
import re
import shutil
import subprocess
import sys

try:
    import matplotlib  # noqa: F401  (the report draws with it)
except ImportError:
    print("SKIP: matplotlib is not installed (scripts/setup-debian.sh installs python3-matplotlib)")
    sys.exit(77)
import h5py
import numpy as np

KEVO, SRC, WORK = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
SCRIPT = os.path.join(SRC, "engine", "python", "kevo_campaign_report.py")
BASE = os.path.join(SRC, "configs", "quickstart.json")
TASKS = ["reduce_sum", "softmax"]
CONFIGS = [{"name": "pop4", "set": ["island.population=4"]},
           {"name": "pop2", "set": ["island.population=2", "island.elites=1", "island.tournament_size=2"]}]
SEEDS = [1, 2, 3]
RAN = {("pop4", 1), ("pop4", 2), ("pop2", 1), ("pop2", 2)}
FAILED, PENDING = "pop4.s3", "pop2.s3"
FAILED_ERROR = "kevo: error: sandbox: worker killed by SIGKILL (out of memory?)"
# The end of a cell's log can quote an LLM server's reply: in report.md it
# stays in a code block, read as neither Markdown nor HTML.
HOSTILE_ERROR = "the server said: ```\n<img src=x onerror=alert(1)> [x](javascript:alert(1))"
THRESHOLDS = (0, 0.5, 0.8, 1, 1.5, 2)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def make_campaign(d):
    os.makedirs(os.path.join(d, "cells"))
    os.makedirs(os.path.join(d, "status"))
    cells = []
    for conf in CONFIGS:
        for seed in SEEDS:
            cid = "%s.s%d" % (conf["name"], seed)
            cells.append({"id": cid, "configuration": conf["name"], "seed": seed, "run_dir": "cells/" + cid})
            status = {"state": "pending", "exit_code": None, "error": "", "attempts": 0, "started": None,
                      "finished": None}
            if (conf["name"], seed) in RAN:
                cmd = [KEVO, "run", BASE, "--out", os.path.join(d, "cells", cid), "--set", "seed=%d" % seed,
                       "--set", "budget.evaluations_per_task=7", "--set", "progress.mode=off",
                       "--set", "tasks=" + json.dumps(["tasks/cpu/" + t for t in TASKS])]
                for s in conf["set"]:
                    cmd += ["--set", s]
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode != 0:
                    sys.exit("kevo run failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-3000:]))
                status.update(state="done", exit_code=0, attempts=1, started=1.0e9, finished=1.0e9 + 20)
            elif cid == FAILED:
                status.update(state="failed", exit_code=1, attempts=2, error="...\n" + HOSTILE_ERROR + "\n" + FAILED_ERROR,
                              started=1.0e9, finished=1.0e9 + 3)
            with open(os.path.join(d, "status", cid + ".json"), "w") as f:
                json.dump(status, f)
    campaign = {"name": "report-test", "file": "campaign.json", "base_config": BASE,
                "tasks": ["tasks/cpu/" + t for t in TASKS], "configurations": CONFIGS, "seeds": SEEDS,
                "budget": {"evaluations_per_task": 7, "wall_seconds": 140, "llm_usd": 0},
                "cells": cells}
    with open(os.path.join(d, "campaign.json"), "w") as f:
        json.dump(campaign, f, indent=1)
    return campaign


def lineage_best(run_dir, ms=None):
    """{task: best correct speedup} and evaluation count from the HDF5 files;
    ms, a dict, gets the best's candidate time (ms) per task."""
    best, evals = {}, {}
    ms = {} if ms is None else ms
    for name in sorted(os.listdir(os.path.join(run_dir, "lineage"))):
        with h5py.File(os.path.join(run_dir, "lineage", name), "r") as f:
            enum = h5py.check_enum_dtype(f["candidates"].dtype["status"])
            tasks = [t.decode() if isinstance(t, bytes) else t for t in f["tasks"][:]]
            for r in f["candidates"][:]:
                if r["id"] == 2**64 - 1 or r["origin_rank"] != r["rank"]:
                    continue
                t = tasks[r["task"]]
                if r["status"] not in (enum["duplicate"], enum["invalid"], enum["lost"]):
                    evals[t] = evals.get(t, 0) + 1
                if r["status"] == enum["correct"] and float(r["speedup"]) > best.get(t, 0.0):
                    best[t] = float(r["speedup"])
                    ms[t] = float(r["cand_median_ns"]) / 1e6
    return best, evals


def expected(campaign, d, seed, resamples):
    """fast_p, geomean (with intervals) and the paired comparison, by the
    documented method, from the lineage."""
    pairs = {}
    for cell in campaign["cells"]:
        run = os.path.join(d, cell["run_dir"])
        best = lineage_best(run)[0] if (cell["configuration"], cell["seed"]) in RAN else {}
        for t in TASKS:
            pairs[(cell["configuration"], t, cell["seed"])] = best.get(t, 0.0)
    rng = np.random.default_rng(seed)
    out = {}
    for conf in CONFIGS:
        keys = sorted((s, t) for (c, t, s) in pairs if c == conf["name"])
        s = np.array([pairs[(conf["name"], t, sd)] for sd, t in keys])
        ok = s > 0
        idx = rng.integers(0, len(s), size=(resamples, len(s)))
        fp = {}
        for p in THRESHOLDS:
            hit = ok & (s > p)
            fp["%g" % p] = (hit.mean(), np.percentile(hit[idx].mean(axis=1), [2.5, 97.5]))
        gm = math.exp(np.mean(np.log(s[ok])))
        boots = []
        for row in idx:
            sel = s[row][ok[row]]
            if sel.size:
                boots.append(math.exp(np.mean(np.log(sel))))
        out[conf["name"]] = {"fast_p": fp, "geomean": (gm, np.percentile(boots, [2.5, 97.5])),
                             "pairs": len(s), "correct": int(ok.sum())}
    a, b = CONFIGS[0]["name"], CONFIGS[1]["name"]
    both = sorted((t, sd) for (c, t, sd) in pairs if c == a and pairs[(a, t, sd)] > 0 and pairs.get((b, t, sd), 0) > 0)
    diff = np.array([math.log(pairs[(a, t, sd)]) - math.log(pairs[(b, t, sd)]) for t, sd in both])
    idx = rng.integers(0, len(both), size=(resamples, len(both)))
    out["comparison"] = (diff.mean(), np.percentile(diff[idx].mean(axis=1), [2.5, 97.5]), len(both))
    return out


def close(x, y, tol=1e-9):
    return x is not None and abs(x - y) <= tol * max(1.0, abs(y))


def report(d, out, seed, resamples=500):
    p = subprocess.run([sys.executable, SCRIPT, d, "--out", out, "--seed", str(seed), "--resamples", str(resamples)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("report failed (%d):\n%s%s" % (p.returncode, p.stdout, p.stderr))
    with open(os.path.join(out, "report.json"), "rb") as f:
        return f.read()


class Images(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.pngs = []

    def handle_starttag(self, tag, attrs):
        src = dict(attrs).get("src", "")
        if tag == "img" and src.startswith("data:image/png;base64,"):
            self.pngs.append(base64.b64decode(src.split(",", 1)[1]))


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    d = os.path.join(WORK, "campaign")
    campaign = make_campaign(d)

    raw = report(d, os.path.join(WORK, "r1"), 1)
    rep = json.loads(raw)
    exp = expected(campaign, d, 1, 500)
    for conf in CONFIGS:
        n = conf["name"]
        got, want = rep["configurations"][n], exp[n]
        check(got["pairs"] == want["pairs"] == len(SEEDS) * len(TASKS), "%s: pairs %s" % (n, got["pairs"]))
        check(got["correct_pairs"] == want["correct"], "%s: correct pairs %s vs %s" % (n, got["correct_pairs"],
                                                                                        want["correct"]))
        for p, (value, ci) in want["fast_p"].items():
            g = got["fast_p"][p]
            check(close(g["value"], value), "%s fast_%s: %s vs %s" % (n, p, g["value"], value))
            check(close(g["ci95"][0], ci[0]) and close(g["ci95"][1], ci[1]),
                  "%s fast_%s interval: %s vs %s" % (n, p, g["ci95"], list(ci)))
        gm, ci = want["geomean"]
        g = got["geomean_speedup"]
        check(close(g["value"], gm), "%s geomean: %s vs %s" % (n, g["value"], gm))
        check(close(g["ci95"][0], ci[0]) and close(g["ci95"][1], ci[1]),
              "%s geomean interval: %s vs %s" % (n, g["ci95"], list(ci)))
        # The failed / pending cell of each configuration is a third of its
        # pairs, all unsolved: fast_0 can be at most 2/3.
        check(got["fast_p"]["0"]["value"] <= 2 / 3 + 1e-12, "%s: an unrun cell counted as solved" % n)
    cmp_ = rep["comparisons"][0]
    mean, ci, m = exp["comparison"]
    check(cmp_["pairs"] == m and close(cmp_["mean_log_diff"], mean), "comparison: %s vs %s" % (cmp_, mean))
    check(close(cmp_["ci95"][0], ci[0]) and close(cmp_["ci95"][1], ci[1]), "comparison interval")
    check(close(cmp_["ratio"], math.exp(mean)), "comparison ratio")
    check(sum(cmp_["pair_wins"].values()) == m, "pair wins %s of %d" % (cmp_["pair_wins"], m))

    # The failed cell: unsolved rows, counted, listed with its error.
    failed_rows = [r for r in rep["results"] if r["cell"] == FAILED]
    check(len(failed_rows) == len(TASKS) and all(not r["correct"] and r["best_speedup"] == 0 and
                                                 r["cell_state"] == "failed" for r in failed_rows),
          "failed cell's rows: %s" % failed_rows)
    check(rep["cells"]["failed"] == 1 and rep["cells"]["pending"] == 1 and rep["cells"]["done"] == 4,
          "cell counts %s" % rep["cells"])
    md = open(os.path.join(WORK, "r1", "report.md"), encoding="utf-8").read()
    check(FAILED in md and FAILED_ERROR in md, "report.md lacks the failed cell and its error")
    md_lines = md.split("\n")
    at = next((i for i, line in enumerate(md_lines) if "<img src=x" in line), None)
    fences = [line for line in md_lines[:at or 0] if re.fullmatch(r"`{4,}", line)]
    check(at is not None and len(fences) % 2 == 1,
          "report.md's failed-cell error is not inside a code block (fence of 4+ backticks): %s" % md_lines[:at or 0][-4:])
    check(PENDING in md and "failed 1" in md, "report.md lacks the pending cell or the failed count")
    check("2.5" in md and "500 resamples" in md and "default_rng(1)" in md, "report.md does not state the method")

    # Evaluations per row from the lineage.
    for r in rep["results"]:
        if (r["configuration"], r["seed"]) in RAN:
            evals = lineage_best(os.path.join(d, "cells", r["cell"]))[1]
            check(r["evaluations"] == evals.get(r["task"], 0), "evaluations of %s/%s" % (r["cell"], r["task"]))

    # Same seed, same bytes; another seed, other intervals, same estimates.
    check(report(d, os.path.join(WORK, "r1b"), 1) == raw, "same seed gave a different report.json")
    other = json.loads(report(d, os.path.join(WORK, "r2"), 7))
    differ = 0
    for conf in CONFIGS:
        a, b = rep["configurations"][conf["name"]], other["configurations"][conf["name"]]
        for p in a["fast_p"]:
            check(a["fast_p"][p]["value"] == b["fast_p"][p]["value"], "seed changed fast_%s" % p)
            differ += a["fast_p"][p]["ci95"] != b["fast_p"][p]["ci95"]
        check(a["geomean_speedup"]["value"] == b["geomean_speedup"]["value"], "seed changed the geomean")
        differ += a["geomean_speedup"]["ci95"] != b["geomean_speedup"]["ci95"]
    check(differ > 0, "another seed gave the same intervals")
    check(other["method"]["seed"] == 7, "method does not record the seed")

    # report.html: parses, every plot embedded as a PNG.
    pngs = [f for f in os.listdir(os.path.join(WORK, "r1", "plots")) if f.endswith(".png")]
    svgs = [f for f in os.listdir(os.path.join(WORK, "r1", "plots")) if f.endswith(".svg")]
    check(len(pngs) == 1 + len(TASKS) and len(svgs) == len(pngs), "plots: %s %s" % (pngs, svgs))
    parser = Images()
    parser.feed(open(os.path.join(WORK, "r1", "report.html"), encoding="utf-8").read())
    parser.close()
    check(len(parser.pngs) == len(pngs) and all(p.startswith(b"\x89PNG\r\n\x1a\n") for p in parser.pngs),
          "report.html embeds %d PNGs of %d" % (len(parser.pngs), len(pngs)))

    # report.csv: one row per configuration x seed x task.
    with open(os.path.join(WORK, "r1", "report.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    check(len(rows) == len(CONFIGS) * len(SEEDS) * len(TASKS), "report.csv has %d rows" % len(rows))
    check(sorted((r["configuration"], r["seed"], r["task"]) for r in rows) ==
          sorted((c["name"], str(s), t) for c in CONFIGS for s in SEEDS for t in TASKS), "report.csv's keys")
    for r in rows:
        if r["configuration"] + ".s" + r["seed"] == FAILED:
            check(r["correct"] == "0" and float(r["best_speedup"]) == 0 and r["cell_state"] == "failed",
                  "report.csv's failed row %s" % r)

    # Library baselines where a run measured them (baselines.json; CUDA
    # runs): the fastest correct one over the best's time, only there.
    bd = os.path.join(WORK, "baselines")
    shutil.copytree(d, bd)
    ms = {}
    lineage_best(os.path.join(bd, "cells", "pop4.s1"), ms)
    with open(os.path.join(bd, "cells", "pop4.s1", "baselines.json"), "w") as f:
        json.dump({"format": "kevo-baselines/1", "measured": True, "tasks": {"softmax": {
            "eager": {"median_ms": 3 * ms["softmax"], "check": "ok"},
            "compile": {"median_ms": 2 * ms["softmax"], "check": "ok"},
            "sources": {"fastlib": {"median_ms": ms["softmax"] / 2, "error": "wrong answer"}}}}}, f)
    # And a cell that failed after it wrote its lineage: unsolved, its
    # evaluations still in the cost.
    with open(os.path.join(bd, "status", "pop2.s2.json"), "w") as f:
        json.dump({"state": "failed", "exit_code": 3, "error": "stopped: wall budget", "attempts": 1,
                   "started": 1.0e9, "finished": 1.0e9 + 9}, f)
    brep = json.loads(report(bd, os.path.join(WORK, "rb"), 1))
    late = [r for r in brep["results"] if r["cell"] == "pop2.s2"]
    check(all(not r["correct"] and r["best_speedup"] == 0 and r["cell_state"] == "failed" for r in late),
          "a failed cell with a lineage counted as solved: %s" % late)
    spent = sum(sum(lineage_best(os.path.join(bd, "cells", c))[1].values()) for c in ("pop2.s1", "pop2.s2"))
    check(brep["configurations"]["pop2"]["cost"]["evaluations"] == spent and brep["cells"]["failed"] == 2,
          "cost of a failed cell: %s vs %d" % (brep["configurations"]["pop2"]["cost"], spent))
    with_b = [r for r in brep["results"] if "baseline" in r]
    check(len(with_b) == 1 and with_b[0]["cell"] == "pop4.s1" and with_b[0]["task"] == "softmax" and
          with_b[0]["baseline"]["name"] == "torch.compile" and close(with_b[0]["baseline"]["speedup"], 2.0),
          "baseline speedups: %s" % with_b)
    check(close(brep["configurations"]["pop4"]["geomean_speedup_over_baseline"]["value"], 2.0) and
          "geomean_speedup_over_baseline" not in brep["configurations"]["pop2"], "geomean over baselines")
    check("fastest library baseline" in open(os.path.join(WORK, "rb", "report.md")).read(),
          "report.md has no baseline table")
    check("geomean_speedup_over_baseline" not in rep["configurations"]["pop4"], "a baseline without baselines.json")
    # check_over_baseline.py (what run_gpu_campaign.sh runs on measured
    # baselines) agrees with the report, and catches a report whose
    # over-baseline figure is off.
    checker = os.path.join(SRC, "tests", "campaign", "check_over_baseline.py")
    p = subprocess.run([sys.executable, checker, bd, os.path.join(WORK, "rb")], capture_output=True, text=True)
    check(p.returncode == 0 and "torch.compile" in p.stdout, "check_over_baseline.py: %s%s" % (p.stdout, p.stderr))
    tampered = os.path.join(WORK, "rb-tampered")
    shutil.copytree(os.path.join(WORK, "rb"), tampered)
    with open(os.path.join(tampered, "report.json")) as f:
        t = json.load(f)
    for r in t["results"]:
        if "baseline" in r:
            r["baseline"]["speedup"] *= 1.01
    with open(os.path.join(tampered, "report.json"), "w") as f:
        json.dump(t, f)
    p = subprocess.run([sys.executable, checker, bd, tampered], capture_output=True, text=True)
    check(p.returncode == 1 and "DIFFERS: pop4.s1 softmax" in p.stdout,
          "check_over_baseline.py on a tampered report: %d %s%s" % (p.returncode, p.stdout, p.stderr))

    # Not a campaign directory: exit 2, the file named.
    empty = os.path.join(WORK, "empty")
    os.makedirs(empty)
    p = subprocess.run([sys.executable, SCRIPT, empty], capture_output=True, text=True)
    check(p.returncode == 2 and os.path.join(empty, "campaign.json") in p.stderr,
          "no campaign.json: exit %d, %r" % (p.returncode, p.stderr))
    with open(os.path.join(empty, "campaign.json"), "w") as f:
        json.dump({"name": "x", "configurations": [{"name": "a"}], "seeds": [1],
                   "cells": [{"id": "b.s1", "configuration": "b", "seed": 1, "run_dir": "cells/b.s1"}]}, f)
    p = subprocess.run([sys.executable, SCRIPT, empty], capture_output=True, text=True)
    check(p.returncode == 2 and "campaign.json" in p.stderr and "configuration" in p.stderr,
          "malformed campaign.json: exit %d, %r" % (p.returncode, p.stderr))

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("campaign report: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
