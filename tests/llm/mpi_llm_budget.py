#!/usr/bin/env python3
"""The LLM token budget is one budget for the whole run, shared by the ranks.

usage: mpi_llm_budget.py MPIEXEC KEVO SOURCE_DIR WORK_DIR

Two ranks (mpirun -np 2) run the LLM operators through the fake LLM server
(tests/llm/fake_llm_server.py) on the null backend with a token budget that
runs out long before the evaluation budget. From both ranks' lineage files:
the tokens the server reported, summed over both ranks, stay within the
budget (the documented bound is zero: every attempt reserves its worst case
within its rank's allowance, and the allowances add up to the budget); both
ranks made LLM requests; the run stopped for the budget (a `stop: llm
budget` note, report.json's stop_reason). A `kevo resume` with the same
budget carries the spent amount (it stops without new spending); one with a
larger budget goes on and stays within the new budget.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

import h5py

import fake_server

mpiexec, kevo, src, work = sys.argv[1:5]
src, work = os.path.abspath(src), os.path.abspath(work)
BUDGET = 40000


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, timeout=150):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    print(f"$ {' '.join(cmd[:6])} ...\n  -> exit {p.returncode} in {time.time() - t0:.1f} s")
    if p.returncode != 0:
        print(p.stdout[-3000:])
        fail(f"exit {p.returncode}")
    return p


def spent(run_dir):
    """Per rank file: tokens and USD of the uncached llm records; the notes."""
    per_rank, notes = {}, []
    for f in sorted(glob.glob(os.path.join(run_dir, "lineage", "rank-*.h5"))):
        with h5py.File(f, "r") as h:
            kinds = h5py.check_enum_dtype(h["events"].dtype["kind"])
            text = h["text"]
            tokens = requests = 0
            for e in h["events"][:]:
                if e["time"] < 0 or e["text"] < 0:
                    continue
                s = text[e["text"]]
                s = s.decode() if isinstance(s, bytes) else s
                if e["kind"] == kinds["llm"]:
                    r = json.loads(s)
                    if not r.get("cached"):
                        tokens += r["input_tokens"] + r["output_tokens"]
                        requests += 1
                elif e["kind"] == kinds["note"]:
                    notes.append(s)
            per_rank[int(h.attrs["rank"])] = (tokens, requests)
    return per_rank, notes


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
server, url = fake_server.start(src, work)
try:
    port = url.split(":")[-1].split("/")[0]
    toy = os.path.join(src, "tests/engine/data/toy")
    common = ["--set", f'tasks=["{toy}"]', "--set", 'backend.type="null"',
              "--set", "budget.evaluations_per_task=400", "--set", "budget.wall_seconds=90",
              "--set", f"llm.models.0.base_url=http://127.0.0.1:{port}/v1", "--set", "llm.budget.usd=0",
              "--set", "llm.models.0.concurrency=4", "--set", "island.in_flight=4",
              "--set", "operators.6.enabled=false", "--set", "operators.7.enabled=false",
              "--set", "islands.stats_seconds=0.05", "--set", "progress.mode=off"]
    run_dir = os.path.join(work, "run")
    mpirun = [mpiexec, "-np", "2", "--oversubscribe", kevo]
    p = run(mpirun + ["run", os.path.join(src, "configs/llm.json"), "--out", run_dir, *common,
                      "--set", f"llm.budget.tokens={BUDGET}"])

    per_rank, notes = spent(run_dir)
    total = sum(t for t, _ in per_rank.values())
    print(f"tokens per rank {per_rank}, total {total} of {BUDGET}")
    if len(per_rank) != 2 or any(n == 0 for _, n in per_rank.values()):
        fail(f"both ranks should have made LLM requests: {per_rank}")
    if total > BUDGET:
        fail(f"the ranks together used {total} tokens, over the budget of {BUDGET}")
    if total < BUDGET // 2:
        fail(f"only {total} of {BUDGET} tokens used: the budget should have run out")
    if not any(n.startswith("stop: llm budget") for n in notes):
        fail(f"no 'stop: llm budget' note in the lineage: {notes}")
    report = json.load(open(os.path.join(run_dir, "report.json")))
    if not report.get("stopped") or "llm budget" not in report.get("stop_reason", ""):
        fail(f"report.json does not name the budget: {report.get('stopped')} {report.get('stop_reason')}")
    if "stopped: llm budget" not in p.stdout:
        fail("the console does not say the budget stopped the run")

    # Resume with the same budget: the spent amount is carried, so nothing new is spent.
    run(mpirun + ["resume", run_dir, "--set", "budget.wall_seconds=30"])
    again, _ = spent(run_dir)
    total2 = sum(t for t, _ in again.values())
    print(f"after resume with the same budget: {total2}")
    if total2 > BUDGET:
        fail(f"the resumed run spent past the budget: {total2} > {BUDGET}")

    # A larger budget: the run goes on, within the new budget.
    bigger = BUDGET + 20000
    run(mpirun + ["resume", run_dir, "--set", f"llm.budget.tokens={bigger}", "--set", "budget.wall_seconds=60"])
    third, _ = spent(run_dir)
    total3 = sum(t for t, _ in third.values())
    print(f"after resume with {bigger}: {total3}")
    if total3 <= total2:
        fail("the resumed run with a larger budget made no new requests")
    if total3 > bigger:
        fail(f"the resumed run spent past the raised budget: {total3} > {bigger}")
    print("llm budget across ranks ok")
finally:
    server.terminate()
    server.wait()
