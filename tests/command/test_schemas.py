#!/usr/bin/env python3
"""The command backend's JSON Schemas (docs/schemas/command-request.schema.json,
docs/schemas/command-answer.schema.json) against the examples of
docs/command-backend.md (their "..." placeholders filled with real values),
and a few bad documents each must refuse.

usage: /usr/bin/python3 tests/command/test_schemas.py [-v]
Exit 77 (skipped) when the jsonschema module is missing
(apt-get install python3-jsonschema).
"""
import copy
import json
import os
import sys
import unittest

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:
    print("SKIP: python3 jsonschema module missing (apt-get install python3-jsonschema)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMAS = os.path.join(ROOT, "docs", "schemas")


def load_schema(name):
    with open(os.path.join(SCHEMAS, name)) as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _no_constant(tok):
    raise ValueError("not JSON: " + tok)


def strict_loads(text):
    """json.loads without Python's NaN/Infinity extension: what kevo parses."""
    return json.loads(text, parse_constant=_no_constant)


NONCE = "4f1c0d2e9a7b65c38e1f0a2b3c4d5e6f"

# docs/command-backend.md#the-request, "..." filled in.
REQUEST = {
    "protocol": 1,
    "nonce": NONCE,
    "mode": "judge",
    "seed": 8812345,
    "trials": 3,
    "timing": True,
    "timing_options": {"warmup": 1, "min_repeats": 5, "max_repeats": 100, "budget_seconds": 0.25,
                       "max_iqr_fraction": 0.25, "max_ci_fraction": 0},
    "wall_seconds": 60,
    "task": {
        "name": "vadd", "function": "vadd", "dir": "/abs/configs/tasks/opencl/vadd",
        "signature": "__kernel void vadd(__global const float* a, __global const float* b, __global float* out, const int n)",
        "tolerance": {"atol": 1e-5, "rtol": 1e-5, "rel_l2": 1e-5},
        "args": [
            {"name": "a", "dtype": "float32", "role": "in", "distribution": {"kind": "uniform", "low": -1, "high": 1}},
            {"name": "b", "dtype": "float32", "role": "in", "distribution": {"kind": "uniform", "low": -1, "high": 1}},
            {"name": "out", "dtype": "float32", "role": "out"},
            {"name": "n", "dtype": "int32", "role": "scalar"},
        ],
        "shapes": [
            {"label": "N=1048576", "kind": "visible", "dims": {"N": 1048576}, "flops": 1048576, "bytes": 12582912,
             "args": {"a": {"extents": [1048576]}, "b": {"extents": [1048576]}, "out": {"extents": [1048576]},
                      "n": {"value": 1048576}}},
            {"label": "hidden N=1037", "kind": "hidden", "dims": {"N": 1037},
             "args": {"a": {"extents": [1037]}, "b": {"extents": [1037]}, "out": {"extents": [1037]},
                      "n": {"value": 1037}}},
            {"label": "drawn N=93", "kind": "drawn", "dims": {"N": 93},
             "args": {"a": {"extents": [93]}, "b": {"extents": [93]}, "out": {"extents": [93]},
                      "n": {"value": 93}}},
        ],
        "stress": [{"name": "large-mean", "inputs": {"a": {"kind": "normal", "mean": 100, "stddev": 1}}}],
    },
    "reference": {"source": "/abs/configs/tasks/opencl/vadd/reference.cl", "build": "/abs/cache/command/ab12/"},
    "candidate": {"source": "/abs/scratch/kernel.cl", "build": "/abs/cache/command/cd34/"},
    "profile": False,
}

# docs/command-backend.md#the-answer, "..." filled in.
ANSWER_LINES = [
    '{"nonce": "%s", "event": "stage", "stage": "correctness"}' % NONCE,
    '{"nonce": "%s", "event": "stage", "stage": "timing"}' % NONCE,
    json.dumps({"nonce": NONCE, "event": "result",
                "verdict": {"status": "correct", "stage": "done", "message": "correct; 1.84x",
                            "max_abs_error": 0, "rel_l2_error": 0,
                            "feedback": "correct on every shape; 1.84x the reference"},
                "shape_timings": [{"shape": "N=1048576", "cand_median_ns": 210000, "cand_iqr_ns": 4000,
                                   "ref_median_ns": 386000, "ref_iqr_ns": 5000, "repeats": 40}]}),
]
FATAL = {"nonce": NONCE, "event": "fatal", "message": "no OpenCL platform found"}
WRONG = {"nonce": NONCE, "event": "result",
         "verdict": {"status": "wrong_answer", "stage": "correctness",
                     "message": "output 'out' differs from the reference at [3]",
                     "max_abs_error": 0.4, "rel_l2_error": 0.1,
                     "mismatch": {"arg": "out", "shape": "N=1048576", "trial": "trial 1", "flat_index": 3,
                                  "index": "[3]", "expected": -0.25, "got": "nan"},
                     "feedback": "Wrong answer: output 'out' differs at [3]"}}
COMPILE_ERROR = {"nonce": NONCE, "event": "result",
                 "verdict": {"status": "compile_error", "stage": "compile", "message": "does not build",
                             "compile_log": "<source>:3:1: error: expected expression"}}


class RequestSchema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.v = load_schema("command-request.schema.json")

    def assertValid(self, doc):
        errors = [e.message for e in self.v.iter_errors(doc)]
        self.assertEqual(errors, [], json.dumps(doc)[:300])

    def assertInvalid(self, doc):
        self.assertFalse(self.v.is_valid(doc), json.dumps(doc)[:300])

    def test_doc_example(self):
        self.assertValid(REQUEST)
        # As it travels: one line.
        self.assertValid(strict_loads(json.dumps(REQUEST)))

    def test_other_modes(self):
        sc = copy.deepcopy(REQUEST)
        sc["mode"], sc["timing"] = "self_check", False
        sc["candidate"] = dict(sc["reference"])
        self.assertValid(sc)
        for kind in ("zeros", "copy", "other_seed"):
            null = copy.deepcopy(REQUEST)
            null["mode"], null["null_kind"] = "null", kind
            del null["candidate"]
            self.assertValid(null)
        no_build = copy.deepcopy(REQUEST)
        no_build["reference"]["build"] = no_build["candidate"]["build"] = None
        self.assertValid(no_build)
        big_seed = copy.deepcopy(REQUEST)
        big_seed["seed"] = 2 ** 64 - 1
        self.assertValid(big_seed)

    @staticmethod
    def run_request(program):
        r = copy.deepcopy(REQUEST)
        r["mode"], r["program"] = "run", program
        r["files"] = {"in": "/io/in.bin", "out": "/io/out.bin"}
        r["calls"] = [{"shape": "N=1048576", "trial": "trial 1", "time": program == "candidate",
                       "args": {n: {"offset": k * 4194304, "bytes": 4194304} for k, n in enumerate(("a", "b", "out"))}}]
        if program == "reference":
            r["timing"] = False
            del r["candidate"]
        return r

    def test_run_mode(self):
        self.assertValid(self.run_request("reference"))
        self.assertValid(self.run_request("candidate"))
        bad = self.run_request("reference")
        bad["timing"] = True                       # only a candidate's run is timed
        self.assertInvalid(bad)
        bad = self.run_request("candidate")
        del bad["candidate"]                       # a candidate's run without the candidate
        self.assertInvalid(bad)
        bad = self.run_request("candidate")
        del bad["calls"][0]["args"]["out"]["offset"]   # a buffer without its place
        self.assertInvalid(bad)
        bad = self.run_request("candidate")
        del bad["files"]
        self.assertInvalid(bad)
        bad = copy.deepcopy(REQUEST)
        bad["calls"] = []                          # calls outside run mode
        self.assertInvalid(bad)
        bad = self.run_request("candidate")
        del bad["program"]
        self.assertInvalid(bad)

    def test_missing_nonce(self):
        bad = copy.deepcopy(REQUEST)
        del bad["nonce"]
        self.assertInvalid(bad)

    def test_bad_requests(self):
        def mutated(f):
            d = copy.deepcopy(REQUEST)
            f(d)
            return d
        self.assertInvalid(mutated(lambda d: d.update(protocol=2)))
        self.assertInvalid(mutated(lambda d: d.update(mode="benchmark")))
        self.assertInvalid(mutated(lambda d: d.update(seed=2 ** 64)))
        self.assertInvalid(mutated(lambda d: d.update(seed=-1)))
        self.assertInvalid(mutated(lambda d: d.update(extra=1)))
        self.assertInvalid(mutated(lambda d: d.update(mode="null", null_kind="zeros")))   # candidate with null
        self.assertInvalid(mutated(lambda d: d.update(null_kind="zeros")))                # null_kind in judge
        self.assertInvalid(mutated(lambda d: d.pop("candidate")))                         # judge without one
        self.assertInvalid(mutated(lambda d: d["task"]["args"][0].update(dtype="bfloat16")))
        self.assertInvalid(mutated(lambda d: d["task"]["shapes"][1].update(kind="secret")))
        self.assertInvalid(mutated(lambda d: d["task"]["shapes"][0]["args"].update(a={"extents": [0]})))
        self.assertInvalid(mutated(lambda d: d["task"]["args"][2].update(
            distribution={"kind": "uniform"})))                                          # output with a distribution
        self.assertInvalid(mutated(lambda d: d["timing_options"].update(min_repeats=0)))


class AnswerSchema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.v = load_schema("command-answer.schema.json")

    def assertValid(self, doc):
        errors = [e.message for e in self.v.iter_errors(doc)]
        self.assertEqual(errors, [], json.dumps(doc)[:300])

    def assertInvalid(self, doc):
        self.assertFalse(self.v.is_valid(doc), json.dumps(doc)[:300])

    def result(self, **verdict):
        r = copy.deepcopy(strict_loads(ANSWER_LINES[2]))
        r["verdict"].update(verdict)
        return r

    def test_doc_example(self):
        for line in ANSWER_LINES:
            self.assertValid(strict_loads(line))

    def test_other_answers(self):
        self.assertValid(FATAL)
        self.assertValid(WRONG)
        self.assertValid(COMPILE_ERROR)
        self.assertValid(self.result(speedup=386000 / 210000, device="PoCL cpu", profile=""))
        untimed = strict_loads(ANSWER_LINES[2])
        del untimed["shape_timings"]
        self.assertValid(untimed)
        self.assertValid({"nonce": NONCE, "event": "stage", "stage": "compile"})
        no_mismatch = copy.deepcopy(COMPILE_ERROR)
        no_mismatch["verdict"]["mismatch"] = None
        self.assertValid(no_mismatch)

    def test_unknown_verdict_key(self):
        self.assertInvalid(self.result(secret_sauce=1))
        # Keys of kevo's worker JSON that only kevo sets.
        for key, value in (("cand_median_ns", 1.0), ("worker_seconds", 0.1), ("output_tail", ""),
                           ("compile_cached", True), ("exit_code", 0)):
            self.assertInvalid(self.result(**{key: value}))

    def test_status_pending(self):
        self.assertInvalid(self.result(status="pending"))
        for status in ("internal_error", "duplicate", "invalid", "lost", "ok"):
            self.assertInvalid(self.result(status=status))

    def test_missing_nonce(self):
        for line in ANSWER_LINES:
            doc = strict_loads(line)
            del doc["nonce"]
            self.assertInvalid(doc)
        fatal = dict(FATAL)
        del fatal["nonce"]
        self.assertInvalid(fatal)

    def test_negative_median(self):
        r = self.result()
        r["shape_timings"][0]["cand_median_ns"] = -5
        self.assertInvalid(r)
        r = self.result()
        r["shape_timings"][0]["ref_median_ns"] = 0
        self.assertInvalid(r)
        r = self.result()
        r["shape_timings"][0]["repeats"] = 0
        self.assertInvalid(r)
        self.assertInvalid(self.result(max_abs_error=-1))

    def test_non_finite(self):
        r = self.result()
        r["shape_timings"][0]["cand_median_ns"] = "nan"
        self.assertInvalid(r)
        r["shape_timings"][0]["cand_median_ns"] = float("inf")
        self.assertInvalid(r)
        # A bare NaN token is no JSON: refused before the schema.
        line = ANSWER_LINES[2].replace('"cand_median_ns": 210000', '"cand_median_ns": NaN')
        self.assertIn("NaN", line)
        with self.assertRaises(ValueError):
            strict_loads(line)

    def test_bad_lines(self):
        self.assertInvalid({"nonce": NONCE, "event": "progress", "stage": "timing"})
        self.assertInvalid({"nonce": NONCE, "event": "stage", "stage": "done"})
        self.assertInvalid({"nonce": NONCE, "event": "stage", "stage": "timing", "extra": 1})
        self.assertInvalid({"nonce": NONCE, "event": "result", "verdict": "correct"})
        self.assertInvalid({"nonce": NONCE, "event": "result"})
        self.assertInvalid({"nonce": NONCE, "event": "fatal"})
        self.assertInvalid([1, 2])
        r = self.result()
        r["shape_timings"][0]["gflops"] = 3
        self.assertInvalid(r)
        w = copy.deepcopy(WRONG)
        w["verdict"]["mismatch"]["why"] = "x"
        self.assertInvalid(w)
        w = copy.deepcopy(WRONG)
        del w["verdict"]["mismatch"]["shape"]
        self.assertInvalid(w)
        no_stage = self.result()
        del no_stage["verdict"]["stage"]
        self.assertInvalid(no_stage)


if __name__ == "__main__":
    unittest.main()
