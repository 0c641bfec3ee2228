#!/usr/bin/env bash
# Migration and statistics overhead of a multi-rank run (docs/benchmarks.md,
# "Islands over MPI"): for 2..32 ranks (oversubscribed), the null backend,
# a fixed wall time; each rank measures the time spent inside the island
# network's poll() (migration sends/receives, statistics rounds, budget
# shares) against its whole loop time, and writes it into its final
# checkpoint. Then a cost model is fitted and extrapolated to 1024 ranks.
#
# usage: scripts/bench_islands.sh [BUILD_DIR] [SECONDS] [RANKS...]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build}"; shift || true
seconds="${1:-6}"; shift || true
ranks=("$@"); [ ${#ranks[@]} -gt 0 ] || ranks=(2 4 8 16 32)
kevo="$build/bin/kevo"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1

for n in "${ranks[@]}"; do
  mpiexec -np "$n" "$kevo" run "$here/tests/mpi/data/wide.json" --out "$work/np$n" \
    --set budget.wall_seconds="$seconds" budget.evaluations_per_task=100000000 progress.mode=off \
          islands.stats_seconds=0.25 islands.checkpoint_seconds=10 islands.heartbeat_seconds=60 \
          islands.migration.interval=50 islands.migration.count=2 lineage.flush_seconds=2 >/dev/null
done

/usr/bin/python3 - "$work" "$(nproc)" "${ranks[@]}" <<'PY'
import glob, json, math, sys
work, cores, ranks = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3:]]
print(f"islands overhead: null backend (the worst case: a loop turn does almost nothing else), ring, migration")
print(f"every 50 evaluations (2 migrants), statistics every 0.25 s; {cores} cores, ranks oversubscribed")
print("cpu = CPU time inside the network's poll() / CPU time of the loop (the honest figure when ranks share")
print("cores: wall time inside an MPI call also counts other ranks running while this one yields)")
print(f"{'ranks':>5} {'evals/s':>8} {'polls/s/rank':>12} {'rounds':>6} {'migrants':>8} {'cpu us/poll':>11} "
      f"{'cpu mean':>8} {'cpu max':>8} {'wall mean':>9}")
xs, ys, turns, rates = [], [], [], []
for n in ranks:
    cs = [json.load(open(f))["costs"] for f in sorted(glob.glob(f"{work}/np{n}/checkpoint/rank-*.json"))]
    rep = json.load(open(f"{work}/np{n}/report.json"))
    evals = sum(t["evaluations"] for t in rep["tasks"])
    loop = max(c["loop_seconds"] - c["finish_seconds"] for c in cs)
    cpu = [c["network_cpu_seconds"] / max(1e-9, c["loop_cpu_seconds"]) for c in cs]
    wall = [c["network_seconds"] / max(1e-9, c["loop_seconds"] - c["finish_seconds"]) for c in cs]
    polls = sum(c["polls"] for c in cs)
    per_poll = sum(c["network_cpu_seconds"] for c in cs) / max(1, polls)
    turn = sum(c["loop_cpu_seconds"] for c in cs) / max(1, polls)
    print(f"{n:>5} {evals / loop:>8.0f} {polls / len(cs) / loop:>12.0f} {cs[0]['rounds']:>6} "
          f"{sum(c['migrants_sent'] for c in cs):>8} {per_poll * 1e6:>11.2f} {100 * sum(cpu) / len(cpu):>7.3f}% "
          f"{100 * max(cpu):>7.3f}% {100 * sum(wall) / len(wall):>8.2f}%")
    xs.append(n); ys.append(per_poll); turns.append(turn); rates.append(polls / len(cs) / loop)
# Cost model. MPI is polled at most 1/poll_seconds times a second (100).
# CPU per poll = a constant part (Iprobe, testing two requests, the
# migration check) plus the collectives' share, which grows like log2(ranks)
# (a recursive-doubling allreduce has log2(P) steps); fitted as
# a + b * log2(P) by least squares on the measured points (b >= 0). On one
# oversubscribed node this is pessimistic: a poll also scans every local
# peer's shared-memory queue and yields the core, which grows with the ranks
# on the node, not with the ranks of the job. The overhead of a rank that
# has a core of its own is then polls/s x CPU per poll.
lx = [math.log2(x) for x in xs]
m = len(xs); mx = sum(lx) / m; my = sum(ys) / m
b = max(0.0, sum((u - mx) * (y - my) for u, y in zip(lx, ys)) / max(1e-12, sum((u - mx) ** 2 for u in lx)))
a = my - b * mx
rate = max(r for r in rates)
print(f"model: CPU per poll = {a * 1e6:.2f} us + {b * 1e6:.3f} us x log2(ranks); at most {rate:.0f} polls/s per rank")
for P in (64, 256, 1024):
    t = max(0.0, a + b * math.log2(P))
    print(f"  {P:>5} ranks: {t * 1e6:6.2f} us per poll -> {100 * t * rate:6.3f}% of a core per rank")
PY
