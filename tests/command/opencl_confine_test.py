#!/usr/bin/env python3
"""A candidate's #include of a file of the user's, against the OpenCL
quickstart's backend (configs/opencl-quickstart.json, "confine": true).

tests/command/adversarial/include_secret.cl includes a header this test
writes outside every folder kevo gives the evaluator, holding a secret
number, and adds the number to its first output. Unconfined (--set
confine=false) the verdict quotes the number (the attack works, so the
test can fail); with the quickstart's confinement the candidate does not
compile and no field of its verdict holds the number.

  opencl_confine_test.py KEVO SOURCE_DIR WORK_DIR

Exit 77 (skipped) when python3 has no pyopencl or no OpenCL platform, or
the kernel has no Landlock.
"""
import json
import os
import shutil
import subprocess
import sys

SECRET = "4242.5"


def main():
    kevo, src, work = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    probe = subprocess.run(["python3", "-c", "import pyopencl as cl, numpy; assert cl.get_platforms()"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print("SKIP: python3 has no pyopencl or no OpenCL platform")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "home"))
    secret = os.path.join(work, "home", "secret.h")
    with open(secret, "w", encoding="utf-8") as f:
        f.write("#define KEVO_SECRET %sf\n" % SECRET)
    with open(os.path.join(src, "tests", "command", "adversarial", "include_secret.cl"), encoding="utf-8") as f:
        attack = f.read().replace("KEVO_TEST_SECRET_PATH", secret)
    cand = os.path.join(work, "include_secret.cl")
    with open(cand, "w", encoding="utf-8") as f:
        f.write(attack)
    with open(os.path.join(src, "configs", "opencl-quickstart.json"), encoding="utf-8") as f:
        backend = json.load(f)["backend"]["command"]
    if backend.get("confine") is not True:
        print("FAIL: configs/opencl-quickstart.json does not confine its commands")
        return 1
    sets = []
    for key, value in backend.items():
        if key == "prompts":   # relative to the config file; kevo eval builds no prompt
            continue
        sets += ["--set", "%s=%s" % (key, json.dumps(value).replace("{config_dir}", os.path.join(src, "configs")))]
    sets += ["--set", "cache_dir=" + os.path.join(work, "cache")]
    task = os.path.join(src, "configs", "tasks", "opencl", "vadd")

    def judge(extra):
        argv = [kevo, "eval", task, cand, "--json"] + sets + extra
        p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        text = p.stdout + p.stderr
        if p.returncode != 0:
            if "Landlock is not available" in text:
                print("SKIP: " + text.strip()[-300:])
                raise SystemExit(77)
            raise SystemExit("kevo eval exited %d:\n%s" % (p.returncode, text[-3000:]))
        line = p.stdout[p.stdout.index("{"):]   # one candidate: one JSON verdict
        v = json.loads(line)
        print("%-20s %-14s %s" % (" ".join(extra) or "(confined)", v["status"], v["message"][:120].replace("\n", " ")),
              flush=True)
        return v, line

    failures = []
    open_v, open_line = judge(["--set", "confine=false"])
    if "4243.5" not in open_line and SECRET not in open_line:
        failures.append("unconfined, the verdict does not quote the secret (the attack no longer shows "
                        "anything): %s" % open_line[:600])
    v, line = judge([])
    if SECRET in line or "4243.5" in line:
        failures.append("confined, the verdict quotes the secret:\n" + line[:1500])
    if v["status"] == "correct":
        failures.append("confined, the candidate was judged correct")
    for f in failures:
        print("FAIL: " + f)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
