#!/usr/bin/env bash
# The project's sbatch scripts under a real Slurm: a private munged,
# slurmctld and slurmd on 127.0.0.1 (one node, config written here into a
# temporary folder), then
#   1. scripts/slurm/kevo.sbatch with a 2-rank null-backend run: SIGUSR1 to
#      the batch shell must make the run checkpoint and exit 0 resumable, the
#      script requeues the job, and the restarted job resumes the run; then
#      `scontrol requeue` from outside, and the job resumes once more;
#   2. scripts/slurm/ablation.sbatch as a 2-index job array: each index runs
#      into its own run directory with its line of overrides applied;
#   3. scancel of a CPU run (SIGTERM, then SIGKILL): a clean stop, resumable;
#   4. `kevo campaign sbatch`: a campaign's cells as a job array, one index
#      signalled (requeued, resumed), every cell done.
# Every daemon started here is stopped by PID on exit, also on failure.
#
# usage: slurm_kevo.sh KEVO SOURCE_DIR WORK_DIR PYTHON
set -euo pipefail

kevo="$(readlink -f "$1")"
src="$(readlink -f "$2")"
work="$3"
py="$4"

fail() { echo "FAIL: $*"; exit 1; }
log() { echo "[$(date +%T)] $*"; }

# Daemons of an earlier run that was killed outright (SIGKILL, e.g. a ctest
# timeout, runs no trap): each is recognised by the SLURM_CONF it was started
# with, so a reused PID is never hit.
if [ -f "$work/daemons.pids" ]; then
  while read -r pid conf; do
    if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$conf"; then
      echo "stopping daemon $pid left by an earlier run"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    case "$conf" in */kevo-slurm.*/slurm.conf) rm -rf "$(dirname "$conf")" ;; esac
  done < "$work/daemons.pids"
fi
rm -rf "$work"
mkdir -p "$work"
work="$(readlink -f "$work")"
# munged requires every folder above its socket to be searchable by everyone
# and its key folder private: the daemons' state lives in its own folder.
state="$(mktemp -d "${TMPDIR:-/tmp}/kevo-slurm.XXXXXX")"
chmod 755 "$state"
mkdir -m 700 "$state/munge"
mkdir -p "$state/ctld" "$state/spool" "$state/log"

munged_pid="" ctld_pid="" slurmd_pid=""

stop_pid() {   # stop_pid PID NAME: SIGTERM, then SIGKILL after 10 s
  local pid="$1" i
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "cleanup: $2 (pid $pid) ignored SIGTERM: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  set +e
  if [ "$rc" -ne 0 ] && [ -n "$ctld_pid" ] && kill -0 "$ctld_pid" 2>/dev/null; then
    echo "---- jobs"; scontrol -o show job 2>/dev/null | cut -c1-400
  fi
  if [ -n "$ctld_pid" ] && kill -0 "$ctld_pid" 2>/dev/null; then
    # Jobs first, while slurmd still runs: their slurmstepd processes would
    # otherwise outlive the daemons.
    local jobs
    jobs="$(squeue -h -o %A 2>/dev/null)"
    if [ -n "$jobs" ]; then
      echo "cleanup: cancelling jobs $jobs"
      scancel $jobs 2>/dev/null
      for _ in $(seq 100); do
        [ -z "$(squeue -h -o %A 2>/dev/null)" ] && break
        sleep 0.1
      done
    fi
  fi
  stop_pid "$slurmd_pid" slurmd
  stop_pid "$ctld_pid" slurmctld
  stop_pid "$munged_pid" munged
  if [ "$rc" -ne 0 ]; then
    echo "---- slurmctld log (tail)"; tail -n 30 "$state/log/slurmctld.log" 2>/dev/null
    echo "---- slurmd log (tail)"; tail -n 30 "$state/log/slurmd.log" 2>/dev/null
    for f in "$work"/*.out; do [ -f "$f" ] && { echo "---- $f"; tail -n 40 "$f"; }; done
  fi
  rm -rf "$state"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Two free TCP ports on loopback, so that concurrent runs do not collide.
read -r ctld_port slurmd_port < <("$py" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')

export SLURM_CONF="$state/slurm.conf"
# One node "localhost" on 127.0.0.1 with 8 CPUs (declared: the test machine
# may have 2) and two GPUs backed by character devices, so that kevo.sbatch's
# --gpus-per-task=1 is scheduled as on a GPU cluster. cred_expire=10: a
# requeued job may start again 10 s after it ended (the default is 120 s).
cat > "$SLURM_CONF" <<EOF
ClusterName=kevotest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge.socket,cred_expire=10
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
SlurmdParameters=config_overrides
GresTypes=gpu
MinJobAge=600
# SIGTERM to SIGKILL when a job is cancelled: 1 s, stricter than the 30 s
# default and as strict as Open MPI's mpirun.
KillWait=1
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 Gres=gpu:2 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
printf 'Name=gpu File=/dev/null\nName=gpu File=/dev/zero\n' > "$state/gres.conf"

# ---- daemons (foreground mode, so that $! is the daemon's own PID)
dd if=/dev/urandom of="$state/munge/munge.key" bs=128 count=1 status=none
chmod 600 "$state/munge/munge.key"
munged -F --socket="$state/munge.socket" --key-file="$state/munge/munge.key" \
  --pid-file="$state/munge/munged.pid" --seed-file="$state/munge/seed" \
  --log-file="$state/log/munged.log" >"$state/log/munged.out" 2>&1 &
munged_pid=$!
for _ in $(seq 50); do [ -S "$state/munge.socket" ] && break; sleep 0.1; done
[ -S "$state/munge.socket" ] || { cat "$state/log/munged.out"; fail "munged did not start"; }

slurmctld -D -i >"$state/log/slurmctld.out" 2>&1 &
ctld_pid=$!
# The host's name is not "localhost": tell slurmd which node it is.
slurmd -D -N localhost >"$state/log/slurmd.out" 2>&1 &
slurmd_pid=$!
for _ in $(seq 100); do
  [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && break
  sleep 0.2
done
[ "$(sinfo -h -o %T 2>/dev/null)" = idle ] || { sinfo; fail "the node did not become idle"; }
for pid in "$munged_pid" "$ctld_pid" "$slurmd_pid"; do echo "$pid $SLURM_CONF"; done > "$work/daemons.pids"
log "slurm up: munged $munged_pid, slurmctld $ctld_pid (port $ctld_port), slurmd $slurmd_pid (port $slurmd_port)"

job_field() {   # job_field JOBID FIELD
  scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}
wait_for() {    # wait_for SECONDS DESCRIPTION COMMAND...
  local secs="$1" what="$2" i
  shift 2
  for i in $(seq $((secs * 5))); do
    "$@" && return 0
    sleep 0.2
  done
  fail "timed out after ${secs} s waiting for: $what"
}
state_is() { [ "$(job_field "$1" JobState)" = "$2" ]; }
state_in() { local s; s="$(job_field "$1" JobState)"; shift; for x in "$@"; do [ "$s" = "$x" ] && return 0; done; return 1; }

tiny="$src/tests/slurm/data/tiny.json"
export KEVO="$kevo"

# ---- 1. kevo.sbatch: signal, checkpoint, requeue, resume
run_dir="$work/run"
# Each session stops after 10 s of wall time (budget.wall_seconds counts per
# session): long enough to be signalled, short enough for CI.
jid="$(KEVO_RUN_DIR="$run_dir" sbatch --parsable --chdir="$work" --output="$work/kevo-%j.out" \
  --ntasks-per-node=2 --cpus-per-task=1 \
  "$src/scripts/slurm/kevo.sbatch" "$tiny" \
  --set budget.evaluations_per_task=100000000 budget.wall_seconds=10)"
log "submitted kevo.sbatch as job $jid"
out="$work/kevo-$jid.out"
both_checkpointed() { [ -f "$run_dir/checkpoint/rank-0000.json" ] && [ -f "$run_dir/checkpoint/rank-0001.json" ]; }
wait_for 60 "job $jid running with both ranks checkpointed" both_checkpointed
state_is "$jid" RUNNING || fail "job $jid is $(job_field "$jid" JobState), wanted RUNNING"
sleep 1
log "SIGUSR1 to the batch shell of job $jid"
scancel --signal=USR1 --batch "$jid"
step_done() { grep -q "kevo.sbatch: step exited" "$out" 2>/dev/null; }
wait_for 60 "the first step of job $jid to end" step_done
grep -q "kevo.sbatch: step exited 0" "$out" || fail "the stopped step did not exit 0: $(grep 'step exited' "$out")"
cp "$run_dir/report.json" "$work/report-session1.json"
"$py" - "$work/report-session1.json" "$run_dir" <<'EOF' || fail "first session"
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["stopped"] is True, "report.json of the signalled session does not say stopped"
for k in (0, 1):
    cp = json.load(open(os.path.join(sys.argv[2], "checkpoint", f"rank-{k:04d}.json")))
    assert cp.get("in_flight") == [], f"rank {k}: candidates still in flight after a clean stop: {cp.get('in_flight')}"
print("session 1: stopped cleanly,", r["tasks"][0]["evaluations"], "evaluations")
EOF

# The script requeues the job itself; it becomes eligible after cred_expire.
wait_for 60 "job $jid to be requeued" state_in "$jid" PENDING REQUEUED REQUEUE_HOLD
log "job $jid requeued: $(job_field "$jid" JobState) $(job_field "$jid" Reason)"
# Started (or already over: a failure shows in the checks that follow).
start_now() { scontrol update jobid="$jid" StartTime=now 2>/dev/null; ! state_in "$jid" PENDING REQUEUED REQUEUE_HOLD REQUEUE_FED; }
wait_for 60 "the requeued job $jid to start" start_now
resumed_once() { grep -q "restart 1: resume $run_dir" "$out"; }
wait_for 30 "the restarted job to run kevo resume" resumed_once

# A requeue from outside (preemption, an operator): Slurm ends the running
# session (the ranks get SIGTERM) and starts the job again, which resumes.
both_resumed() {
  local n=0 f
  for f in "$run_dir"/checkpoint/rank-*.json; do [ "$f" -nt "$out.mark" ] && n=$((n + 1)); done
  [ "$n" = 2 ]
}
touch "$out.mark"
wait_for 60 "the resumed session to checkpoint" both_resumed
log "scontrol requeue $jid (from outside, while it runs)"
scontrol requeue "$jid"
wait_for 60 "job $jid to be requeued again" state_in "$jid" PENDING REQUEUED REQUEUE_HOLD
wait_for 60 "the requeued job $jid to start again" start_now
wait_for 60 "job $jid to complete" state_in "$jid" COMPLETED FAILED CANCELLED
state_is "$jid" COMPLETED || fail "job $jid ended $(job_field "$jid" JobState) ($(job_field "$jid" ExitCode))"
[ "$(job_field "$jid" ExitCode)" = "0:0" ] || fail "job $jid exit code $(job_field "$jid" ExitCode)"
[ "$(job_field "$jid" Restarts)" = 2 ] || fail "job $jid restarted $(job_field "$jid" Restarts) times, wanted 2"
grep -q "restart 2: resume $run_dir" "$out" || fail "the job requeued from outside did not run kevo resume"
[ "$(grep 'kevo.sbatch: step exited' "$out" | tail -n 1)" = "kevo.sbatch: step exited 0" ] ||
  fail "the last session did not exit 0"
"$kevo" report "$run_dir" --json > "$work/report.txt" || fail "kevo report failed"
"$py" - "$run_dir" "$work/report-session1.json" "$work/report.txt" <<'EOF' || fail "resumed run"
import glob, json, os, sys
import h5py
run_dir = sys.argv[1]
s1 = json.load(open(sys.argv[2]))
final = json.load(open(os.path.join(run_dir, "report.json")))
assert final["stopped"] is False, "the resumed session was stopped"
files = sorted(glob.glob(os.path.join(run_dir, "lineage", "rank-*.h5")))
assert len(files) == 2, files
ids, kinds = [], []
for f in files:
    with h5py.File(f, "r") as h:
        rank = int(h.attrs["rank"])
        rows = h["candidates"][:]
        own = rows[rows["origin_rank"] == rows["rank"]]
        ids += own["id"].tolist()
        ev = h["events"][:]
        kinds += ev["kind"].tolist()
        # kevo.sbatch binds each rank to the GPU of its SLURM_LOCALID.
        notes = [h["text"][t].decode() for t in ev[ev["kind"] == 6]["text"]]
        want = f"device binding cuda_visible_devices: local rank {rank} -> device {rank} ("
        bound = [n for n in notes if n.startswith(want)]
        assert len(bound) == 3, f"rank {rank}: wanted '{want}...' once per session, notes: {notes}"
assert len(ids) == len(set(ids)), "an id was recorded twice"
assert kinds.count(2) == 4, f"wanted one resume event per rank and restart, got {kinds.count(2)}"
rep = json.load(open(sys.argv[3]))
e1, e2 = s1["tasks"][0]["evaluations"], rep["tasks"][0]["evaluations"]
assert e2 > e1, f"the resumed session did no work ({e1} -> {e2})"
assert rep["records"] == len(ids), (rep["records"], len(ids))
print(f"resumed: {e1} -> {e2} evaluations, {len(ids)} records, no id twice")
EOF
log "kevo.sbatch: signal, checkpoint, requeue and resume ok"

# ---- 2. ablation.sbatch as a job array of 2
cat > "$work/sweep.txt" <<'EOF'
# one line of overrides per array index
islands.topology=complete
islands.topology=none islands.migration.count=1
EOF
aid="$(sbatch --parsable --array=0-1 --chdir="$work" --output="$work/ablation-%A_%a.out" \
  --ntasks=2 --cpus-per-task=1 "$src/scripts/slurm/ablation.sbatch" "$tiny" sweep.txt sweep)"
log "submitted ablation.sbatch as array job $aid"
array_done() { [ -z "$(squeue -h -j "$aid" -o %A 2>/dev/null)" ]; }
wait_for 90 "array job $aid to finish" array_done
for k in 0 1; do
  st="$(job_field "${aid}_$k" JobState)"
  [ "$st" = COMPLETED ] || fail "array index $k ended $st ($(job_field "${aid}_$k" ExitCode))"
done
"$py" - "$work/sweep" <<'EOF' || fail "ablation sweep"
import json, os, sys
sweep = sys.argv[1]
want = {0: {"topology": "complete"}, 1: {"topology": "none"}}
for k, w in want.items():
    d = os.path.join(sweep, str(k))
    c = json.load(open(os.path.join(d, "config.json")))
    isl = c["islands"]
    for key, v in w.items():
        assert isl[key] == v, f"{d}: islands.{key} = {isl[key]}, wanted {v}"
    assert (isl["migration"]["count"] == 1) == (k == 1), f"{d}: migration.count = {isl['migration']['count']}"
    rep = json.load(open(os.path.join(d, "report.json")))
    ev = rep["tasks"][0]["evaluations"]
    assert 300 <= ev <= 301, f"{d}: {ev} evaluations, wanted the budget of 300"
    assert open(os.path.join(sweep, f"{k}.overrides")).read().split()[0].startswith("islands.topology=")
    print(f"index {k}: {d} islands = {json.dumps(isl)[:80]}..., {ev} evaluations")
EOF
log "ablation.sbatch: 2 array indices ok"

# ---- 3. scancel without --signal, CPU work in flight: slurmd sends every
# task SIGTERM and, KillWait (1 s here, 30 s by default) later, SIGKILL. The
# run must be complete before that: final checkpoints recording the SIGTERM,
# a stop event in each rank file, report.json; then `kevo resume` continues.
cpu_dir="$work/cpu-run"
cat > "$work/cpu.json" <<EOF
{"name": "slurm-cpu", "seed": 5, "tasks": ["$src/configs/tasks/cpu/reduce_sum", "$src/configs/tasks/cpu/sgemm"],
 "budget": {"evaluations_per_task": 100000},
 "island": {"population": 4, "in_flight": 4},
 "islands": {"checkpoint_seconds": 0.5},
 "operators": [{"type": "param_mutation"}],
 "backend": {"type": "cpu"}, "progress": {"mode": "off"}}
EOF
cid="$(KEVO_RUN_DIR="$cpu_dir" sbatch --parsable --chdir="$work" --output="$work/kevo-cpu-%j.out" \
  --ntasks-per-node=2 --cpus-per-task=1 "$src/scripts/slurm/kevo.sbatch" "$work/cpu.json")"
log "submitted kevo.sbatch (CPU backend) as job $cid"
searching() {   # both ranks past their seed, and a CPU judge running
  local f
  for f in "$cpu_dir"/checkpoint/rank-0000.json "$cpu_dir"/checkpoint/rank-0001.json; do
    [ -f "$f" ] || return 1
    "$py" -c 'import json,sys; c=json.load(open(sys.argv[1])); sys.exit(0 if (c["next_id"]-c["rank"])//2 >= 3 else 1)' "$f" 2>/dev/null || return 1
  done
  pgrep -f kevo-cpu-worker >/dev/null
}
wait_for 120 "job $cid searching with CPU judgements in flight" searching
log "scancel $cid (no --signal), $(pgrep -fc kevo-cpu-worker) CPU judge process(es) running"
scancel "$cid"
wait_for 60 "job $cid to end" state_in "$cid" CANCELLED COMPLETED FAILED
"$py" - "$cpu_dir" <<'EOF' || fail "scancel of a CPU run"
import glob, json, os, sys
import h5py
d = sys.argv[1]
r = json.load(open(os.path.join(d, "report.json")))
assert r["stopped"] is True and r["stop_reason"] == "SIGTERM", f"report.json: {r['stopped']} {r['stop_reason']!r}"
for k in (0, 1):
    cp = json.load(open(os.path.join(d, "checkpoint", f"rank-{k:04d}.json")))
    assert cp["final"] and cp["stopped"], f"rank {k}: checkpoint not final: {cp}"
    assert cp.get("signal", {}).get("name") == "SIGTERM", f"rank {k}: checkpoint signal {cp.get('signal')}"
    assert cp["in_flight"] == [], f"rank {k}: still in flight: {cp['in_flight']}"
for f in sorted(glob.glob(os.path.join(d, "lineage", "rank-*.h5"))):
    with h5py.File(f, "r") as h:
        ev = h["events"][:]
        ev = ev[ev["time"] >= 0]
        assert int(ev[-1]["kind"]) == 1, f"{f}: the last event is not a stop event"
        assert "SIGTERM" in h["text"][ev[-1]["text"]].decode(), f"{f}: the stop event does not name SIGTERM"
print("scancel: final checkpoints, stop events, report.json")
EOF
log "kevo resume of the cancelled run (one process)"
"$kevo" resume "$cpu_dir" --set budget.evaluations_per_task=8 progress.mode=off >"$work/cpu-resume.out" 2>&1 ||
  { tail -20 "$work/cpu-resume.out"; fail "kevo resume of the cancelled CPU run"; }
"$py" - "$cpu_dir" <<'EOF' || fail "resumed CPU run"
import glob, os, sys
import h5py
ids = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "lineage", "rank-*.h5"))):
    with h5py.File(f, "r") as h:
        rows = h["candidates"][:]
        ids += rows[rows["origin_rank"] == rows["rank"]]["id"].tolist()
assert len(ids) == len(set(ids)), "an id was recorded twice"
print(f"resumed: {len(ids)} records, no id twice")
EOF
log "scancel of a CPU run: clean stop and resume ok"

# ---- 4. kevo campaign sbatch: 2 configurations x 1 seed as a job array; the
# first index signalled (SIGUSR1 to its batch shell) stops its cell
# resumable, requeues itself and resumes it with `kevo resume`; both cells
# end done, and a second sbatch submits nothing.
cat > "$work/campaign.json" <<EOF
{"name": "slurm-campaign", "base_config": "$tiny",
 "configurations": {"ring": {}, "none": {"set": {"islands.topology": "none"}}},
 "seeds": [3], "budget": {"evaluations_per_task": 100000000, "wall_seconds": 8},
 "slurm": {"ranks": 1, "cpus_per_task": 1, "time": "00:10:00"}}
EOF
camp="$work/campaign"
"$kevo" campaign sbatch "$work/campaign.json" --out "$camp" > "$work/campaign-sbatch.out" 2>&1 ||
  { cat "$work/campaign-sbatch.out"; fail "kevo campaign sbatch"; }
cat "$work/campaign-sbatch.out"
caid="$(sed -n 's/.*submitted job array \([0-9]*\).*/\1/p' "$work/campaign-sbatch.out")"
[ -n "$caid" ] || fail "no job id in the sbatch output"
cell0_checkpointed() { [ -f "$camp/cells/none.s3/checkpoint/rank-0000.json" ]; }
wait_for 60 "campaign cell none.s3 (index 0) to checkpoint" cell0_checkpointed
sleep 1
log "SIGUSR1 to the batch shell of ${caid}_0"
scancel --signal=USR1 --batch "${caid}_0"
requeued0() { state_in "${caid}_0" PENDING REQUEUED REQUEUE_HOLD; }
wait_for 60 "array task ${caid}_0 to be requeued" requeued0
start0() { scontrol update jobid="${caid}_0" StartTime=now 2>/dev/null; ! state_in "${caid}_0" PENDING REQUEUED REQUEUE_HOLD REQUEUE_FED; }
wait_for 60 "the requeued array task ${caid}_0 to start" start0
campaign_done() { [ -z "$(squeue -h -j "$caid" -o %A 2>/dev/null)" ]; }
wait_for 90 "campaign array $caid to finish" campaign_done
"$kevo" campaign status "$camp" --json > "$work/campaign-status.json" || fail "kevo campaign status"
"$py" - "$work/campaign-status.json" "$camp" <<'EOF' || fail "campaign under Slurm"
import json, os, sys
st = {c["id"]: c for c in json.load(open(sys.argv[1]))["cells"]}
assert sorted(st) == ["none.s3", "ring.s3"], st
for cid, c in st.items():
    assert c["state"] == "done", f"{cid}: {c['state']} {c['error']}"
log = open(os.path.join(sys.argv[2], "logs", "none.s3.log")).read()
heads = [l for l in log.splitlines() if l.startswith("=== attempt")]
assert len(heads) == 2 and " resume " in heads[1], f"none.s3 was not resumed after the signal: {heads}"
other = [l for l in open(os.path.join(sys.argv[2], "logs", "ring.s3.log")).read().splitlines()
         if l.startswith("=== attempt")]
assert len(other) == 1, f"ring.s3 ran more than once: {other}"
cfg = json.load(open(os.path.join(sys.argv[2], "cells", "none.s3", "config.json")))
assert cfg["islands"]["topology"] == "none" and cfg["seed"] == 3, cfg["islands"]
print("campaign under Slurm: both cells done; none.s3 resumed after SIGUSR1:", heads)
EOF
"$kevo" campaign sbatch "$work/campaign.json" --out "$camp" | grep -q "nothing to submit" ||
  fail "a second campaign sbatch submitted finished cells"
log "kevo campaign sbatch: job array, signal, requeue, resume ok"
echo "ok"
