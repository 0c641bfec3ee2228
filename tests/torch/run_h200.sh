#!/usr/bin/env bash
# Runs on the GPU machine: builds what the torch backend needs and runs its
# GPU checks and benchmarks, each phase with its own time limit; logs go to
# $OUT (docs/torch.md, docs/benchmarks.md#torch-backend).
#   tests/torch/run_h200.sh PHASE...   build vmm unmask gpu adversarial ahead triton params profile profile_diag drain noise
#   (ADV_ONLY=name,... for a part of the adversarial suite)
set -u
OUT=${OUT:-/tmp/kevo-torch-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
B=build-gpu/bin
PY=${PYTHON:-python3}
step() { echo "=== $(date +%T) $*" | tee -a "$OUT/steps.log"; }
for phase in "$@"; do
case $phase in
build)
  step build
  nvidia-smi --query-gpu=index,name,memory.total,clocks.sm,driver_version --format=csv | tee -a "$OUT/steps.log"
  $PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/steps.log"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  cmake --build build-gpu -j32 --target kevo kevo_pyhost kevo_torch_scripts ${EXTRA_TARGETS:-} >> "$OUT/build.log" 2>&1 ||
    { grep -B2 -A12 "error" "$OUT/build.log" | head -60; exit 1; }
  ;;
gpu)
  step "which import initialises CUDA (a zygote must not)"
  $PY - <<'PYEOF' 2>&1 | tee -a "$OUT/steps.log"
import importlib, os, torch
def bad_fork():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, b"1" if torch._C._cuda_isInBadFork() else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    return os.read(r, 1) == b"1"
for m in ["torch.nn", "torch.nn.functional", "torch.utils.cpp_extension", "torch.utils._python_dispatch", "triton", "triton.language"]:
    importlib.import_module(m)
    print(m, "cuda initialised:", torch.cuda.is_initialized(), "a fork would be in a bad fork:", bad_fork())
PYEOF
  step "torch on the GPU: prepare the bundled tasks, honest CUDA candidates, seeds"
  KEVO_TORCH_SKIP_ADVERSARIAL=1 timeout ${GPU_TIMEOUT:-420} $PY tests/torch/gpu_test.py $B/kevo $PY "$PWD" /tmp/kevo-torch-gpu 2>&1 |
    tee "$OUT/gpu_test.log" | cut -c1-400 | tail -60
  ;;
adversarial)
  step "torch adversarial suite on the GPU"
  # ADV_ONLY=name,...: a part of the suite (the whole of it does not fit
  # one 540 s command on the H200).
  timeout ${ADV_TIMEOUT:-500} $PY tests/torch/adversarial_test.py $B/kevo $PY "$PWD" /tmp/kevo-torch-adv cuda \
    ${ADV_ONLY:+--only=$ADV_ONLY} 2>&1 |
    tee "$OUT/adversarial.log" | cut -c1-300 | tail -50
  ;;
ahead)
  step "the judge forked ahead: set up beside the previous judgement, before its timing (tests/torch/judge_ahead_test.py)"
  timeout ${AHEAD_TIMEOUT:-240} $PY tests/torch/judge_ahead_test.py $B/kevo $PY "$PWD" /tmp/kevo-torch-ahead cuda 2>&1 |
    tee "$OUT/ahead.log" | cut -c1-700 | tail -8
  ;;
triton)
  step "Triton candidates under the sandbox (tests/torch/triton_test.py)"
  timeout ${TRITON_TIMEOUT:-300} $PY tests/torch/triton_test.py $B/kevo $PY "$PWD" /tmp/kevo-torch-triton cuda 2>&1 |
    tee "$OUT/triton.log" | cut -c1-3000 | tail -60
  ;;
params)
  step "a Triton task's launch as a search space, kevo run with the parameter operators (tests/torch/params_test.py)"
  timeout ${PARAMS_TIMEOUT:-300} $PY tests/torch/params_test.py $B/kevo $PY "$PWD" /tmp/kevo-torch-params cuda 2>&1 |
    tee "$OUT/params.log" | cut -c1-400 | tail -40
  ;;
profile)
  step "ncu on torch candidates for the analyst, in the profiler's sandbox (tests/torch/profile_test.py)"
  n=$(command -v ncu || echo /usr/local/cuda/bin/ncu); echo "ncu: $n -> $(readlink -f "$n")" | tee -a "$OUT/steps.log"
  echo "PYTHONPATH=${PYTHONPATH:-} cwd=$PWD HOME=${HOME:-}; $PY: $($PY -c 'import sys; print(sys.executable, sys.path)')" |
    tee -a "$OUT/steps.log"
  timeout ${PROFILE_TIMEOUT:-300} $PY tests/torch/profile_test.py $B/kevo $PY "$PWD" /tmp/kevo-torch-profile cuda 2>&1 |
    tee "$OUT/profile.log" | cut -c1-600 | tail -60
  ;;
profile_diag)
  step "which step of the profiler's sandbox keeps the driver from starting (tests/torch/profile/sandbox_cuinit.py)"
  cc -shared -fPIC -O1 -o "$OUT/failed_calls_shim.so" tests/torch/profile/failed_calls_shim.c -ldl &&
  timeout ${DIAG_TIMEOUT:-200} $PY tests/torch/profile/sandbox_cuinit.py "$PWD/$B" $PY "$OUT/failed_calls_shim.so" 2>&1 |
    tee "$OUT/profile_diag.log" | cut -c1-300 | grep -v "^    shim: .*No such file" | tail -150
  rm -f "$OUT/failed_calls_shim.so"
  ;;
vmm)
  step "the judge's device memory, exported and mapped by another process (tests/torch/vmm_test.py)"
  timeout 120 $PY tests/torch/vmm_test.py "$PWD" 2>&1 | tee "$OUT/vmm.log"
  ;;
drain)
  step "the GPU drain's assumption and the context switch (tests/bench/torch_drain_probe.py)"
  timeout ${DRAIN_TIMEOUT:-120} $PY tests/bench/torch_drain_probe.py 2>&1 | tee "$OUT/drain.log"
  ;;
unmask)
  step "the GPU host's unmask: the one-pass kernel against the generator's two (tests/bench/torch_unmask_cost.py)"
  timeout ${UNMASK_TIMEOUT:-120} $PY tests/bench/torch_unmask_cost.py ${UNMASK_CALLS:-200} 2>&1 | tee "$OUT/unmask.log"
  ;;
noise)
  step "where the timed calls' noise comes from (tests/bench/torch_timing_noise.py)"
  timeout ${NOISE_TIMEOUT:-120} $PY tests/bench/torch_timing_noise.py ${NOISE_PAIRS:-300} 2>&1 | tee "$OUT/noise.log"
  ;;
*)
  echo "unknown phase $phase"; exit 2;;
esac
done
