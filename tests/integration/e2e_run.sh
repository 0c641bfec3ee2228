#!/usr/bin/env bash
# End-to-end: a quickstart-size run on the bundled CPU tasks, with a second
# process (h5py) reading the lineage while the run writes it; then the
# finished lineage is checked against `kevo report` (every parent exists,
# status counts match, best SGEMM speedup above 1), and h5dump reads it.
#
# usage: e2e_run.sh KEVO SOURCE_DIR PYTHON WORK_DIR
set -euo pipefail
kevo="$1"; src="$2"; py="$3"; work="$4"
rm -rf "$work"; mkdir -p "$work"
run="$work/run"

"$kevo" run "$src/configs/quickstart.json" --out "$run" \
  --set progress.mode=lines --set progress.interval_seconds=10 \
  --set lineage.flush_records=8 --set lineage.flush_seconds=0.5 \
  --set budget.evaluations_per_task="${KEVO_E2E_EVALS:-30}" --set budget.wall_seconds=170 \
  > "$work/run.log" 2>&1 &
pid=$!

# The reader starts once the file exists and reads for a while.
for _ in $(seq 1 600); do [ -f "$run/lineage/rank-0000.h5" ] && break; sleep 0.1; done
"$py" "$src/tests/integration/live_reader.py" "$run/lineage/rank-0000.h5" 20 > "$work/reader.log" 2>&1 &
reader=$!

status=0
wait "$pid" || status=$?
reader_status=0
wait "$reader" || reader_status=$?
cat "$work/run.log" | tail -12
echo "--- live reader"; cat "$work/reader.log"
[ "$status" -eq 0 ] || { echo "kevo run exited $status"; exit 1; }
[ "$reader_status" -eq 0 ] || { echo "live reader failed"; exit 1; }

"$py" "$src/tests/integration/check_run.py" "$kevo" "$run" --min-sgemm-speedup 1.0
for t in sgemm softmax layernorm reduce_sum stencil2d; do
  [ -s "$run/best/$t.cpp" ] || { echo "best/$t.cpp missing"; exit 1; }
done
if command -v h5dump >/dev/null; then
  h5dump -d /candidates -c 3 "$run/lineage/rank-0000.h5" > /dev/null || { echo "h5dump cannot read the lineage"; exit 1; }
fi
# The best kernel file is a valid candidate: judge it again.
"$kevo" eval "$src/configs/tasks/cpu/sgemm" "$run/best/sgemm.cpp" --json --no-prepare > "$work/best.json"
grep -q '"status": "correct"' "$work/best.json" || { echo "best sgemm kernel not correct on re-evaluation"; cat "$work/best.json"; exit 1; }
echo "e2e ok"
