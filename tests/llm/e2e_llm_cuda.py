#!/usr/bin/env python3
"""LLM evolution of CUDA kernels on the GPU, end to end, through the fake
LLM server (issue 17, docs/llm.md#cuda).

usage: e2e_llm_cuda.py KEVO SOURCE_DIR WORK_DIR

Exits 77 (skipped) where there is no NVIDIA GPU.

1. record: `kevo run configs/llm-cuda.json` on two bundled CUDA tasks with
   every LLM operator on (rewrite, SEARCH/REPLACE diff, crossover, fix,
   analyst) beside parameter mutation. The server answers with CUDA
   variants of the parent (tests/llm/fake_llm_server.py: a launch parameter
   changed, an nvcc error, a kernel that spoils the first output, one that
   launches nothing, one that writes its input, a reply without code) and,
   early on, faults (an HTTP 500, a reset connection, a 429 with
   Retry-After, a truncated body, a reply that changes the host signature).
   Asserted from the lineage: every LLM operator made children that were
   judged; LLM-made candidates are correct, compile errors, wrong answers
   (among them the kernel that launches nothing and the one that wrote its
   input, each with its reason); repair chains: an `llm_fix` turn repairs a
   compile error (its prompt carries nvcc's message) and a wrong answer,
   and some repair is judged correct; analyst reviews carry the profiler's
   summary of their parent; every LLM row has its prompt, reply, tokens and
   latency (check_llm_lineage.py); hidden shapes never reach a prompt.
2. replay, no server: every reply and verdict from the record, the same
   lineage (ids, parents, operators, sources, statuses, speedups).
3. budget: a token budget that runs out stops the run (`stop: llm budget`),
   and the tokens recorded stay within it.
"""
import json
import os
import shutil
import subprocess
import sys
import time

import fake_server
import llm_lineage

kevo, src, work = sys.argv[1:4]
src, work = os.path.abspath(src), os.path.abspath(work)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def have_gpu():
    if not shutil.which("nvidia-smi"):
        return False
    p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return p.returncode == 0 and "GPU" in p.stdout


if not have_gpu():
    print("no NVIDIA GPU here: skipped")
    sys.exit(77)

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
cache = os.path.join(work, "cache")
script = {
    "log_content": True,
    "sequence": [{"kind": "auto"}, {"kind": "auto"}, {"kind": "status", "status": 500}, {"kind": "auto"},
                 {"kind": "reset"}, {"kind": "auto"}, {"kind": "status", "status": 429, "retry_after": 1},
                 {"kind": "auto"}, {"kind": "truncate"}, {"kind": "auto"}, {"kind": "signature_change"}],
    "default": {"kind": "auto"},
}
server, url = fake_server.start(src, work, script)
LLM_OPS = ["llm_rewrite", "llm_diff", "llm_crossover", "llm_fix", "llm_analyst"]
try:
    dead = "http://127.0.0.1:9/v1"
    # The library baselines (torch) are not what is tested here: off.
    quick = ["--set", "backend.cuda.baselines.enabled=false", "--set", "progress.mode=off"]
    common = ["--set", 'tasks=["tasks/cuda/axpy","tasks/cuda/softmax"]',
              "--set", "budget.evaluations_per_task=28", "--set", "budget.wall_seconds=300",
              "--set", "seed=3", "--set", "island.in_flight=8", "--set", "llm.cache.dir=" + cache,
              "--set", "backend.cuda.profile.every=4", "--set", "lineage.flush_records=16"] + quick

    def run(name, *extra, cfg_common=common):
        out = os.path.join(work, name)
        cmd = [kevo, "run", os.path.join(src, "configs/llm-cuda.json"), "--out", out] + cfg_common + list(extra)
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        print("%s: exit %d in %.1f s" % (name, p.returncode, time.time() - t0))
        if p.returncode != 0:
            fail("%s: exit %d\n%s" % (name, p.returncode, p.stdout[-3000:] + p.stderr[-3000:]))
        return out

    # 1. Record.
    rec = run("rec", "--set", "llm.models.0.base_url=" + url, "--set", "llm.cache.mode=record")
    chk = subprocess.run([sys.executable, os.path.join(src, "tests/llm/check_llm_lineage.py"), rec,
                          "--expect", "correct,compile_error,wrong_answer,repair"], capture_output=True, text=True)
    print(chk.stdout.strip())
    if chk.returncode != 0:
        fail("check_llm_lineage.py: " + chk.stdout[-2000:] + chk.stderr[-2000:])
    rows, llm, notes, _ = llm_lineage.read(rec)
    by_id = {r["id"]: r for r in rows}
    per_op = llm_lineage.per_op_statuses(rows)
    for op in llm_lineage.unjudged_operators(per_op, LLM_OPS):
        fail("%s made no child that was judged: %s" % (op, per_op.get(op)))
    llm_rows = [r for r in rows if r["op"].startswith("llm_")]
    msgs = [r["message"] for r in llm_rows if r["status"] == "wrong_answer"]
    if not any("modified its input" in m for m in msgs):
        fail("no LLM kernel that wrote its input was judged wrong for it: %s" % msgs[:6])
    nothing = [r for r in llm_rows if r["status"] == "wrong_answer" and "(void)" in r["source"]
               and "kevo_fake_spoil" not in r["source"]]
    if not nothing:
        fail("no LLM kernel that launches nothing was judged a wrong answer")
    # Repair chains.
    try:
        repairs, fixed_of = llm_lineage.repair_chains(rows, llm)
    except ValueError as e:
        fail(str(e))
    ce = fixed_of.get("compile_error", [])
    if not ce or not any("undeclared_symbol_xyz" in json.dumps(r["prompt"]) and "undefined" in json.dumps(r["prompt"])
                         for _, r in ce):
        fail("no repair of a compile error whose prompt carries nvcc's message")
    if not fixed_of.get("wrong_answer"):
        fail("no repair of a wrong answer")
    good = [i for i, _ in repairs if by_id.get(i, {}).get("status") == "correct"]
    if not good:
        fail("no repair was judged correct")
    print("repairs: %d (%s), %d judged correct" % (len(repairs), {k: len(v) for k, v in fixed_of.items()}, len(good)))
    # Analyst reviews with the profile of their parent.
    reviews = [r for _, r in llm if r.get("purpose") == "analyse"]
    profiled = [r for r in reviews if "% of peak" in json.dumps(r["prompt"])]
    if not reviews or not profiled:
        fail("%d analyst reviews, %d with a profile of their parent" % (len(reviews), len(profiled)))
    print("analyst reviews: %d, %d with the parent's ncu summary" % (len(reviews), len(profiled)))
    log = [json.loads(x) for x in open(os.path.join(work, "server.log")) if x.strip()]
    kinds = {e.get("kind") for e in log}
    for k in ("status", "reset", "truncate", "signature_change"):
        if k not in kinds:
            fail("the server never answered with %s" % k)
    # The fake server's content log: no hidden shape in any prompt is
    # checked by check_llm_lineage.py; the run survived every fault.

    # 2. Replay without the server.
    rep = run("rep", "--set", "llm.models.0.base_url=" + dead, "--set", "llm.cache.mode=replay")
    rep_rows, rep_llm, _, _ = llm_lineage.read(rep)
    diff = llm_lineage.replay_difference(rows, rep_rows)
    if diff:
        fail("replay: " + diff)
    if not all(r["cached"] and r["ok"] for _, r in rep_llm) or len(rep_llm) != len(llm):
        fail("replay: not every reply came from the cache")
    print("replay identical: %d candidates, %d replies" % (len(rep_rows), len(rep_llm)))

    # 3. A token budget that runs out.
    budget = 60000
    bud = run("budget", "--set", "llm.models.0.base_url=" + url, "--set", "llm.budget.tokens=%d" % budget,
              cfg_common=["--set", 'tasks=["tasks/cuda/axpy"]', "--set", "budget.evaluations_per_task=200",
                          "--set", "budget.wall_seconds=240"] + quick)
    _, bud_llm, bud_notes, _ = llm_lineage.read(bud)
    used = sum(r["input_tokens"] + r["output_tokens"] for _, r in bud_llm)
    if used > budget:
        fail("budget: %d tokens used, over %d" % (used, budget))
    if not any(n.startswith("stop: llm budget") for n in bud_notes):
        fail("budget: no 'stop: llm budget' note: %s" % bud_notes)
    print("budget: %d of %d tokens used over %d replies, then the run stopped" % (used, budget, len(bud_llm)))
finally:
    server.kill()
    server.wait()
print("llm on cuda end to end ok")
