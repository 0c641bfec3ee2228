"""`kevo plot` (engine/python/kevo_plot.py, docs/plot.md) on a small run the
test makes with `kevo run` (2 CPU tasks, 10 evaluations each).

    plot_test.py KEVO SOURCE_DIR WORK_DIR PYTHON

Checks, against numbers computed here from the HDF5 lineage (not from the
script's output):
  * every plot of every task exists, PNGs are PNG files, SVGs parse as XML
    and carry the plot's title (run and task name);
  * best_lineage_<task>.json holds exactly the ancestry of the best correct
    candidate (walk of parent0/parent1 here), with its edges and operators;
  * summary.json's counts per operator and status, and the success rates;
  * index.md names every file written;
  * --task and --format select; a copy of the lineage edited so that one
    task has no correct candidate and the other's best is a crossover gets
    counts plots and a note for the first, a tree with both parents for the
    second;
  * bad input (no such folder, a folder without lineage, a file that is not
    HDF5, --task nosuch, --format pdf) exits 2 with a message naming it and
    no traceback;
  * `kevo plot --python PYTHON` runs the same script where kevo_plot.py is
    installed next to the kevo executable.
Exit 77 (skipped) where matplotlib is missing.
"""
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

try:
    import matplotlib  # noqa: F401  (the script draws with it)
except ImportError:
    print("SKIP: matplotlib is not installed (scripts/setup-debian.sh installs python3-matplotlib)")
    sys.exit(77)
import h5py
import numpy as np

KEVO, SRC, WORK, PYTHON = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3]), sys.argv[4]
SCRIPT = os.path.join(SRC, "engine", "python", "kevo_plot.py")
CONFIG = os.path.join(SRC, "configs", "quickstart.json")
TASKS = ["reduce_sum", "softmax"]
NO_ID = 2**64 - 1
NOT_JUDGED = {"duplicate", "invalid", "lost", "pending"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
KINDS = ("best", "lineage", "operators", "speedups")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)
    return cond


def plot(*args):
    p = subprocess.run([PYTHON, SCRIPT] + list(args), capture_output=True, text=True, timeout=240)
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------- the truth, from the HDF5

def read_rows(run_dir):
    """Rows of every rank file (each candidate once), as dicts."""
    rows = []
    for name in sorted(os.listdir(os.path.join(run_dir, "lineage"))):
        with h5py.File(os.path.join(run_dir, "lineage", name), "r") as f:
            names = {v: k for k, v in h5py.check_enum_dtype(f["candidates"].dtype["status"]).items()}
            tasks = [t.decode() if isinstance(t, bytes) else t for t in f["tasks"][:]]
            for r in f["candidates"][:]:
                if r["id"] == NO_ID or r["origin_rank"] != r["rank"]:
                    continue
                rows.append({"id": int(r["id"]), "task": tasks[r["task"]], "op": r["op"].decode().rstrip("\0"),
                             "status": names[r["status"]], "parent0": int(r["parent0"]),
                             "parent1": int(r["parent1"]), "speedup": float(r["speedup"])})
    return sorted(rows, key=lambda r: r["id"])


def truth(rows, task):
    mine = [r for r in rows if r["task"] == task]
    counts = {}
    for r in mine:
        counts.setdefault(r["op"], {}).setdefault(r["status"], 0)
        counts[r["op"]][r["status"]] += 1
    correct = [r for r in mine if r["status"] == "correct"]
    best = None
    if correct:
        top = max(r["speedup"] for r in correct)
        best = min(r["id"] for r in correct if r["speedup"] == top)
    by_id = {r["id"]: r for r in rows}
    ids, edges, todo = set(), set(), [best] if best is not None else []
    while todo:
        i = todo.pop()
        if i in ids:
            continue
        ids.add(i)
        for which in ("parent0", "parent1"):
            p = by_id[i][which]
            if p >= 0:
                edges.add((p, i, which, by_id[i]["op"]))
                todo.append(p)
    return {"counts": counts, "best": best, "ids": ids, "edges": edges, "rows": mine}


# ---------------------------------------------------------------- file checks

def check_png(path):
    if not check(os.path.isfile(path), "%s exists" % path):
        return
    with open(path, "rb") as f:
        data = f.read()
    check(len(data) > 100 and data.startswith(PNG_MAGIC) and data[12:16] == b"IHDR",
          "%s is a PNG file (%d bytes)" % (path, len(data)))


def svg_text(path):
    if not check(os.path.isfile(path), "%s exists" % path):
        return ""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        check(False, "%s parses as XML: %s" % (path, e))
        return ""
    check(root.tag.endswith("svg"), "%s: root element is <svg> (%s)" % (path, root.tag))
    return " ".join(t for t in root.itertext())


def check_plots(out, task, run_name, formats, has_correct):
    for kind in KINDS:
        present = has_correct or kind == "operators"
        for ext in ("png", "svg"):
            path = os.path.join(out, "%s_%s.%s" % (kind, task, ext))
            if not present or ext not in formats:
                check(not os.path.exists(path), "%s is not written" % path)
            elif ext == "png":
                check_png(path)
            else:
                text = svg_text(path)
                check("run %s" % run_name in text and "task %s" % task in text,
                      "%s has the title naming run %s and task %s" % (path, run_name, task))


def check_lineage(out, task, t):
    path = os.path.join(out, "best_lineage_%s.json" % task)
    if not check(os.path.isfile(path), "%s exists" % path):
        return
    with open(path) as f:
        lin = json.load(f)
    check(lin["best"] == t["best"], "%s: best %s, expected %s" % (path, lin["best"], t["best"]))
    ids = {n["id"] for n in lin["nodes"]}
    check(ids == t["ids"], "%s: node ids %s, the ancestry is %s" % (path, sorted(ids), sorted(t["ids"])))
    check(len(lin["nodes"]) == len(ids), "%s: no node twice" % path)
    edges = {(e["parent"], e["child"], e["which"], e["op"]) for e in lin["edges"]}
    check(edges == t["edges"], "%s: edges %s, expected %s" % (path, sorted(edges), sorted(t["edges"])))
    roots = [n for n in lin["nodes"] if n["depth"] == 0]
    check(roots and all(n["parent0"] < 0 and n["parent1"] < 0 for n in roots),
          "%s: depth 0 holds the seeds only" % path)


def check_summary(out, tasks, rows):
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    check(sorted(s["tasks"]) == sorted(tasks), "summary.json: tasks %s, expected %s" % (sorted(s["tasks"]), tasks))
    for task in tasks:
        t = truth(rows, task)
        got = s["tasks"].get(task, {})
        ops = got.get("operators", {})
        check({o: v["counts"] for o, v in ops.items()} == t["counts"],
              "summary.json %s: counts %s, expected %s" % (task, {o: v["counts"] for o, v in ops.items()}, t["counts"]))
        for o, c in t["counts"].items():
            judged = sum(n for st, n in c.items() if st not in NOT_JUDGED)
            rate = c.get("correct", 0) / judged if judged else None
            g = ops.get(o, {}).get("success_rate", "absent")
            check(g == rate if rate is None or g is None or g == "absent" else abs(g - rate) < 1e-12,
                  "summary.json %s/%s: success rate %s, expected %s" % (task, o, g, rate))
        check(got.get("candidates") == len(t["rows"]), "summary.json %s: candidates" % task)
        check((got.get("best") or {}).get("id") == t["best"],
              "summary.json %s: best %s, expected %s" % (task, got.get("best"), t["best"]))
        if t["best"] is None:
            check(bool(got.get("note")), "summary.json %s: a note says there is no correct candidate" % task)
    return s


def check_index(out, summary):
    with open(os.path.join(out, "index.md")) as f:
        index = f.read()
    written = sorted(os.listdir(out))
    check(sorted(summary["files"]) == written, "summary.json files %s are the folder's %s" % (summary["files"], written))
    for name in written:
        check("(%s)" % name in index, "index.md links %s" % name)


def check_bad(args, needle, what):
    rc, out, err = plot(*args)
    check(rc == 2, "%s: exit 2, got %d (%s)" % (what, rc, err.strip()[-300:]))
    check("Traceback" not in err + out, "%s: no traceback" % what)
    check(needle in err, "%s: the message names %r: %r" % (what, needle, err.strip()[-300:]))


# ---------------------------------------------------------------- the test

def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    run_dir = os.path.join(WORK, "run")
    cmd = [KEVO, "run", CONFIG, "--out", run_dir, "--set", "tasks=" + json.dumps(["tasks/cpu/" + t for t in TASKS]),
           "--set", "budget.evaluations_per_task=10", "--set", "progress.mode=off"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        sys.exit("kevo run failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-3000:]))
    rows = read_rows(run_dir)

    # 1. the whole run, default folder and formats
    rc, out, err = plot(run_dir)
    check(rc == 0, "kevo_plot.py RUN_DIR: exit 0, got %d: %s" % (rc, err[-2000:]))
    out_dir = os.path.join(run_dir, "plots")
    for task in TASKS:
        t = truth(rows, task)
        check_plots(out_dir, task, "run", ("png", "svg"), t["best"] is not None)
        if t["best"] is not None:
            check_lineage(out_dir, task, t)
    check_index(out_dir, check_summary(out_dir, TASKS, rows))

    # 2. one task, SVG only, another folder
    only = os.path.join(WORK, "only")
    rc, out, err = plot(run_dir, "--task", "softmax", "--format", "svg", "--out", only)
    check(rc == 0, "--task softmax --format svg: exit 0, got %d: %s" % (rc, err[-2000:]))
    check_plots(only, "softmax", "run", ("svg",), truth(rows, "softmax")["best"] is not None)
    check(not any(n.endswith(".png") or "reduce_sum" in n for n in os.listdir(only)),
          "--task softmax --format svg writes no PNG and nothing of reduce_sum: %s" % os.listdir(only))
    check_index(only, check_summary(only, ["softmax"], rows))

    # 3. an edited copy: softmax never correct, reduce_sum's best a crossover
    edited = os.path.join(WORK, "edited")
    os.makedirs(os.path.join(edited, "lineage"))
    src_file = sorted(os.listdir(os.path.join(run_dir, "lineage")))[0]
    dst = os.path.join(edited, "lineage", src_file)
    shutil.copy(os.path.join(run_dir, "lineage", src_file), dst)
    with h5py.File(dst, "r+") as f:
        ds = f["candidates"]
        enum = h5py.check_enum_dtype(ds.dtype["status"])
        tasks = [t.decode() if isinstance(t, bytes) else t for t in f["tasks"][:]]
        c = ds[:]
        valid = c["id"] != NO_ID
        soft = valid & (c["task"] == tasks.index("softmax"))
        c["status"][soft & (c["status"] == enum["correct"])] = enum["wrong_answer"]
        # statuses a small run may not have, which count but are not judged
        kids = np.flatnonzero(soft & (c["parent0"] >= 0))
        for j, st in zip(kids, ("invalid", "duplicate", "lost", "compile_error")):
            c["status"][j] = enum[st]
        red = np.flatnonzero(valid & (c["task"] == tasks.index("reduce_sum")) & (c["parent0"] >= 0))
        k = red[-1]   # the last child of reduce_sum, made a correct crossover of two earlier rows
        others = [int(c["id"][j]) for j in red[:-1] if int(c["id"][j]) != int(c["parent0"][k])]
        c["parent1"][k] = others[0] if others else -1
        c["status"][k] = enum["correct"]
        c["speedup"][k] = 1000.0
        ds[...] = c
    erows = read_rows(edited)
    tr = truth(erows, "reduce_sum")
    check(tr["best"] == int(c["id"][k]) and any(e[2] == "parent1" for e in tr["edges"]),
          "the edited lineage has a crossover as reduce_sum's best (test setup)")
    rc, out, err = plot(edited)
    check(rc == 0, "edited run: exit 0, got %d: %s" % (rc, err[-2000:]))
    eout = os.path.join(edited, "plots")
    ts = truth(erows, "softmax")
    check(sum(1 for r in ts["rows"] if r["status"] in NOT_JUDGED) >= 3,
          "the edited lineage has unjudged softmax rows (test setup)")
    check_plots(eout, "softmax", "edited", ("png", "svg"), False)
    check_plots(eout, "reduce_sum", "edited", ("png", "svg"), True)
    check_lineage(eout, "reduce_sum", tr)
    check_index(eout, check_summary(eout, TASKS, erows))
    with open(os.path.join(eout, "index.md")) as f:
        check("no correct candidate" in f.read(), "index.md notes that softmax has no correct candidate")

    # 4. bad input
    empty = os.path.join(WORK, "empty")
    os.makedirs(empty)
    junk = os.path.join(WORK, "junk")
    os.makedirs(os.path.join(junk, "lineage"))
    with open(os.path.join(junk, "lineage", "rank-0000.h5"), "w") as f:
        f.write("not hdf5\n")
    check_bad([os.path.join(WORK, "nosuch")], os.path.join(WORK, "nosuch"), "no such folder")
    check_bad([empty], empty, "a folder without lineage")
    check_bad([junk], os.path.join(junk, "lineage", "rank-0000.h5"), "a rank file that is not HDF5")
    check_bad([run_dir, "--task", "nosuch"], "reduce_sum, softmax", "--task nosuch (names the run's tasks)")
    check_bad([run_dir, "--format", "pdf"], "pdf", "--format pdf")
    check(not os.path.exists(os.path.join(empty, "plots")), "a refused run writes no plots folder")

    # 5. through kevo (the build installs the script next to it)
    check(os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(KEVO)), "kevo_plot.py")),
          "kevo_plot.py is next to the kevo executable")
    via = os.path.join(WORK, "via-kevo")
    p = subprocess.run([KEVO, "plot", "--python", PYTHON, run_dir, "--out", via, "--format", "png"],
                       capture_output=True, text=True, timeout=240)
    check(p.returncode == 0, "kevo plot: exit 0, got %d: %s" % (p.returncode, p.stderr[-2000:]))
    check(os.path.isfile(os.path.join(via, "summary.json")), "kevo plot writes summary.json")
    p = subprocess.run([KEVO, "plot", "--python", PYTHON, empty], capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "Traceback" not in p.stderr, "kevo plot on a folder without lineage: exit 2")

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("kevo plot: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
