#!/usr/bin/env python3
"""Checks the lineage of a run made through the fake LLM server.

usage: check_llm_lineage.py RUN_DIR [--secret S] [--dump FILE]

Asserts: LLM-made candidates exist and each has llm events (prompt, reply,
model, token counts, latency, retries, cost); failures of the scripted kinds
(compile errors, wrong answers, diffs that do not apply) are recorded; no
prompt names a hidden shape; the secret (an API key) appears nowhere in the
file. With --dump, writes (id, op, status, source) rows as JSON for the replay
comparison.
"""
import argparse
import json
import re
import sys

import llm_lineage

ap = argparse.ArgumentParser()
ap.add_argument("run")
ap.add_argument("--secret")
ap.add_argument("--dump")
ap.add_argument("--all-cached", action="store_true", help="every llm record must come from the reply cache")
ap.add_argument("--expect", default="compile_error,wrong_answer,diff")
a = ap.parse_args()
path = a.run + "/lineage/rank-0000.h5"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


rows, llm_events, _, manifests = llm_lineage.read(a.run)
llm_rows = [r for r in rows if r["op"].startswith("llm_")]
if not llm_rows:
    fail("no LLM-made candidates")
records = {}
for i, rec in llm_events:
    records.setdefault(i, []).append(rec)
for r in llm_rows:
    # A candidate lost at the run's end (its request was still in
    # flight, docs/lineage.md) has no reply to record.
    if r["id"] not in records and r["status"] != "lost":
        fail("candidate %d (%s) has no llm record" % (r["id"], r["op"]))
    for rec in records.get(r["id"], []):
        for k in ("model", "prompt", "reply", "input_tokens", "output_tokens", "latency_s", "retries", "cost_usd"):
            if k not in rec:
                fail("llm record of %d lacks %s" % (r["id"], k))
for i in records:
    if not any(r["id"] == i for r in llm_rows):
        fail("llm record for candidate %d, which is not LLM-made" % i)
if a.all_cached:
    for i, recs in records.items():
        if not all(rec["cached"] and rec["ok"] for rec in recs):
            fail("candidate %d has an llm record not answered from the cache" % i)
reps = [rec for recs in records.values() for rec in recs if rec.get("purpose") == "repair"]
print("repair turns:", len(reps))
statuses = {}
for r in llm_rows:
    statuses[r["status"]] = statuses.get(r["status"], 0) + 1
notes = " | ".join(r["note"] for r in llm_rows)
print("llm candidates:", len(llm_rows), "statuses:", statuses, "records:", sum(len(v) for v in records.values()))
for want in a.expect.split(","):
    if want == "repair":
        reps = [rec for recs in records.values() for rec in recs if rec.get("purpose") == "repair"]
        if not reps or not all("repair_of" in rec and rec["repair_turn"] >= 1 for rec in reps):
            fail("no repair turn recorded")
        print("repair turns:", len(reps), "max turn:", max(rec["repair_turn"] for rec in reps))
    elif want == "diff":
        if "does not match" not in notes:
            fail("no recorded diff failure in notes: " + notes[:500])
    elif want and statuses.get(want, 0) == 0:
        fail("no LLM candidate with status " + want)
# Hidden shapes never reach a prompt.
for m in manifests:
    for h in m.get("shapes", {}).get("hidden", []):
        label = ",".join("%s=%s" % (k, v) for k, v in h.items())
        # The whole label: N=1 is not found in N=16777216.
        pattern = re.compile(r"(?<![\w.])" + re.escape(label) + r"(?![\w.])")
        for recs in records.values():
            for rec in recs:
                if pattern.search(json.dumps(rec["prompt"])):
                    fail("hidden shape %s in a prompt" % label)
if a.dump:
    with open(a.dump, "w") as out:
        json.dump([{"id": r["id"], "op": r["op"], "status": r["status"], "source": r["source"]} for r in rows],
                  out, indent=0)

if a.secret:
    with open(path, "rb") as raw:
        if a.secret.encode() in raw.read():
            fail("the API key is in the lineage file")
    with open(a.run + "/config.json") as cfg:
        if a.secret in cfg.read():
            fail("the API key is in config.json")
print("llm lineage ok")
