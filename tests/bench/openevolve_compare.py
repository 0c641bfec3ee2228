#!/usr/bin/env python3
"""kevo against OpenEvolve: controller overhead per candidate, with an
instant evaluator and an instant scripted LLM, in one run on one machine
(docs/benchmarks.md, "Against OpenEvolve (issue 19)").

  openevolve_compare.py --kevo build/bin/kevo --oe-python VENV/bin/python
                        [--kevo-candidates 20000] [--oe-iterations 1300]

Both sides talk to the same instant LLM server, started here as a process of
its own (`openevolve_compare.py serve`): HTTP/1.1 keep-alive, TCP_NODELAY,
one write per answer, every POST .../chat/completions answered at once with
the same OpenAI chat-completion reply: one ```cpp block holding the toy task's
seed (tests/engine/data/toy) plus a line `static const int kevo_bench_variant
= N;`, N counting the requests, so that every reply is a new program (kevo
would record a repeated one as a duplicate, unjudged; OpenEvolve would keep
it). The server counts the requests it answered and its own CPU time. The
C++ server runs under SCHED_FIFO where it may (`--server-sched realtime`, the
default), so that it answers at once; one more kevo run, against a server at
the default policy, is printed for comparison
(docs/benchmarks.md#server-scheduling).

kevo: `kevo run configs/llm.json` on the toy task with the null backend
(instant verdicts), llm_rewrite the only operator, one rank (no mpirun), the
LLM cache off; per candidate = the search's wall time (report.json's
elapsed_seconds: the first record to the last) / candidates, the LLM round
trip of every candidate included (every candidate but the seed is one
request: checked against the server's count). A second run with
island.population 1000 has a population as large as OpenEvolve's cap. Where
h5py is importable, the lineage also gives kevo's time per candidate over
the same size bands (records committed).

OpenEvolve: its controller (`OpenEvolve(...).run(iterations=M)`, the
ProcessParallelController) in full-rewrite mode (`diff_based_evolution:
false`: the same reply serves both) with an evaluator returning fixed
metrics at once, everything else at its defaults (population_size 1000,
5 islands, one worker process, INFO logging to its log file, a checkpoint
every 100 iterations). Per iteration = the time between successive
completions as its controller processes them (taken where it submits the
next iteration), grouped by the database size at the time; the start-up, the
worker's first iteration and the initial program's evaluation excluded.

Prints both side by side, the ratio OpenEvolve/kevo overall and per database
size band, and whether kevo meets the issue's targets (at most 50 us per
candidate, LLM round trip included; at least 150x fewer than OpenEvolve at
every database size). Exit 0 when both sides ran (whether or not the targets
are met), 1 when something failed.

The other sub-commands are this script's own parts: `serve` (the instant
server) and `oe-drive` (runs inside OpenEvolve's virtual environment).
"""
import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOY = os.path.join(ROOT, "tests", "engine", "data", "toy")
TARGET_US = 50.0
TARGET_RATIO = 150.0
# Database size bands for OpenEvolve's per-iteration times.
BANDS = [(0, 10), (10, 100), (100, 250), (250, 500), (500, 750), (750, 999), (1000, 10 ** 9)]


# --------------------------------------------------------------------------
# The instant LLM server


def reply_parts(seed_source):
    """The JSON body of the reply, split around the request counter."""
    marker = "@@N@@"
    lines = seed_source.rstrip("\n").split("\n")
    # The variant line goes just before the function, after the includes.
    at = next((i for i, l in enumerate(lines) if l.startswith("extern")), len(lines))
    code = "\n".join(lines[:at] + ["static const int kevo_bench_variant = %s;" % marker] + lines[at:])
    text = "Here is the rewritten kernel.\n\n```cpp\n" + code + "\n```\n"
    body = json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}})
    a, b = body.split(marker)
    return a.encode(), b.encode()


class Instant(asyncio.Protocol):
    stats = {"posts": 0, "gets": 0, "connections": 0}
    parts = (b"", b"")

    def connection_made(self, transport):
        self.t = transport
        self.buf = b""
        Instant.stats["connections"] += 1
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data):
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1")
            lines = head.split("\r\n")
            length, expect = 0, False
            for h in lines[1:]:
                k, _, v = h.partition(":")
                k = k.strip().lower()
                if k == "content-length":
                    length = int(v)
                elif k == "expect" and "100-continue" in v.lower():
                    expect = True
                elif k == "transfer-encoding" and "chunked" in v.lower():
                    self.answer(411, b'{"error": {"message": "send a Content-Length"}}')
                    self.t.close()
                    return
            if len(self.buf) < end + 4 + length:
                if expect and not getattr(self, "continued", False):
                    self.continued = True
                    self.t.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                return
            self.continued = False
            self.buf = self.buf[end + 4 + length:]
            method, path = (lines[0].split(" ") + ["", ""])[:2]
            if method == "POST" and path.endswith("/chat/completions"):
                Instant.stats["posts"] += 1
                a, b = Instant.parts
                self.answer(200, a + str(Instant.stats["posts"]).encode() + b)
            elif method == "GET" and path.endswith("/models"):
                Instant.stats["gets"] += 1
                self.answer(200, b'{"object": "list", "data": [{"id": "bench", "object": "model"}]}')
            elif method == "GET" and path == "/stats":
                s = dict(Instant.stats, cpu_s=time.process_time())
                self.answer(200, json.dumps(s).encode())
            else:
                self.answer(404, b'{"error": {"message": "no such endpoint"}}')

    def answer(self, status, body):
        reason = {200: "OK", 404: "Not Found", 411: "Length Required"}[status]
        self.t.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: keep-alive\r\n\r\n%s" % (status, reason.encode(), len(body), body))


def serve(args):
    with open(os.path.join(TOY, "seed.cpp")) as f:
        Instant.parts = reply_parts(f.read())

    async def main():
        loop = asyncio.get_running_loop()
        srv = await loop.create_server(Instant, "127.0.0.1", 0, backlog=1024)
        port = srv.sockets[0].getsockname()[1]
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(args.port_file + ".tmp", args.port_file)
        await srv.serve_forever()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    return 0


def cpp_server(kevo):
    """The C++ instant server built next to kevo (tests/bench/instant_llm_server.cpp), or None."""
    exe = os.path.join(os.path.dirname(os.path.abspath(kevo)), "kevo_bench_instant_llm_server")
    return exe if os.access(exe, os.X_OK) else None


class Server:
    """The instant server as a child process: the C++ one when `exe` is given,
    else this script's `serve` (Python asyncio); the same answers."""

    def __init__(self, work, exe=None, realtime=False, unix=False):
        port_file = os.path.join(work, "server.port")
        # The C++ server can listen on a Unix-domain socket too (kevo's
        # llm.models[].unix_socket): a short path, sun_path holds 107 bytes.
        self.unix = tempfile.mkdtemp(prefix="kevo-oe-") + "/llm.sock" if (exe and unix) else None
        if os.path.exists(port_file):
            os.remove(port_file)
        self.kind = "C++ (kevo_bench_instant_llm_server)" if exe else "Python asyncio (openevolve_compare.py serve)"
        if exe:
            with open(os.path.join(TOY, "seed.cpp")) as f:
                a, b = reply_parts(f.read())
            parts = []
            for name, data in (("reply.prefix", a), ("reply.suffix", b)):
                parts.append(os.path.join(work, name))
                with open(parts[-1], "wb") as f:
                    f.write(data)
            cmd = [exe, "--port-file", port_file, "--prefix", parts[0], "--suffix", parts[1]]
            if realtime:
                cmd.append("--realtime")
            if self.unix:
                cmd += ["--unix", self.unix]
        else:
            cmd = [sys.executable, os.path.abspath(__file__), "serve", "--port-file", port_file]
        self.p = subprocess.Popen(cmd)
        for _ in range(200):
            if os.path.exists(port_file):
                break
            if self.p.poll() is not None:
                sys.exit("the instant server exited at start (%d)" % self.p.returncode)
            time.sleep(0.05)
        else:
            self.stop()
            sys.exit("the instant server wrote no port in 10 s")
        self.port = int(open(port_file).read())
        self.url = "http://127.0.0.1:%d/v1" % self.port
        # Whether it runs under SCHED_FIFO (only the C++ server asks for it).
        self.realtime = bool(self.stats().get("realtime", False))
        self.kind += ", SCHED_FIFO 1 (answers at once)" if self.realtime else ", default scheduling policy"

    def stats(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/stats" % self.port, timeout=10) as r:
            return json.loads(r.read())

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        if self.unix:
            shutil.rmtree(os.path.dirname(self.unix), ignore_errors=True)


# --------------------------------------------------------------------------
# OpenEvolve (this part runs inside OpenEvolve's virtual environment)

EVALUATOR = '''"""Instant evaluator: fixed metrics, nothing run."""


def evaluate(program_path):
    return {"combined_score": 0.5, "speedup": 1.0}
'''


def oe_drive(args):
    """Runs OpenEvolve's controller for --iterations and writes, per completed
    iteration, when its controller took the result up and the database size
    then, to --out (JSON)."""
    import openevolve
    from openevolve.config import load_config
    from openevolve.controller import OpenEvolve
    from openevolve import process_parallel as pp

    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    program = os.path.join(work, "initial_program.cpp")
    shutil.copy(os.path.join(TOY, "seed.cpp"), program)
    evaluator = os.path.join(work, "evaluator.py")
    with open(evaluator, "w") as f:
        f.write(EVALUATOR)
    # Its defaults, except the endpoint, full rewrites (the reply is a whole
    # program, as for kevo's llm_rewrite), no cascade (the evaluator has one
    # stage) and the number of worker processes.
    cfg_text = "\n".join([
        "max_iterations: %d" % args.iterations,
        "diff_based_evolution: false",
        "llm:",
        "  api_base: %s" % args.api_base,
        "  api_key: bench",
        "  timeout: 60",
        "  models:",
        "    - name: bench",
        "      weight: 1.0",
        "evaluator:",
        "  cascade_evaluation: false",
        "  parallel_evaluations: %d" % args.workers,
        ""])
    cfg_path = os.path.join(work, "config.yaml")
    with open(cfg_path, "w") as f:
        f.write(cfg_text)
    config = load_config(cfg_path)

    marks = []       # (time, database size, error) per completion, as the controller takes it up
    phases = {}
    orig_start, orig_run = pp.ProcessParallelController.start, pp.ProcessParallelController.run_evolution

    def start(self):
        orig_start(self)
        submit = self.executor.submit
        db = self.database

        def timed_submit(*a, **k):
            fut = submit(*a, **k)
            result = fut.result

            def timed_result(*ra, **rk):
                t = time.perf_counter()
                n = len(db.programs)
                r = result(*ra, **rk)
                marks.append((t, n, bool(getattr(r, "error", None))))
                return r
            fut.result = timed_result
            return fut
        self.executor.submit = timed_submit

    async def run_evolution(self, *a, **k):
        phases["evolution_start"] = time.perf_counter()
        try:
            return await orig_run(self, *a, **k)
        finally:
            phases["evolution_end"] = time.perf_counter()

    pp.ProcessParallelController.start = start
    pp.ProcessParallelController.run_evolution = run_evolution

    t0 = time.perf_counter()
    oe = OpenEvolve(initial_program_path=program, evaluation_file=evaluator, config=config,
                    output_dir=os.path.join(work, "openevolve_output"))
    phases["init_s"] = time.perf_counter() - t0
    asyncio.run(oe.run(iterations=args.iterations))
    phases["total_s"] = time.perf_counter() - t0
    out = {"version": openevolve.__version__, "iterations": args.iterations, "workers": args.workers,
           "population_size": config.database.population_size, "num_islands": config.database.num_islands,
           "marks": marks, "phases": phases, "final_programs": len(oe.database.programs)}
    with open(args.out, "w") as f:
        json.dump(out, f)
    return 0


# --------------------------------------------------------------------------
# The comparison


def children_cpu():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def band_of(n):
    for lo, hi in BANDS:
        if lo <= n < hi:
            return (lo, hi)
    return BANDS[-1]


def band_name(b):
    lo, hi = b
    if hi >= 10 ** 9:
        return "%d+ (cap)" % lo if lo == 1000 else "%d+" % lo
    return "%d-%d" % (lo, hi - 1)


def run_kevo(args, server, label, extra, unix=False):
    """One kevo run (over TCP, or with `unix` through the server's Unix-domain socket); returns its figures."""
    with open(os.path.join(ROOT, "configs", "llm.json")) as f:
        base = json.load(f)
    out = os.path.join(args.work, "kevo-" + label)
    shutil.rmtree(out, ignore_errors=True)
    sets = {
        "tasks": json.dumps([TOY]),
        "backend.type": '"null"',
        "budget.evaluations_per_task": str(args.kevo_candidates),
        "budget.wall_seconds": "0",
        "llm.models.0.base_url": server.url,
        "llm.models.0.model": '"bench"',
        "llm.budget.tokens": "0",
        "llm.budget.usd": "0",
        "llm.cache.mode": '"off"',     # every candidate a real HTTP request
        "progress.mode": '"off"',
    }
    for i, op in enumerate(base["operators"]):
        if op["type"] == "llm_rewrite":
            sets["operators.%d.weight" % i] = "1.0"
        else:
            sets["operators.%d.enabled" % i] = "false"
    if unix:
        sets["llm.models.0.base_url"] = '"http://localhost/v1"'
        sets["llm.models.0.unix_socket"] = json.dumps(server.unix)
    for kv in args.kevo_set:
        k, _, v = kv.partition("=")
        sets[k] = v
    sets.update(extra)
    cmd = [args.kevo, "run", os.path.join(ROOT, "configs", "llm.json"), "--out", out]
    for k, v in sets.items():
        cmd += ["--set", "%s=%s" % (k, v)]
    before, cpu0, t0 = server.stats(), children_cpu(), time.perf_counter()
    with open(os.path.join(args.work, "kevo-%s.log" % label), "w") as log:
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    after = server.stats()
    if rc != 0:
        sys.exit("kevo (%s) exited %d: see %s" % (label, rc, os.path.join(args.work, "kevo-%s.log" % label)))
    report = json.load(open(os.path.join(out, "report.json")))
    task = report["tasks"][0]
    llm = report.get("llm", {})
    r = {"label": label, "candidates": task["candidates"], "evaluations": task["evaluations"],
         "correct": task["status"]["correct"], "duplicates": task["status"]["duplicate"],
         "requests": llm.get("requests", 0), "cached": llm.get("cached", 0), "failures": llm.get("failures", 0),
         "posts": after["posts"] - before["posts"], "connections": after["connections"] - before["connections"],
         "search_s": report["elapsed_seconds"], "wall_s": wall,
         "cpu_s": cpu, "server_cpu_s": after["cpu_s"] - before["cpu_s"], "bands": None}
    r["us"] = r["search_s"] / r["candidates"] * 1e6
    r["cpu_us"] = r["cpu_s"] / r["candidates"] * 1e6
    # Per band of records committed so far, from the lineage (where h5py is there).
    try:
        import h5py
        with h5py.File(os.path.join(out, "lineage", "rank-0000.h5"), "r") as h:
            t = sorted(float(x) for x in h["candidates"]["t_finished"])
        bands = {}
        for lo, hi in BANDS:
            a, b = lo, min(hi, len(t) - 1)
            if b - a >= 5:
                bands[(lo, hi)] = (t[b] - t[a]) / (b - a) * 1e6
        r["bands"] = bands
    except ImportError:
        pass
    return r


def run_openevolve(args, server):
    out = os.path.join(args.work, "openevolve.json")
    before, cpu0 = server.stats(), children_cpu()
    cmd = [args.oe_python, os.path.abspath(__file__), "oe-drive", "--api-base", server.url,
           "--iterations", str(args.oe_iterations), "--workers", str(args.oe_workers),
           "--work", os.path.join(args.work, "openevolve"), "--out", out]
    log_path = os.path.join(args.work, "openevolve.log")
    with open(log_path, "w") as log:
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
    cpu = children_cpu() - cpu0
    after = server.stats()
    if rc != 0:
        sys.exit("OpenEvolve exited %d: see %s" % (rc, log_path))
    d = json.load(open(out))
    marks = d["marks"]
    skip = min(5, max(0, len(marks) - 3))   # the worker's start-up (fork, imports, first client)
    t = [m[0] for m in marks]
    iv = [(t[i + 1] - t[i], marks[i][1]) for i in range(skip, len(t) - 1)]
    bands = {}
    for dt, n in iv:
        bands.setdefault(band_of(n), []).append(dt)
    r = {"version": d["version"], "iterations": d["iterations"], "workers": d["workers"],
         "population_size": d["population_size"], "num_islands": d["num_islands"],
         "completions": len(marks), "errors": sum(1 for m in marks if m[2]), "final_programs": d["final_programs"],
         "max_programs": max(m[1] for m in marks) if marks else 0,
         "overall_ms": (t[-1] - t[skip]) / (len(t) - 1 - skip) * 1e3, "measured": len(iv),
         "bands": bands, "total_s": d["phases"]["total_s"], "cpu_s": cpu,
         "posts": after["posts"] - before["posts"], "connections": after["connections"] - before["connections"],
         "server_cpu_s": after["cpu_s"] - before["cpu_s"]}
    r["cpu_ms"] = cpu / d["iterations"] * 1e3
    return r


def run_parts(args):
    """kevo's own benchmarks of the two halves, for reference."""
    parts = {}
    bindir = os.path.dirname(os.path.abspath(args.kevo))
    eng = os.path.join(bindir, "kevo_bench_engine")
    cli = os.path.join(bindir, "kevo_bench_llm_client")
    if os.access(eng, os.X_OK):
        p = subprocess.run([eng, "--candidates", "20000", "--repeats", "1"], capture_output=True, text=True)
        for line in p.stdout.splitlines():
            f = line.split()
            if line.startswith("island + HDF5 lineage") and len(f) >= 8:
                parts["engine"] = float(f[-2])
    if os.access(cli, os.X_OK):
        p = subprocess.run([cli, "5000", "8"], capture_output=True, text=True)
        for line in p.stdout.splitlines():
            f = line.split()
            if line.strip().startswith("throughput") and len(f) >= 2:
                parts["client"] = 1e6 / float(f[1])
    return parts


def compare(args):
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)
    if not os.access(args.kevo, os.X_OK):
        sys.exit("no kevo at %s (build it: scripts/build.sh, or pass --kevo)" % args.kevo)
    if args.openevolve and not os.access(args.oe_python, os.X_OK):
        sys.exit("no OpenEvolve python at %s (scripts/bench_openevolve.sh makes its venv)" % args.oe_python)
    load0 = os.getloadavg()
    exe = None if args.server == "python" else cpp_server(args.kevo)
    if args.server == "cpp" and not exe:
        sys.exit("no kevo_bench_instant_llm_server next to %s (build it: scripts/build.sh)" % args.kevo)
    server = Server(args.work, exe, realtime=args.server_sched == "realtime", unix=args.unix)
    try:
        kevo = [run_kevo(args, server, "pop12", {})]
        if args.kevo_pop1000:
            kevo.append(run_kevo(args, server, "pop1000", {"island.population": "1000"}))
        if server.unix:
            kevo.append(run_kevo(args, server, "pop12-uds", {}, unix=True))
            if args.kevo_pop1000:
                kevo.append(run_kevo(args, server, "pop1000-uds", {"island.population": "1000"}, unix=True))
        oe = run_openevolve(args, server) if args.openevolve else None
    finally:
        server.stop()
    # For comparison, the same kevo run with the server at the default policy
    # (where the server's real time priority was granted): on a machine with
    # fewer free cores than busy threads, the difference is the server
    # waiting for a core, not kevo's work.
    reference = None
    if server.realtime:
        plain = Server(args.work, exe, realtime=False)
        try:
            reference = run_kevo(args, plain, "pop12-default", {})
        finally:
            plain.stop()
    parts = run_parts(args) if args.parts else {}
    load1 = os.getloadavg()

    import statistics
    P = print
    names = {"pop12": "population 12 (llm.json)", "pop1000": "population 1000",
             "pop12-uds": "pop. 12, Unix socket", "pop1000-uds": "pop. 1000, Unix socket",
             "pop12-default": "pop. 12, server default"}
    if oe:
        P("kevo against OpenEvolve %s: controller overhead per candidate (issue 19)" % oe["version"])
    else:
        P("kevo: controller overhead per candidate (issue 19; OpenEvolve not run)")
    P("instant evaluator on both sides; one instant LLM server for both (HTTP/1.1 keep-alive, TCP_NODELAY):")
    P("%s" % server.kind)
    P("%d cores, load average %.2f at the start, %.2f at the end" % (os.cpu_count(), load0[0], load1[0]))
    P("")
    P("kevo: kevo run configs/llm.json, toy task, null backend, llm_rewrite only, 1 rank, LLM cache off;")
    P("per candidate = search time (report.json elapsed_seconds) / candidates, the LLM round trip included")
    P("%-25s %10s %9s %6s %9s %13s %12s" % ("configuration", "candidates", "requests", "conns", "search s",
                                           "us/candidate", "CPU us/cand"))
    for k in kevo + ([reference] if reference else []):
        P("%-25s %10d %9d %6d %9.2f %13.1f %12.1f" % (names[k["label"]], k["candidates"], k["posts"],
                                                      k["connections"], k["search_s"], k["us"], k["cpu_us"]))
    if reference:
        P("(the last row, for comparison: the server at the default scheduling policy, not used for the targets)")
    problems = []
    for k in kevo + ([reference] if reference else []):
        if k["posts"] != k["requests"] or k["requests"] != k["candidates"] - 1 or k["cached"] or k["failures"]:
            problems.append("kevo %s: %d candidates, %d requests reported (%d cached, %d failed), %d answered"
                            % (k["label"], k["candidates"], k["requests"], k["cached"], k["failures"], k["posts"]))
        if k["correct"] != k["candidates"]:
            problems.append("kevo %s: only %d of %d candidates correct (%d duplicates)"
                            % (k["label"], k["correct"], k["candidates"], k["duplicates"]))
    if not oe:
        P("the LLM server's own CPU per request: %s" % ", ".join(
            "%.1f us (kevo %s)" % (k["server_cpu_s"] / max(1, k["posts"]) * 1e6, names[k["label"]]) for k in kevo))
        P("")
        worst = max(kevo, key=lambda k: k["us"])
        P("target (issue 19): kevo at most %.0f us per candidate, LLM round trip included: %.1f us (%s)  %s"
          % (TARGET_US, worst["us"], names[worst["label"]], "MET" if worst["us"] <= TARGET_US else
             "NOT MET (%.1fx the target)" % (worst["us"] / TARGET_US)))
        for p in problems:
            P("WARNING: " + p)
        return 1 if problems else 0
    P("")
    P("OpenEvolve %s: its controller (ProcessParallelController), full rewrites, %d worker process,"
      % (oe["version"], oe["workers"]))
    P("%d islands, population_size %d, other settings default; per iteration = time between"
      % (oe["num_islands"], oe["population_size"]))
    P("completions as its controller takes them up, by database size then (first 5 excluded)")
    P("%d iterations in %.1f s (start-up included), %d requests on %d connections, %d failed iterations,"
      % (oe["iterations"], oe["total_s"], oe["posts"], oe["connections"], oe["errors"]))
    P("database reached %d programs; CPU of all its processes %.2f ms/iteration"
      % (oe["max_programs"], oe["cpu_ms"]))
    P("")
    P("side by side, by database size (OpenEvolve: programs in its database; kevo: records committed,")
    P("kevo's column is its time per candidate over that stretch; the ratio uses kevo's whole-run figure)")
    hdr = "%-15s %6s %9s %9s" % ("database size", "iters", "OE ms", "median")
    for k in kevo:
        hdr += " %14s" % ("kevo%s us" % k["label"][3:])
    for k in kevo:
        hdr += " %15s" % ("OE/kevo%s" % k["label"][3:])
    P(hdr)
    ratios = []
    for b in BANDS:
        v = oe["bands"].get(b)
        if not v:
            continue
        mean = statistics.mean(v) * 1e3
        row = "%-15s %6d %9.2f %9.2f" % (band_name(b), len(v), mean, statistics.median(v) * 1e3)
        for k in kevo:
            kb = (k["bands"] or {}).get(b)
            row += " %14s" % ("%.1f" % kb if kb is not None else "-")
        for k in kevo:
            ratio = mean * 1e3 / k["us"]
            ratios.append((ratio, band_name(b), k["label"]))
            row += " %14.0fx" % ratio
        P(row)
    row = "%-15s %6d %9.2f %9s" % ("overall", oe["measured"], oe["overall_ms"], "")
    for k in kevo:
        row += " %14.1f" % k["us"]
    for k in kevo:
        row += " %14.0fx" % (oe["overall_ms"] * 1e3 / k["us"])
    P(row)
    P("the LLM server's own CPU per request: %.1f us (kevo), %.1f us (OpenEvolve)"
      % (kevo[0]["server_cpu_s"] / max(1, kevo[0]["posts"]) * 1e6, oe["server_cpu_s"] / max(1, oe["posts"]) * 1e6))
    if oe["errors"]:
        problems.append("OpenEvolve: %d of %d iterations ended in an error (see its log)"
                        % (oe["errors"], oe["completions"]))
    if oe["posts"] < oe["iterations"]:
        problems.append("OpenEvolve: %d requests for %d iterations" % (oe["posts"], oe["iterations"]))
    P("")
    worst = max(kevo, key=lambda k: k["us"])
    P("targets (issue 19)")
    ok1 = worst["us"] <= TARGET_US
    P("  kevo at most %.0f us per candidate, LLM round trip included: %.1f us (%s)  %s"
      % (TARGET_US, worst["us"], names[worst["label"]], "MET" if ok1 else
         "NOT MET (%.1fx the target)" % (worst["us"] / TARGET_US)))
    for transport, runs in (("loopback TCP", [r for r in ratios if not r[2].endswith("-uds")]),
                            ("a Unix-domain socket", [r for r in ratios if r[2].endswith("-uds")])):
        if not runs:
            continue
        low = min(runs)
        ok2 = low[0] >= TARGET_RATIO
        P("  at least %.0fx fewer than OpenEvolve at every database size, kevo over %s: lowest %.0fx"
          " (database %s, kevo %s)  %s" % (TARGET_RATIO, transport, low[0], low[1], names[low[2]],
                                          "MET" if ok2 else "NOT MET"))
    if parts:
        P("  for reference, kevo's own benchmarks of the halves (no HTTP between them): engine %s us/judged"
          % ("%.1f" % parts["engine"] if "engine" in parts else "?")
          + " (kevo_bench_engine, HDF5 lineage), client %s us/request"
          % ("%.1f" % parts["client"] if "client" in parts else "?")
          + " (kevo_bench_llm_client, 1/throughput, 8 in flight)")
    for p in problems:
        P("WARNING: " + p)
    rel = os.path.relpath(args.work, ROOT)
    P("logs and run directories: %s" % (args.work if rel.startswith("..") else rel))
    return 1 if problems else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    s = sub.add_parser("serve", help="the instant LLM server (a part of this script)")
    s.add_argument("--port-file", required=True)
    d = sub.add_parser("oe-drive", help="OpenEvolve's side, inside its venv (a part of this script)")
    d.add_argument("--api-base", required=True)
    d.add_argument("--iterations", type=int, required=True)
    d.add_argument("--workers", type=int, default=1)
    d.add_argument("--work", required=True)
    d.add_argument("--out", required=True)
    ap.add_argument("--kevo", default=os.path.join(ROOT, "build", "bin", "kevo"))
    ap.add_argument("--oe-python", default=os.path.join(ROOT, "build-bench", "oe-venv", "bin", "python"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build-bench", "openevolve-compare"))
    ap.add_argument("--kevo-candidates", type=int, default=20000)
    ap.add_argument("--oe-iterations", type=int, default=1300,
                    help="past its population_size (1000), so that the cap is measured too")
    ap.add_argument("--oe-workers", type=int, default=1, help="evaluator.parallel_evaluations (its default 1)")
    ap.add_argument("--kevo-set", action="append", default=[], metavar="KEY=VALUE",
                    help="one more --set for every kevo run (an experiment: lineage.flush_records=1024)")
    ap.add_argument("--no-pop1000", dest="kevo_pop1000", action="store_false",
                    help="skip the kevo run with island.population 1000 (OpenEvolve's cap)")
    ap.add_argument("--no-parts", dest="parts", action="store_false",
                    help="skip kevo_bench_engine and kevo_bench_llm_client")
    ap.add_argument("--server", choices=["auto", "cpp", "python"], default="auto",
                    help="the instant LLM server: the C++ one built next to kevo (auto: when it is there) or "
                         "this script's Python one")
    ap.add_argument("--server-sched", choices=["realtime", "default"], default="realtime",
                    help="the C++ server's scheduling: realtime asks for SCHED_FIFO 1 (needs CAP_SYS_NICE or an "
                         "RLIMIT_RTPRIO; refused, it runs at the default policy and the output says so) so that "
                         "it answers at once, and adds a kevo run with the server at the default policy for "
                         "comparison")
    ap.add_argument("--no-unix", dest="unix", action="store_false",
                    help="no kevo runs through the C++ server's Unix-domain socket (llm.models[].unix_socket)")
    ap.add_argument("--no-openevolve", dest="openevolve", action="store_false",
                    help="kevo's runs only (no OpenEvolve, no ratios)")
    a = ap.parse_args()
    if a.cmd == "serve":
        sys.exit(serve(a))
    if a.cmd == "oe-drive":
        sys.exit(oe_drive(a))
    sys.exit(compare(a))
