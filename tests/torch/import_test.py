#!/usr/bin/env python3
"""`kevo tasks import-kernelbench` on problems written here in KernelBench's
form (tests/torch/kernelbench_form): one task per good problem, the problem
file unchanged as reference.py, sizes reduced where the working set is too
large, hidden sizes, signed inputs except where the reference then gives
NaN, the degenerate problem flagged and refused by `kevo tasks --prepare`,
the malformed one reported with the file and the reason; the level-2 task
allows library GEMMs. Then kevo loads and prepares the tasks it wrote.

  import_test.py KEVO PYTHON SOURCE_DIR WORK_DIR [DEVICE]
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_test_args import args_or_skip  # noqa: E402


def main():
    args = args_or_skip()
    if args is None:
        return 77
    kevo, python, src, work, device = args
    form = os.path.join(src, "tests", "torch", "kernelbench_form")
    shutil.rmtree(work, ignore_errors=True)
    out = os.path.join(work, "tasks")
    fails = []

    def check(cond, what):
        if not cond:
            fails.append(what)
        print("%s %s" % ("ok  " if cond else "FAIL", what))

    p = subprocess.run([kevo, "tasks", "import-kernelbench", os.path.join(form, "level1"), "--out", out,
                        "--python", python, "--max-mb", "256"], capture_output=True, text=True)
    print(p.stdout + p.stderr)
    check(p.returncode == 1, "one refused problem: exit 1 (got %d)" % p.returncode)
    check("9_No_model.py" in p.stdout and "defines no Model" in p.stdout, "the malformed problem is named with its reason")
    names = sorted(os.listdir(out)) if os.path.isdir(out) else []
    check(names == ["kb1_1_Square_matmul", "kb1_2_Row_softmax", "kb1_3_Log", "kb1_4_Zero_out"], "four tasks written: %s" % names)
    p2 = subprocess.run([kevo, "tasks", "import-kernelbench", os.path.join(form, "level2"), "--out", out,
                         "--python", python], capture_output=True, text=True)
    check(p2.returncode == 0, "level2 imports: exit %d %s" % (p2.returncode, p2.stdout[-300:]))

    def manifest(name):
        with open(os.path.join(out, name, "task.json")) as f:
            return json.load(f)

    mm = manifest("kb1_1_Square_matmul")
    check(mm["shapes"]["visible"] == [{"N": 4096}], "matmul's N halved to fit 256 MB: %s" % mm["shapes"]["visible"])
    check("8192 -> 4096" in mm["description"], "the description says the sizes were reduced")
    check(mm.get("bytes") == "12*N*N", "bytes derived as an expression: %s" % mm.get("bytes"))
    check(len(mm["shapes"]["hidden"]) >= 1 and any(h["N"] % 2 == 1 for h in mm["shapes"]["hidden"]),
          "odd hidden sizes: %s" % mm["shapes"]["hidden"])
    with open(os.path.join(form, "level1", "1_Square_matmul.py")) as a, \
            open(os.path.join(out, "kb1_1_Square_matmul", "reference.py")) as b:
        check(a.read() == b.read(), "the problem file is used unchanged")
    with open(os.path.join(out, "kb1_1_Square_matmul", "seed.py")) as f:
        seed = f.read()
    check("class ModelNew(" in seed and "super(ModelNew, self)" in seed, "the seed is the program as ModelNew")
    check(manifest("kb1_2_Row_softmax")["torch"]["inputs"]["signed"] is True, "softmax inputs are signed")
    check(manifest("kb1_3_Log")["torch"]["inputs"]["signed"] is False, "log's inputs stay positive (signed off)")
    check(manifest("kb1_4_Zero_out")["torch"]["degenerate"] is True, "the zeroing problem is flagged degenerate")
    check(manifest("kb1_2_Row_softmax")["torch"]["allow"] == [], "level 1 allows none of the reference's operations")
    check("aten::addmm" in manifest("kb2_1_Linear_ReLU_scale")["torch"]["allow"], "level 2 allows library GEMMs")

    p = subprocess.run([kevo, "tasks", out, "--json"], capture_output=True, text=True)
    check(p.returncode == 0, "kevo loads every task written: %s" % p.stderr[-300:])
    prep = ["--prepare", "--set", "device=" + device, "python=" + python,
            "cache_dir=" + os.path.join(work, "cache"), "run.wall_seconds=120"]
    p = subprocess.run([kevo, "tasks", os.path.join(out, "kb1_2_Row_softmax")] + prep, capture_output=True, text=True)
    check(p.returncode == 0, "the softmax task prepares: %s" % (p.stdout + p.stderr)[-500:])
    p = subprocess.run([kevo, "tasks", os.path.join(out, "kb1_4_Zero_out")] + prep, capture_output=True, text=True)
    check(p.returncode == 2 and "degenerate" in p.stderr and "kb1_4_Zero_out" in p.stderr,
          "the degenerate task is refused, exit 2, naming it: %s" % p.stderr[-400:])
    if fails:
        print("FAILED: %d checks" % len(fails))
        return 1
    print("import-kernelbench: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
