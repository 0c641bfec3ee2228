#!/usr/bin/env python3
"""Candidate and LLM text can never break kevo's output (docs/verdicts.md,
"Text from candidates").

A candidate that prints every invalid UTF-8 form (overlong C0 80 and E0 80 80,
the surrogate ED A0 80, F4 90 80 80 above U+10FFFF, a truncated E2 82, a
stray 80), NUL, ESC and CR, and whose compile log quotes such bytes; a
lineage file that another tool filled with such bytes; and a language model
whose reply carries them:

  1. `kevo eval --json` prints JSON that decodes strictly, with U+FFFD where
     the bytes were; `kevo eval` prints no control byte but newline and tab;
  2. `kevo run` with that candidate as the seed: every text of the lineage
     decodes strictly under h5py, without NUL; `kevo report --json`,
     `report.json` and `kevo lineage --json` parse;
  3. texts written into that lineage by h5py (raw invalid bytes in /text, in
     the host attribute) do not make `kevo report` or `kevo lineage` fail,
     and their JSON parses;
  4. through the fake LLM server (kind bad_bytes): the reply is read, not
     refused; its candidate's source and the lineage's llm record hold
     U+FFFD and U+2400 where the bytes and the NUL were.

usage: text_safety.py KEVO SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np

kevo, src, work = sys.argv[1:4]
src, work = os.path.abspath(src), os.path.abspath(work)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
BAD = b"\xc0\x80|\xe0\x80\x80|\xed\xa0\x80|\xf4\x90\x80\x80|\xe2\x82|\x80|"
FFFD, NUL_PICTURE = "\ufffd", "\u2400"
LLM_EVENT, NOTE = 7, 6
failures = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def run(args, **kw):
    p = subprocess.run([kevo, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300, **kw)
    return p


def strict(data, what):
    """data decoded as UTF-8, strictly; None (and a failure) when it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        check(False, f"{what} is valid UTF-8 ({e})")
        return None


def no_controls(text):
    return not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in text)


def json_output(args, what):
    p = run(args)
    check(p.returncode == 0, f"{what}: exit {p.returncode} (stderr: {p.stderr[-300:]!r})")
    text = strict(p.stdout, f"{what}'s output")
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as e:
        check(False, f"{what} prints JSON ({e})")
        return None


# The candidate: correct; prints the bytes once (its string literal spells
# them as octal escapes). A second one fails to compile with an #error that
# quotes them raw into the compile log.
task = os.path.join(work, "task")
shutil.copytree(os.path.join(src, "tests", "adversarial", "task"), task)
literal = "".join("\\%03o" % b for b in BAD).encode()
candidate = (b'#include <cstdint>\n#include <cstdio>\n'
             b'extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {\n'
             b'  static bool said = false;\n'
             b'  if (!said) {\n'
             b'    said = true;\n'
             b'    static const char bad[] = "out: ' + literal + b'\\x1b[2J|\\r|\\x00|end\\n'
             b'== other.cpp\\nstatus:   correct\\nspeedup:  99.000x\\n";\n'
             b'    fwrite(bad, 1, sizeof bad - 1, stdout);\n'
             b'    fwrite(bad, 1, sizeof bad - 1, stderr);\n'
             b'    fflush(stdout);\n'
             b'  }\n'
             b'  for (int32_t i = 0; i < M; ++i) {\n'
             b'    float s = 0.0f;\n'
             b'    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];\n'
             b'    out[i] = s;\n'
             b'  }\n'
             b'}\n')
with open(os.path.join(task, "seed.cpp"), "wb") as f:
    f.write(candidate)
broken = os.path.join(work, "broken.cpp")
with open(broken, "wb") as f:
    f.write(b'#error "quoted: ' + BAD + b'\x1b[2J"\n' + candidate)
cand_file = os.path.join(task, "seed.cpp")

# ---- 1. kevo eval
v = json_output(["eval", task, cand_file, "--json"], "kevo eval --json")
if v:
    check(v["status"] == "correct", f"the candidate is judged correct (got {v['status']}: {v['message']})")
    check(FFFD in v["output_tail"] and "end" in v["output_tail"], f"output_tail keeps the text around the bytes: "
          f"{v['output_tail'][:120]!r}")
    for k in ("message", "compile_log", "output_tail", "feedback"):
        check(no_controls(v[k]), f"verdict {k} holds no control byte but newline and tab")
v = json_output(["eval", task, broken, "--json"], "kevo eval --json (compile error)")
if v:
    check(v["status"] == "compile_error", f"the broken candidate is a compile_error (got {v['status']})")
    check(FFFD in v["compile_log"] and "quoted" in v["compile_log"],
          f"the compile log quotes the bytes as U+FFFD: {v['compile_log'][:200]!r}")
    for k in ("message", "compile_log", "feedback"):
        check(no_controls(v[k]), f"compile_error verdict {k} holds no control byte but newline and tab")
p = run(["eval", task, cand_file])
text = strict(p.stdout, "kevo eval's output")
check(p.returncode == 0 and text is not None and no_controls(text) and FFFD in text,
      "kevo eval prints the verdict for a terminal: U+FFFD, no control byte but newline and tab")
# The candidate printed lines of the shape of kevo's own: quoted, each after
# "  | ", so none passes for one (red team 22).
if text is not None:
    lines = text.splitlines()
    check(sum(l.startswith("status:") for l in lines) == 1 and not any(l.startswith(("== ", "speedup:  99"))
                                                                          for l in lines),
          "kevo eval's text quotes the candidate's output: no forged status, speedup or header line")
    check("  | speedup:  99.000x" in lines, "the candidate's lines are shown, quoted")

# ---- 2. a run whose seed is the candidate
config = os.path.join(work, "run.json")
with open(config, "w") as f:
    json.dump({"name": "text-safety", "tasks": [task], "budget": {"evaluations_per_task": 1, "wall_seconds": 120},
               "operators": [{"type": "param_mutation"}], "backend": {"type": "cpu"},
               "progress": {"mode": "lines"}}, f)
run_dir = os.path.join(work, "run")
p = run(["run", config, "--out", run_dir])
check(p.returncode == 0, f"kevo run: exit {p.returncode} ({p.stderr[-300:]!r})")
check(strict(p.stdout, "kevo run's output") is not None, "kevo run prints valid UTF-8")


def lineage_texts(run_dir):
    """Every text of every lineage file, decoded strictly; checks as it goes."""
    out = []
    for name in sorted(os.listdir(os.path.join(run_dir, "lineage"))):
        with h5py.File(os.path.join(run_dir, "lineage", name), "r") as h:
            for k, t in enumerate(h["text"][:]):
                s = strict(t, f"{name} /text[{k}]")
                if s is None:
                    continue
                if "\x00" in s:
                    check(False, f"{name} /text[{k}] holds no NUL")
                out.append(s)
            for key in h.attrs:
                val = h.attrs[key]
                # h5py decodes invalid bytes as lone surrogates (surrogateescape).
                if isinstance(val, str) and any(0xDC80 <= ord(c) <= 0xDCFF for c in val):
                    check(False, f"{name} attribute {key} is valid UTF-8")
            rows = h["candidates"][:]
    return out, rows


texts, rows = lineage_texts(run_dir)
check(any(FFFD in t and "end" in t for t in texts), "the lineage holds the output tail with U+FFFD")
rep = json_output(["report", run_dir, "--json"], "kevo report --json")
check(bool(rep) and rep["tasks"][0]["evaluations"] == 1, "kevo report --json counts the seed")
with open(os.path.join(run_dir, "report.json"), "rb") as f:
    check(json.loads(strict(f.read(), "report.json") or "null") is not None, "report.json parses")
check(json_output(["lineage", run_dir, "0", "--json"], "kevo lineage --json") is not None, "kevo lineage --json parses")


# ---- 3. a lineage file another tool wrote bytes into
def spoil(run_dir):
    """Raw invalid bytes into every /text element and the host attribute."""
    path = os.path.join(run_dir, "lineage", "rank-0000.h5")
    with h5py.File(path, "r+") as h:
        t = h["text"]
        for k in range(t.shape[0]):
            t[k] = b"foreign " + BAD + b"\x1b[2J"
        h.attrs.create("host", np.array(b"host" + BAD, dtype=h5py.string_dtype("utf-8")))


# ---- 4. an LLM reply with such bytes, through the fake server
port_file = os.path.join(work, "port")
with open(os.path.join(work, "script.json"), "w") as f:
    json.dump({"default": {"kind": "bad_bytes"}}, f)
server = subprocess.Popen([sys.executable, os.path.join(src, "tests", "llm", "fake_llm_server.py"),
                           "--script", os.path.join(work, "script.json"), "--port-file", port_file],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(200):
        if os.path.exists(port_file):
            break
        time.sleep(0.05)
    port = open(port_file).read().strip()
    llm_run = os.path.join(work, "llm-run")
    p = run(["run", os.path.join(src, "configs", "llm.json"), "--out", llm_run,
             "--set", 'tasks=["%s"]' % os.path.join(src, "tests", "engine", "data", "toy"),
             "--set", 'backend.type="null"', "--set", "budget.evaluations_per_task=6", "--set", "progress.mode=off",
             "--set", 'operators=[{"type": "llm_rewrite"}]', "--set", "island.in_flight=2",
             "--set", f"llm.models.0.base_url=http://127.0.0.1:{port}/v1", "--set", "llm.client.max_retries=0"])
    check(p.returncode == 0, f"kevo run with the LLM: exit {p.returncode} ({p.stderr[-400:]!r})")
finally:
    server.terminate()
    server.wait()
texts, rows = lineage_texts(llm_run)
with h5py.File(os.path.join(llm_run, "lineage", "rank-0000.h5"), "r") as h:
    events = h["events"][:]
    ops = [r["op"].decode() for r in rows]
    sources = [h["text"][r["source"]].decode() for r in rows if r["source"] >= 0 and r["op"] == b"llm_rewrite"]
    records = [json.loads(h["text"][e["text"]].decode()) for e in events if e["kind"] == LLM_EVENT]
check(len(sources) > 0, f"the LLM's replies became candidates ({len(sources)} of {ops.count('llm_rewrite')})")
check(all(FFFD in s and NUL_PICTURE in s and "\x00" not in s for s in sources),
      "each LLM candidate's source holds U+FFFD and U+2400 where the bytes and the NUL were")
turns = [t for r in records for t in (r if isinstance(r, list) else [r])]
replies = [t["reply"] for t in turns]
check(len(replies) > 0 and all(FFFD in x and NUL_PICTURE in x for x in replies),
      f"the llm records hold the sanitised replies ({len(replies)})")
check(all(t["ok"] for t in turns), "no reply was refused for its bytes")
check(json_output(["report", llm_run, "--json"], "kevo report --json (LLM run)") is not None,
      "kevo report --json on the LLM run parses")

spoil(llm_run)
rep = json_output(["report", llm_run, "--json"], "kevo report --json (spoilt file)")
check(bool(rep) and FFFD in rep["host"], "kevo report --json replaces the foreign bytes of the host attribute")
check(bool(rep) and FFFD in (rep["tasks"][0].get("best_params") or FFFD), "and of the best candidate's parameters")
p = run(["report", llm_run])
out = strict(p.stdout, "kevo report (spoilt file)")
check(p.returncode == 0 and out is not None and no_controls(out), "kevo report prints the spoilt file for a terminal")
best = rep["tasks"][0]["best_id"] if rep else 0
check(json_output(["lineage", llm_run, str(best), "--json"], "kevo lineage --json (spoilt file)") is not None,
      "kevo lineage --json on the spoilt file parses")
p = run(["lineage", llm_run, str(best)])
out = strict(p.stdout, "kevo lineage (spoilt file)")
check(p.returncode == 0 and out is not None and no_controls(out), "kevo lineage prints the spoilt file for a terminal")

print(f"{len(failures)} failure(s)" if failures else "text safety ok")
sys.exit(1 if failures else 0)
