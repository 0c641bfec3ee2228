#!/usr/bin/env python3
"""LLM evolution of PyTorch programs (torch tasks), end to end, through the
fake LLM server (docs/llm.md#torch).

usage: e2e_llm_torch.py KEVO SOURCE_DIR WORK_DIR [--device cpu|cuda]

The Python that runs the torch judge is $KEVO_TORCH_PYTHON, else the one
running this script. Exits 77 (skipped) where it does not import torch,
and, with --device cuda, where there is no NVIDIA GPU that torch sees.

--device cpu runs configs/llm-torch.json, --device cuda
configs/kernelbench.json (arch 9.0a: an H100 or H200), both on the bundled
torch_softmax and torch_scale_bias_relu with every LLM operator on
(rewrite, SEARCH/REPLACE diff, crossover, fix, analyst).

1. record: the server answers with whole Python programs
   (tests/llm/fake_llm_server.py's torch rotation): rewrites in pure
   PyTorch that call none of the reference's operations, a load_inline
   extension (C++ in cpp_sources on the CPU, raw-pointer CUDA with the
   binding in cpp_sources on a GPU: one text, built once), a Python syntax
   error, a softmax without the max subtraction (wrong on the stress
   trials), a program that calls the reference's own operation, one whose
   forward raises, a reply without code; diffs that apply (the seed's
   return line quoted without its indentation) and do not; repairs; and,
   early on, an HTTP 500 and a reply whose class is not ModelNew (the
   run survives both; the unit tests check the rejection). Asserted
   from the lineage: every LLM operator made children that were judged;
   LLM-made candidates are correct, compile errors, forbidden and wrong
   answers; a load_inline candidate was judged correct; a diff applied to
   the seed was judged correct; repair chains: an llm_fix turn whose prompt
   carries the build error (the SyntaxError) or a traceback of the
   candidate's frames, and some repair judged correct; the system prompts
   describe the device the config names and the generation prompts show
   the reference program; every LLM row has its prompt, reply, tokens and
   latency and no prompt names a hidden shape (check_llm_lineage.py).
2. replay, no server: every reply and verdict from the record, the same
   lineage (ids, parents, operators, sources, statuses, speedups).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import fake_server
import llm_lineage

ap = argparse.ArgumentParser()
ap.add_argument("kevo")
ap.add_argument("src")
ap.add_argument("work")
ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
a = ap.parse_args()
kevo, src, work = a.kevo, os.path.abspath(a.src), os.path.abspath(a.work)
python = os.environ.get("KEVO_TORCH_PYTHON") or sys.executable
gpu = a.device == "cuda"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


probe = "import torch; print(torch.__version__, torch.cuda.is_available())"
p = subprocess.run([python, "-c", probe], capture_output=True, text=True)
if p.returncode != 0:
    print("%s does not import torch: skipped" % python)
    sys.exit(77)
if gpu and p.stdout.split()[-1] != "True":
    print("torch %s under %s sees no GPU: skipped" % (p.stdout.split()[0], python))
    sys.exit(77)

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
cache = os.path.join(work, "cache")
script = {
    "log_content": True,
    "sequence": [{"kind": "auto"}, {"kind": "auto"}, {"kind": "status", "status": 500}, {"kind": "auto"},
                 {"kind": "auto"}, {"kind": "signature_change"}],
    "default": {"kind": "auto"},
}
server, url = fake_server.start(src, work, script)
LLM_OPS = ["llm_rewrite", "llm_diff", "llm_crossover", "llm_fix", "llm_analyst"]
TASKS = ["torch_softmax", "torch_scale_bias_relu"]
config = os.path.join(src, "configs", "kernelbench.json" if gpu else "llm-torch.json")
t_start = time.time()
try:
    dead = "http://127.0.0.1:9/v1"
    common = ["--set", "tasks=" + json.dumps(["tasks/torch/" + t for t in TASKS]),
              "--set", "budget.evaluations_per_task=%d" % (20 if gpu else 14), "--set", "budget.wall_seconds=420",
              "--set", "seed=3", "--set", "island.in_flight=4", "--set", "llm.cache.dir=" + cache,
              "--set", "backend.torch.python=" + python,
              # Torch's own baselines are not what is tested here; the
              # objects and builds live in the work folder (the first
              # C++ build of <torch/extension.h> is part of the test).
              "--set", "backend.torch.baselines.enabled=false",
              "--set", "backend.torch.cache_dir=" + os.path.join(work, "torch-cache"),
              "--set", "backend.torch.trials=1", "--set", "backend.torch.timing.budget_seconds=0.1",
              "--set", "backend.torch.timing.max_ci_fraction=0",   # no stability rule: never timed again
              "--set", "progress.mode=off", "--set", "lineage.flush_records=8"]

    def run(name, *extra):
        out = os.path.join(work, name)
        cmd = [kevo, "run", config, "--out", out] + common + list(extra)
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=560)
        print("%s: exit %d in %.1f s" % (name, p.returncode, time.time() - t0))
        if p.returncode != 0:
            fail("%s: exit %d\n%s" % (name, p.returncode, p.stdout[-3000:] + p.stderr[-3000:]))
        return out

    # 1. Record.
    rec = run("rec", "--set", "llm.models.0.base_url=" + url, "--set", "llm.cache.mode=record")
    chk = subprocess.run([sys.executable, os.path.join(src, "tests/llm/check_llm_lineage.py"), rec,
                          "--expect", "correct,compile_error,wrong_answer,forbidden,repair"],
                         capture_output=True, text=True)
    print(chk.stdout.strip())
    if chk.returncode != 0:
        fail("check_llm_lineage.py: " + chk.stdout[-2000:] + chk.stderr[-2000:])
    rows, llm, notes, _ = llm_lineage.read(rec)
    by_id = {r["id"]: r for r in rows}
    per_op = llm_lineage.per_op_statuses(rows)
    for op in llm_lineage.unjudged_operators(per_op, LLM_OPS):
        fail("%s made no child that was judged: %s" % (op, per_op.get(op)))
    llm_rows = [r for r in rows if r["op"].startswith("llm_")]
    # What each kind of failure was judged, with its reason.
    if not any("aten::" in r["message"] for r in llm_rows if r["status"] == "forbidden"):
        fail("no LLM program that calls the reference's operation was judged forbidden for it")
    if not any("stress" in r["message"] for r in llm_rows if r["status"] == "wrong_answer"):
        fail("no softmax without the max subtraction was caught by a stress trial")
    if not any("kevo-fake-syntax-error" in r["source"] for r in llm_rows if r["status"] == "compile_error"):
        fail("no Python syntax error was judged a compile error")
    native = [r for r in llm_rows if "load_inline(" in r["source"] and r["status"] == "correct"]
    if not native:
        fail("no load_inline candidate (%s) was judged correct: %s" % (
            "CUDA" if gpu else "C++", [(r["id"], r["status"], r["message"][:80]) for r in llm_rows
                                       if "load_inline(" in r["source"]]))
    print("load_inline candidates judged correct: %d" % len(native))
    diffs = [r for r in llm_rows if r["op"] == "llm_diff" and r["status"] == "correct" and
             by_id.get(r["parent0"], {}).get("op") == "seed"]
    if not diffs:
        fail("no SEARCH/REPLACE edit of a seed was judged correct")
    # Repair chains.
    try:
        repairs, fixed_of = llm_lineage.repair_chains(rows, llm)
    except ValueError as e:
        fail(str(e))
    carried = [i for i, r in repairs
               if "SyntaxError" in r["prompt"][-1]["content"] or 'File "candidate.py"' in r["prompt"][-1]["content"]]
    if not carried:
        fail("no repair whose prompt carries the build error or the traceback: %s" % {
            k: len(v) for k, v in fixed_of.items()})
    good = [i for i, _ in repairs if by_id.get(i, {}).get("status") == "correct"]
    if not good:
        fail("no repair was judged correct")
    print("repairs: %d (%s), %d carry the build error or traceback, %d judged correct" % (
        len(repairs), {k: len(v) for k, v in fixed_of.items()}, len(carried), len(good)))
    # The prompts: the device the config names, the reference program.
    systems = [m["content"] for _, r in llm for m in r["prompt"] if m["role"] == "system"]
    want = 'backend.torch.device "%s"' % a.device
    if not systems or not all(want in s for s in systems):
        fail("a system prompt does not describe the device: %s" % (systems[:1] or ["(none)"])[0][-1500:])
    if not any("## The reference program" in m["content"] and "class Model(nn.Module)" in m["content"]
               for _, r in llm for m in r["prompt"] if m["role"] == "user"):
        fail("no generation prompt shows the reference program")
    log = [json.loads(x) for x in open(os.path.join(work, "server.log")) if x.strip()]
    kinds = {e.get("kind") for e in log}
    for k in ("status", "signature_change"):
        if k not in kinds:
            fail("the server never answered with %s" % k)

    # 2. Replay without the server.
    rep = run("rep", "--set", "llm.models.0.base_url=" + dead, "--set", "llm.cache.mode=replay")
    rep_rows, rep_llm, _, _ = llm_lineage.read(rep)
    diff = llm_lineage.replay_difference(rows, rep_rows)
    if diff:
        fail("replay: " + diff)
    if not all(r["cached"] and r["ok"] for _, r in rep_llm) or len(rep_llm) != len(llm):
        fail("replay: not every reply came from the cache")
    print("replay identical: %d candidates, %d replies" % (len(rep_rows), len(rep_llm)))
finally:
    server.kill()
    server.wait()
print("llm on torch (%s) end to end ok in %.0f s" % (a.device, time.time() - t_start))
