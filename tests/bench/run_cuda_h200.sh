#!/usr/bin/env bash
# One call on the GPU machine: build, GPU tests, the cuda-quickstart run and
# the CUDA benchmarks; logs go to $OUT (docs/benchmarks.md#cuda-backend).
# Each step has its own time limit so that the later ones still run.
set -u
OUT=${OUT:-/tmp/kevo-cuda-out}
mkdir -p "$OUT"
step() { echo "=== $(date +%T) $*" | tee -a "$OUT/steps.log"; }
phase=${1:-all}
if [[ $phase == all || $phase == test ]]; then
step configure
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
step build
cmake --build build-gpu -j16 --target kevo kevo-cuda-worker kevo-cpu-worker test_cuda_gpu test_cuda_backend bench_cuda >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv | tee -a "$OUT/steps.log"
step gpu tests
(cd build-gpu && timeout 200 ctest -L 'gpu|cuda' --output-on-failure -V) > "$OUT/ctest.log" 2>&1
grep -E "\[ (verdict|seed) |tests passed|Failed|FAILED|SKIPPED|Passed" "$OUT/ctest.log" | tail -40
step quickstart
timeout 170 build-gpu/bin/kevo run configs/cuda-quickstart.json --set budget.wall_seconds=90 --set progress.mode=lines --out runs/cq > "$OUT/quickstart.log" 2>&1
tail -25 "$OUT/quickstart.log"
build-gpu/bin/kevo report runs/cq >> "$OUT/quickstart.log" 2>&1
tar cf "$OUT/best.tar" runs/cq/best runs/cq/report.json 2>/dev/null
fi
if [[ $phase == all || $phase == bench ]]; then
step bench compile
timeout 90 build-gpu/bin/bench_cuda compile configs/tasks/cuda axpy,softmax,sgemm 2>&1 | tee "$OUT/bench.log"
step bench throughput
timeout 100 build-gpu/bin/bench_cuda throughput configs/tasks/cuda/axpy 32 2>&1 | tee -a "$OUT/bench.log"
step bench cv
timeout 60 build-gpu/bin/bench_cuda cv configs/tasks/cuda/axpy 8 2>&1 | tee -a "$OUT/bench.log"
timeout 60 python3 tests/bench/cuda_baselines.py cv configs/tasks/cuda 8 2>&1 | tee -a "$OUT/bench.log"
step baselines
timeout 120 python3 tests/bench/cuda_baselines.py table configs/tasks/cuda runs/cq > "$OUT/baselines.log" 2>&1
tail -12 "$OUT/baselines.log"
step load_inline
timeout 100 python3 tests/bench/cuda_baselines.py load_inline configs/tasks/cuda 1 2>&1 | tail -3 | tee -a "$OUT/bench.log"
fi
step done
