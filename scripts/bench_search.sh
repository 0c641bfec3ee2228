#!/usr/bin/env bash
# Builds and runs the search-efficiency benchmark (docs/benchmarks.md#search-efficiency):
# evaluations parameter evolution needs to come within 2% of the exhaustive
# best of each bundled task, against random search.
#
#   scripts/bench_search.sh                 # 10 seeds; measures the table on first use
#   scripts/bench_search.sh --seeds 20      # any bench_search option passes through
#   scripts/bench_search.sh --sweep         # also tune island/operator settings
#   scripts/bench_search.sh --remeasure     # measure the exhaustive table again
#
# Environment: KEVO_BENCH_BUILD (build dir, default build-bench),
# KEVO_BUILD_JOBS (default 2), KEVO_BENCH_SEEDS (default 10).
# The first run judges every point of every task with the CPU backend
# (hundreds of compiles: minutes to tens of minutes); later runs reuse
# BUILD/search-table.json and take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${KEVO_BENCH_BUILD:-build-bench}"
jobs="${KEVO_BUILD_JOBS:-2}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DKEVO_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE="${KEVO_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
fi
cmake --build "$build" --target bench_search -j "$jobs" >/dev/null
exec "$build/bin/bench_search" --table "$build/search-table.json" --seeds "${KEVO_BENCH_SEEDS:-10}" "$@"
