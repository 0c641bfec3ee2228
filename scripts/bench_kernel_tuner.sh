#!/usr/bin/env bash
# kevo's parameter evolution against Kernel Tuner's search strategies on the
# same measured tables (docs/benchmarks.md, "Against Kernel Tuner"):
# evaluations to come within 2% of the exhaustive best, per task, averaged
# over seeds, kevo (bench_search) side by side with Kernel Tuner 1.5.0's
# strategies replaying the table in simulation mode.
#
#   scripts/bench_kernel_tuner.sh                       # 100 seeds, every default strategy
#   scripts/bench_kernel_tuner.sh --jobs 2              # Kernel Tuner runs in 2 processes
#   scripts/bench_kernel_tuner.sh --seeds 20 --strategies random_sample,bayes_opt
#   scripts/bench_kernel_tuner.sh --task sgemm --json out.json
#   scripts/bench_kernel_tuner.sh --help                # every option of tests/bench/kernel_tuner_compare.py
#
# What it does: builds bench_search through scripts/bench_search.sh (which
# measures BUILD/search-table.json on first use: every point of every
# bundled CPU task judged by the real CPU backend, tens of minutes; later
# runs reuse it), creates a virtual environment with Kernel Tuner from PyPI
# when missing (BUILD/kt-venv, needs network once), then runs
# tests/bench/kernel_tuner_compare.py on the table. With 100 seeds the whole
# comparison takes minutes once the table exists.
#
# Environment: KEVO_BENCH_BUILD (build dir, default build-bench),
# KEVO_BENCH_TABLE (default BUILD/search-table.json), KEVO_BUILD_JOBS
# (default 2), KEVO_KT_VENV (default BUILD/kt-venv), KEVO_KT_VERSION
# (default 1.5.0), KEVO_KT_PYTHON (interpreter for a new venv, default python3).
# Exit status: that of kernel_tuner_compare.py (0 it ran, 2 bad input,
# 1 failure), or the failing step's.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${KEVO_BENCH_BUILD:-build-bench}"
table="${KEVO_BENCH_TABLE:-$build/search-table.json}"
venv="${KEVO_KT_VENV:-$build/kt-venv}"
version="${KEVO_KT_VERSION:-1.5.0}"

for arg in "$@"; do
  if [ "$arg" = "-h" ] || [ "$arg" = "--help" ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    if [ -x "$venv/bin/python" ]; then exec "$venv/bin/python" tests/bench/kernel_tuner_compare.py --help; fi
    exit 0
  fi
done

# bench_search, up to date, and a complete table (one seed: the run itself
# only checks that the binary works; kernel_tuner_compare.py runs the seeds).
mkdir -p "$build"
log="$build/bench_kernel_tuner.build.log"
if [ ! -f "$table" ]; then
  echo "bench_kernel_tuner: building bench_search and measuring $table (first use: tens of minutes); log: $log" >&2
else
  echo "bench_kernel_tuner: building bench_search; log: $log" >&2
fi
if ! KEVO_BENCH_BUILD="$build" scripts/bench_search.sh --table "$table" --seeds 1 --loose 0 >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "bench_kernel_tuner: scripts/bench_search.sh failed (log: $log)" >&2
  exit 1
fi
grep -h "^table:" "$log" >&2 || true

# Kernel Tuner in its own virtual environment.
if ! "$venv/bin/python" -c "import sys, kernel_tuner; sys.exit(kernel_tuner.__version__ != '$version')" 2>/dev/null; then
  echo "bench_kernel_tuner: installing kernel_tuner==$version into $venv" >&2
  "${KEVO_KT_PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "kernel_tuner==$version" >&2
fi

exec "$venv/bin/python" tests/bench/kernel_tuner_compare.py "$table" --bench "$build/bin/bench_search" "$@"
