#!/usr/bin/env python3
"""Attacks on the bundled OpenCL evaluator through `kevo eval` with the
quickstart's backend (configs/opencl-quickstart.json: a persistent --serve
evaluator on PoCL), each judged beside the task's seed in one command:

* tests/command/adversarial/local_memo_sgemm.cl keeps its output tiles in
  __local memory, which PoCL keeps from launch to launch; in kevo-judged
  mode every timed repeat ran on kevo's one input set, so it copied its
  answers back (4.6-5.9x against the seed's 0.55-0.59x). It must gain no
  more than half again the seed's speedup (plus 0.05); a pair that breaks
  that with a timing flagged unstable is judged again (up to 3 pairs).
* tests/command/adversarial/local_leak.cl records the sizes it runs at in
  __local memory and prints them at the first launch of a later request,
  before that request's first hidden call; the feedback quoted the hidden
  sizes. Judged twice by one evaluator, in both modes, no feedback may hold
  what it printed.
* tests/command/adversarial/oob_read_sgemm.cl walks the evaluator's heap
  (out-of-bounds reads are not checked; PoCL keeps every buffer in the
  evaluator's heap) for the reference's output buffer of the same inputs
  and copies it. The timing ran the reference first on every second
  repeat, so half the timed calls were copies: with an even repeat count
  (6 here, so that the median is not left to chance) it got twice the
  speedup of the same kernel without the theft (STEAL 0), in both modes.
  It must gain less than half again (noise between two judgements on a
  loaded 2-core machine reached 1.2x; the theft gained 1.8-2.6x), in one
  of up to 3 pairs.
* tests/command/adversarial/oob_zero_inputs_sgemm.cl scans downward from
  its buffers for the judge's own copy of A (drawn before the candidate's
  buffers existed), zeroes both copies and answers zeros: the reference,
  run on the zeroed copy, agreed, and the input check compared two zeroed
  copies (correct at 91.6x against the seed's 0.63x while kernels ran in
  the evaluator's process). Every kernel now runs in a process of its own:
  it must not be judged correct, in either mode.

* tests/command/adversarial/fork_outputs_vadd.cl and spinners_sgemm.cl
  make raw system calls through inline assembly (PoCL compiles it): a
  process forked to write the outputs after the
  timed launch (7-67x against the seed's 0.6-2.4x) and processes spinning
  while the reference runs (about 2x): each must be `forbidden` (the
  kernel processes' system-call policy), in both modes.
* tests/command/adversarial/socket_forge_vadd.cl takes its kernel
  process's socket and answers for it, computing after its answer: the
  judge freezes the process between exchanges and times it until it is
  seen stopped, so it must gain nothing over the seed.

  opencl_adversarial_test.py KEVO SOURCE_DIR WORK_DIR

Exit 77 (skipped) when the evaluator's python3 has no pyopencl or no
OpenCL platform.
"""
import json
import os
import shutil
import subprocess
import sys


def main():
    kevo, src, work = sys.argv[1:4]
    src = os.path.abspath(src)
    probe = subprocess.run(["python3", "-c", "import pyopencl as cl, numpy; assert cl.get_platforms()"],
                           capture_output=True)
    if probe.returncode != 0:
        print("SKIP: python3 has no pyopencl or no OpenCL platform")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(src, "configs", "opencl-quickstart.json"), encoding="utf-8") as f:
        backend = json.load(f)["backend"]["command"]
    sets = []
    for key, value in backend.items():
        if key == "prompts":   # relative to the config file; kevo eval builds no prompt
            continue
        text = json.dumps(value).replace("{config_dir}", os.path.join(src, "configs"))
        sets += ["--set", "%s=%s" % (key, text)]
    sets += ["--set", "cache_dir=" + os.path.join(work, "cache")]
    tasks = os.path.join(src, "configs", "tasks", "opencl")
    adv = os.path.join(src, "tests", "command", "adversarial")
    failures = []

    def judge(task, files, mode, extra=()):
        argv = ([kevo, "eval", os.path.join(tasks, task)] + files + ["--json", "--set", "judge=" + mode] + sets
                + list(extra))
        p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise SystemExit("kevo eval exited %d:\n%s" % (p.returncode, (p.stdout + p.stderr)[-3000:]))
        out = []
        for line in p.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                v = json.loads(line)
                out.append(v.get("verdict", v))
        if len(out) != len(files):
            raise SystemExit("expected %d verdicts, got %d:\n%s" % (len(files), len(out), p.stdout[-3000:]))
        for f, v in zip(files, out):
            print("%-8s %-40s %-14s %7.3fx  %s" % (mode, os.path.basename(f), v["status"], v.get("speedup", 0.0),
                                                   v["message"][:100].replace("\n", " ")), flush=True)
        return out

    seed = os.path.join(tasks, "sgemm", "seed.cl")
    memo = os.path.join(adv, "local_memo_sgemm.cl")
    # Judged again (up to 3 pairs) while the pair breaks the bound with a timing flagged unstable: on
    # a loaded 2-core machine the seed once came out at 0.495x, flagged (IQR 15% of the median), beside
    # the attack's 0.887x. The attack's gain is not noise (8-10x when it worked), so it would break
    # the bound in every pair.
    for attempt in range(3):
        honest, attack = judge("sgemm", [seed, memo], "kevo")
        if honest["status"] != "correct":
            failures.append("the sgemm seed: %s (%s)" % (honest["status"], honest["message"][:200]))
            break
        if attack["status"] != "correct" or attack["speedup"] <= 1.5 * honest["speedup"] + 0.05:
            break
        if "unstable" not in honest["message"] + attack["message"] or attempt == 2:
            failures.append("local_memo_sgemm.cl: %.3gx against the seed's %.3gx (its answers kept in __local)"
                            % (attack["speedup"], honest["speedup"]))
            break

    # oob_read_sgemm.cl against itself without the theft, 6 timed repeats
    steal = os.path.join(adv, "oob_read_sgemm.cl")
    plain = os.path.join(work, "oob_read_sgemm_honest.cl")
    with open(steal, encoding="utf-8") as f:
        text = f.read()
    with open(plain, "w", encoding="utf-8") as f:
        f.write("#define STEAL 0\n" + text)
    six = {"warmup": 1, "min_repeats": 6, "max_repeats": 6, "budget_seconds": 0, "max_iqr_fraction": 0.25}
    # Judged again (up to 3 pairs) while a pair breaks the bound: a CI run with two tests at once once
    # failed here, where alone the pair came out at 0.38x against 0.42x without the theft. The theft
    # gained 1.8-2.6x when it worked, so it would break the bound in every pair.
    for mode in ("evaluator", "kevo"):
        for attempt in range(3):
            honest, attack = judge("sgemm", [plain, steal], mode, ["--set", "timing=" + json.dumps(six)])
            if honest["status"] != "correct":
                problem = ("oob_read_sgemm.cl without the theft (%s mode): %s (%s)"
                           % (mode, honest["status"], honest["message"][:200]))
            elif attack["status"] == "correct" and attack["speedup"] > 1.5 * honest["speedup"]:
                problem = ("oob_read_sgemm.cl (%s mode): %.3gx against %.3gx without the theft (the reference's "
                           "answer read out of the evaluator's memory)" % (mode, attack["speedup"], honest["speedup"]))
            else:
                break
            print("pair %d breaks the bound: %s" % (attempt + 1, problem), flush=True)
            if attempt == 2:
                failures.append(problem + " in 3 pairs of 3")

    zero = os.path.join(adv, "oob_zero_inputs_sgemm.cl")
    for mode in ("evaluator", "kevo"):
        honest, attack = judge("sgemm", [seed, zero], mode)
        if honest["status"] != "correct":
            failures.append("the sgemm seed (%s mode): %s (%s)" % (mode, honest["status"], honest["message"][:200]))
        if attack["status"] == "correct":
            failures.append("oob_zero_inputs_sgemm.cl (%s mode): correct at %.3gx against the seed's %.3gx (the "
                            "judge's copy of the input zeroed)" % (mode, attack.get("speedup", 0.0),
                                                                   honest.get("speedup", 0.0)))

    # Raw system calls through inline assembly (the red team of 2026-12-06), through kevo with the
    # quickstart's confinement, in both modes: a fork, processes left spinning, a program exec'd
    # through posix_spawn's clone that outlives its call. Each must be forbidden, and the seed beside
    # them correct.
    vadd_seed = os.path.join(tasks, "vadd", "seed.cl")
    for mode in ("evaluator", "kevo"):
        # (exec_survivor_vadd.cl is test_opencl_eval.py's, unconfined: under `confine` the linker it
        # execs cannot open /dev/stdin and ends at once.)
        for task, name, seed_file in (("vadd", "fork_outputs_vadd.cl", vadd_seed),
                                      ("sgemm", "spinners_sgemm.cl", seed)):
            honest, attack = judge(task, [seed_file, os.path.join(adv, name)], mode)
            if honest["status"] != "correct":
                failures.append("the %s seed beside %s (%s mode): %s (%s)"
                                % (task, name, mode, honest["status"], honest["message"][:200]))
            if attack["status"] != "forbidden":
                failures.append("%s (%s mode): %s at %.3gx, not forbidden (%s)"
                                % (name, mode, attack["status"], attack.get("speedup", 0.0), attack["message"][:200]))

    # socket_forge_vadd.cl answers for its kernel process and computes after its answer: frozen
    # then, and timed until it is seen stopped, it must gain nothing over the seed.
    for mode in ("evaluator", "kevo"):
        honest, attack = judge("vadd", [vadd_seed, os.path.join(adv, "socket_forge_vadd.cl")], mode)
        if attack["status"] == "correct" and attack["speedup"] > 1.5 * honest.get("speedup", 0.0) + 0.05:
            failures.append("socket_forge_vadd.cl (%s mode): correct at %.3gx against the seed's %.3gx"
                            % (mode, attack.get("speedup", 0.0), honest.get("speedup", 0.0)))

    leak = os.path.join(adv, "local_leak.cl")
    for mode in ("evaluator", "kevo"):
        for v in judge("vadd", [os.path.join(tasks, "vadd", "seed.cl"), leak, leak], mode)[1:]:
            if "seen n=" in v.get("feedback", ""):
                failures.append("local_leak.cl (%s mode): the feedback quotes sizes an earlier request saw:\n%s"
                                % (mode, v["feedback"][:600]))
    for f in failures:
        print("FAIL: " + f)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
