#!/usr/bin/env python3
"""Multi-rank tests of `kevo run` / `kevo resume` under mpirun, with the null
backend. Everything is asserted from what the run leaves behind (the
per-rank lineage files, checkpoints, report.json) and from exit codes.

usage: mpi_islands.py MPIEXEC KEVO SOURCE_DIR WORK_DIR NRANKS CASE [ARG]
cases: migration TOPOLOGY | budget | groups | bad_config | sigterm | kill | hang | param_resume |
       migrants_resume NRANKS_AFTER | device_binding (KEVO is kevo_device_probe)
"""
import collections
import glob
import json
import os
import signal
import subprocess
import sys
import time

import h5py

mpiexec, kevo, src, work, nranks, case = sys.argv[1:7]
arg = sys.argv[7] if len(sys.argv) > 7 else None
nranks = int(nranks)
src, work = os.path.abspath(src), os.path.abspath(work)
data = os.path.join(src, "tests", "mpi", "data")
MIGRATION_IN, MIGRATION_OUT, STOP, RESUME = 3, 4, 1, 2
JUDGED_NOT = {8, 9, 10}   # duplicate, invalid, lost


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def mpirun(n, *args, **kw):
    return [mpiexec, "-np", str(n), "--oversubscribe", kevo, *args]


def run(cmd, timeout=120, expect=0):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    print(f"$ {' '.join(cmd)}\n  -> exit {p.returncode} in {time.time() - t0:.1f} s")
    if expect is not None and p.returncode != expect:
        print(p.stdout[-3000:])
        fail(f"exit {p.returncode}, wanted {expect}")
    return p


def load(run_dir):
    files = []
    for f in sorted(glob.glob(os.path.join(run_dir, "lineage", "rank-*.h5"))):
        # SWMR read: also opens the file of a killed writer (status flag set).
        with h5py.File(f, "r", swmr=True) as h:
            files.append({"file": f, "rank": int(h.attrs["rank"]), "nranks": int(h.attrs["nranks"]),
                          "rows": h["candidates"][:], "events": h["events"][:],
                          "tasks": [t.decode() if isinstance(t, bytes) else t for t in h["tasks"][:]]})
    if not files:
        fail(f"no lineage files in {run_dir}")
    return files


def own_ids(files):
    ids = collections.Counter()
    for f in files:
        r = f["rows"]
        ids.update(r["id"][r["origin_rank"] == r["rank"]].tolist())
    return ids


def judged(files):
    n = 0
    for f in files:
        r = f["rows"]
        own = r[r["origin_rank"] == r["rank"]]
        n += sum(1 for s in own["status"] if int(s) not in JUDGED_NOT)
    return n


def expected_out(topology, size, rank):
    if topology == "ring":
        return {(rank + 1) % size} - {rank}
    if topology == "bidirectional_ring":
        return {(rank + 1) % size, (rank - 1) % size} - {rank}
    if topology == "complete":
        return set(range(size)) - {rank}
    if topology == "torus":
        rows = max(r for r in range(1, size + 1) if r * r <= size and size % r == 0)
        cols = size // rows
        r, c = divmod(rank, cols)
        return {((r + dr) % rows) * cols + (c + dc) % cols for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1))} - {rank}
    if topology == "none":
        return set()
    return None   # random: checked by degree


def fresh(name):
    d = os.path.join(work, name)
    subprocess.run(["rm", "-rf", d])
    os.makedirs(work, exist_ok=True)
    return d


def common_checks(files, run_dir):
    ids = own_ids(files)
    dup = [i for i, n in ids.items() if n > 1]
    if dup:
        fail(f"ids recorded twice as their origin's own: {dup[:5]}")
    # Ids are unique across ranks: id mod ranks-of-its-session == origin (fresh runs only).
    return ids


if case == "migration":
    topology = arg
    run_dir = fresh(f"migration-{topology}-{nranks}")
    run(mpirun(nranks, "run", os.path.join(data, "islands.json"), "--out", run_dir, "--set",
               f"islands.topology={topology}", "islands.degree=2", "budget.evaluations_per_task=200", "progress.mode=off",
               # Poll MPI every loop turn: a short run still emigrates to every neighbour in turn.
               "islands.poll_seconds=0"))
    files = load(run_dir)
    if len(files) != nranks:
        fail(f"{len(files)} lineage files, wanted {nranks}")
    common_checks(files, run_dir)
    # No rank file holds two rows of one id (an arrival of an id the file has
    # is only an event: two senders of a complete exchange cannot know of
    # each other's sends).
    for f in files:
        twice = [i for i, n in collections.Counter(f["rows"]["id"].tolist()).items() if n > 1]
        if twice:
            fail(f"rank {f['rank']} holds {len(twice)} id(s) twice: {twice[:5]}")
    by_rank = {f["rank"]: f for f in files}
    origin_ids = {f["rank"]: set(f["rows"]["id"][f["rows"]["origin_rank"] == f["rank"]].tolist()) for f in files}
    edges = set()
    for f in files:
        ev, rows = f["events"], f["rows"]
        for e in ev[ev["kind"] == MIGRATION_OUT]:
            if int(e["from_rank"]) != f["rank"]:
                fail(f"rank {f['rank']}: migration_out from rank {e['from_rank']}")
            edges.add((f["rank"], int(e["to_rank"])))
        ins = ev[ev["kind"] == MIGRATION_IN]
        migrants = rows[rows["origin_rank"] != rows["rank"]]
        for m in migrants:
            if int(m["id"]) not in origin_ids[int(m["origin_rank"])]:
                fail(f"migrant {m['id']} on rank {f['rank']} is not a row of its origin rank {m['origin_rank']}")
            if int(m["id"]) not in set(ins["id"].tolist()):
                fail(f"migrant row {m['id']} on rank {f['rank']} has no migration_in event")
        for e in ins:
            if int(e["to_rank"]) != f["rank"]:
                fail(f"migration_in on rank {f['rank']} addressed to {e['to_rank']}")
        print(f"rank {f['rank']}: {len(migrants)} migrant rows, {len(ins)} arrivals, "
              f"{int((ev['kind'] == MIGRATION_OUT).sum())} departures")
    # Every departure arrives (all ranks finished cleanly).
    outs = collections.Counter()
    ins = collections.Counter()
    for f in files:
        ev = f["events"]
        for e in ev[ev["kind"] == MIGRATION_OUT]:
            outs[(int(e["id"]), f["rank"], int(e["to_rank"]))] += 1
        for e in ev[ev["kind"] == MIGRATION_IN]:
            ins[(int(e["id"]), int(e["from_rank"]), f["rank"])] += 1
    if outs != ins:
        fail(f"departures and arrivals differ: {len(outs)} vs {len(ins)}")
    for r in range(nranks):
        got = {b for a, b in edges if a == r}
        want = expected_out(topology, nranks, r)
        if want is not None:
            if topology in ("ring", "bidirectional_ring", "torus", "none", "complete"):
                # Migrants go only along edges, and (p2p, in turn) to every neighbour over the run.
                if not got <= want:
                    fail(f"rank {r} sent to {sorted(got)}, its neighbours are {sorted(want)}")
                if topology != "complete" and got != want:
                    fail(f"rank {r} sent to {sorted(got)}, expected every neighbour {sorted(want)}")
        else:
            k = min(2, nranks - 1)
            if len(got) > k or len(got) == 0:
                fail(f"random topology: rank {r} sent to {sorted(got)}, out-degree should be {k}")
    if topology != "none" and not edges:
        fail("no migration at all")
    if topology == "none" and edges:
        fail("topology none migrated")
    print("ok")

elif case == "budget":
    run_dir = fresh(f"budget-{nranks}")
    budget = 300
    run(mpirun(nranks, "run", os.path.join(data, "wide.json"), "--out", run_dir, "--set",
               f"budget.evaluations_per_task={budget}", "progress.mode=off"))
    files = load(run_dir)
    common_checks(files, run_dir)
    n = judged(files)
    print(f"judged {n} (budget {budget}, {nranks} ranks)")
    if not (budget <= n <= budget + nranks - 1):
        fail(f"{n} evaluations for a global budget of {budget}")
    for f in files:
        r = f["rows"]
        mine = sum(1 for s in r["status"][r["origin_rank"] == r["rank"]] if int(s) not in JUDGED_NOT)
        if mine >= budget:
            fail(f"rank {f['rank']} alone used the whole budget")
        if (f["events"]["kind"] == STOP).sum() != 1:
            fail(f"rank {f['rank']} has no stop event")
    rep = json.load(open(os.path.join(run_dir, "report.json")))
    if rep["tasks"][0]["evaluations"] != n or rep["stopped"]:
        fail(f"report.json disagrees: {rep}")
    print("ok")

elif case == "groups":
    run_dir = fresh(f"groups-{nranks}")
    cfg = json.load(open(os.path.join(data, "wide.json")))
    cfg["tasks"] = [os.path.join(data, "wide"), os.path.join(data, "wide2")]
    cfg_path = os.path.join(work, "groups.json")
    json.dump(cfg, open(cfg_path, "w"))
    run(mpirun(nranks, "run", cfg_path, "--out", run_dir, "--set", "budget.evaluations_per_task=200",
               "progress.mode=off"))
    files = load(run_dir)
    common_checks(files, run_dir)
    for f in files:
        r = f["rows"]
        tasks = {f["tasks"][int(t)] for t in r["task"]}
        want = {["wide", "wide2"][f["rank"] % 2]}
        if tasks != want:
            fail(f"rank {f['rank']} worked on {tasks}, its group is {want}")
        ev = f["events"]
        for e in ev[ev["kind"] == MIGRATION_OUT]:
            if int(e["to_rank"]) % 2 != f["rank"] % 2:
                fail(f"rank {f['rank']} sent a migrant outside its task group (to {e['to_rank']})")
    rep = json.load(open(os.path.join(run_dir, "report.json")))
    for t in rep["tasks"]:
        if not (200 <= t["evaluations"] <= 200 + nranks):
            fail(f"task {t['task']}: {t['evaluations']} evaluations for a budget of 200")
    print("ok")

elif case == "bad_config":
    run_dir = fresh(f"bad-{nranks}")
    p = run(mpirun(nranks, "run", os.path.join(data, "islands.json"), "--out", run_dir, "--set",
                   "islands.migration.interval=0"), expect=None)
    if p.returncode != 2:
        print(p.stdout)
        fail(f"exit {p.returncode}, wanted 2")
    errors = [l for l in p.stdout.splitlines() if l.startswith("kevo: error:")]
    if len(errors) != 1 or "/islands/migration/interval" not in errors[0]:
        fail(f"wanted one error naming /islands/migration/interval, got {errors}")
    if os.path.exists(run_dir):
        fail("a run directory was left behind")
    print("ok")

elif case in ("sigterm", "kill", "hang"):
    run_dir = fresh(f"{case}-{nranks}")
    cmd = mpirun(nranks, "run", os.path.join(data, "wide.json"), "--out", run_dir, "--set", "progress.mode=off",
                 "islands.heartbeat_seconds=3")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Wait until every rank has flushed something.
    deadline = time.time() + 30
    while time.time() < deadline:
        if len(glob.glob(os.path.join(run_dir, "checkpoint", "rank-*.json"))) == nranks:
            break
        time.sleep(0.1)
    time.sleep(1.5)
    ranks = subprocess.run(["pgrep", "-P", str(proc.pid)], stdout=subprocess.PIPE, text=True).stdout.split()
    if len(ranks) != nranks:
        proc.kill()
        fail(f"found {len(ranks)} rank processes under mpirun, wanted {nranks}")
    victim = int(sorted(ranks, key=int)[-1])
    t0 = time.time()
    # hang: a rank that stops answering (SIGSTOP) must be noticed by the
    # others' heartbeat, not by mpirun.
    os.kill(victim, {"sigterm": signal.SIGTERM, "kill": signal.SIGKILL, "hang": signal.SIGSTOP}[case])
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("the run did not stop within 60 s")
    took = time.time() - t0
    print(out[-1500:])
    print(f"{case}: mpirun exited {proc.returncode} {took:.1f} s after the signal")
    if case == "sigterm":
        if proc.returncode != 0:
            fail(f"a stop signal should exit 0, got {proc.returncode}")
        if not json.load(open(os.path.join(run_dir, "report.json")))["stopped"]:
            fail("report.json does not say stopped")
    else:
        if proc.returncode == 0:
            fail("a killed rank should make the run exit non-zero")
        if took > 30:
            fail(f"stopping took {took:.1f} s (bound 30 s)")
        if case == "hang" and "a rank was lost" not in out:
            fail("the surviving ranks did not report the lost rank")
        # A candidate in flight at the kill, as the victim's checkpoint lists
        # it: resume must record it as lost, once.
        victim_rank = nranks - 1
        cp_file = os.path.join(run_dir, "checkpoint", f"rank-{victim_rank:04d}.json")
        cp = json.load(open(cp_file))
        # An id this rank had reserved but, at this speed, not reached.
        injected = cp["reserved_id"] - cp["id_stride"]
        cp["in_flight"].append({"id": injected, "task": "wide"})
        json.dump(cp, open(cp_file, "w"))
    before = load(run_dir)
    before_ids = own_ids(before)
    done = judged(before)
    print(f"{len(before_ids)} records, {done} evaluations before resume")
    # Resume with another number of ranks and a budget a little above what was done.
    n2 = max(2, nranks // 2) if case == "kill" else nranks
    run(mpirun(n2, "resume", run_dir, "--set", f"budget.evaluations_per_task={done + 200}", "progress.mode=off"),
        timeout=120)
    after = load(run_dir)
    after_ids = own_ids(after)
    dup = [i for i, n in after_ids.items() if n > 1]
    if dup:
        fail(f"duplicate ids after resume: {dup[:5]}")
    missing = set(before_ids) - set(after_ids)
    if missing:
        fail(f"records flushed before the resume are gone: {sorted(missing)[:5]}")
    n_after = judged(after)
    print(f"after resume: {len(after_ids)} records, {n_after} evaluations")
    # At most the extra budget; at least some work. Exactly +200 is not
    # required here: on a fast machine the first run explores most of the
    # small 'wide' space and the resumed search may end on stagnation first
    # (the exact global budget is asserted by the mpi_budget tests).
    if not (done < n_after <= done + 200 + n2):
        fail(f"resume did {n_after - done} evaluations, wanted 1..{200 + n2}")
    if not any((f["events"]["kind"] == RESUME).any() for f in after):
        fail("no resume event")
    if case != "sigterm":
        lost = [int(i) for f in after for i in f["rows"]["id"][f["rows"]["status"] == 10]]
        print(f"{len(lost)} candidate(s) recorded as lost")
        if lost.count(injected) != 1:
            fail(f"the in-flight candidate {injected} was not recorded as lost exactly once")
    print("ok")
elif case == "param_resume":
    # A resumed run must not propose again a point judged before it
    # (docs/islands.md#checkpoint-and-resume): parameter mutation alone, on the toy task,
    # proposes an untried point while one exists (261 valid points; 160
    # evaluations in all), so no candidate of the second session may have
    # the source of one of the first. An island that does not know the first
    # session's points proposes the restored population's neighbourhoods,
    # judged in the first session, again.
    run_dir = fresh(f"param-resume-{nranks}")
    run(mpirun(nranks, "run", os.path.join(data, "param_resume.json"), "--out", run_dir))
    before = load(run_dir)
    def with_source(r):   # operator failures and lost candidates have none (hash 0)
        return int(r["status"]) not in (9, 10)

    first = {int(r["id"]): int(r["hash"]) for f in before for r in f["rows"]}
    run(mpirun(nranks, "resume", run_dir, "--set", "budget.evaluations_per_task=160"))
    after = load(run_dir)
    old_hashes = {int(r["hash"]) for f in before for r in f["rows"] if with_source(r)}
    new = [r for f in after for r in f["rows"] if int(r["id"]) not in first]
    again = [int(r["id"]) for r in new if with_source(r) and int(r["hash"]) in old_hashes]
    print(f"{len(first)} candidates before the resume, {len(new)} after; {len(again)} with an earlier source")
    if not new:
        fail("the resumed session recorded nothing")
    if again:
        fail(f"the resumed session proposed points judged before it: ids {again[:10]}")
    print("ok")
elif case == "migrants_resume":
    # Migrants across a clean stop and a resume with NRANKS_AFTER ranks
    # (docs/islands.md#migration): a migrant keeps its id, parents and origin
    # rank; no rank file holds an id twice; a candidate already sent to a
    # rank, before or after the resume, is not sent there again; and no rank
    # receives an id its file already holds (its origin included).
    n2 = int(arg)
    run_dir = fresh(f"migrants-resume-{nranks}-{n2}")
    common = ["progress.mode=off", "islands.topology=ring", "islands.migration.interval=4",
              "islands.migration.count=3", "islands.poll_seconds=0"]
    run(mpirun(nranks, "run", os.path.join(data, "islands.json"), "--out", run_dir, "--set",
               "budget.evaluations_per_task=120", *common))
    before = load(run_dir)
    done = judged(before)
    run(mpirun(n2, "resume", run_dir, "--set", f"budget.evaluations_per_task={done + 120}", *common))
    after = load(run_dir)
    if len(after) != max(nranks, n2):
        fail(f"{len(after)} lineage files after the resume")
    before_by_rank = {f["rank"]: f for f in before}
    FIELDS = ("parent0", "parent1", "hash", "status", "speedup", "op")
    maker = {}          # id -> (rank of the file holding its origin row, that row)
    for f in after:
        r = f["rows"]
        for row in r[r["origin_rank"] == r["rank"]]:
            maker[int(row["id"])] = (f["rank"], row)
    wrong_origin, not_made, changed, twice = [], [], [], []
    for f in after:
        seen = collections.Counter(int(i) for i in f["rows"]["id"])
        twice += [(f["rank"], i, n) for i, n in seen.items() if n > 1]
        for m in f["rows"][f["rows"]["origin_rank"] != f["rows"]["rank"]]:
            i = int(m["id"])
            if i not in maker:
                not_made.append((f["rank"], i))
                continue
            home, orig = maker[i]
            if int(m["origin_rank"]) != home:
                wrong_origin.append((f["rank"], i, int(m["origin_rank"]), home))
            if any(m[k] != orig[k] for k in FIELDS):
                changed.append((f["rank"], i))
    # Receipts and departures: over both sessions, and those of the resumed
    # session against what the files held before it.
    received_twice, received_known, sent_twice, sent_again, sent_home = [], [], [], [], []
    outs = collections.Counter()
    old_ids_sent_after = 0
    first_ids = {int(i) for f in before for i in f["rows"]["id"]}
    for f in after:
        ev = f["events"]
        ins = collections.Counter(int(e["id"]) for e in ev[ev["kind"] == MIGRATION_IN])
        received_twice += [(f["rank"], i, n) for i, n in ins.items() if n > 1]
        # Its origin holds it from the start: nothing is sent back there.
        sent_home += [(f["rank"], i) for i in ins if maker.get(i, (None,))[0] == f["rank"]]
        for e in ev[ev["kind"] == MIGRATION_OUT]:
            outs[(int(e["id"]), int(e["to_rank"]))] += 1
        old = before_by_rank.get(f["rank"])
        n_old_events = len(old["events"]) if old else 0
        held = set(int(i) for i in old["rows"]["id"]) if old else set()
        if old:
            oe = old["events"]
            held |= {int(i) for i in oe[oe["kind"] == MIGRATION_IN]["id"]}
        for e in ev[n_old_events:]:
            if int(e["kind"]) == MIGRATION_IN and int(e["id"]) in held:
                received_known.append((f["rank"], int(e["id"])))
            if int(e["kind"]) == MIGRATION_OUT and int(e["id"]) in first_ids:
                old_ids_sent_after += 1
    sent_twice = [k for k, n in outs.items() if n > 1]
    reached_before = set()
    for f in before:
        reached_before |= {(int(i), f["rank"]) for i in f["rows"]["id"]}
        ev = f["events"]
        reached_before |= {(int(e["id"]), int(e["to_rank"])) for e in ev[ev["kind"] == MIGRATION_OUT]}
    for f in after:
        old = before_by_rank.get(f["rank"])
        ev = f["events"][len(old["events"]) if old else 0:]
        sent_again += [(int(e["id"]), int(e["to_rank"])) for e in ev[ev["kind"] == MIGRATION_OUT]
                       if (int(e["id"]), int(e["to_rank"])) in reached_before]
    migrants = sum(int((f["rows"]["origin_rank"] != f["rows"]["rank"]).sum()) for f in after)
    print(f"{nranks} -> {n2} ranks: {migrants} migrant rows; {old_ids_sent_after} departures of candidates of the "
          f"first session after the resume")
    print(f"  migrant rows with the wrong origin_rank: {len(wrong_origin)} {wrong_origin[:5]}")
    print(f"  migrant rows without an origin row: {len(not_made)} {not_made[:5]}")
    print(f"  migrant rows that differ from their origin row: {len(changed)} {changed[:5]}")
    print(f"  (rank file, id) held twice: {len(twice)} {twice[:5]}")
    print(f"  ids a rank received twice: {len(received_twice)} {received_twice[:5]}")
    print(f"  ids received by their origin rank: {len(sent_home)} {sent_home[:5]}")
    print(f"  ids received after the resume by a rank that held them: {len(received_known)} {received_known[:5]}")
    print(f"  (id, destination) sent twice: {len(sent_twice)} {sent_twice[:5]}")
    print(f"  sent after the resume to a rank they had reached before: {len(sent_again)} {sent_again[:5]}")
    if (wrong_origin or not_made or changed or twice or received_twice or sent_home or received_known or sent_twice
            or sent_again):
        fail("migrants after a resume")
    # The case must have happened: migration in both sessions, and candidates
    # of the first session sent on after the resume.
    if not any((f["events"]["kind"] == MIGRATION_OUT).any() for f in before):
        fail("no migration before the resume")
    if old_ids_sent_after == 0:
        fail("no candidate of the first session migrated after the resume")
    print("ok")
elif case == "device_binding":
    # KEVO is kevo_device_probe (tests/mpi/device_probe.cpp): `kevo run` whose
    # backend records the device environment at every stage that starts
    # processes in a real backend (built, prepare, first submit). Each rank
    # must see its own device at every one of them: the binding is in effect
    # before any backend work (docs/islands.md, Start-up).
    def probe(name, binding, env_extra, want):
        run_dir = fresh(f"device-{name}-{nranks}")
        out = fresh(f"device-{name}-{nranks}-probe")
        env = dict(os.environ, KEVO_PROBE_OUT=out, **env_extra)
        for k in ("CUDA_VISIBLE_DEVICES", "KEVO_DEVICE_INDEX"):
            if k not in env_extra:
                env.pop(k, None)
        cmd = mpirun(nranks, "run", os.path.join(data, "islands.json"), "--out", run_dir, "--set",
                     f"islands.device_binding={binding}", f"islands.devices={nranks}",
                     "budget.evaluations_per_task=40", "progress.mode=off")
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, env=env)
        print(f"$ {' '.join(cmd)}\n  -> exit {p.returncode}")
        if p.returncode != 0:
            print(p.stdout[-3000:])
            fail(f"exit {p.returncode}")
        for r in range(nranks):
            path = os.path.join(out, f"rank-{r}.jsonl")
            if not os.path.exists(path):
                fail(f"rank {r} recorded nothing ({path})")
            recs = [json.loads(line) for line in open(path)]
            stages = [x["stage"] for x in recs]
            for s in ("construct", "prepare", "submit"):
                if s not in stages:
                    fail(f"{name}: rank {r} recorded no '{s}' stage: {stages}")
            for x in recs:
                seen = {k: x[k] for k in ("CUDA_VISIBLE_DEVICES", "KEVO_DEVICE_INDEX")}
                if seen != want(r):
                    fail(f"{name}: rank {r} ran its '{x['stage']}' with {seen}, wanted {want(r)}")
            print(f"{name}: rank {r}: {stages} all on {want(r)}")
        files = load(run_dir)
        for f in files:
            ev = f["events"]
            notes = [t for t in ev[ev["kind"] == 6]["text"]]
            with h5py.File(f["file"], "r") as h:
                texts = [h["text"][t].decode() for t in notes]
            r = f["rank"]
            head = f"device binding {binding}: local rank {r} -> device {r} ("
            if sum(1 for t in texts if t.startswith(head)) != 1:
                fail(f"{name}: rank {r}: no note '{head}...' in {texts}")

    probe("index", "index", {}, lambda r: {"CUDA_VISIBLE_DEVICES": None, "KEVO_DEVICE_INDEX": str(r)})
    probe("cvd", "cuda_visible_devices", {}, lambda r: {"CUDA_VISIBLE_DEVICES": str(r), "KEVO_DEVICE_INDEX": None})
    # A list given by the scheduler: each rank keeps its entry.
    given = [f"GPU-fake{r}" for r in range(nranks)]
    probe("cvd-list", "cuda_visible_devices", {"CUDA_VISIBLE_DEVICES": ",".join(given)},
          lambda r: {"CUDA_VISIBLE_DEVICES": given[r], "KEVO_DEVICE_INDEX": None})
    print("ok")
else:
    fail(f"unknown case {case}")
