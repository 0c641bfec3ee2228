#!/usr/bin/env bash
# How fast a run stops cleanly: SIGTERM to mpirun with CPU work in flight
# (compiles and judgements of configs/quickstart.json), repeated; prints the
# time from the SIGTERM reaching the ranks (Open MPI forwards it 1 s after
# mpirun got it) to the last rank's exit, each run's lineage final
# (tests/mpi/mpi_stop.py checks it). Target: at most 0.5 s.
#
# usage: scripts/bench_stop.sh [NRANKS] [REPEATS]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 tests/mpi/mpi_stop.py "$(command -v mpiexec)" build/bin/kevo . "$work" "${1:-4}" --repeat "${2:-5}" --no-resume
