#!/usr/bin/env python3
"""A campaign's KernelBench suite (docs/campaigns.md#kernelbench-suites), on
problems written here in KernelBench's form (tests/torch/kernelbench_form):
`kevo campaign plan` imports the level once into the suite's `out`, the
cells get its tasks without the degenerate one, and what was left out is
said; a second plan reuses the import; an import of other options, a
folder that is not an import, a missing level and an unknown key are
refused naming the key.

  kernelbench_suite_test.py KEVO TORCH_PYTHON SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys


def main():
    kevo, python, src, work = sys.argv[1:5]
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
        print("SKIP: %s cannot import torch" % python)
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    level = os.path.join(src, "tests", "torch", "kernelbench_form", "level1")
    fails = []

    def check(cond, what):
        if not cond:
            fails.append(what)
        print("%s %s" % ("ok  " if cond else "FAIL", what))

    def campaign(suite, name="kb.json"):
        doc = {"name": "kb-suite", "base_config": os.path.join(src, "configs", "kernelbench.json"),
               "kernelbench": [suite],
               "configurations": {"full": {"description": "the base config on the CPU",
                                           "set": {"backend.torch.device": "cpu", "backend.torch.python": python}}},
               "seeds": [1, 2], "budget": {"evaluations_per_task": 3, "wall_seconds": 60}}
        path = os.path.join(work, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def plan(path):
        p = subprocess.run([kevo, "campaign", "plan", path, "--json"], capture_output=True, text=True, cwd=work)
        return p.returncode, p.stdout, p.stderr

    suite = {"level": level, "out": "kb1", "python": python}
    rc, out, err = plan(campaign(suite))
    print(err[-3000:])
    check(rc == 0, "plan imports the level and exits 0 (got %d)" % rc)
    check("importing the KernelBench problems" in err, "the import is announced on stderr")
    if rc == 0:
        j = json.loads(out)   # stdout stays JSON: the importer's report went to stderr
        kb = j["campaign"]["kernelbench"][0]
        names = sorted(os.path.basename(t) for t in kb["tasks"])
        check(names == ["kb1_1_Square_matmul", "kb1_2_Row_softmax", "kb1_3_Log"],
              "the suite's tasks, the degenerate one left out: %s" % names)
        check(any(x.startswith("kb1_4_Zero_out: degenerate") for x in kb["left_out"]),
              "the degenerate task is named as left out: %s" % kb["left_out"])
        check(any("refused" in x for x in kb["left_out"]), "the refused problem is noted: %s" % kb["left_out"])
        check([c["tasks"] for c in j["plan"]] == [3, 3], "each cell has the suite's three tasks: %s" % j["plan"])
        check(sorted(os.path.basename(t) for t in j["campaign"]["tasks"]) == names, "the campaign's tasks are the suite's")
    stamp = os.path.join(work, "kb1", "kevo-import.json")
    check(os.path.isfile(stamp), "the import's stamp is written")
    check(not os.path.exists(os.path.join(work, "kb1.importing")), "no partial import is left")
    with open(os.path.join(work, "kb1", "kb1_2_Row_softmax", "reference.py")) as a, \
            open(os.path.join(level, "2_Row_softmax.py")) as b:
        check(a.read() == b.read(), "the problem file is used unchanged")

    rc, out, err = plan(campaign(suite))
    check(rc == 0 and "importing" not in err, "a second plan reuses the import (rc %d)" % rc)

    rc, out, err = plan(campaign(dict(suite, only="1,2")))
    check(rc == 2 and "/kernelbench/0/out" in err and "remove it or choose another out" in err,
          "an import of other options is refused naming /kernelbench/0/out: %s" % err.strip()[-300:])

    os.makedirs(os.path.join(work, "not_an_import"))
    rc, out, err = plan(campaign(dict(suite, out="not_an_import")))
    check(rc == 2 and "/kernelbench/0/out" in err and "no kevo-import.json" in err,
          "a folder that is no import is refused: %s" % err.strip()[-300:])

    rc, out, err = plan(campaign(dict(suite, level=os.path.join(work, "nowhere"), out="kb9")))
    check(rc == 2 and "/kernelbench/0/level" in err and not os.path.exists(os.path.join(work, "kb9")),
          "a missing level is refused, nothing written: %s" % err.strip()[-300:])

    rc, out, err = plan(campaign(dict(suite, levle="x")))
    check(rc == 2 and "levle" in err, "an unknown key is named: %s" % err.strip()[-300:])

    print("\n".join(["FAILED:"] + fails) if fails else "campaign KernelBench suites: every check passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
