#!/usr/bin/env python3
"""LLM failures are loud (docs/llm.md#failures), end to end through
`kevo run configs/llm.json` and the fake LLM server, on the null backend.

usage: loud_failures.py CASE KEVO SOURCE_DIR WORK_DIR
  probe   a server rejecting the key: the probe's 401 is an input error
          (exit 2) before a run directory exists; a bad --set value names
          the override, not the config file
  stop    a server answering 401 to every chat request stops the run at once
          (exit 3, model and status named, few candidates); one answering
          500, and one that dies mid-run (connection resets), stop it past
          llm.max_failure_share, with the reason, and the progress view
          counts the failures per operator and model
  report  report.json's and `kevo report`'s LLM columns (requests, retries,
          failures by kind, tokens, USD) against the server's own log
"""
import json
import os
import shutil
import subprocess
import sys
import time

CASE, KEVO, SRC, WORK = [sys.argv[1]] + [os.path.abspath(a) for a in sys.argv[2:5]]
CONFIG = os.path.join(SRC, "configs", "llm.json")
TOY = os.path.join(SRC, "tests", "engine", "data", "toy")
SERVER = os.path.join(SRC, "tests", "llm", "fake_llm_server.py")
KEY = "sk-loud-do-not-log-%d" % os.getpid()


def fail(msg, *logs):
    print("FAIL:", msg)
    for text in logs:
        print(text[-3000:])
    sys.exit(1)


class Server:
    def __init__(self, name, script):
        self.dir = os.path.join(WORK, name + "-server")
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, "script.json"), "w") as f:
            json.dump(script, f)
        self.log_path = os.path.join(self.dir, "log.jsonl")
        port_file = os.path.join(self.dir, "port")
        self.proc = subprocess.Popen([sys.executable, SERVER, "--script", os.path.join(self.dir, "script.json"),
                                      "--log", self.log_path, "--port-file", port_file],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(400):
            if os.path.exists(port_file):
                break
            time.sleep(0.025)
        with open(port_file) as f:
            self.url = "http://127.0.0.1:%s/v1" % f.read().strip()

    def log(self):
        if not os.path.exists(self.log_path):
            return []
        with open(self.log_path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def posts(self):
        return [e for e in self.log() if e.get("method") == "POST"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def run(name, server_url, extra, evaluations=12):
    out = os.path.join(WORK, name)
    args = [KEVO, "run", CONFIG, "--out", out,
            "--set", 'tasks=["%s"]' % TOY, "--set", 'backend.type="null"',
            "--set", "budget.evaluations_per_task=%d" % evaluations, "--set", "budget.wall_seconds=50",
            "--set", "island.in_flight=4",
            "--set", "llm.models.0.base_url=" + server_url,
            "--set", "llm.models.0.api_key_env=KEVO_LOUD_KEY",
            "--set", "llm.client.backoff_initial_s=0.01", "--set", "llm.client.backoff_max_s=0.05",
            "--set", "llm.client.max_retries=1", "--set", "llm.client.timeout_s=5",
            "--set", "progress.mode=lines", "--set", "progress.interval_seconds=0.2"] + extra
    env = dict(os.environ, KEVO_LOUD_KEY=KEY)
    t0 = time.monotonic()
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    for text in (p.stdout, p.stderr):
        if KEY in text:
            fail("the API key reached the console", text)
    return p, out, took


def report_json(run_dir):
    with open(os.path.join(run_dir, "report.json")) as f:
        return json.load(f)


def kevo_report(run_dir):
    p = subprocess.run([KEVO, "report", run_dir, "--json"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("kevo report failed", p.stdout, p.stderr)
    return json.loads(p.stdout)


def check_stopped(name, p, out, took, wants):
    if p.returncode != 3:
        fail("%s: exit %d, wanted 3" % (name, p.returncode), p.stdout, p.stderr)
    for w in wants:
        if w not in p.stdout:
            fail("%s: the stop line does not say %r" % (name, w), p.stdout, p.stderr)
    if "kevo: stopping the run: " not in p.stderr:
        fail("%s: no stop message when it happened" % name, p.stderr)
    rj = report_json(out)
    if not rj["stopped"] or not all(w in rj["stop_reason"] for w in wants):
        fail("%s: report.json does not say why it stopped: %s" % (name, rj.get("stop_reason")))
    # Resumable and coherent: the final checkpoint is written.
    with open(os.path.join(out, "checkpoint", "rank-0000.json")) as f:
        cp = json.load(f)
    if not (cp["final"] and cp["stopped"]):
        fail("%s: no final checkpoint of a stopped run: %s" % (name, cp))
    if took > 40:
        fail("%s: took %.1f s to stop" % (name, took))
    return rj


def case_probe():
    srv = Server("probe", {"models": {"kind": "status", "status": 401, "body": "invalid api key"},
                           "default": {"kind": "status", "status": 401}})
    try:
        p, out, took = run("probe401", srv.url, [])
        if p.returncode != 2:
            fail("probe 401: exit %d, wanted 2" % p.returncode, p.stdout, p.stderr)
        for w in ("KEVO_LOUD_KEY", "'local'", "HTTP 401"):
            if w not in p.stderr:
                fail("probe 401: the error does not name %r" % w, p.stderr)
        if os.path.exists(out):
            fail("probe 401: a run directory was created")
        if srv.posts():
            fail("probe 401: chat requests were sent: %d" % len(srv.posts()))
        gets = [e for e in srv.log() if e.get("method") == "GET"]
        if len(gets) != 1 or not gets[0]["has_key"]:
            fail("probe 401: wanted one authenticated GET /models, got %s" % gets)
        print("probe: 401 refused in %.2f s, exit 2, no run directory" % took)
    finally:
        srv.stop()
    # A bad --set value is told against the override.
    p, out, _ = run("badset", "http://127.0.0.1:9/v1", ["--set", "llm.budget.tokens=abc"])
    want = "kevo: error: --set llm.budget.tokens=abc: /llm/budget/tokens: expected"
    if p.returncode != 2 or not p.stderr.startswith(want):
        fail("bad --set: exit %d, wanted 2 and %r" % (p.returncode, want), p.stderr)
    if "llm.json" in p.stderr or os.path.exists(out):
        fail("bad --set: names the config file, or left a directory", p.stderr)
    print("bad --set: " + p.stderr.strip())


def case_stop():
    # 401 on every chat request (the listing answers): stop at once.
    srv = Server("s401", {"models": {"kind": "list", "ids": []},
                          "default": {"kind": "status", "status": 401, "body": "invalid api key " + KEY}})
    try:
        p, out, took = run("stop401", srv.url, [], evaluations=60)
        rj = check_stopped("401", p, out, took, ["'local'", "HTTP 401"])
        posts = len(srv.posts())
        llm = rj["llm"]
        # At most the window of children in flight when the first answer came.
        if posts > 8 or llm["requests"] != posts or llm["failures_by_kind"].get("auth") != posts:
            fail("401: %d requests sent, report %s" % (posts, llm))
        records = sum(t["candidates"] for t in rj["tasks"])
        if records > 12:
            fail("401: %d candidates recorded before the stop" % records)
        print("401: stopped in %.2f s, exit 3, %d request(s), %d record(s)" % (took, posts, records))
    finally:
        srv.stop()

    # 500 after the retries, every time: past the share of the window.
    srv = Server("s500", {"default": {"kind": "status", "status": 500}})
    try:
        p, out, took = run("stop500", srv.url, ["--set", "llm.failure_window=6", "--set", "llm.max_failure_share=0.5"],
                           evaluations=60)
        check_stopped("500", p, out, took, ["of the last 6 LLM requests failed", "server"])
        if "llm failed llm_" not in p.stderr or "/local " not in p.stderr:
            fail("500: the progress view does not count the failures per operator and model", p.stderr)
        print("500: stopped in %.2f s: %s" % (took, report_json(out)["stop_reason"]))
    finally:
        srv.stop()

    # A server that answers, then dies (every connection reset).
    srv = Server("sdead", {"sequence": [{"kind": "auto"}] * 8, "default": {"kind": "reset"}})
    try:
        p, out, took = run("stopdead", srv.url, ["--set", "llm.failure_window=8"], evaluations=80)
        rj = check_stopped("reset", p, out, took, ["of the last 8 LLM requests failed", "transport"])
        if rj["llm"]["requests"] <= rj["llm"]["failures"]:
            fail("reset: no request succeeded before the server died: %s" % rj["llm"])
        print("reset: stopped in %.2f s: %s" % (took, rj["stop_reason"]))
    finally:
        srv.stop()


def case_report():
    seq = [{"kind": "auto"}, {"kind": "status", "status": 500}, {"kind": "auto"},
           {"kind": "status", "status": 400, "body": "context length exceeded"}, {"kind": "auto"},
           {"kind": "invalid_json"}, {"kind": "auto"}, {"kind": "auto"},
           {"kind": "status", "status": 400, "body": "context length exceeded"}]
    srv = Server("rep", {"sequence": seq, "default": {"kind": "auto"}})
    try:
        p, out, took = run("report", srv.url, ["--set", "llm.models.0.usd_per_mtok_in=1.5",
                                                "--set", "llm.models.0.usd_per_mtok_out=4",
                                                "--set", "llm.failure_window=1000",
                                                "--set", "llm.client.max_retries=4"], evaluations=14)
        if p.returncode != 0:
            fail("report run: exit %d" % p.returncode, p.stdout, p.stderr)
        posts = srv.posts()
    finally:
        srv.stop()
    rj = report_json(out)
    llm = rj["llm"]
    if kevo_report(out)["llm"] != llm:
        fail("kevo report --json and report.json disagree")
    tokens_in = sum(e["input_tokens"] for e in posts)
    tokens_out = sum(e["output_tokens"] for e in posts)
    http400 = sum(1 for e in posts if e["status"] == 400)
    got = (llm["requests"] + llm["retries"], llm["input_tokens"], llm["output_tokens"],
           llm["failures"], llm["failures_by_kind"].get("prompt_too_long", 0))
    want = (len(posts), tokens_in, tokens_out, http400, http400)
    if got != want:
        fail("report %s, server log %s (attempts, tokens in, out, failures, 400s: context length, prompt_too_long)"
             % (got, want))
    if llm["retries"] < 2:
        fail("the 500 and the invalid JSON were not retried: %s" % llm)
    usd = (tokens_in * 1.5 + tokens_out * 4.0) / 1e6
    if abs(llm["usd"] - usd) > 1e-9 + 1e-9 * usd:
        fail("USD %r, wanted %r" % (llm["usd"], usd))
    if list(llm["by_model"]) != ["local"] or llm["by_model"]["local"]["requests"] != llm["requests"]:
        fail("per model: %s" % llm["by_model"])
    if sum(t["requests"] for t in llm["by_operator"].values()) != llm["requests"]:
        fail("per operator does not add up: %s" % llm["by_operator"])
    text = subprocess.run([KEVO, "report", out], capture_output=True, text=True, timeout=60).stdout
    if "model local" not in text or "operator llm_" not in text or "prompt_too_long %d" % http400 not in text:
        fail("kevo report does not show the LLM table", text)
    print("report: %d requests + %d retries = %d POSTs; tokens %d in / %d out; %.6f USD; failures %s"
          % (llm["requests"], llm["retries"], len(posts), tokens_in, tokens_out, llm["usd"], llm["failures_by_kind"]))


if __name__ == "__main__":
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    {"probe": case_probe, "stop": case_stop, "report": case_report}[CASE]()
    print("ok")
