#!/usr/bin/env python3
"""The flags a torch candidate may pass to load_inline (backends/torch/
python/kevo_torch_common.py: an allow-list per tool). The red team ran a
shell in the build stage through g++'s `-wrapper` and read kevo's
environment (attack tests/torch/adversarial/build_wrapper.py); every flag
that runs or loads something of the candidate's choosing is refused.

  build_flags_test.py SOURCE_DIR
"""
import json
import os
import sys
import unittest

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(SRC, "backends", "torch", "python"))
sys.dont_write_bytecode = True
import kevo_torch_common as kc  # noqa: E402
import kevo_torch_build as kb  # noqa: E402


def call(**flags):
    return kc.normalise_load_inline(dict({"name": "ext", "cpp_sources": "int f();", "functions": []}, **flags))


class BuildFlags(unittest.TestCase):
    def test_a_cuda_binding_is_built_at_O1_and_the_candidates_level_wins(self):
        cuda = call(cuda_sources="__global__ void k() {}")
        argv = kb.cxx_command("g++", cuda, ["-DCOMMON"])
        self.assertIn("-O1", argv)
        self.assertNotIn("-O3", argv)
        self.assertEqual(kb.cxx_command("g++", call(), [])[3], "-O3")   # no CUDA sources: the C++ part computes
        asked = kb.cxx_command("g++", call(cuda_sources="__global__ void k() {}", extra_cflags=["-O3"]), [])
        self.assertGreater(asked.index("-O3"), asked.index("-O1"))   # later on the line: g++ takes the last

    def test_code_generation_flags_pass(self):
        c = call(extra_cflags=["-O3", "-march=native", "-mavx2", "-mfma", "-ffast-math", "-fopenmp", "-DTILE=64",
                               "-std=c++17", "-Wall", "-funroll-loops", "-fno-math-errno", "-g"],
                 extra_cuda_cflags=["-O3", "--use_fast_math", "-arch=sm_90a", "--ptxas-options=-v", "-Xptxas", "-O3,-v",
                                    "-lineinfo", "-maxrregcount=64", "--expt-relaxed-constexpr",
                                    "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-O3,-ffast-math"],
                 extra_ldflags=["-lgomp", "-lm"])
        self.assertIn("-march=native", c["extra_cflags"])
        self.assertIn("-Xptxas=-O3,-v", c["extra_cuda_cflags"])
        self.assertIn("-Xcompiler=-O3,-ffast-math", c["extra_cuda_cflags"])

    def test_empty_strings_are_dropped(self):
        c = call(extra_cflags=[""], extra_ldflags=[""], extra_cuda_cflags=["-O3", " "])
        self.assertEqual((c["extra_cflags"], c["extra_ldflags"], c["extra_cuda_cflags"]), ([], [], ["-O3"]))

    def test_flags_that_run_or_load_code_are_refused(self):
        bad = {
            "extra_cflags": ["-wrapper", "-fplugin=/tmp/p.so", "-B/tmp", "-specs=/tmp/s", "@/tmp/args",
                             "-Wl,-plugin,/tmp/p.so", "-Wa,--defsym,x=1", "-Wp,-D", "-fprofile-use=/etc",
                             "-iquote/proc", "--sysroot=/", "-x", "-o/tmp/x", "-save-temps", "-fdump-tree-all"],
            "extra_cuda_cflags": ["-ccbin=/bin/sh", "--compiler-bindir=/tmp", "-Xlinker", "--keep-dir=/tmp",
                                  "-Xcompiler", "-Xptxas=--dont-merge-basicblocks,-wrapper"],
            "extra_ldflags": ["-lcublas", "-L/tmp", "-Wl,-rpath,/tmp", "/tmp/evil.so", "-Xlinker"],
        }
        for key, flags in bad.items():
            for f in flags:
                with self.subTest(key=key, flag=f):
                    with self.assertRaises(kc.BuildError) as e:
                        call(**{key: [f, "-fplugin=x"] if f in ("-Xcompiler", "-Xlinker") else [f]})
                    self.assertIn(key, str(e.exception))

    def test_a_tool_option_list_is_checked_item_by_item(self):
        with self.assertRaises(kc.BuildError) as e:
            call(extra_cuda_cflags=["-Xcompiler", "-O3,-wrapper,/bin/sh"])
        self.assertIn("'-wrapper'", str(e.exception))
        with self.assertRaises(kc.BuildError):
            call(extra_cuda_cflags=["-Xcompiler"])


class Version(unittest.TestCase):
    """`--version` (run at every kevo start, its output keys the build
    cache) names torch and the compilers without importing torch (4.2 s on
    the H200)."""

    def test_the_version_names_torch_without_importing_it(self):
        import importlib.util
        if importlib.util.find_spec("torch") is None:
            self.skipTest("this Python has no torch")
        import io
        import runpy
        import contextlib
        script = os.path.join(SRC, "backends", "torch", "python", "kevo_torch_build.py")
        before = set(sys.modules)
        out = io.StringIO()
        argv = sys.argv
        sys.argv = [script, "--version", "--device", "cpu"]
        try:
            with contextlib.redirect_stdout(out), self.assertRaises(SystemExit) as e:
                runpy.run_path(script, run_name="__main__")
        finally:
            sys.argv = argv
        self.assertEqual(e.exception.code, 0)
        self.assertNotIn("torch", set(sys.modules) - before)
        v = json.loads(out.getvalue())
        self.assertEqual(v["device"], "cpu")
        self.assertTrue(v["torch"]["path"].endswith("torch"), v)
        self.assertEqual(len(v["torch"]["version_py"]), 64)
        self.assertTrue(v["cxx"])

    def test_cuda_home_is_found_as_torch_finds_it(self):
        saved = {k: os.environ.get(k) for k in ("CUDA_HOME", "CUDA_PATH")}
        try:
            os.environ.pop("CUDA_PATH", None)
            os.environ["CUDA_HOME"] = SRC   # any folder that exists
            self.assertEqual(kb.cuda_home(), SRC)
            os.environ["CUDA_HOME"] = os.path.join(SRC, "no-such-folder")
            self.assertIsNone(kb.cuda_home())
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
