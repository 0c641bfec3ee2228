#!/usr/bin/env python3
"""LLM evolution of OpenCL kernels through the command backend, end to end
(issue 20): `kevo run configs/llm-opencl.json` on two bundled OpenCL tasks
(PoCL on the CPU) with every LLM operator on, answered by the fake LLM
server's OpenCL rotation (tests/llm/fake_llm_server.py: a params-block
change, an OpenCL C syntax error, a kernel that spoils its first output, a
reply without code) and, early, HTTP faults; then the same run replayed
without the server.

usage: e2e_llm_opencl.py KEVO SOURCE_DIR WORK_DIR [evaluator|kevo]

With "kevo" the backend runs with "judge": "kevo" (kevo draws the inputs
and compares the outputs; the evaluator only runs the programs): the same
assertions hold, and the replay is left out.

Asserted from the lineage: LLM operators made judged children; there are
correct children, compile errors (the evaluator's build log in the verdict)
and wrong answers; an `llm_fix` repair of a compile error carries the build
log in its prompt, and some repair is correct; every LLM row has its
prompt and reply (check_llm_lineage.py); no prompt names a hidden shape;
the replay gives the same lineage. Exits 77 where pyopencl or an OpenCL
platform is missing.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

kevo, src, work = sys.argv[1:4]
judge = sys.argv[4] if len(sys.argv) > 4 else "evaluator"
src, work = os.path.abspath(src), os.path.abspath(work)
sys.path.insert(0, os.path.join(src, "tests/llm"))
import fake_server  # noqa: E402
import llm_lineage  # noqa: E402


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


probe = subprocess.run(["python3", os.path.join(src, "backends/command/evaluators/opencl/kevo_opencl_eval.py"),
                        "--version"], capture_output=True, text=True)
if probe.returncode != 0:
    print("no pyopencl / OpenCL platform for the python3 on PATH: skipped\n" + probe.stderr[-500:])
    sys.exit(77)

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
cache = os.path.join(work, "cache")
script = {
    "log_content": True,
    "sequence": [{"kind": "auto"}, {"kind": "status", "status": 500}, {"kind": "auto"}, {"kind": "reset"},
                 {"kind": "auto"}, {"kind": "truncate"}],
    "default": {"kind": "auto"},
}
server, url = fake_server.start(src, work, script)
LLM_OPS = ["llm_rewrite", "llm_fix"]
try:
    common = ["--set", 'tasks=["tasks/opencl/vadd","tasks/opencl/softmax"]', "--set", "budget.evaluations_per_task=24",
              "--set", "budget.wall_seconds=300", "--set", "seed=5", "--set", "progress.mode=off",
              # Seed 5's operator draws fall in llm_crossover's tenth of
              # configs/llm-opencl.json's weights at no id between 8 and 82,
              # so a run that ends before id 83 (CI's slower machine made 75
              # records) made no crossover at all: a larger share here.
              "--set", "operators.2.weight=0.3",
              "--set", "llm.cache.dir=" + cache, "--set", "lineage.flush_records=16",
              "--set", "backend.command.cache_dir=" + os.path.join(work, "builds"),
              "--set", "backend.command.judge=" + judge]

    def run(name, *extra):
        out = os.path.join(work, name)
        cmd = [kevo, "run", os.path.join(src, "configs/llm-opencl.json"), "--out", out] + common + list(extra)
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        print("%s: exit %d in %.1f s" % (name, p.returncode, time.time() - t0))
        if p.returncode != 0:
            fail("%s: exit %d\n%s" % (name, p.returncode, p.stdout[-3000:] + p.stderr[-3000:]))
        return out

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
    # Diffs, crossovers and the analyst's rewrites land on the (small)
    # spaces' points: their children are often duplicates (or, for diffs,
    # edits that do not apply); they must make some.
    for op in ("llm_diff", "llm_crossover", "llm_analyst"):
        if not per_op.get(op):
            fail("%s made no child" % op)
    llm_rows = [r for r in rows if r["op"].startswith("llm_")]
    for want in ("correct", "compile_error", "wrong_answer"):
        if not any(r["status"] == want for r in llm_rows):
            fail("no LLM-made candidate judged %s" % want)
    if any(r["status"] == "runtime_error" and "protocol breach" in r["message"] for r in rows):
        fail("the bundled evaluator breached the protocol: %s" %
             [r["message"] for r in rows if "protocol breach" in r["message"]][:3])
    try:
        repairs, fixed = llm_lineage.repair_chains(rows, llm)
    except ValueError as e:
        fail(str(e))
    ce = fixed.get("compile_error", [])
    if not any("kevo_broken" in json.dumps(r["prompt"]) and "error" in json.dumps(r["prompt"]).lower() for _, r in ce):
        fail("no repair of a compile error whose prompt carries the evaluator's build log")
    def repaired(i):
        # Judged correct, or the source of a correct candidate already made
        # (the fake server's repair undoes the bug and changes a parameter:
        # the bundled spaces are small, so it is often a duplicate).
        r = by_id.get(i, {})
        if r.get("status") == "duplicate":
            m = re.search(r"as candidate (\d+)", r.get("message", ""))
            r = by_id.get(int(m.group(1)), {}) if m else {}
        return r.get("status") == "correct"
    if not any(repaired(i) for i, _ in repairs):
        fail("no repair gave a correct kernel")
    print("repairs: %d (%s)" % (len(repairs), {k: len(v) for k, v in fixed.items()}))

    if judge == "kevo":
        # kevo, not the evaluator, found the wrong answers: its messages.
        wrong = [r for r in llm_rows if r["status"] == "wrong_answer"]
        if not any("differs from the reference" in r["message"] or "never written" in r["message"]
                   or "pre-filled" in r["message"] for r in wrong):
            fail("no wrong answer in kevo's words: %s" % [r["message"] for r in wrong][:3])
        print("llm on opencl end to end ok (judge kevo)")
        sys.exit(0)
    rep = run("rep", "--set", "llm.models.0.base_url=http://127.0.0.1:9/v1", "--set", "llm.cache.mode=replay")
    rep_rows, rep_llm, _, _ = llm_lineage.read(rep)
    diff = llm_lineage.replay_difference(rows, rep_rows)
    if diff:
        fail("replay: " + diff)
    if len(rep_llm) != len(llm) or not all(r["cached"] and r["ok"] for _, r in rep_llm):
        fail("replay: not every reply came from the cache")
    print("replay identical: %d candidates, %d replies" % (len(rep_rows), len(rep_llm)))
finally:
    server.kill()
    server.wait()
print("llm on opencl end to end ok")
