#!/usr/bin/env bash
# The local model server's lifetime (llm.local_server, docs/llm.md#a-local-model),
# with the fake LLM server standing in for llama-server (it takes the same
# arguments): kevo starts it before the probe, talks to it, and stops it by
# its PID when the run ends, when the run is interrupted (SIGINT) and, by
# the kernel, when kevo is killed; a missing model file is exit 2 naming the
# key, a server that exits while it starts or does not get ready in time is
# a clear error naming the key with the server's log, and none of them
# leaves a run directory.
#
# usage: local_server.sh KEVO SOURCE_DIR PYTHON WORK_DIR
set -euo pipefail
kevo="$1"; src="$2"; py="$3"; work="$4"
rm -rf "$work"; mkdir -p "$work"
touch "$work/model.gguf"
fail() { echo "FAIL: $*"; exit 1; }
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
server_cmd() {   # extra fake-server arguments as a JSON array tail
  printf '["%s", "%s/tests/llm/fake_llm_server.py", "--log", "%s/server-%s.log", "--pid-file", "%s/server-%s.pid"%s]' \
    "$py" "$src" "$work" "$1" "$work" "$1" "${2:-}"
}
common=(--set 'tasks=["tasks/cpu/reduce_sum"]' --set progress.mode=off --set island.in_flight=2 --set 'llm.local_server.args=[]'
        --set llm.local_server.model_file="$work/model.gguf")

# 1. A run: the server answers the probe and the operators, then is gone.
"$kevo" run "$src/configs/llm-local.json" --out "$work/run" "${common[@]}" \
  --set "llm.local_server.command=$(server_cmd run ', "--startup-delay", "1.5"')" \
  --set budget.evaluations_per_task=10 --set budget.wall_seconds=120 > "$work/run.log" 2>&1 \
  || { tail -30 "$work/run.log"; fail "the run with a local server failed"; }
"$py" "$src/tests/llm/check_llm_lineage.py" "$work/run" --expect "" || fail "lineage"
grep -q '"path": "/health"' "$work/server-run.log" || fail "kevo never asked the server whether it was ready"
grep -q '"method": "POST"' "$work/server-run.log" || fail "no chat request reached the local server"
alive "$work/server-run.pid" && fail "the local server outlived the run"
grep -q '"local_server"' "$work/run/config.json" || fail "the effective config does not show the local server"
echo "ok: run, probe and stop"

# 2. A missing model file: exit 2 naming the key, nothing started, no run.
status=0
"$kevo" run "$src/configs/llm-local.json" --out "$work/nomodel" "${common[@]}" \
  --set "llm.local_server.command=$(server_cmd nomodel)" \
  --set llm.local_server.model_file="$work/absent.gguf" > "$work/nomodel.log" 2>&1 || status=$?
[ "$status" -eq 2 ] || { cat "$work/nomodel.log"; fail "missing model: exit $status, wanted 2"; }
grep -q "/llm/local_server/model_file" "$work/nomodel.log" || { cat "$work/nomodel.log"; fail "the key is not named"; }
[ ! -e "$work/nomodel" ] || fail "a run directory was left behind (missing model)"
[ ! -e "$work/server-nomodel.pid" ] || fail "a server was started without its model"
# ...and a server command that is not there: the same, naming its key.
status=0
"$kevo" run "$src/configs/llm-local.json" --out "$work/nocmd" "${common[@]}" \
  --set 'llm.local_server.command=["kevo-no-such-server"]' > "$work/nocmd.log" 2>&1 || status=$?
[ "$status" -eq 2 ] && grep -q "/llm/local_server/command" "$work/nocmd.log" \
  || { cat "$work/nocmd.log"; fail "a missing server command: exit $status or the key is not named"; }

# 3. A server that exits while it starts: a clear error with its log, no run.
status=0
"$kevo" run "$src/configs/llm-local.json" --out "$work/dies" "${common[@]}" \
  --set "llm.local_server.command=$(server_cmd dies ', "--exit-at-start", "3"')" > "$work/dies.log" 2>&1 || status=$?
[ "$status" -ne 0 ] || fail "a server that died at start did not fail the run"
grep -q "exited with code 3" "$work/dies.log" && grep -q "exiting at start as asked" "$work/dies.log" \
  && grep -q "local_server/command" "$work/dies.log" || { cat "$work/dies.log"; fail "the message lacks the exit code, log or key"; }
[ ! -e "$work/dies" ] || fail "a run directory was left behind (server died)"

# 4. The port is taken: the server cannot bind and exits; same error.
"$py" -c "import socket,time,sys; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); open(sys.argv[1],'w').write(str(s.getsockname()[1])); time.sleep(60)" "$work/taken" &
holder=$!
for _ in $(seq 1 100); do [ -s "$work/taken" ] && break; sleep 0.05; done
status=0
"$kevo" run "$src/configs/llm-local.json" --out "$work/taken-run" "${common[@]}" \
  --set "llm.local_server.command=$(server_cmd taken)" --set llm.local_server.port="$(cat "$work/taken")" \
  > "$work/taken.log" 2>&1 || status=$?
kill "$holder" 2>/dev/null || true
[ "$status" -ne 0 ] || fail "a taken port did not fail the run"
grep -q "exited with code" "$work/taken.log" && grep -q "port $(cat "$work/taken")" "$work/taken.log" \
  || { cat "$work/taken.log"; fail "the message does not say the server exited on that port"; }
[ ! -e "$work/taken-run" ] || fail "a run directory was left behind (port taken)"

# 5. Not ready in time: the key and the timeout are named, the server is stopped.
status=0
"$kevo" run "$src/configs/llm-local.json" --out "$work/slow" "${common[@]}" \
  --set "llm.local_server.command=$(server_cmd slow ', "--startup-delay", "30"')" \
  --set llm.local_server.startup_seconds=1 > "$work/slow.log" 2>&1 || status=$?
[ "$status" -ne 0 ] || fail "a server that never got ready did not fail the run"
grep -q "local_server/startup_seconds" "$work/slow.log" || { cat "$work/slow.log"; fail "the timeout's key is not named"; }
sleep 0.5
alive "$work/server-slow.pid" && fail "the server that never got ready was left running"

# A long run in the background whose server has answered a chat request:
# sets kpid. usage: long_run NAME [more kevo arguments]
long_run() {
  local name="$1"; shift
  "$kevo" run "$src/configs/llm-local.json" --out "$work/$name" "${common[@]}" \
    --set "llm.local_server.command=$(server_cmd "$name")" \
    --set budget.evaluations_per_task=100000 --set budget.wall_seconds=600 "$@" > "$work/$name.log" 2>&1 &
  kpid=$!
  for _ in $(seq 1 200); do grep -q '"method": "POST"' "$work/server-$name.log" 2>/dev/null && break; sleep 0.1; done
  alive "$work/server-$name.pid" || fail "the server of run $name never started"
}

# 6. Interrupted (SIGINT, as Ctrl-C sends it to kevo alone here): the run
# stops and the server goes with it.
long_run int
kill -INT "$kpid"
wait "$kpid" || true
alive "$work/server-int.pid" && fail "the local server outlived an interrupted run"

# 7. kevo killed outright: the kernel ends the server (PR_SET_PDEATHSIG).
long_run kill
kill -KILL "$kpid"
wait "$kpid" 2>/dev/null || true
for _ in $(seq 1 50); do alive "$work/server-kill.pid" || break; sleep 0.1; done
alive "$work/server-kill.pid" && fail "the local server outlived a killed kevo"

# 8. The server dies mid-run: the run stops with exit 3 (its LLM requests
# fail), resumable; the resume starts a server of its own and finishes.
long_run mid --set llm.failure_window=4
kill -KILL "$(cat "$work/server-mid.pid")"
status=0
wait "$kpid" || status=$?
[ "$status" -eq 3 ] || { tail -20 "$work/mid.log"; fail "a server that died mid-run: exit $status, wanted 3"; }
rm -f "$work/server-mid.pid"
"$kevo" resume "$work/mid" --set budget.evaluations_per_task=12 > "$work/resume.log" 2>&1 \
  || { tail -20 "$work/resume.log"; fail "the resume after the server died failed"; }
[ -s "$work/server-mid.pid" ] || fail "the resume did not start a server of its own"
alive "$work/server-mid.pid" && fail "the resumed run's server outlived it"
echo "ok: local server lifetime"
