#!/usr/bin/env python3
"""Does the LLM path starve the GPU? (issue 17; docs/benchmarks.md#llm-on-cuda)

  llm_cuda_rate.py KEVO SOURCE_DIR WORK_DIR [SECONDS] [TASKS] [--no-profile-run]

Three runs of configs/llm-cuda.json, one after the other on this machine, each
for SECONDS (90) of wall time over TASKS (comma-separated, default the three
tasks of tests/llm/e2e_llm_cuda.py), with an evaluation budget too large to
end them first (library baselines off: they are measured before the search):

  llm    every operator of the config (five LLM operators and parameter
         mutation), the LLM answered at once by the fake server
         (tests/llm/fake_llm_server.py, its CUDA rotation)
  param  parameter mutation alone (the same config, operators replaced)
  noprof (with --no-profile-run left out) the llm run with the analyst's
         profiles off (backend.cuda.profile.on_request false): what the
         profiles cost the GPU

For each: candidates judged on the GPU per minute (a verdict from the
backend past compilation: not invalid, duplicate, lost or a compile error),
split into LLM-made and parameter-made for the first run; the GPU's duty
cycle (the sum of the candidates' `slot_seconds`, the exclusive timing slot,
over the wall time from the first submission to the last finish); and the
ratio of the two runs' rates. The issue's target: the LLM run's rate at
least 80% of the parameter run's. Where the slot went: the mean
`slot_seconds` of LLM-made and parameter-made candidates, and of the
candidates that carry an ncu profile against the others.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "llm"))
import fake_server  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
kevo, src, work = args[0:3]
seconds = float(args[3]) if len(args) > 3 else 90.0
tasks = (args[4] if len(args) > 4 else "axpy,reduce_sum,softmax").split(",")
src, work = os.path.abspath(src), os.path.abspath(work)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

# Statuses that never reached the GPU.
NOT_ON_GPU = ("pending", "compile_error", "duplicate", "invalid", "lost")


def status_names(f):
    return {v: k for k, v in h5py.check_enum_dtype(f["candidates"].dtype["status"]).items()}


def measure(run_dir):
    judged, slot, t0, t1, statuses = 0, 0.0, None, None, {}
    # Slot seconds of the candidates judged on the GPU, by who made them
    # and by whether they carry an ncu profile.
    slots = {"llm": [], "param": [], "profiled": [], "unprofiled": []}
    for path in sorted(glob.glob(os.path.join(run_dir, "lineage", "rank-*.h5"))):
        with h5py.File(path, "r") as f:
            names = status_names(f)
            rows = f["candidates"][:]
            rows = rows[rows["id"] != 2**64 - 1]
            for r in rows:
                st = names[int(r["status"])]
                statuses[st] = statuses.get(st, 0) + 1
            on_gpu = rows[~np.isin(rows["status"].astype(int), [k for k, v in names.items() if v in NOT_ON_GPU])]
            ops = [r["op"].decode().rstrip("\0") for r in on_gpu]
            judged += len(on_gpu)
            slot += float(on_gpu["slot_seconds"].sum())
            for r, o in zip(on_gpu, ops):
                sec = float(r["slot_seconds"])
                if o.startswith("llm_"):
                    slots["llm"].append(sec)
                elif o == "param_mutation":
                    slots["param"].append(sec)
                slots["profiled" if int(r["profile"]) >= 0 else "unprofiled"].append(sec)
            timed = on_gpu[(on_gpu["t_submitted"] > 0) & (on_gpu["t_finished"] > 0)]
            if len(timed):
                a, b = float(timed["t_submitted"].min()), float(timed["t_finished"].max())
                t0 = a if t0 is None else min(t0, a)
                t1 = b if t1 is None else max(t1, b)
    wall = (t1 - t0) if t0 is not None else 0.0
    return {"judged": judged, "llm": len(slots["llm"]), "param": len(slots["param"]), "wall": wall, "slot": slot,
            "per_min": 60.0 * judged / wall if wall > 0 else 0.0, "duty": slot / wall if wall > 0 else 0.0,
            "statuses": statuses, "slots": slots}


def slot_summary(secs):
    """Mean slot seconds and count, as the report prints them."""
    return "%.3f s (%d)" % (float(np.mean(secs)) if secs else 0.0, len(secs))


server, url = fake_server.start(src, work)
try:
    common = ["--set", "tasks=" + json.dumps(["tasks/cuda/" + t for t in tasks]),
              "--set", "budget.evaluations_per_task=100000", "--set", "budget.wall_seconds=%g" % seconds,
              "--set", "llm.models.0.base_url=" + url, "--set", "progress.mode=off", "--set", "seed=11",
              "--set", "backend.cuda.baselines.enabled=false"]
    results = {}
    runs = [("llm", []), ("param", ["--set", 'operators=[{"type": "param_mutation", "weight": 1.0, "rate": 0.4}]'])]
    if "--no-profile-run" not in sys.argv:
        runs.append(("noprof", ["--set", "backend.cuda.profile.on_request=false"]))
    for name, extra in runs:
        out = os.path.join(work, name)
        t = time.time()
        p = subprocess.run([kevo, "run", os.path.join(src, "configs/llm-cuda.json"), "--out", out] + common + extra,
                           capture_output=True, text=True, timeout=seconds + 300)
        if p.returncode != 0:
            sys.exit("%s run: exit %d\n%s" % (name, p.returncode, p.stdout[-2000:] + p.stderr[-2000:]))
        results[name] = m = measure(out)
        print("%-5s %5.1f s: %4d judged on the GPU (%d LLM-made, %d parameter-made), %.1f per minute, "
              "duty cycle %.1f%% (%.1f s of slot); statuses %s" %
              (name, m["wall"], m["judged"], m["llm"], m["param"], m["per_min"], 100 * m["duty"], m["slot"],
               json.dumps(m["statuses"], sort_keys=True)), flush=True)
        sl = m["slots"]
        print("      slot per candidate: LLM-made %s, parameter-made %s; with an ncu profile %s (%.1f s in all), "
              "without %s" % (slot_summary(sl["llm"]), slot_summary(sl["param"]), slot_summary(sl["profiled"]),
                              sum(sl["profiled"]), slot_summary(sl["unprofiled"])), flush=True)
finally:
    server.kill()
    server.wait()
a, b = results["llm"], results["param"]
print("LLM run / parameter run, candidates judged on the GPU per minute: %.1f / %.1f = %.0f%% (target >= 80%%)" %
      (a["per_min"], b["per_min"], 100 * a["per_min"] / max(b["per_min"], 1e-9)))
if "noprof" in results:
    c = results["noprof"]
    print("LLM run without the analyst's profiles / parameter run: %.1f / %.1f = %.0f%%" %
          (c["per_min"], b["per_min"], 100 * c["per_min"] / max(b["per_min"], 1e-9)))
