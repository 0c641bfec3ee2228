#!/usr/bin/env bash
# Runs on the GPU machine: kevo's torch backend against KernelBench's own
# evaluation path (tests/bench/torch_vs_kernelbench.py; docs/benchmarks.md,
# "Torch backend against KernelBench's evaluation (issue 18)").
#
#   tests/bench/run_kernelbench_h200.sh BUILD_DIR [benchmark options...]
#
# BUILD_DIR holds bin/kevo with libkevo_pyhost.so and the torch scripts next
# to it (`tests/torch/run_h200.sh build` makes build-gpu). The KernelBench
# checkout's src folder is expected at .kernelbench/src in the repository's
# root: an ignored folder the caller carries (docs/benchmarks.md says how to
# make it). Options go to the benchmark (--quick, --parts kevo|kernelbench|cv,
# --no-sandbox, ...); the log and torch_vs_kernelbench.json go to $OUT.
# The whole run is bounded: --budget-s (KB_BENCH_BUDGET, 540 s) stops
# starting new steps, `timeout` (KB_BENCH_TIMEOUT, 585 s) ends it.
set -u -o pipefail
BUILD=${1:?usage: tests/bench/run_kernelbench_h200.sh BUILD_DIR [benchmark options...]}
shift
OUT=${OUT:-/tmp/kevo-kb-out}
mkdir -p "$OUT"
export OUT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
KEVO=$BUILD/bin/kevo
KB=.kernelbench/src
if [ ! -x "$KEVO" ]; then
  echo "no $KEVO: build kevo first (tests/torch/run_h200.sh build)"
  exit 2
fi
if [ ! -f "$KB/kernelbench/eval.py" ]; then
  echo "no $KB/kernelbench/eval.py: carry .kernelbench (docs/benchmarks.md)"
  exit 2
fi
echo "=== $(date +%T) kevo's torch backend against KernelBench: $*" | tee -a "$OUT/steps.log"
nvidia-smi --query-gpu=index,name,memory.total,clocks.sm,driver_version --format=csv 2>&1 | tee -a "$OUT/steps.log"
timeout --kill-after=15 "${KB_BENCH_TIMEOUT:-585}" "$PY" tests/bench/torch_vs_kernelbench.py "$KEVO" "$KB" \
  --budget-s "${KB_BENCH_BUDGET:-540}" "$@" 2>&1 | tee "$OUT/torch_vs_kernelbench.log"
rc=$?
echo "=== $(date +%T) done, exit $rc" | tee -a "$OUT/steps.log"
exit $rc
