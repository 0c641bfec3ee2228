#!/usr/bin/env python3
"""`kevo merge` on real multi-rank runs (mpirun, null backend): the merged
file must hold exactly the union of the rank files' records, with texts
remapped, be readable by h5py, h5dump and kevo itself (report, lineage), and
the command must refuse bad input and existing files, leaving nothing behind.

usage: mpi_merge.py MPIEXEC KEVO SOURCE_DIR WORK_DIR NRANKS
"""
import collections
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import h5py

mpiexec, kevo, src, work, nranks = sys.argv[1:6]
nranks = int(nranks)
src, work = os.path.abspath(src), os.path.abspath(work)
data = os.path.join(src, "tests", "mpi", "data")
UNWRITTEN = 2**64 - 1
TEXT_COLUMNS = ("message", "params", "source", "compile_log", "feedback", "output_tail", "mismatch", "op_note",
                "profile", "device")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, expect=0, timeout=120):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    print(f"$ {' '.join(cmd)}\n  -> exit {p.returncode} in {time.time() - t0:.2f} s")
    if expect is not None and p.returncode != expect:
        print(p.stdout[-3000:], p.stderr[-3000:])
        fail(f"exit {p.returncode}, wanted {expect}")
    return p


def text_of(h, ref):
    if ref < 0:
        return None
    t = h["text"][ref]
    return t.decode() if isinstance(t, bytes) else t


def records(h, file_rank=None):
    """Rows and events of one file as comparable tuples, texts resolved."""
    rows = h["candidates"][:]
    tasks = [t.decode() if isinstance(t, bytes) else t for t in h["tasks"][:]]
    out_rows = collections.Counter()
    for r in rows:
        if int(r["id"]) == UNWRITTEN or int(r["status"]) == 0:
            continue   # a row of an interrupted flush
        key = (int(r["id"]), int(r["rank"]), int(r["origin_rank"]), int(r["status"]), bytes(r["op"]).rstrip(b"\0"),
               int(r["parent0"]), int(r["parent1"]), int(r["hash"]), tasks[int(r["task"])], float(r["speedup"]),
               tuple(text_of(h, int(r[c])) for c in TEXT_COLUMNS))
        out_rows[key] += 1
    ev = h["events"][:]
    ranks = h["event_rank"][:] if "event_rank" in h else [file_rank] * len(ev)
    out_events = collections.Counter()
    for e, rk in zip(ev, ranks):
        if float(e["time"]) < 0:
            continue
        out_events[(float(e["time"]), int(e["kind"]), int(e["id"]), int(e["from_rank"]), int(e["to_rank"]),
                    text_of(h, int(e["text"])) or "", int(rk))] += 1
    return out_rows, out_events


def union_of_rank_files(run_dir):
    rows, events = collections.Counter(), collections.Counter()
    files = sorted(glob.glob(os.path.join(run_dir, "lineage", "rank-*.h5")))
    for f in files:
        # SWMR read: also opens the file of a killed writer (status flag set).
        with h5py.File(f, "r", swmr=True) as h:
            r, e = records(h, int(h.attrs["rank"]))
            rows += r
            events += e
    return files, rows, events


def check_merged(run_dir, merged, where):
    files, want_rows, want_events = union_of_rank_files(run_dir)
    with h5py.File(merged, "r") as h:
        got_rows, got_events = records(h)
        attrs = dict(h.attrs)
        if int(attrs["rank"]) != -1 or int(attrs["nranks"]) != len(files):
            fail(f"{where}: merged attributes rank={attrs['rank']} nranks={attrs['nranks']}, wanted -1 and {len(files)}")
        with h5py.File(files[0], "r", swmr=True) as r0:
            for k in ("format", "seed", "config", "task_manifests", "host"):
                if attrs[k] != r0.attrs[k]:
                    fail(f"{where}: attribute {k} differs from rank 0's file")
        if json.loads(attrs["merged_from"]) != [os.path.join("lineage", os.path.basename(f)) for f in files]:
            fail(f"{where}: merged_from = {attrs['merged_from']}")
        n_text = len(h["text"])
        distinct = len(set(t for t in h["text"][:]))
        if distinct != n_text:
            fail(f"{where}: /text holds {n_text - distinct} duplicate text(s)")
    if got_rows != want_rows:
        extra, missing = got_rows - want_rows, want_rows - got_rows
        fail(f"{where}: candidates differ: {sum(extra.values())} extra, {sum(missing.values())} missing "
             f"(e.g. {list(extra)[:1]} / {list(missing)[:1]})")
    if got_events != want_events:
        fail(f"{where}: events differ: {sum((got_events - want_events).values())} extra, "
             f"{sum((want_events - got_events).values())} missing")
    n_mig = sum(n for k, n in got_rows.items() if k[1] != k[2])
    print(f"{where}: {sum(got_rows.values())} rows ({n_mig} migrant rows), {sum(got_events.values())} events "
          f"from {len(files)} files: exactly the union")
    return sum(got_rows.values())


def same_report(run_dir, merged, where):
    a = json.loads(run([kevo, "report", run_dir, "--json"]).stdout)
    b = json.loads(run([kevo, "report", merged, "--json"]).stdout)
    for k in ("ranks", "records", "seed", "host", "tasks"):
        if a[k] != b[k]:
            fail(f"{where}: kevo report differs in {k}: {a[k]} vs {b[k]}")
    own = 0
    with h5py.File(merged, "r") as h:
        rows = h["candidates"][:]
        own = int((rows["origin_rank"] == rows["rank"]).sum())
    if b["records"] != own:
        fail(f"{where}: kevo report counts {b['records']} records, the merged file has {own} own rows")
    print(f"{where}: kevo report on the merged file matches the run directory ({b['records']} records)")
    return b


def no_leftovers(folder, where):
    left = [f for f in os.listdir(folder) if ".tmp-" in f]
    if left:
        fail(f"{where}: temporary files left behind: {left}")


def mpirun(n, *args):
    return [mpiexec, "-np", str(n), "--oversubscribe", kevo, *args]


os.makedirs(work, exist_ok=True)

# 1. A finished run with migration.
run_dir = os.path.join(work, f"merge-{nranks}")
shutil.rmtree(run_dir, ignore_errors=True)
run(mpirun(nranks, "run", os.path.join(data, "islands.json"), "--out", run_dir, "--set", "budget.evaluations_per_task=300",
           "progress.mode=off", "islands.poll_seconds=0"))
merged = os.path.join(run_dir, "merged.h5")
p = run([kevo, "merge", run_dir])
if f"merged {nranks} rank file(s)" not in p.stdout or not os.path.isfile(merged):
    fail(f"unexpected merge output: {p.stdout}")
n = check_merged(run_dir, merged, "finished run")
rep = same_report(run_dir, merged, "finished run")
best = rep["tasks"][0]["best_id"]
a = run([kevo, "lineage", run_dir, str(best), "--json"]).stdout
b = run([kevo, "lineage", merged, str(best), "--json"]).stdout
if a != b:
    fail("kevo lineage differs between the run directory and the merged file")
if shutil.which("h5dump"):
    run(["h5dump", "-H", merged])
    d = run(["h5dump", "-d", "/event_rank", merged]).stdout
    if "DATASET \"/event_rank\"" not in d:
        fail("h5dump did not print /event_rank")

# 2. Refuse to overwrite; --force replaces; -o elsewhere.
before = open(merged, "rb").read()
p = run([kevo, "merge", run_dir], expect=2)
if merged not in p.stderr:
    fail(f"the refusal does not name the file: {p.stderr}")
if open(merged, "rb").read() != before:
    fail("a refused merge changed the existing file")
run([kevo, "merge", run_dir, "--force"])
other = os.path.join(work, f"merged-{nranks}.h5")
if os.path.exists(other):
    os.remove(other)
run([kevo, "merge", run_dir, "-o", other])
check_merged(run_dir, other, "-o FILE")
no_leftovers(run_dir, "after merges")
no_leftovers(work, "after merges")

# 3. Bad input: not a run directory; an unreadable rank file. Exit 2, the
#    file named, nothing written.
p = run([kevo, "merge", os.path.join(work, "no-such-run")], expect=2)
if "no-such-run" not in p.stderr:
    fail(f"the error does not name the directory: {p.stderr}")
bad = os.path.join(work, f"merge-bad-{nranks}")
shutil.rmtree(bad, ignore_errors=True)
shutil.copytree(run_dir, bad)
os.remove(os.path.join(bad, "merged.h5"))
victim = os.path.join(bad, "lineage", "rank-0001.h5")
with open(victim, "r+b") as f:
    f.write(b"this is not HDF5" * 64)
p = run([kevo, "merge", bad], expect=2)
if "rank-0001.h5" not in p.stderr:
    fail(f"the error does not name the bad rank file: {p.stderr}")
if os.path.exists(os.path.join(bad, "merged.h5")):
    fail("a failed merge left its output")
no_leftovers(bad, "failed merge")

# 4. A live run, then the same run killed (SIGKILL to every rank): merge uses
#    the reader's recovery rules (no h5clear needed).
live = os.path.join(work, f"merge-live-{nranks}")
shutil.rmtree(live, ignore_errors=True)
proc = subprocess.Popen(mpirun(nranks, "run", os.path.join(data, "wide.json"), "--out", live, "--set", "progress.mode=off"),
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
try:
    deadline = time.time() + 30
    while len(glob.glob(os.path.join(live, "checkpoint", "rank-*.json"))) < nranks:
        if time.time() > deadline or proc.poll() is not None:
            fail("the live run did not start")
        time.sleep(0.1)
    live_merged = os.path.join(work, f"live-{nranks}.h5")
    if os.path.exists(live_merged):
        os.remove(live_merged)
    run([kevo, "merge", live, "-o", live_merged])
    with h5py.File(live_merged, "r") as h:
        n_live = len(h["candidates"])
    if n_live == 0:
        fail("the merge of a live run holds no rows")
    print(f"live run: merged {n_live} rows while the run was writing")
    if proc.poll() is not None:
        fail("the live run ended before it could be killed (too fast a machine?)")
    ranks = subprocess.run(["pgrep", "-P", str(proc.pid)], stdout=subprocess.PIPE, text=True).stdout.split()
    for pid in ranks:
        os.kill(int(pid), signal.SIGKILL)
finally:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
killed_merged = os.path.join(work, f"killed-{nranks}.h5")
if os.path.exists(killed_merged):
    os.remove(killed_merged)
run([kevo, "merge", live, "-o", killed_merged])
n_killed = check_merged(live, killed_merged, "killed run")
if n_killed < n_live:
    fail(f"the killed run's merge has fewer rows ({n_killed}) than the live merge ({n_live})")
same_report(live, killed_merged, "killed run")
print("ok")
