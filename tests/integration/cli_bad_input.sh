#!/usr/bin/env bash
# Bad input gets a clear error: exit status 2, a message naming the file and
# the key, and no run directory left behind. Also checks usage errors and the
# happy paths of report/lineage on a quick null-backend run.
#
# usage: cli_bad_input.sh KEVO SOURCE_DIR WORK_DIR
set -uo pipefail
kevo="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
fails=0

# expect CODE "fragment1|fragment2" -- command...
expect() {
  local code="$1" fragments="$2"; shift 3
  local out rc
  out="$("$@" 2>&1)"; rc=$?
  if [ "$rc" -ne "$code" ]; then
    echo "FAIL (exit $rc, wanted $code): $*"; echo "$out" | head -5; fails=$((fails + 1)); return
  fi
  IFS='|' read -ra parts <<< "$fragments"
  for f in "${parts[@]}"; do
    if ! grep -qF -- "$f" <<< "$out"; then
      echo "FAIL (message lacks '$f'): $*"; echo "$out" | head -5; fails=$((fails + 1)); return
    fi
  done
  echo "ok: $* -> $rc"
}
no_dir() { if [ -e "$1" ]; then echo "FAIL: $1 was left behind"; fails=$((fails + 1)); fi; }

toy="$src/tests/engine/data/toy"
good="$work/good.json"
cat > "$good" <<JSON
{"name": "toy", "seed": 3, "tasks": ["$toy"], "budget": {"evaluations_per_task": 40},
 "operators": [{"type": "param_mutation"}], "backend": {"type": "null"}, "progress": {"mode": "off"}}
JSON

# Usage errors.
expect 2 "" -- "$kevo"
expect 2 "" -- "$kevo" frobnicate
expect 2 "" -- "$kevo" run
expect 2 "" -- "$kevo" run "$good" --bogus-flag

# Config errors.
expect 2 "missing.json" -- "$kevo" run "$work/missing.json" --out "$work/o1"; no_dir "$work/o1"
printf '{"name": "x",\n  "seed": }\n' > "$work/malformed.json"
expect 2 "malformed.json|line 2" -- "$kevo" run "$work/malformed.json" --out "$work/o2"; no_dir "$work/o2"
sed 's/"seed": 3/"seed": 3, "sed": 4/' "$good" > "$work/unknown.json"
expect 2 "unknown.json|/sed|seed" -- "$kevo" run "$work/unknown.json" --out "$work/o3"; no_dir "$work/o3"
expect 2 "/island/populaton" -- "$kevo" run "$good" --set island.populaton=3 --out "$work/o4"; no_dir "$work/o4"
expect 2 "/budget/evaluations_per_task" -- "$kevo" run "$good" --set budget.evaluations_per_task=-1 --out "$work/o5"; no_dir "$work/o5"
expect 2 "--set" -- "$kevo" run "$good" --set novalue --out "$work/o6"; no_dir "$work/o6"
expect 2 "valid UTF-8" -- "$kevo" run "$good" --set "out_dir=bad$(printf '\300\200')x" --out "$work/o6u"; no_dir "$work/o6u"
sed "s|\"$toy\"|\"$work/nowhere\"|" "$good" > "$work/notask.json"
expect 2 "notask.json|/tasks" -- "$kevo" run "$work/notask.json" --out "$work/o7"; no_dir "$work/o7"

# Task errors: a missing reference file; a reference that fails its own checks.
cp -r "$src/configs/tasks/cpu/reduce_sum" "$work/noref"
rm "$work/noref/reference.cpp"
expect 2 "task.json|/reference" -- "$kevo" tasks "$work/noref"
cp -r "$src/configs/tasks/cpu/reduce_sum" "$work/badref"
fn=$(sed -n 's/.*"function": *"\([A-Za-z_0-9]*\)".*/\1/p' "$work/badref/task.json")
# A reference that leaves its output untouched fails its own checks.
python3 - "$work/badref" "$fn" <<'PY'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1]); t = json.loads((d / "task.json").read_text())
args = []
for a in t["args"]:
    ct = {"float32": "float", "float64": "double", "int32": "int32_t", "int64": "int64_t"}[a["dtype"]]
    args.append(f"{ct} {a['name']}" if a["role"] == "scalar" else (f"const {ct}* {a['name']}" if a["role"] == "in" else f"{ct}* {a['name']}"))
(d / "reference.cpp").write_text('#include <cstdint>\nextern "C" void %s(%s) {}\n' % (sys.argv[2], ", ".join(args)))
PY
sed "s|\"$toy\"|\"$work/badref\"|; s/\"type\": \"null\"/\"type\": \"cpu\"/" "$good" > "$work/badref.json"
expect 2 "task.json|/reference" -- "$kevo" run "$work/badref.json" --out "$work/o8"; no_dir "$work/o8"

# eval: a task whose tolerances a null candidate meets is refused by its
# checks (exit 2, the key named); --no-prepare skips exactly those checks.
loose="$work/loose_reduce_sum"
cp -r "$src/configs/tasks/cpu/reduce_sum" "$loose"
sed -i 's/"tolerance": {[^}]*}/"tolerance": {"atol": 1e30, "rtol": 1, "rel_l2": 1e30}/' "$loose/task.json"
expect 2 "/tolerance|null candidate" -- "$kevo" eval "$loose" "$loose/seed.cpp" --json
expect 0 '"status": "correct"' -- "$kevo" eval "$loose" "$loose/seed.cpp" --json --no-prepare

# eval: a missing candidate file, a missing task.
expect 2 "nothere.cpp" -- "$kevo" eval "$src/configs/tasks/cpu/sgemm" "$work/nothere.cpp"
expect 2 "task.json" -- "$kevo" eval "$work/nowhere" "$src/configs/tasks/cpu/sgemm/seed.cpp"

# eval over several tasks (TASK FILE... TASK FILE...): one backend judges
# them all, each verdict line names its task; a task directory without files
# after it, or a task of another backend, is refused naming it.
cpu="$src/configs/tasks/cpu"
expect 0 '"status":"correct"|"task":"reduce_sum"|"task":"softmax"|"candidate":"'"$cpu"'/softmax/seed.cpp"' -- \
  "$kevo" eval "$cpu/reduce_sum" "$cpu/reduce_sum/seed.cpp" "$cpu/softmax" "$cpu/softmax/seed.cpp" --json --no-prepare
expect 2 "$cpu/softmax|one or more candidate files after the task directory" -- \
  "$kevo" eval "$cpu/reduce_sum" "$cpu/reduce_sum/seed.cpp" "$cpu/softmax" --json --no-prepare
expect 2 "$cpu/softmax|candidate files after the task directory $cpu/reduce_sum" -- \
  "$kevo" eval "$cpu/reduce_sum" "$cpu/softmax" "$cpu/softmax/seed.cpp" --json --no-prepare
expect 2 "torch_softmax/task.json|/backend|one kevo eval judges with one backend" -- \
  "$kevo" eval "$cpu/softmax" "$cpu/softmax/seed.cpp" "$src/configs/tasks/torch/torch_softmax" \
  "$src/configs/tasks/torch/torch_softmax/seed.py" --json --no-prepare

# report / lineage on something that is not a run.
expect 2 "" -- "$kevo" report "$work/nowhere"

# Happy path: a quick null-backend run, then report and lineage on it.
expect 0 "run directory" -- "$kevo" run "$good" --out "$work/toyrun"
expect 0 "toy" -- "$kevo" report "$work/toyrun"
best=$("$kevo" report "$work/toyrun" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tasks"][0]["best_id"])')
expect 0 "seed" -- "$kevo" lineage "$work/toyrun" "$best"
expect 2 "999999" -- "$kevo" lineage "$work/toyrun" 999999
# An existing, non-empty --out is refused (and left as it was).
expect 2 "--out" -- "$kevo" run "$good" --out "$work/toyrun"

# A resume of a broken run directory fails with the file named and leaves
# the directory exactly as it was (no run.lock, best/, checkpoint/, and
# config.json unchanged): a listing with sizes and hashes, before and after.
snapshot() { (cd "$1" && find . -printf '%p %y %s\n' | sort && find . -type f -exec sha256sum {} + | sort); }
broken() {   # NAME SETUP-COMMANDS: a copy of the good run, broken by SETUP
  local d="$work/broken-$1"
  rm -rf "$d"; cp -r "$work/toyrun" "$d"; rm -f "$d/run.lock"; rm -rf "$d/best" "$d/checkpoint"
  (cd "$d" && eval "$2")
  echo "$d"
}
for case in junk missing empty badset; do
  case "$case" in
    junk) d=$(broken junk 'printf "not hdf5" > lineage/rank-0000.h5'); want="rank-0000.h5"; extra=() ;;
    missing) d=$(broken missing 'rm -f lineage/rank-0000.h5; touch lineage/notes.txt'); want="lineage"; extra=() ;;
    empty) d=$(broken empty 'rm -f lineage/*'); want="lineage"; extra=() ;;
    badset) d=$(broken badset 'true'); want="--set budget.evaluations_per_task=-1"; extra=(--set budget.evaluations_per_task=-1) ;;
  esac
  before="$(snapshot "$d")"
  expect 2 "$want" -- "$kevo" resume "$d" "${extra[@]}"
  if [ "$(snapshot "$d")" != "$before" ]; then
    echo "FAIL: a failed resume ($case) changed $d:"; diff <(echo "$before") <(snapshot "$d") | head -10
    fails=$((fails + 1))
  fi
done

if [ "$fails" -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "all bad-input checks passed"
