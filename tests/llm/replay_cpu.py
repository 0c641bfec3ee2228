#!/usr/bin/env python3
"""Record, then replay, an LLM run on the real CPU backend.

usage: replay_cpu.py KEVO SOURCE_DIR WORK_DIR

1. record: `kevo run configs/llm.json` on reduce_sum through the fake LLM
   server (tests/llm/fake_llm_server.py), cache.mode "record": the replies
   and (backend.verdicts "auto") the verdicts are recorded.
2. replay, no server: every reply comes from the cache (0 missed, counted
   in the lineage note and report.json), every verdict from the record, and
   the lineage is the recorded one: ids, parents, operators, sources,
   statuses and speedups.
3. replay with another `llm.hardware` text (it is in the prompts): every
   prompt drifts from the recorded one; the recorded replies are still used,
   each drifted one is counted, and the lineage is again the recorded one.
4. replay with one reply removed from the cache: the run stops at that
   request with exit 1, naming the cache folder and the key's parts, in
   report.json's stop_reason and a `stop:` note; `kevo resume` with
   cache.mode "replay_or_call" and the server continues it to the end.
"""
import glob
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
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
cache = os.path.join(work, "cache")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


server, url = fake_server.start(src, work)
try:
    dead = "http://127.0.0.1:9/v1"

    common = ["--set", 'tasks=["tasks/cpu/reduce_sum"]', "--set", "budget.evaluations_per_task=12",
              "--set", "budget.wall_seconds=200", "--set", "seed=5", "--set", "island.in_flight=4",
              "--set", "llm.cache.dir=" + cache, "--set", "llm.hardware=a test machine",
              "--set", "progress.mode=off", "--set", "lineage.flush_records=8"]

    def run(name, *extra, resume=None):
        out = os.path.join(work, name)
        cmd = [kevo, "resume", resume] if resume else [kevo, "run", os.path.join(src, "configs/llm.json"),
                                                        "--out", out] + common
        t0 = time.time()
        p = subprocess.run(cmd + list(extra), capture_output=True, text=True, timeout=300)
        print("%s: exit %d in %.1f s" % (name, p.returncode, time.time() - t0))
        return p, out

    def lineage(run_dir):
        rows, llm, notes, _ = llm_lineage.read(run_dir)
        return rows, llm, notes

    def same(a, b, what):
        diff = llm_lineage.replay_difference(a, b)
        if diff:
            fail("%s: %s" % (what, diff))

    # 1. Record.
    p, rec = run("rec", "--set", "llm.models.0.base_url=" + url, "--set", "llm.cache.mode=record")
    if p.returncode != 0:
        fail("record run: exit %d\n%s" % (p.returncode, p.stdout[-2000:] + p.stderr[-2000:]))
    rec_rows, rec_llm, rec_notes = lineage(rec)
    llm_made = [r for r in rec_rows if r["op"].startswith("llm_")]
    judged = [r for r in rec_rows if r["status"] not in ("duplicate", "invalid")]
    print("recorded: %d candidates, %d LLM-made, %d llm requests, %d judged" %
          (len(rec_rows), len(llm_made), len(rec_llm), len(judged)))
    if len(llm_made) < 4 or len(rec_llm) < 4:
        fail("too few LLM requests to compare")
    if not any("verdict record: %d verdict(s) measured and stored" % len(judged) in n for n in rec_notes):
        fail("no verdict-record note for %d verdicts in %s" % (len(judged), rec_notes))
    if not os.path.isdir(os.path.join(cache, "verdicts")):
        fail("no verdict record beside the reply cache")

    # 2. Replay without a server: all replies and verdicts from the record.
    p, rep = run("rep", "--set", "llm.models.0.base_url=" + dead, "--set", "llm.cache.mode=replay")
    if p.returncode != 0:
        fail("replay run: exit %d\n%s" % (p.returncode, p.stdout[-2000:] + p.stderr[-2000:]))
    rep_rows, rep_llm, rep_notes = lineage(rep)
    same(rec_rows, rep_rows, "replay")
    if len(rep_llm) != len(rec_llm) or not all(r["cached"] and r["ok"] and not r["prompt_drifted"] for _, r in rep_llm):
        fail("replay: not every llm request was answered from the cache with its recorded prompt")
    want = "%d replies from %s, 0 of them for a prompt that differs from the recorded one; 0 missed" % (len(rec_llm), cache)
    if not any(want in n for n in rep_notes):
        fail("replay: no note '%s' in %s" % (want, rep_notes))
    report = json.load(open(rep + "/report.json"))
    if not any(want in n for n in report.get("notes", [])) or report["stopped"]:
        fail("replay: report.json lacks the note or says stopped: %s" % report)
    replayed = [r for r in rep_rows if r["message"].startswith("[replayed verdict] ")]
    if len(replayed) != len(judged):
        fail("replay: %d verdicts marked replayed, %d were judged in the recording" % (len(replayed), len(judged)))
    if not any("verdict record: %d verdict(s) replayed" % len(judged) in n for n in rep_notes):
        fail("replay: no verdict-record note in %s" % rep_notes)
    print("replay identical: %d candidates, %d replies, %d verdicts replayed" % (len(rep_rows), len(rep_llm),
                                                                                   len(replayed)))

    # 3. Prompts that drift (another hardware text) still get the recorded replies, counted.
    p, dri = run("drift", "--set", "llm.models.0.base_url=" + dead, "--set", "llm.cache.mode=replay",
                 "--set", "llm.hardware=another machine")
    if p.returncode != 0:
        fail("drifted replay: exit %d\n%s" % (p.returncode, p.stdout[-2000:] + p.stderr[-2000:]))
    dri_rows, dri_llm, dri_notes = lineage(dri)
    same(rec_rows, dri_rows, "drifted replay")
    drifted = sum(1 for _, r in dri_llm if r["prompt_drifted"])
    if drifted != len(rec_llm):
        fail("drifted replay: %d of %d prompts marked drifted" % (drifted, len(rec_llm)))
    want = "%d replies from %s, %d of them for a prompt that differs from the recorded one; 0 missed" % (
        len(rec_llm), cache, drifted)
    if not any(want in n for n in dri_notes):
        fail("drifted replay: no note '%s' in %s" % (want, dri_notes))
    print("drifted replay identical, %d drifted prompts counted" % drifted)

    # 4. A reply missing from the cache: stop at once, exit 1, resumable.
    ids = sorted({i for i, _ in rec_llm})
    victim = ids[len(ids) // 2]
    removed = 0
    for fn in glob.glob(os.path.join(cache, "??", "*.json")):
        if json.load(open(fn)).get("key", {}).get("id") == victim:
            os.remove(fn)
            removed += 1
    if removed == 0:
        fail("no cache entry names candidate %d" % victim)
    p, mis = run("miss", "--set", "llm.models.0.base_url=" + dead, "--set", "llm.cache.mode=replay")
    err = p.stdout + p.stderr
    if p.returncode != 1:
        fail("missed reply: exit %d, wanted 1\n%s" % (p.returncode, err[-3000:]))
    for part in ("no cached reply in " + cache, "candidate %d" % victim, "operator llm_", "parents [", "replay_or_call"):
        if part not in err:
            fail("missed reply: '%s' not in the output:\n%s" % (part, err[-3000:]))
    report = json.load(open(mis + "/report.json"))
    if not report["stopped"] or "candidate %d" % victim not in report["stop_reason"]:
        fail("missed reply: report.json does not say why it stopped: %s" % report)
    mis_rows, _, mis_notes = lineage(mis)
    if not any(n.startswith("stop: replay: no cached reply") for n in mis_notes):
        fail("missed reply: no stop note in the lineage: %s" % mis_notes)
    if not any(n.endswith("; 1 missed") for n in mis_notes):
        fail("missed reply: the miss is not counted: %s" % mis_notes)
    after = [r for r in mis_rows if r["id"] > victim + 8]
    if len(after) > 0 or len(mis_rows) >= len(rec_rows):
        fail("missed reply: the run went on past the miss (%d candidates after id %d)" % (len(after), victim + 8))
    print("missed reply stopped the run at candidate %d (%d candidates recorded)" % (victim, len(mis_rows)))
    p, _ = run("resume", "--set", "llm.models.0.base_url=" + url, "--set", "llm.cache.mode=replay_or_call",
               resume=mis)
    if p.returncode != 0:
        fail("resume with replay_or_call: exit %d\n%s" % (p.returncode, p.stdout[-2000:] + p.stderr[-2000:]))
    report = json.load(open(mis + "/report.json"))
    if report["stopped"] or report["tasks"][0]["evaluations"] < 12:
        fail("resume did not finish the run: %s" % report)
    print("resumed with replay_or_call to the end")
finally:
    server.kill()
    server.wait()
print("replay on the cpu backend ok")
