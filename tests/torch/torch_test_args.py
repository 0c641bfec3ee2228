"""The command line of the torch integration test scripts (import_test.py,
judge_ahead_test.py): KEVO PYTHON SOURCE_DIR WORK_DIR [DEVICE]."""
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
