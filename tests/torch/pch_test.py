#!/usr/bin/env python3
"""The build stage's precompiled <torch/extension.h> (backends/torch/python/
kevo_torch_build.py, class Pch): the build of a task's reference with
--warm-pch precompiles the header, a candidate built meanwhile waits for it
and takes it, a later one takes it at once, and the libraries compute what
their sources say. Runs the real build script
and g++ (about a minute on two cores).

  pch_test.py SOURCE_DIR
"""
import glob
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
BUILD = os.path.join(SRC, "backends", "torch", "python", "kevo_torch_build.py")
TASK = os.path.join(SRC, "configs", "tasks", "torch", "torch_scale_bias_relu")
sys.path.insert(0, os.path.join(SRC, "backends", "torch", "python"))
sys.dont_write_bytecode = True
import kevo_torch_build as kb  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_flags_test import call  # noqa: E402  (a load_inline call as the build stage reads it)


def candidate(name, factor):
    return ('import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n'
            'CPP = "torch::Tensor scale(torch::Tensor x) { return x * %d; }"\n'
            'ext = load_inline(name="%s", cpp_sources=[CPP], functions=["scale"])\n\n\n'
            'class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.scale(x)\n' % (factor, name))


def start(work, tag, source, objects, *extra):
    out = os.path.join(work, tag)
    os.makedirs(out)
    path = os.path.join(work, tag + ".py")
    with open(path, "w") as f:
        f.write(source)
    return out, subprocess.Popen([sys.executable, BUILD, "--source", path, "--out", out, "--task", TASK,
                                  "--device", "cpu", "--objects", objects] + list(extra),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(out, p):
    log, _ = p.communicate(timeout=600)
    assert p.returncode == 0, log
    with open(os.path.join(out, "kevo_build.json")) as f:
        return json.load(f)


def call_library(out, record, x):
    spec = importlib.util.spec_from_file_location(
        record["name"], os.path.join(out, record["path"]),
        loader=importlib.machinery.ExtensionFileLoader(record["name"], os.path.join(out, record["path"])))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.scale(x)


class PchCommand(unittest.TestCase):
    def test_the_pch_is_built_with_main_cpps_own_command_and_only_its_level_may_differ(self):
        for c in (call(), call(cuda_sources="__global__ void k() {}")):
            self.assertEqual(kb.pch_command("g++", c, ["-DX"]), kb.cxx_command("g++", c, ["-DX"]))
        asked = kb.pch_command("g++", call(cuda_sources="__global__ void k() {}", extra_cflags=["-O3"]), [])
        self.assertEqual(asked[3], "-O3")
        self.assertNotIn("-O1", asked)
        # Anything else of the call's changes what the header means or how g++
        # reads it: no PCH (g++ would ignore it, or worse).
        for flags in (["-DTILE=64"], ["-march=native"], ["-O3", "-ffast-math"], ["-Wall"], ["-std=c++20"]):
            with self.subTest(flags=flags):
                self.assertIsNone(kb.pch_command("g++", call(extra_cflags=flags), []))
        self.assertIsNone(kb.pch_command("g++", call(extra_include_paths=["inc"]), []))


class SharedPch(unittest.TestCase):
    def test_the_references_build_warms_the_pch_a_candidate_waits_for_it_and_the_libraries_compute(self):
        import torch
        with open(os.path.join(TASK, "reference.py")) as f:
            reference = f.read()
        with tempfile.TemporaryDirectory() as work:
            objects = os.path.join(work, "objects")
            # The task's prepare builds its reference: with --warm-pch that
            # build precompiles the header the usual candidate takes.
            ref = start(work, "ref", reference, objects, "--warm-pch")
            t0 = time.monotonic()
            while not glob.glob(os.path.join(objects, "pch", "*", "*.gch.tmp*")):
                self.assertIsNone(ref[1].poll(), "the reference's build ended before it started a PCH")
                self.assertLess(time.monotonic() - t0, 120)
                time.sleep(0.05)
            # A candidate built meanwhile waits for that PCH, then uses it.
            b = start(work, "b", candidate("kevo_pch_twice", 2), objects)
            rr, rb = finish(*ref), finish(*b)
            self.assertEqual(rr["role"], "reference")
            self.assertTrue(rr["pch"]["warm"], rr)
            self.assertIsNotNone(rr["pch"]["built_seconds"])
            self.assertIsNone(rb["pch"]["built_seconds"])
            self.assertGreater(rb["pch"]["waited_seconds"], 0.0)
            self.assertTrue(rb["extensions"][0]["pch"], rb)
            # One afterwards takes it at once.
            rc = finish(*start(work, "c", candidate("kevo_pch_thrice", 3), objects))
            self.assertTrue(rc["extensions"][0]["pch"], rc)
            self.assertEqual((rc["pch"]["built_seconds"], rc["pch"]["waited_seconds"]), (None, 0.0))
            for r in (rb, rc):
                self.assertIsNone(r["pch"]["error"])
            self.assertEqual(len(glob.glob(os.path.join(objects, "pch", "*", "*.gch"))), 1)
            self.assertEqual(glob.glob(os.path.join(objects, "pch", "*", "*.tmp*")), [])
            x = torch.arange(-3.0, 4.0)
            self.assertTrue(torch.equal(call_library(b[0], rb["extensions"][0], x), x * 2))
            self.assertTrue(torch.equal(call_library(os.path.join(work, "c"), rc["extensions"][0], x), x * 3))
            # The same source again: its object is in the cache, so no compile
            # and no PCH.
            rd = finish(*start(work, "d", candidate("kevo_pch_twice", 2), objects))
            self.assertEqual(rd["object_cache"], {"hits": 1, "built": 0})
            self.assertFalse(rd["extensions"][0]["pch"])


if __name__ == "__main__":
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: this Python has no torch")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0]], verbosity=2)
