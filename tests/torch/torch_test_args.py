"""The command line of the torch integration test scripts (import_test.py,
judge_ahead_test.py, triton_test.py): KEVO PYTHON SOURCE_DIR WORK_DIR
[DEVICE]; a test's outcome; and the verdicts of a `kevo eval --json` (adversarial_test.py,
gpu_test.py, triton_test.py)."""
import json
import subprocess
import sys


def args_or_skip():
    """(kevo, python, src, work, device), or None after printing SKIP when
    PYTHON cannot import torch (the script then exits 77)."""
    kevo, python, src, work = sys.argv[1:5]
    device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
        print("SKIP: %s cannot import torch" % python)
        return None
    return kevo, python, src, work, device


def outcome(fails, passed):
    """A test's last words and exit status: its failures, or `passed`."""
    if fails:
        print("FAILED:\n  " + "\n  ".join(fails))
        return 1
    print(passed)
    return 0


def verdicts_of(stdout, paths):
    """path -> verdict from the stdout of `kevo eval TASK PATHS... --json`:
    one verdict object for one candidate, one line per candidate
    ({"candidate", "verdict"}) for several."""
    if len(paths) == 1:
        return {paths[0]: json.loads(stdout)}
    out = {}
    for line in stdout.splitlines():
        if line.strip():
            j = json.loads(line)
            out[j["candidate"]] = j["verdict"]
    return out
