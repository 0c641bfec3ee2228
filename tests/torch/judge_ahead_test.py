#!/usr/bin/env python3
"""The torch judge forked ahead (backends/torch/python/kevo_torch_eval.py,
serve and run_request): each judge sets up its hosts (and, on the GPU, its
CUDA contexts and first kernels) before its request is read, and the zygote
forks the next judge as soon as the current one has read its request, so
that the next judgement's set-up runs beside this one; this one's timing
waits until that set-up is done, so that none of it runs beside the timed
calls; a judge forked ahead whose set-up fails reads no request, and the
next judge is forked after the previous judgement ended. Judged by real
`kevo eval`s of three candidates in one evaluator, whose judges' phase lines
(KEVO_TORCH_JUDGE_PHASES) give the moments.

  judge_ahead_test.py KEVO PYTHON SOURCE_DIR WORK_DIR [DEVICE]

Exit 77 (skipped) when PYTHON cannot import torch.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_test_args import args_or_skip  # noqa: E402


# Each judge forked ahead takes this many seconds more to set up (the test
# hook KEVO_TORCH_TEST_SLOW_SETUP): longer than from a judgement's request to
# its timing, so that a timing that did not wait would begin first.
SLOW = 4.0


def phase_line(v):
    lines = [x for x in (v.get("output_tail") or "").splitlines() if x.startswith("kevo-torch-judge phases:")]
    if not lines:
        raise AssertionError("no phase line in the verdict's output_tail: %r" % v.get("output_tail"))
    return lines[-1]


def moments(line):
    at = {}
    for kv in line.split(" | at ", 1)[1].split():
        k, v = kv.split("=")
        at[k] = float(v)
    return at


def parts(line):
    out = {}
    for kv in line.split("|")[2].split():
        k, v = kv.split("=")
        out[k] = float(v)
    return out


def judge_three(kevo, python, src, work, device, env):
    """kevo eval of three candidates in one evaluator; [(name, moments,
    parts)] in the order their requests were read."""
    adv = os.path.join(src, "tests", "torch", "adversarial")
    task = os.path.join(src, "configs", "tasks", "torch", "torch_softmax")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # Timed, failing at once, timed: in this order in one evaluator.
    files = [os.path.join(adv, "honest.py"), os.path.join(adv, "returns_input.py"),
             os.path.join(adv, "memo_by_sample.py")]
    want = {"honest.py": "correct", "returns_input.py": "wrong_answer", "memo_by_sample.py": "correct"}
    argv = [kevo, "eval", task] + files + [
        "--json", "--no-prepare", "--seed", "5", "--set", "device=" + device, "python=" + python,
        "cache_dir=" + os.path.join(work, "cache"), "timing.budget_seconds=0.2", "timing.min_repeats=5"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, KEVO_TORCH_JUDGE_PHASES="1", **env))
    if p.returncode != 0:
        raise AssertionError("kevo eval exited %d:\n%s" % (p.returncode, (p.stdout + p.stderr)[-3000:]))
    judged = []
    for line in p.stdout.splitlines():
        if not line.strip():
            continue
        j = json.loads(line)
        name = os.path.basename(j["candidate"])
        v = j["verdict"]
        if v["status"] != want[name]:
            raise AssertionError("%s: %s (%s), expected %s" % (name, v["status"], v.get("message"), want[name]))
        pl = phase_line(v)
        judged.append((name, moments(pl), parts(pl), v.get("message", "")))
        print("%-20s %-13s %s" % (name, v["status"], pl))
    if len(judged) != 3:
        raise AssertionError("%d verdicts, expected 3" % len(judged))
    judged.sort(key=lambda x: x[1]["request"])
    for name, at, pt, _ in judged:
        # Every judge set itself up before its request was read.
        if not at["setup_start"] <= at["setup_done"] <= at["request"]:
            raise AssertionError("%s: set up at %.3f-%.3f, its request read at %.3f" % (
                name, at["setup_start"], at["setup_done"], at["request"]))
        if "setup_before_request" not in pt:
            raise AssertionError("%s: no setup_before_request in its phase line" % name)
    return judged


def main():
    args = args_or_skip()
    if args is None:
        return 77
    kevo, python, src, work, device = args
    judged = judge_three(kevo, python, src, os.path.join(work, "ahead"), device,
                         {"KEVO_TORCH_TEST_SLOW_SETUP": str(SLOW)})
    waited = 0
    for (pname, pat, _, pmsg), (name, at, _, _) in zip(judged, judged[1:]):
        # Forked ahead: its set-up began while the previous judgement ran,
        # before the previous judgement's end ...
        if not at["setup_start"] < pat["end"]:
            raise AssertionError("%s was not forked ahead: its set-up began at %.3f, after %s ended at %.3f" % (
                name, at["setup_start"], pname, pat["end"]))
        # ... and was done before the previous judgement's timing began.
        if "timing" in pat:
            waited += 1
            if not at["setup_done"] <= pat["timing"] or not at["setup_done"] - at["setup_start"] >= SLOW:
                raise AssertionError("%s's set-up ended at %.3f, after %s's timing began at %.3f" % (
                    name, at["setup_done"], pname, pat["timing"]))
            if "beside the next judgement's set-up" in pmsg:
                raise AssertionError("%s: %s" % (pname, pmsg))
    # Two of the three are timed, so at least one timed judgement has a next.
    if not waited:
        raise AssertionError("no timed judgement had a judge forked after it: nothing checked the wait")
    print("OK: 3 judges, each set up before its request; the 2nd and 3rd forked ahead and set up before the "
          "previous timing began")
    # A set-up ahead that outlasts the wait (here 0.5 s against a set-up
    # longer than a judgement's correctness phase; 30 s in kevo): the timing
    # goes on beside it, and its verdict says so.
    judged = judge_three(kevo, python, src, os.path.join(work, "beside"), device,
                         {"KEVO_TORCH_TEST_SLOW_SETUP": str(3 * SLOW), "KEVO_TORCH_TEST_NEXT_READY_SECONDS": "0.5"})
    beside = 0
    for (pname, pat, _, pmsg), (name, at, _, _) in zip(judged, judged[1:]):
        if "timing" in pat:
            told = "timed beside the next judgement's set-up (not done after 0.5 s of waiting)" in pmsg
            if told != (at["setup_done"] > pat["timing"]):
                raise AssertionError("%s: its timing began at %.3f, %s's set-up ended at %.3f, and its message is "
                                     "%r" % (pname, pat["timing"], name, at["setup_done"], pmsg))
            beside += told
    if not beside:
        raise AssertionError("no timing ran beside a set-up ahead: nothing checked the verdict's note")
    print("OK: a timing that waited 0.5 s for a set-up ahead of 12 s went on beside it and its verdict says so")
    # A judge forked ahead whose set-up fails (its candidate's host dies
    # before it is ready) reads no request: the zygote forks another after
    # the previous judgement has ended, and every verdict is as expected.
    judged = judge_three(kevo, python, src, os.path.join(work, "failed"), device,
                         {"KEVO_TORCH_TEST_FAIL_AHEAD_SETUP": "1"})
    for (pname, pat, _, _), (name, at, _, _) in zip(judged, judged[1:]):
        if not at["setup_start"] >= pat["end"]:
            raise AssertionError("%s's set-up began at %.3f, before %s ended at %.3f: the judge whose set-up "
                                 "failed judged it" % (name, at["setup_start"], pname, pat["end"]))
    print("OK: with every set-up ahead failing, 3 verdicts as expected, each from a judge forked after the "
          "previous judgement ended")
    # A candidate's host whose set-up fails every time (the test hook fails
    # it before its program is sent, at the step "flags"): kevo's failure,
    # internal_error naming the step, never the candidate's runtime_error.
    # Before, a host that could not load the input mask's kernel made every
    # candidate a runtime_error (the twelfth session's red team).
    task = os.path.join(src, "configs", "tasks", "torch", "torch_softmax")
    p = subprocess.run([kevo, "eval", task, os.path.join(src, "tests", "torch", "adversarial", "honest.py"), "--json",
                        "--no-prepare", "--seed", "5", "--set", "device=" + device, "python=" + python,
                        "cache_dir=" + os.path.join(work, "setup-fails", "cache")],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, KEVO_TORCH_TEST_FAIL_HOST_SETUP="1"))
    try:
        v = json.loads(p.stdout)
    except ValueError:
        raise AssertionError("kevo eval exited %d without a verdict:\n%s" % (p.returncode, (p.stdout + p.stderr)[-3000:]))
    if v.get("status") != "internal_error" or "last set-up step: flags" not in v.get("message", "") or \
            "not the candidate's" not in v.get("message", ""):
        raise AssertionError("a host that failed in its set-up: %s (%s)" % (v.get("status"), v.get("message")))
    print("OK: a candidate's host that fails in its set-up is internal_error: %s" % v["message"][:160])
    return 0


if __name__ == "__main__":
    sys.exit(main())
