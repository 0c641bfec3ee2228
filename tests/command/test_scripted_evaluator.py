#!/usr/bin/env python3
"""The scripted evaluator (tests/command/scripted_evaluator.py) on its own:
that it speaks the command protocol (docs/command-backend.md) and judges by
its markers, before the C++ backend's tests rely on it.

usage: /usr/bin/python3 tests/command/test_scripted_evaluator.py [-v]
(the answer lines are also checked against docs/schemas/command-answer.schema.json
when the jsonschema module is there)
"""
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EVAL = os.path.join(HERE, "scripted_evaluator.py")
PY = sys.executable or "/usr/bin/python3"

try:
    import jsonschema
    with open(os.path.join(ROOT, "docs", "schemas", "command-answer.schema.json")) as f:
        ANSWER = jsonschema.Draft202012Validator(json.load(f))
    with open(os.path.join(ROOT, "docs", "schemas", "command-request.schema.json")) as f:
        REQUEST_V = jsonschema.Draft202012Validator(json.load(f))
except ImportError:
    ANSWER = REQUEST_V = None

SEED = "// seed\n// KEVO_TEST_CORRECT KEVO_TEST_NS=1500\n__kernel void vadd() {}\n"


def no_constant(tok):
    raise ValueError("not JSON: " + tok)


class Evaluator(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kevo-scripted-")
        cls.task_dir = os.path.join(cls.tmp, "task")
        os.makedirs(cls.task_dir)
        with open(os.path.join(cls.task_dir, "task.json"), "w") as f:
            json.dump({"name": "vadd", "seed": "seed.cl", "reference": "reference.cl"}, f)
        cls.seed = cls.write("task/seed.cl", SEED)
        cls.reference = cls.write("task/reference.cl", "// reference KEVO_TEST_CORRECT\n")
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def write(cls, rel, text):
        path = os.path.join(cls.tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def candidate(self, text):
        Evaluator.n += 1
        return self.write("cand%d/kernel.cl" % Evaluator.n, text)

    def request(self, mode="judge", source=None, timing=True, nonce="a1b2c3d4e5f60718293a4b5c6d7e8f90", **kw):
        shape = lambda label, kind, n: {"label": label, "kind": kind, "dims": {"N": n},
                                        "args": {"a": {"extents": [n]}, "out": {"extents": [n]}, "n": {"value": n}}}
        req = {"protocol": 1, "nonce": nonce, "mode": mode, "seed": 12345, "trials": 3, "timing": timing,
               "timing_options": {"warmup": 1, "min_repeats": 7, "max_repeats": 100, "budget_seconds": 0.25,
                                  "max_iqr_fraction": 0.25},
               "wall_seconds": 60,
               "task": {"name": "vadd", "function": "vadd", "dir": self.task_dir,
                        "signature": "__kernel void vadd(__global const float* a, __global float* out, const int n)",
                        "tolerance": {"atol": 1e-5, "rtol": 1e-5, "rel_l2": 1e-5},
                        "args": [{"name": "a", "dtype": "float32", "role": "in",
                                  "distribution": {"kind": "uniform", "low": -1, "high": 1}},
                                 {"name": "out", "dtype": "float32", "role": "out"},
                                 {"name": "n", "dtype": "int32", "role": "scalar"}],
                        "shapes": [shape("N=4096", "visible", 4096), shape("N=65536", "visible", 65536),
                                   shape("hidden N=1037", "hidden", 1037), shape("drawn N=93", "drawn", 93)]},
               "reference": {"source": self.reference, "build": None},
               "profile": False}
        if mode == "null":
            req["null_kind"] = kw.pop("null_kind", "zeros")
        elif mode == "self_check":
            req["candidate"] = dict(req["reference"])
        else:
            req["candidate"] = {"source": source, "build": kw.pop("build", None)}
        req.update(kw)
        if REQUEST_V is not None:
            self.assertEqual([e.message for e in REQUEST_V.iter_errors(req)], [])
        return req

    def run_eval(self, requests, behaviour=None, serve=False, extra=(), timeout=30):
        argv = [PY, EVAL] + (["--behaviour", behaviour] if behaviour else []) + (["--serve"] if serve else [])
        argv += list(extra)
        text = "".join(json.dumps(r) + "\n" for r in requests) if serve else json.dumps(requests[0], indent=1)
        p = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout.splitlines(), p.stderr

    def parse(self, lines, nonce=None):
        out = []
        for line in lines:
            obj = json.loads(line, parse_constant=no_constant)
            if ANSWER is not None:
                self.assertEqual([e.message for e in ANSWER.iter_errors(obj)], [], line[:300])
            if nonce:
                self.assertEqual(obj["nonce"], nonce)
            out.append(obj)
        return out

    def judge(self, req, behaviour=None):
        rc, lines, err = self.run_eval([req], behaviour)
        self.assertEqual(rc, 0, err)
        answers = self.parse(lines, req["nonce"])
        self.assertEqual([a["event"] for a in answers[:-1]], ["stage"] * (len(answers) - 1))
        self.assertEqual(answers[-1]["event"], "result")
        return answers

    # ---- honest, one-shot
    def test_version(self):
        p = subprocess.run([PY, EVAL, "--version"], capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stdout), (0, "scripted-evaluator 1\n"))

    def test_self_check_and_null(self):
        a = self.judge(self.request("self_check"))
        self.assertEqual(a[-1]["verdict"]["status"], "correct")
        self.assertEqual([t["shape"] for t in a[-1]["shape_timings"]], ["N=4096", "N=65536"])
        for kind in ("zeros", "copy", "other_seed"):
            a = self.judge(self.request("null", null_kind=kind))
            v = a[-1]["verdict"]
            self.assertEqual(v["status"], "wrong_answer")
            self.assertEqual((v["mismatch"]["arg"], v["mismatch"]["shape"]), ("out", "N=4096"))

    def test_judge_markers(self):
        a = self.judge(self.request(source=self.candidate("KEVO_TEST_CORRECT KEVO_TEST_NS=500")))
        self.assertEqual([x.get("stage") for x in a], ["compile", "correctness", "timing", None])
        r = a[-1]
        self.assertEqual(r["verdict"]["status"], "correct")
        self.assertAlmostEqual(r["verdict"]["speedup"], 4.0)
        self.assertEqual([(t["shape"], t["cand_median_ns"], t["ref_median_ns"], t["repeats"])
                          for t in r["shape_timings"]], [("N=4096", 500, 2000, 7), ("N=65536", 500, 2000, 7)])
        untimed = self.judge(self.request(source=self.candidate("KEVO_TEST_CORRECT"), timing=False))[-1]
        self.assertEqual(untimed["verdict"]["status"], "correct")
        self.assertNotIn("shape_timings", untimed)
        v = self.judge(self.request(source=self.candidate("KEVO_TEST_WRONG_HIDDEN")))[-1]["verdict"]
        self.assertEqual((v["status"], v["mismatch"]["shape"]), ("wrong_answer", "hidden N=1037"))
        self.assertNotIn("hidden N=1037", v["message"] + v["feedback"])
        v = self.judge(self.request(source=self.candidate("KEVO_TEST_WRONG")))[-1]["verdict"]
        self.assertEqual((v["status"], v["mismatch"]["shape"]), ("wrong_answer", "N=4096"))
        v = self.judge(self.request(source=self.candidate("KEVO_TEST_CRASH")))[-1]["verdict"]
        self.assertEqual(v["status"], "runtime_error")
        v = self.judge(self.request(source=self.candidate("a text that is no program 8f2e")))[-1]["verdict"]
        self.assertEqual((v["status"], v["message"]), ("compile_error", "does not build"))

    def test_compile_mode_and_builds(self):
        src = self.candidate("KEVO_TEST_CORRECT\n")
        out = os.path.join(self.tmp, "build%d" % Evaluator.n)
        p = subprocess.run([PY, EVAL, "--compile", src, "--out", out], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(src, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with open(os.path.join(out, "built.txt")) as f:
            self.assertEqual(f.read().strip(), digest)
        a = self.judge(self.request(source=src, build=out))
        self.assertEqual([x.get("stage") for x in a], ["correctness", "timing", None])   # built: no compile stage
        self.assertEqual(a[-1]["verdict"]["status"], "correct")
        v = self.judge(self.request(source=src, build=os.path.join(self.tmp, "nowhere")))[-1]["verdict"]
        self.assertEqual(v["status"], "runtime_error")
        self.assertIn("build missing", v["message"])
        with open(src, "a") as f:
            f.write("// changed after the build\n")
        v = self.judge(self.request(source=src, build=out))[-1]["verdict"]
        self.assertIn("build stale", v["message"])
        bad = self.candidate("KEVO_TEST_NOCOMPILE")
        p = subprocess.run([PY, EVAL, "--compile", bad, "--out", out + "-bad"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("error: KEVO_TEST_NOCOMPILE", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(out + "-bad", "built.txt")))

    # ---- persistent
    def test_serve_and_log(self):
        log = os.path.join(self.tmp, "serve.log")
        reqs = [self.request("self_check", nonce="%032x" % 1),
                self.request(source=self.candidate("KEVO_TEST_WRONG"), nonce="%032x" % 2),
                self.request(source=self.candidate("KEVO_TEST_CORRECT"), nonce="%032x" % 3)]
        rc, lines, err = self.run_eval(reqs, serve=True, extra=["--log", log])
        self.assertEqual(rc, 0, err)
        results = [a for a in self.parse(lines) if a["event"] == "result"]
        self.assertEqual([(r["nonce"], r["verdict"]["status"]) for r in results],
                         [("%032x" % 1, "correct"), ("%032x" % 2, "wrong_answer"), ("%032x" % 3, "correct")])
        with open(log) as f:
            entries = [json.loads(l) for l in f]
        self.assertEqual([e["request"]["nonce"] for e in entries], [r["nonce"] for r in reqs])
        self.assertEqual(len({e["pid"] for e in entries}), 1)
        self.assertEqual(entries[0]["stdin"], "pipe")
        self.assertIn("PATH", entries[0]["env_names"])
        self.assertNotIn("=", "".join(entries[0]["env_names"]))
        if REQUEST_V is not None:
            self.assertEqual(entries[0]["schema_errors"], [])
        # die_after=2: the third request is never answered.
        rc, lines, err = self.run_eval(reqs, behaviour="die_after=2", serve=True)
        self.assertEqual(rc, 0, err)
        self.assertEqual(len([a for a in self.parse(lines) if a["event"] == "result"]), 2)

    # ---- misbehaviours
    def test_garbage(self):
        cand = self.candidate("KEVO_TEST_CORRECT")
        rc, lines, err = self.run_eval([self.request(source=cand)], "garbage")
        self.assertEqual(rc, 0, err)
        with self.assertRaises(ValueError):
            json.loads(lines[-2])
        self.assertEqual(json.loads(lines[-1])["verdict"]["status"], "correct")
        # Not on the conformance checks: the probe, and the untimed seed check.
        self.judge(self.request(source=self.candidate("no program at all")), "garbage")
        v = self.judge(self.request(source=self.seed, timing=False), "garbage")[-1]["verdict"]
        self.assertEqual(v["status"], "correct")
        # but on the seed's timed judgement in a run
        rc, lines, _ = self.run_eval([self.request(source=self.seed)], "garbage")
        self.assertIn("not JSON", lines[-2])

    def test_some_breaches(self):
        cand = self.candidate("KEVO_TEST_CORRECT")
        rc, lines, _ = self.run_eval([self.request(source=cand)], "nan_time")
        self.assertIn("NaN", lines[-1])
        rc, lines, _ = self.run_eval([self.request(source=cand)], "exit_nonzero_after_result")
        self.assertEqual(rc, 5)
        self.parse(lines)
        rc, lines, _ = self.run_eval([self.request(source=cand)], "no_nonce")
        self.assertNotIn("nonce", json.loads(lines[-1]))
        rc, lines, _ = self.run_eval([self.request(source=cand)], "fatal")
        self.assertEqual((rc, json.loads(lines[-1])["event"]), (3, "fatal"))
        rc, lines, _ = self.run_eval([self.request("null")], "all_correct")
        self.assertEqual(json.loads(lines[-1])["verdict"]["status"], "correct")
        v = self.judge(self.request(source=self.candidate("not a program")), "probe_correct")[-1]["verdict"]
        self.assertEqual(v["status"], "correct")
        rc, lines, _ = self.run_eval([self.request(source=cand)], "unknown_key")
        self.assertIn("secret_sauce", json.loads(lines[-1])["verdict"])
        rc, lines, _ = self.run_eval([self.request(source=cand)], "exit_without_verdict")
        self.assertEqual(rc, 0)
        self.assertNotIn("result", [json.loads(l)["event"] for l in lines])


if __name__ == "__main__":
    unittest.main()
