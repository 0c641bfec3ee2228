#!/usr/bin/env python3
"""`kevo campaign plan|run|status|report` end to end on the CPU backend
(docs/campaigns.md).

usage: campaign_run.py KEVO SOURCE_DIR WORK_DIR [PYTHON]

1. bad campaign files (an unknown key, an override that names no config
   key, a task suite that does not exist, budgets of zero, no seeds, a
   configuration name with a space): exit 2, the file and the key named,
   nothing created;
2. plan: 2 configurations x 2 seeds on 2 bundled CPU tasks, its cells and
   totals (text and JSON);
3. run: every cell done (exit 0), each an ordinary run directory whose
   config has the cell's seed, tasks and budget; status says so; a second
   run starts nothing (the logs and attempts unchanged); `kevo campaign
   report` (with PYTHON, where it has matplotlib) reads the runner's
   directory: one CSV row per configuration x seed x task; a folder that
   is no campaign is refused (exit 2);
4. interrupted: a campaign with larger budgets stopped by SIGINT while its
   first cells run: exit 4, the running cells cut and the others not
   started; the next run resumes the cut ones with `kevo resume` (never a
   fresh start) and finishes every cell;
5. a cell whose run fails (a task whose reference does not compile) is
   `failed` with the run's error, the campaign exits 1 and the other cells
   are done; the same directory refuses another campaign file.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

kevo, src, work = sys.argv[1:4]
python = sys.argv[4] if len(sys.argv) > 4 else "python3"
src, work = os.path.abspath(src), os.path.abspath(work)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
TASKS = [os.path.join(src, "configs/tasks/cpu/reduce_sum"), os.path.join(src, "configs/tasks/cpu/softmax")]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def write(name, doc):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def kevo_cmd(*args, timeout=600):
    t0 = time.time()
    p = subprocess.run([kevo] + list(args), capture_output=True, text=True, timeout=timeout)
    print("$ kevo %s -> exit %d in %.1f s" % (" ".join(args[:3]), p.returncode, time.time() - t0))
    return p


def campaign(name, evaluations, wall, **extra):
    doc = {"name": name, "base_config": os.path.join(src, "configs/quickstart.json"), "tasks": TASKS,
           "configurations": {"full": {"description": "the base config"},
                              "no_crossover": {"description": "parameter crossover off",
                                               "set": {"operators.1.weight": 0}}},
           "seeds": [1, 2], "budget": {"evaluations_per_task": evaluations, "wall_seconds": wall},
           "local": {"jobs": 2}}
    doc.update(extra)
    return doc


def status(d):
    p = kevo_cmd("campaign", "status", d, "--json")
    if p.returncode != 0:
        fail("status: exit %d: %s" % (p.returncode, p.stderr))
    return {c["id"]: c for c in json.loads(p.stdout)["cells"]}


# 1. Bad campaign files.
good = campaign("tiny", 6, 60)
bad = [
    ("unknown key", dict(good, locale={"jobs": 1}), "/locale", "unknown key"),
    ("override naming no key", dict(good, configurations={"x": {"set": {"island.populatoin": 4}}}),
     "/configurations/x", "island.populatoin"),
    ("missing suite", dict(good, tasks=[os.path.join(work, "no-such-suite")]), "/tasks", "no-such-suite"),
    ("zero evaluations", dict(good, budget={"evaluations_per_task": 0}), "/budget/evaluations_per_task", ">= 1"),
    ("zero wall time", dict(good, budget={"wall_seconds": 0}), "/budget/wall_seconds", "above 0"),
    ("no seeds", dict(good, seeds=[]), "/seeds", "at least one"),
    ("bad name", dict(good, configurations={"no crossover": {}}), "/configurations/no crossover", "letters"),
    ("llm budget without llm", dict(good, budget={"llm_usd": 1.0}), "/budget/llm_usd", "llm section"),
    # A partition goes into the written batch script's #SBATCH line: a
    # newline there added lines of shell to it (red team 22).
    ("partition with a newline", dict(good, slurm={"partition": "gpu\necho injected"}), "/slurm/partition",
     "Slurm partition"),
]
for what, doc, key, text in bad:
    path = write("bad.json", doc)
    out = os.path.join(work, "bad-out")
    for cmd in (["campaign", "plan", path], ["campaign", "run", path, "--out", out]):
        p = kevo_cmd(*cmd)
        if p.returncode != 2:
            fail("%s: %s exit %d, wanted 2\n%s" % (what, cmd[1], p.returncode, p.stdout + p.stderr))
        if path not in p.stderr or key not in p.stderr or text not in p.stderr:
            fail("%s: the message does not name %s, %s and '%s': %s" % (what, path, key, text, p.stderr))
        if os.path.exists(out):
            fail("%s: a campaign directory was left behind" % what)
print("bad campaign files refused: %d" % len(bad))

# 2. Plan.
tiny = write("tiny.json", good)
p = kevo_cmd("campaign", "plan", tiny)
if p.returncode != 0:
    fail("plan: exit %d: %s" % (p.returncode, p.stderr))
for cell in ("full.s1", "full.s2", "no_crossover.s1", "no_crossover.s2"):
    if cell not in p.stdout:
        fail("plan does not list %s:\n%s" % (cell, p.stdout))
if "total: 48 evaluations" not in p.stdout or "wall time at most 120 s" not in p.stdout:
    fail("plan totals: 4 cells x 2 tasks x 6 evaluations, 4 x 60 s / 2 jobs:\n" + p.stdout)
plan = json.loads(kevo_cmd("campaign", "plan", tiny, "--json").stdout)
if plan["total"]["cells"] != 4 or [c["evaluations"] for c in plan["plan"]] != [12] * 4:
    fail("plan --json: %s" % plan["total"])

# 3. Run, then run again.
d = os.path.join(work, "tiny")
p = kevo_cmd("campaign", "run", tiny, "--out", d)
if p.returncode != 0:
    fail("run: exit %d\n%s" % (p.returncode, p.stdout + p.stderr))
st = status(d)
if sorted(st) != ["full.s1", "full.s2", "no_crossover.s1", "no_crossover.s2"] or any(
        c["state"] != "done" for c in st.values()):
    fail("status after the run: %s" % st)
camp = json.load(open(os.path.join(d, "campaign.json")))
for cell in camp["cells"]:
    run_dir = os.path.join(d, cell["run_dir"])
    cfg = json.load(open(os.path.join(run_dir, "config.json")))
    report = json.load(open(os.path.join(run_dir, "report.json")))
    if cfg["seed"] != cell["seed"] or cfg["budget"]["evaluations_per_task"] != 6:
        fail("%s: its run's config has seed %s, budget %s" % (cell["id"], cfg["seed"], cfg["budget"]))
    if sorted(t["task"] for t in report["tasks"]) != ["reduce_sum", "softmax"]:
        fail("%s: tasks %s" % (cell["id"], [t["task"] for t in report["tasks"]]))
    weights = [o["weight"] for o in cfg["operators"]]
    if cell["configuration"] == "no_crossover" and weights[1] != 0:
        fail("%s: the override did not reach its run: %s" % (cell["id"], weights))
logs = {f: open(os.path.join(d, "logs", f)).read() for f in os.listdir(os.path.join(d, "logs"))}
p = kevo_cmd("campaign", "run", tiny, "--out", d)
if p.returncode != 0 or "4 done before, 0 to run" not in p.stdout:
    fail("second run: exit %d\n%s" % (p.returncode, p.stdout + p.stderr))
if {f: open(os.path.join(d, "logs", f)).read() for f in os.listdir(os.path.join(d, "logs"))} != logs:
    fail("the second run wrote to a finished cell's log")
if any(c["attempts"] != 1 for c in status(d).values()):
    fail("a finished cell was run again")
print("run: 4 cells done; a second run started none")
have_mpl = subprocess.run([python, "-c", "import matplotlib, h5py, numpy"], capture_output=True).returncode == 0
if have_mpl:
    p = kevo_cmd("campaign", "report", d, "--python", python)
    if p.returncode != 0:
        fail("report: exit %d\n%s" % (p.returncode, p.stdout + p.stderr))
    rows = open(os.path.join(d, "report", "report.csv")).read().strip().splitlines()
    if len(rows) != 1 + 2 * 2 * 2:
        fail("report.csv: %d rows, wanted a header and 8" % len(rows))
    text = json.dumps(json.load(open(os.path.join(d, "report", "report.json"))))
    if "no_crossover" not in text or "full" not in text:
        fail("report.json lacks a configuration")
    print("report of the runner's directory: %d rows" % (len(rows) - 1))
else:
    print("no matplotlib for %s: the report is left out here" % python)
p = kevo_cmd("campaign", "report", os.path.join(work, "nowhere"), "--python", python)
if p.returncode != 2 or "campaign.json" not in p.stderr:
    fail("report of a folder that is no campaign: exit %d %s" % (p.returncode, p.stderr))

# 4. Interrupted, then resumed.
big = write("big.json", campaign("big", 400, 20))
d2 = os.path.join(work, "big")
runner = subprocess.Popen([kevo, "campaign", "run", big, "--out", d2], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
deadline = time.time() + 60
while time.time() < deadline:
    runs = [c for c in ("full.s1", "full.s2")
            if os.path.exists(os.path.join(d2, "cells", c, "checkpoint"))]
    if len(runs) == 2:
        break
    time.sleep(0.5)
time.sleep(3)
runner.send_signal(signal.SIGINT)
out, _ = runner.communicate(timeout=120)
print(out.strip())
if runner.returncode != 4:
    fail("interrupted run: exit %d, wanted 4" % runner.returncode)
st = status(d2)
if [st[c]["state"] for c in ("full.s1", "full.s2", "no_crossover.s1", "no_crossover.s2")] != \
        ["cut", "cut", "pending", "pending"]:
    fail("after the interruption: %s" % {k: v["state"] for k, v in st.items()})
cut_evals = {c: st[c]["evaluations"] for c in ("full.s1", "full.s2")}
p = kevo_cmd("campaign", "run", big, "--out", d2, timeout=900)
if p.returncode != 0:
    fail("resumed run: exit %d\n%s" % (p.returncode, p.stdout + p.stderr))
for c in ("full.s1", "full.s2"):
    log = open(os.path.join(d2, "logs", c + ".log")).read()
    heads = [l for l in log.splitlines() if l.startswith("=== attempt")]
    if len(heads) != 2 or " resume " not in heads[1] or " run " in heads[1]:
        fail("%s was not resumed: %s" % (c, heads))
st = status(d2)
if any(v["state"] != "done" for v in st.values()):
    fail("after the resumed run: %s" % {k: v["state"] for k, v in st.items()})
for c, n in cut_evals.items():
    if st[c]["evaluations"] <= n:
        fail("%s: %d evaluations after resuming, %d when cut" % (c, st[c]["evaluations"], n))
print("interrupted and resumed: %s evaluations when cut, %s at the end" %
      (cut_evals, {c: st[c]["evaluations"] for c in cut_evals}))

# 5. A failing cell, and another campaign in the same directory.
broken = os.path.join(work, "broken_task")
shutil.copytree(TASKS[0], broken)
ref = os.path.join(broken, json.load(open(os.path.join(broken, "task.json")))["reference"])
with open(ref, "a") as f:
    f.write("\n#error this reference does not compile\n")
doc = campaign("mixed", 6, 60)
doc["configurations"]["broken"] = {"description": "a task whose reference fails", "set": {"tasks": [broken]}}
doc["seeds"] = [1]
mixed = write("mixed.json", doc)
d3 = os.path.join(work, "mixed")
p = kevo_cmd("campaign", "run", mixed, "--out", d3)
if p.returncode != 1:
    fail("a failing cell: exit %d, wanted 1\n%s" % (p.returncode, p.stdout + p.stderr))
st = status(d3)
if st["broken.s1"]["state"] != "failed" or "reference" not in st["broken.s1"]["error"]:
    fail("the failing cell: %s" % st["broken.s1"])
if st["full.s1"]["state"] != "done" or st["no_crossover.s1"]["state"] != "done":
    fail("the other cells: %s" % {k: v["state"] for k, v in st.items()})
text = kevo_cmd("campaign", "status", d3).stdout
if "failed" not in text or "broken.s1" not in text:
    fail("status text:\n" + text)
p = kevo_cmd("campaign", "run", tiny, "--out", d3)
if p.returncode != 2 or "another campaign" not in p.stderr:
    fail("another campaign in the same directory: exit %d %s" % (p.returncode, p.stderr))
print("a failing cell is failed with its error; the directory refuses another campaign")
print("campaign run ok")
