#!/usr/bin/env bash
# A small campaign whose runs measure real library baselines, then its
# report: the over-baseline columns checked on real baselines
# (docs/campaigns.md, "Not done yet"). For the GPU machine:
#
#   tests/campaign/run_gpu_campaign.sh BUILD_DIR KIND...
#
# KIND: cuda  (configs/cuda-quickstart.json on sgemm: torch eager,
#              torch.compile and the cuBLAS source baseline in baselines.json)
#       torch (the Triton search-space task, parameter operators only:
#              torch eager and torch.compile in baselines.json)
#       cpu   (configs/quickstart.json on two CPU tasks, no baselines: the
#              script's own check, runs anywhere)
# Two configurations (the base config, parameter crossover off) x 1 seed
# per kind. BUILD_DIR/bin holds kevo and the scripts next to it (the CUDA
# worker for cuda, the torch scripts for torch). Each campaign directory,
# without its build caches, goes to $OUT/campaign-KIND.tar.gz; its report
# (Markdown and HTML) to $OUT/campaign-KIND-report.{md,html} when this
# interpreter has h5py, numpy and matplotlib, else `kevo campaign report`
# can be run on the unpacked archive.
set -u -o pipefail
BUILD=${1:?usage: tests/campaign/run_gpu_campaign.sh BUILD_DIR KIND...}
shift
OUT=${OUT:-/tmp/kevo-campaign-out}
WORK=${CAMPAIGN_WORK:-/tmp/kevo-campaign-work}
PY=${PYTHON:-python3}
KEVO=$(readlink -f "$BUILD/bin/kevo")
SRC=$(pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
[ -x "$KEVO" ] || { echo "no $KEVO: build kevo first"; exit 2; }
mkdir -p "$OUT" "$WORK"
rc=0
for kind in "$@"; do
  dir=$WORK/$kind
  rm -rf "$dir"
  mkdir -p "$dir"
  case $kind in
  cuda)
    base=$SRC/configs/cuda-quickstart.json
    tasks="\"$SRC/configs/tasks/cuda/sgemm\""
    evals=16 wall=120 sets='"progress.mode": "off"'
    ;;
  torch)
    # The torch backend's own config, written here: the Triton task's
    # launch as the space, parameter operators only (no LLM), baselines on.
    base=$dir/base.json
    cat > "$base" <<EOF
{"name": "torch-campaign", "seed": 1, "tasks": ["$SRC/tests/torch/tasks/params_softmax_triton"],
 "out_dir": "$dir/runs",
 "budget": {"evaluations_per_task": 12, "wall_seconds": 300},
 "island": {"population": 8, "elites": 2, "ordering": "deterministic", "in_flight": 2},
 "operators": [{"type": "param_mutation", "weight": 1.0}, {"type": "param_crossover", "weight": 0.5}],
 "backend": {"type": "torch", "torch": {"python": "$PY", "device": "cuda", "cache_dir": "$dir/cache"}},
 "progress": {"mode": "off"}}
EOF
    tasks="\"$SRC/tests/torch/tasks/params_softmax_triton\""
    evals=12 wall=300 sets='"progress.mode": "off"'
    ;;
  cpu)
    base=$SRC/configs/quickstart.json
    tasks="\"$SRC/configs/tasks/cpu/reduce_sum\", \"$SRC/configs/tasks/cpu/softmax\""
    evals=8 wall=60 sets='"progress.mode": "off"'
    ;;
  *)
    echo "unknown kind $kind (cuda, torch, cpu)"; exit 2;;
  esac
  cat > "$dir/campaign.json" <<EOF
{"name": "baselines-$kind", "base_config": "$base", "tasks": [$tasks],
 "configurations": {"full": {"description": "the base config", "set": {$sets}},
                    "no_crossover": {"description": "parameter crossover off",
                                     "set": {$sets, "operators.1.weight": 0}}},
 "seeds": [1], "budget": {"evaluations_per_task": $evals, "wall_seconds": $wall},
 "local": {"jobs": 1}, "out_dir": "$dir/campaigns"}
EOF
  echo "=== $(date +%T) campaign $kind"
  t0=$(date +%s)
  "$KEVO" campaign run "$dir/campaign.json" --out "$dir/c" > "$dir/run.log" 2>&1
  r=$?
  echo "kevo campaign run: exit $r in $(( $(date +%s) - t0 )) s"
  tail -15 "$dir/run.log"
  [ $r -eq 0 ] || rc=1
  "$KEVO" campaign status "$dir/c" 2>&1 | tail -6
  for b in "$dir"/c/cells/*/baselines.json; do
    [ -f "$b" ] && { echo "--- $b"; head -c 3000 "$b"; echo; }
  done
  # The campaign without build caches (the lineage, reports, baselines), as
  # one archive: the device's $OUT returns at most 8 files, 2 folders deep.
  tar -C "$dir" --exclude='cache' --exclude='*.so' --exclude='*.o' --exclude='*.cubin' -czf "$OUT/campaign-$kind.tar.gz" c campaign.json
  if "$PY" -c "import h5py, numpy, matplotlib" 2>/dev/null; then
    "$KEVO" campaign report "$dir/c" --out "$dir/report" --python "$PY" > "$dir/report.log" 2>&1
    r=$?
    echo "kevo campaign report: exit $r"
    tail -5 "$dir/report.log"
    [ $r -eq 0 ] || rc=1
    for f in report.md report.html; do
      [ -f "$dir/report/$f" ] && cp "$dir/report/$f" "$OUT/campaign-$kind-$f"
    done
    [ -f "$dir/report/report.md" ] && grep -i -A12 "baseline" "$dir/report/report.md" | head -40
    # The over-baseline figures recomputed from the lineage and baselines.json.
    if [ "$kind" != cpu ]; then
      "$PY" "$SRC/tests/campaign/check_over_baseline.py" "$dir/c" "$dir/report" || rc=1
    fi
  else
    echo "$PY lacks h5py, numpy or matplotlib: run kevo campaign report on the campaign in $OUT/campaign-$kind.tar.gz"
  fi
done
exit $rc
