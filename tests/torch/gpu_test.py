#!/usr/bin/env python3
"""The torch backend on a GPU (label gpu; skipped, 77, without one): every
bundled torch task prepared on the device (reference self check, null
candidates, seed), honest CUDA candidates through load_inline judged
correct and timed, a side-stream candidate timed honestly, then the
adversarial suite with device cuda.

  gpu_test.py KEVO PYTHON SOURCE_DIR WORK_DIR
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_test_args import verdicts_of  # noqa: E402


def main():
    kevo, python, src, work = sys.argv[1:5]
    probe = subprocess.run([python, "-c", "import torch; print(torch.cuda.is_available())"], capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip() != "True":
        print("SKIP: no GPU that torch sees under %s" % python)
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    tasks = os.path.join(src, "configs", "tasks", "torch")
    gpu = os.path.join(src, "tests", "torch", "gpu")
    common = ["--set", "device=cuda", "python=" + python, "cache_dir=" + os.path.join(work, "cache"),
              "run.wall_seconds=300"]
    fails = []

    quick = bool(os.environ.get("KEVO_TORCH_GPU_QUICK"))   # one task only (a short device lease)
    t0 = time.monotonic()
    p = subprocess.run([kevo, "tasks", os.path.join(tasks, "torch_softmax") if quick else tasks, "--prepare"] + common,
                       capture_output=True, text=True)
    print(p.stdout + p.stderr[-3000:])
    print("prepare: %.1f s" % (time.monotonic() - t0))
    if p.returncode != 0:
        fails.append("the bundled torch tasks do not prepare on the GPU")

    def evaluate(task, files):
        t = time.monotonic()
        p = subprocess.run([kevo, "eval", os.path.join(tasks, task)] + files + ["--json", "--no-prepare", "--seed", "3"]
                           + common, capture_output=True, text=True)
        took = time.monotonic() - t
        if p.returncode != 0:
            fails.append("kevo eval %s exited %d: %s" % (task, p.returncode, p.stderr[-2000:]))
            return {}
        out = verdicts_of(p.stdout, files)
        for f, v in out.items():
            print("%-28s %-14s %7.3fx  cand %9.1f us  ref %9.1f us  compile %5.1f s  %s" % (
                os.path.basename(f), v["status"], v.get("speedup", 0), v.get("cand_median_ns", 0) / 1e3,
                v.get("ref_median_ns", 0) / 1e3, v.get("compile_seconds", 0), v["message"][:150]))
            if v["status"] != "correct":
                print("   feedback: " + v["feedback"][:1500].replace("\n", "\n   "))
        print("  (%d candidates in %.1f s)" % (len(files), took))
        return out

    soft = evaluate("torch_softmax", [os.path.join(gpu, "softmax_cuda.py"), os.path.join(gpu, "side_stream.py"),
                                      os.path.join(tasks, "torch_softmax", "seed.py")])
    for f, v in soft.items():
        if v.get("status") != "correct":
            fails.append("%s: %s %s" % (os.path.basename(f), v.get("status"), v.get("message", "")[:300]))
    if quick:
        print("FAILED:\n  " + "\n  ".join(fails) if fails else "torch on the GPU (quick): every check passed")
        return 1 if fails else 0
    sbr = evaluate("torch_scale_bias_relu", [os.path.join(gpu, "scale_bias_relu_cuda.py")])
    for f, v in sbr.items():
        if v.get("status") != "correct":
            fails.append("%s: %s %s" % (os.path.basename(f), v.get("status"), v.get("message", "")[:300]))
    # Seeds of the other tasks, timed.
    for task in ("torch_layernorm", "torch_linear_gelu"):
        for f, v in evaluate(task, [os.path.join(tasks, task, "seed.py")]).items():
            if v.get("status") != "correct":
                fails.append("%s seed: %s %s" % (task, v.get("status"), v.get("message", "")[:300]))

    if os.environ.get("KEVO_TORCH_SKIP_ADVERSARIAL"):
        adv = subprocess.CompletedProcess([], 0, "adversarial suite skipped (KEVO_TORCH_SKIP_ADVERSARIAL)\n", "")
    else:
        adv = subprocess.run([python, os.path.join(src, "tests", "torch", "adversarial_test.py"), kevo, python, src,
                              os.path.join(work, "adversarial"), "cuda"], capture_output=True, text=True)
    print(adv.stdout[-8000:] + adv.stderr[-2000:])
    if adv.returncode != 0:
        fails.append("the adversarial suite on the GPU failed")
    if fails:
        print("FAILED:\n  " + "\n  ".join(fails))
        return 1
    print("torch on the GPU: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
