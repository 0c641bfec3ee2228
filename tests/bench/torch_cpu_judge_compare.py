#!/usr/bin/env python3
"""Two builds of kevo's torch judge on the CPU, side by side in one run
(docs/benchmarks.md#torch-cpu-judge): the same candidate judged N times by
each, interleaved (A, B, A, B, ...) so that both see the same machine, each
judgement with its own seed. Prints per build the seconds per judgement,
the median speedup, and the judgement-to-judgement CV of the candidate's
and the reference's medians and of the speedup.

  torch_cpu_judge_compare.py KEVO_A KEVO_B TASK CANDIDATE [--n N] [--python PY]
      [--label-a A] [--label-b B] [--set KEY=VALUE ...]
"""
import argparse
import json
import statistics
import subprocess
import tempfile
import time


def cv(xs):
    m = statistics.mean(xs)
    return statistics.pstdev(xs) / m if m else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kevo_a")
    ap.add_argument("kevo_b")
    ap.add_argument("task")
    ap.add_argument("candidate")
    ap.add_argument("--n", type=int, default=6)
    ap.add_argument("--python", default="python3")
    ap.add_argument("--label-a", default="A")
    ap.add_argument("--label-b", default="B")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    runs = {a.label_a: [], a.label_b: []}
    with tempfile.TemporaryDirectory(prefix="kevo-judge-cmp-") as tmp:
        for i in range(a.n):
            for label, kevo in ((a.label_a, a.kevo_a), (a.label_b, a.kevo_b)):
                argv = [kevo, "eval", a.task, a.candidate, "--json", "--no-prepare", "--seed", str(100 + i),
                        "--set", "device=cpu", "python=" + a.python, "cache_dir=%s/%s" % (tmp, label)] + \
                    [x for kv in a.set for x in ("--set", kv)]
                t0 = time.monotonic()
                p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
                wall = time.monotonic() - t0
                if p.returncode != 0:
                    raise SystemExit("%s: kevo eval exited %d:\n%s" % (label, p.returncode, p.stderr[-2000:]))
                v = json.loads(p.stdout)
                if v["status"] != "correct":
                    raise SystemExit("%s: %s (%s)" % (label, v["status"], v["message"][:300]))
                runs[label].append({"wall": wall, "cand": v["cand_median_ns"], "ref": v["ref_median_ns"],
                                    "speedup": v["speedup"], "repeats": v["repeats"]})
    print("%d judgements each of %s on %s, interleaved" % (a.n, a.candidate, a.task))
    print("%-10s %10s %10s %10s %10s %10s %10s %8s" % ("judge", "s/judgemt", "speedup", "cand ms", "ref ms",
                                                      "CV cand", "CV ref", "CV spdup"))
    for label, rs in runs.items():
        print("%-10s %10.2f %10.3f %10.3f %10.3f %10.3f %10.3f %8.3f" % (
            label, statistics.median(r["wall"] for r in rs), statistics.median(r["speedup"] for r in rs),
            statistics.median(r["cand"] for r in rs) / 1e6, statistics.median(r["ref"] for r in rs) / 1e6,
            cv([r["cand"] for r in rs]), cv([r["ref"] for r in rs]), cv([r["speedup"] for r in rs])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
