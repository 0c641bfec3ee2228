#!/usr/bin/env python3
"""SIGINT, SIGTERM and SIGUSR1 each stop a single-process `kevo run` (no
mpirun: a singleton MPI world) cleanly and at once: exit 0, a final
checkpoint recording the signal, report.json's stop_reason naming it.

MPI_Init may install handlers of its own (Open MPI's singleton replaced the
engine's SIGUSR1 handler, so a run under `kevo campaign cell`, which
forwards Slurm's SIGUSR1 to it, ran to the end of its budget).

usage: single_process_stop.py KEVO SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

kevo, src, work = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
    name = sig.name
    out = os.path.join(work, name)
    cmd = [kevo, "run", os.path.join(src, "tests/slurm/data/tiny.json"), "--out", out,
           "--set", "budget.evaluations_per_task=100000000", "--set", "budget.wall_seconds=120",
           "--set", "islands.topology=none", "--set", "progress.mode=off"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cp = os.path.join(out, "checkpoint", "rank-0000.json")
    t0 = time.time()
    while not os.path.exists(cp):
        if p.poll() is not None or time.time() - t0 > 60:
            fail("%s: the run ended or made no checkpoint: %s" % (name, p.communicate()[0][-2000:]))
        time.sleep(0.05)
    time.sleep(0.5)
    t1 = time.time()
    p.send_signal(sig)
    try:
        text = p.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        p.kill()
        fail("%s: the run did not stop within 30 s of the signal" % name)
    took = time.time() - t1
    if p.returncode != 0:
        fail("%s: exit %d\n%s" % (name, p.returncode, text[-2000:]))
    report = json.load(open(os.path.join(out, "report.json")))
    if name not in report.get("stop_reason", ""):
        fail("%s: report.json stop_reason %r" % (name, report.get("stop_reason")))
    c = json.load(open(cp))
    if not (c.get("final") and c.get("stopped") and c.get("signal", {}).get("name") == name):
        fail("%s: checkpoint not final or without the signal: %s" % (name, {k: c.get(k) for k in ("final", "stopped", "signal")}))
    if took > 15:
        fail("%s: stopping took %.1f s" % (name, took))
    print("%s: stopped in %.2f s, stop_reason %r" % (name, took, report["stop_reason"]))
print("single-process stop ok")
