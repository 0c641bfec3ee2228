#!/usr/bin/env python3
"""LLM evolution with the real local model (llm.local_server: llama.cpp's
llama-server and SmolLM2-135M-Instruct, installed by scripts/setup-llm.sh):
`kevo run configs/llm-local.json` on bundled CPU tasks with a small budget,
then the lineage is checked (every LLM-made row has its prompt, reply,
tokens and latency; statuses agree with the replies) and what the model
produced is measured: requests, generated tokens per second, seconds per
reply, and the share of LLM-made candidates that parse, compile and pass.

usage: local_model.py KEVO SOURCE_DIR WORK_DIR [--evaluations N] [--tasks T,...] [--wall S]
Exit 77 (a skip) when the server or the model is not installed.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import llm_lineage

ap = argparse.ArgumentParser()
ap.add_argument("kevo")
ap.add_argument("src")
ap.add_argument("work")
ap.add_argument("--evaluations", type=int, default=10)
ap.add_argument("--tasks", default="tasks/cpu/reduce_sum")
ap.add_argument("--wall", type=float, default=240)
a = ap.parse_args()

home = os.environ.get("KEVO_LLM_HOME") or os.path.join(
    os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share"), "kevo", "llm")
if not os.access(os.path.join(home, "bin", "llama-server"), os.X_OK) or \
        not os.path.isfile(os.path.join(home, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")):
    print("skipped: no llama-server and model in %s (scripts/setup-llm.sh installs them)" % home)
    sys.exit(77)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


shutil.rmtree(a.work, ignore_errors=True)
os.makedirs(a.work)
run = os.path.join(a.work, "run")
tasks = json.dumps(a.tasks.split(","))
# LLM operators only: with the config's parameter mutations beside them, a
# loaded machine finished the evaluation budget on parameter children while
# the first reply was still being generated, and no LLM row had an answer.
llm_ops = [{"type": "llm_rewrite", "weight": 0.5, "inspirations": 1}, {"type": "llm_diff", "weight": 0.25},
           {"type": "llm_fix", "weight": 0.25, "max_turns": 2}]
cmd = [a.kevo, "run", os.path.join(a.src, "configs", "llm-local.json"), "--out", run,
       "--set", "tasks=" + tasks, "--set", "budget.evaluations_per_task=%d" % a.evaluations,
       "--set", "operators=" + json.dumps(llm_ops),
       "--set", "budget.wall_seconds=%g" % a.wall, "--set", "progress.mode=lines"]
t0 = time.time()
p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
wall = time.time() - t0
print("\n".join(p.stdout.splitlines()[-6:]))
if p.returncode != 0:
    fail("kevo run exited %d" % p.returncode)
chk = subprocess.run([sys.executable, os.path.join(a.src, "tests", "llm", "check_llm_lineage.py"), run, "--expect", ""])
if chk.returncode != 0:
    fail("the lineage check failed")

rows_list, recs, _, _ = llm_lineage.read(run)
rows = {r["id"]: (r["op"], r["status"], r["source"], r["note"]) for r in rows_list}

llm = {i: r for i, r in rows.items() if r[0].startswith("llm_")}
ok = [rec for _, rec in recs if rec.get("ok") and not rec.get("cached")]
if not ok:
    fail("no request was answered by the local model")
for i, rec in recs:
    if rec.get("ok") and not rec.get("cached"):
        if not rec.get("reply") or rec["output_tokens"] <= 0 or rec["latency_s"] <= 0:
            fail("candidate %d: an answered request without reply, tokens or latency: %s" % (i, json.dumps(rec)[:300]))
# Statuses agree with the replies: a candidate that compiled or ran has code
# in its row; one without code says why in its note.
for i, (op, status, source, note) in llm.items():
    if status in ("compile_error", "wrong_answer", "runtime_error", "correct", "timeout") and not source.strip():
        fail("candidate %d is %s without a source" % (i, status))
    if status == "invalid" and not note:
        fail("candidate %d is invalid without a note saying why" % i)

statuses = {}
for op, status, _, _ in llm.values():
    statuses[status] = statuses.get(status, 0) + 1
# Lost rows (in flight when the run ended) had no reply: not counted.
n = len(llm) - statuses.get("lost", 0)
if n <= 0:
    fail("no LLM-made candidate got a reply")
parsed = n - statuses.get("invalid", 0)
compiled = parsed - statuses.get("compile_error", 0) - statuses.get("duplicate", 0)
passed = statuses.get("correct", 0)
tokens = sum(r["output_tokens"] for r in ok)
latency = sum(r["latency_s"] for r in ok)
print("local model: %d requests answered, %d generated tokens, %.1f tokens/s, %.2f s per reply (median %.2f s)"
      % (len(ok), tokens, tokens / latency if latency else 0.0, latency / len(ok),
         statistics.median(r["latency_s"] for r in ok)))
print("LLM-made candidates: %d: %d parsed (%.0f%%), %d compiled and new (%.0f%%), %d correct (%.0f%%); statuses %s"
      % (n, parsed, 100.0 * parsed / n, compiled, 100.0 * compiled / n, passed, 100.0 * passed / n,
         json.dumps(statuses, sort_keys=True)))
print("run wall time %.1f s" % wall)
print("local model ok")
