#!/usr/bin/env bash
# The files LLM operators need for a task's backend (the system prompt
# <prompts_dir>/system_<backend>.md, the operator templates of their own of
# the backend <prompts_dir>/<template>_<backend>.md, the knowledge
# <knowledge_dir>/<backend>.md) are checked when the config is validated, before any backend work: a
# missing or unreadable one is exit 2 with a message naming the config file,
# the key and the file, and no run directory is left (docs/llm.md#prompts).
# No LLM server is needed: nothing is asked before the checks.
#
# usage: operator_files.sh KEVO SOURCE_DIR WORK_DIR HAVE_CUDA(0|1) [PYTHON]
# (PYTHON: an interpreter that imports torch, for the torch cases; they are
# skipped without one)
set -uo pipefail
kevo="$1"; src="$2"; work="$3"; have_cuda="$4"; python="${5:-}"
rm -rf "$work"; mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A config in its own folder, with copies of the bundled prompts and
# knowledge that each case then breaks.
make_case() {   # NAME TASK_DIR BACKEND [BACKEND_OPTIONS_JSON]
  local d="$work/$1"
  mkdir -p "$d"
  cp -r "$src/configs/prompts" "$d/prompts"
  cp -r "$src/configs/knowledge" "$d/knowledge"
  cat > "$d/run.json" <<JSON
{
  "name": "$1",
  "tasks": ["$2"],
  "budget": {"evaluations_per_task": 6, "wall_seconds": 120},
  "llm": {"models": [{"name": "local", "provider": "openai-compatible", "base_url": "http://127.0.0.1:9/v1",
                      "model": "m", "api_key_env": ""}],
          "client": {"max_retries": 0, "connect_timeout_s": 1},
          "prompts_dir": "prompts", "knowledge_dir": "knowledge", "probe": false},
  "operators": [{"type": "llm_rewrite", "weight": 0.5}, {"type": "param_mutation", "weight": 0.5}],
  "backend": {"type": "$3"${4:+, \"$3\": $4}},
  "progress": {"mode": "off"}
}
JSON
  echo "$d"
}

# Runs `kevo run` on the case and checks exit 2, the message and that no run
# directory exists. Further arguments: strings the message must hold (the
# config file unless the file at fault is named instead: names_file=0).
# config=FILE runs another config than the case's run.json; run_args holds
# further arguments of `kevo run`.
names_file=1
run_args=()
expect_refused() {   # DIR STRING...
  local d="$1"; shift
  local cfg="${config:-$d/run.json}"
  local status=0
  "$kevo" run "$cfg" --out "$d/run" "${run_args[@]}" > "$d/log" 2>&1 || status=$?
  local name; name="$(basename "$d")"
  [ "$status" -eq 2 ] || { fail "$name: exit $status, wanted 2"; cat "$d/log"; return; }
  local want=("$@")
  [ "$names_file" = 1 ] && want+=("$cfg")
  for s in "${want[@]}"; do
    grep -qF -- "$s" "$d/log" || { fail "$name: the message does not name '$s'"; cat "$d/log"; }
  done
  [ ! -e "$d/run" ] || fail "$name: a run directory was left behind"
  [ -z "$(ls "$d" | grep -v -e '^prompts$' -e '^knowledge$' -e '^run.json$' -e '^log$')" ] ||
    fail "$name: files were left behind: $(ls "$d")"
  echo "$name: refused as it should: $(tail -n 1 "$d/log")"
}

toy="$src/tests/engine/data/toy"

# 1. A CUDA task without system_cuda.md: refused before the backend prepares
#    the task (which needs a GPU: without one it would fail otherwise).
if [ "$have_cuda" = 1 ]; then
  d="$(make_case cuda_system "$src/configs/tasks/cuda/axpy" cuda)"
  rm -f "$d/prompts/system_cuda.md"
  expect_refused "$d" "/llm/prompts_dir" "system_cuda.md" "backend 'cuda'" "/operators/0 'llm_rewrite'" "task 'axpy'"

  # 1b. ... and without knowledge/cuda.md.
  d="$(make_case cuda_knowledge "$src/configs/tasks/cuda/axpy" cuda)"
  rm -f "$d/knowledge/cuda.md"
  expect_refused "$d" "/llm/knowledge_dir" "$d/knowledge/cuda.md does not exist" "backend 'cuda'" "task 'axpy'"

  # 1c. The CUDA analyst's own template with an unknown slot: the analyst is
  #     refused, naming the template (LlmCudaFiles.* show that the operators
  #     that never read it are not).
  d="$(make_case cuda_template "$src/configs/tasks/cuda/axpy" cuda)"
  echo "Review {{no_such_slot}}" >> "$d/prompts/analyst_cuda.md"
  run_args=(--set operators.0.type=llm_analyst)
  names_file=0 expect_refused "$d" "$d/prompts/analyst_cuda.md" "{{no_such_slot}}" "/operators/0 'llm_analyst'"
  run_args=()

  # 1d. The bundled configs/llm-cuda.json, pointed at prompts without
  #     system_cuda.md: every key of it is accepted up to the check, which
  #     refuses the run before anything exists, naming the override.
  d="$work/bundled_cuda"; mkdir -p "$d"
  cp -r "$src/configs/prompts" "$d/prompts"; rm -f "$d/prompts/system_cuda.md"
  run_args=(--set "llm.prompts_dir=$d/prompts" --set llm.probe=false)
  config="$src/configs/llm-cuda.json" names_file=0 expect_refused "$d" "--set llm.prompts_dir=$d/prompts: /llm/prompts_dir" \
    "$d/prompts/system_cuda.md does not exist" "on task 'axpy' of backend 'cuda'"
  run_args=()
else
  echo "cuda_system, cuda_knowledge, cuda_template, bundled_cuda: skipped: this kevo has no CUDA backend"
fi

# 1e. A torch task without system_torch.md, without knowledge/torch.md, and
#     the bundled configs/llm-torch.json pointed at prompts without
#     system_torch.md: refused before the backend prepares the task (which
#     would run its reference in the torch judge).
if [ -n "$python" ] && "$python" -c "import torch" > /dev/null 2>&1; then
  torch_options="{\"python\": \"$python\", \"device\": \"cpu\", \"baselines\": {\"enabled\": false}}"
  d="$(make_case torch_system "$src/configs/tasks/torch/torch_softmax" torch "$torch_options")"
  rm -f "$d/prompts/system_torch.md"
  expect_refused "$d" "/llm/prompts_dir" "system_torch.md" "backend 'torch'" "/operators/0 'llm_rewrite'" \
    "task 'torch_softmax'"

  d="$(make_case torch_knowledge "$src/configs/tasks/torch/torch_softmax" torch "$torch_options")"
  rm -f "$d/knowledge/torch.md"
  expect_refused "$d" "/llm/knowledge_dir" "$d/knowledge/torch.md does not exist" "backend 'torch'" \
    "task 'torch_softmax'"

  d="$work/bundled_torch"; mkdir -p "$d"
  cp -r "$src/configs/prompts" "$d/prompts"; rm -f "$d/prompts/system_torch.md"
  run_args=(--set "llm.prompts_dir=$d/prompts" --set llm.probe=false --set "backend.torch.python=$python")
  config="$src/configs/llm-torch.json" names_file=0 expect_refused "$d" \
    "--set llm.prompts_dir=$d/prompts: /llm/prompts_dir" "$d/prompts/system_torch.md does not exist" \
    "of backend 'torch'"
  run_args=()
else
  echo "torch_system, torch_knowledge, bundled_torch: skipped: no Python that imports torch ('$python')"
fi

# 2. No knowledge for the task's backend.
d="$(make_case null_knowledge "$toy" null)"
rm -f "$d/knowledge/null.md"
expect_refused "$d" "/llm/knowledge_dir" "$d/knowledge/null.md does not exist" "knowledge_tokens 0"

# 3. A system prompt that is not a readable file.
d="$(make_case null_unreadable "$toy" null)"
rm -f "$d/prompts/system_null.md"; mkdir "$d/prompts/system_null.md"
expect_refused "$d" "/llm/prompts_dir" "system_null.md is not a regular file"

# 4. A system prompt with an unknown slot: named with the template file.
d="$(make_case null_slot "$toy" null)"
echo "Kernel for {{no_such_slot}}" >> "$d/prompts/system_null.md"
names_file=0 expect_refused "$d" "$d/prompts/system_null.md" "{{no_such_slot}}" "/operators/0 'llm_rewrite'"

# 5. Disabled or weightless operators need nothing; knowledge_tokens 0 needs
#    no knowledge file. Such a run starts (the model is unreachable: its
#    requests fail and are recorded; parameter mutation spends the budget).
d="$(make_case null_ok "$toy" null)"
rm -f "$d/knowledge/null.md"
status=0
"$kevo" run "$d/run.json" --out "$d/run" --set llm.knowledge_tokens=0 > "$d/log" 2>&1 || status=$?
[ "$status" -eq 0 ] && [ -f "$d/run/report.json" ] || { fail "null_ok: exit $status, wanted a finished run"; cat "$d/log"; }
d="$(make_case null_disabled "$toy" null)"
rm -f "$d/prompts/system_null.md"
status=0
"$kevo" run "$d/run.json" --out "$d/run" --set operators.0.enabled=false > "$d/log" 2>&1 || status=$?
[ "$status" -eq 0 ] && [ -f "$d/run/report.json" ] || { fail "null_disabled: exit $status, wanted a finished run"; cat "$d/log"; }

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "operator files ok"
