#!/usr/bin/env python3
"""Triton candidates under kevo's sandbox (docs/torch.md#triton-candidates).

  triton_test.py KEVO PYTHON SOURCE_DIR WORK_DIR [DEVICE]

Everywhere (CI has no GPU and no Triton):
* the launcher's argument codes for Triton's signatures (tuples flattened,
  constexprs skipped, tensor descriptors refused by name);
* without a GPU a Triton candidate is judged `runtime_error` with the reason
  ("candidates cannot use here: no GPU"), not a sandbox violation.

On a GPU (DEVICE cuda, tests/torch/run_h200.sh triton): honest Triton
candidates (softmax_triton.py: pointers, an int, a constexpr;
layernorm_triton.py: an fp32 scalar too) judged `correct` under the full
sandbox (namespaces and the system-call policy), each with its timing, on
the visible and hidden shapes; and the zygote's Triton state.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_test_args import args_or_skip, outcome, verdicts_of  # noqa: E402


def evaluate(kevo, task, files, common):
    p = subprocess.run([kevo, "eval", task] + files + ["--json", "--no-prepare", "--seed", "5"] + common,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("kevo eval %s exited %d:\n%s" % (task, p.returncode, p.stderr[-3000:]))
    return verdicts_of(p.stdout, files)


def diagnose(kevo, task, path, common):
    """A Triton candidate that failed under the sandbox, judged again with
    the policy off and with the namespaces (private root) off: which of the
    two its failure needs (printed for the next run's reader; the test
    still fails)."""
    for off in ("sandbox.seccomp=false", "sandbox.namespaces=false"):
        try:
            v = evaluate(kevo, task, [path], common + [off])[path]
            print("  diagnosis, %s with %s: %s %s" % (os.path.basename(path), off, v["status"], v["message"][:300]))
        except SystemExit as e:
            print("  diagnosis, %s with %s: %s" % (os.path.basename(path), off, str(e)[:500]))


def codes_checks(src):
    sys.path.insert(0, os.path.join(src, "backends", "torch", "python"))
    import kevo_torch_triton as ktt
    fails = []
    got = ktt.signature_codes({"x": "*fp32", "n": "i32", "B": "constexpr", "e": "fp32", "h": "fp16",
                               "t": ("i64", "*bf16"), "u": "u64", "f": "i1"})
    if got != ("pi-fe" + "lp" + "Lb", True):
        fails.append("signature codes: %r" % (got,))
    for bad in ("tensordesc<fp32[16, 16]>", "weird"):
        try:
            ktt.signature_codes({"d": bad})
            fails.append("signature %s was not refused" % bad)
        except RuntimeError as e:
            if bad.split("<")[0] not in str(e):
                fails.append("the refusal of %s does not name it: %s" % (bad, e))
    # A tuple argument is flattened as its type is; a constexpr whose value
    # is a tuple stays one item (its code is one '-').
    got = ktt.flatten_by(["*fp32", ("i32", ("i64", "fp32")), "constexpr"], [1, (2, (3, 4.0)), (16, 32)])
    if got != [1, 2, 3, 4.0, (16, 32)]:
        fails.append("flatten_by: %r" % (got,))
    return fails


def main():
    a = args_or_skip()
    if a is None:
        return 77
    kevo, python, src, work, device = a
    os.makedirs(work, exist_ok=True)
    fails = codes_checks(src)
    tasks = os.path.join(src, "configs", "tasks", "torch")
    gpu = os.path.join(src, "tests", "torch", "gpu")
    common = ["--set", "device=" + device, "python=" + python, "cache_dir=" + os.path.join(work, "cache")]
    softmax = evaluate(kevo, os.path.join(tasks, "torch_softmax"), [os.path.join(gpu, "softmax_triton.py")], common)
    v = softmax[os.path.join(gpu, "softmax_triton.py")]
    print("softmax_triton.py: %s %.3fx cand %.1f us ref %.1f us: %s" % (
        v["status"], v.get("speedup", 0), v.get("cand_median_ns", 0) / 1e3, v.get("ref_median_ns", 0) / 1e3,
        v["message"][:300]))
    if device != "cuda":
        if v["status"] != "runtime_error" or "candidates cannot use here: no GPU" not in v["message"]:
            fails.append("a Triton candidate without a GPU: %s %s" % (v["status"], v["message"][:300]))
    else:
        if v["status"] != "correct":
            fails.append("softmax_triton.py: %s %s\n%s" % (v["status"], v["message"][:500], v.get("feedback", "")[:3000]))
            diagnose(kevo, os.path.join(tasks, "torch_softmax"), os.path.join(gpu, "softmax_triton.py"), common)
        ln = evaluate(kevo, os.path.join(tasks, "torch_layernorm"), [os.path.join(gpu, "layernorm_triton.py")], common)
        w = ln[os.path.join(gpu, "layernorm_triton.py")]
        print("layernorm_triton.py: %s %.3fx cand %.1f us ref %.1f us: %s" % (
            w["status"], w.get("speedup", 0), w.get("cand_median_ns", 0) / 1e3, w.get("ref_median_ns", 0) / 1e3,
            w["message"][:300]))
        if w["status"] != "correct":
            fails.append("layernorm_triton.py: %s %s\n%s" % (w["status"], w["message"][:500], w.get("feedback", "")[:3000]))
            diagnose(kevo, os.path.join(tasks, "torch_layernorm"), os.path.join(gpu, "layernorm_triton.py"), common)
    return outcome(fails, "Triton candidates (%s): every check passed" % device)


if __name__ == "__main__":
    sys.exit(main())
