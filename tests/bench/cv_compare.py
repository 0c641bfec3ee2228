#!/usr/bin/env python3
"""Is kevo's timing as repeatable as triton's do_bench? (docs/benchmarks.md,
issue 5's CV target.)

  cv_compare.py LOG [--resamples R] [--seed S]

LOG holds lines `values_us (LABEL): v1 v2 ...`, one per series (bench_cuda
cv and cuda_baselines.py cv|cv_fresh print them). Every series whose label
starts with "kevo" is compared with every other: the ratio of their standard
deviations (kevo's over the other's) with a 90% bootstrap interval, and
what the interval allows one to say. A CV from 10 values is known to about
25%, which is why a ratio, not two CVs, is the figure to quote.
"""
import argparse
import random
import re
import statistics
import sys


def read_series(path):
    series = []
    pattern = re.compile(r"^values_us \((.+)\):\s*(.*)$")
    with open(path) as f:
        for line in f:
            m = pattern.match(line.strip())
            if not m:
                continue
            values = [float(v) for v in m.group(2).split()]
            if len(values) < 3:
                sys.exit("%s: series '%s' has %d values; at least 3 are needed" % (path, m.group(1), len(values)))
            series.append((m.group(1), values))
    return series


def sd_ratio_interval(a, b, resamples, rng):
    ratios = []
    for _ in range(resamples):
        ra = [rng.choice(a) for _ in a]
        rb = [rng.choice(b) for _ in b]
        sb = statistics.stdev(rb)
        if sb > 0:
            ratios.append(statistics.stdev(ra) / sb)
    ratios.sort()
    if not ratios:
        return float("nan"), float("nan")
    return ratios[int(0.05 * len(ratios))], ratios[min(len(ratios) - 1, int(0.95 * len(ratios)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log")
    ap.add_argument("--resamples", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    series = read_series(args.log)
    if not series:
        sys.exit("%s: no 'values_us (LABEL): ...' lines" % args.log)
    rng = random.Random(args.seed)
    for label, v in series:
        m = statistics.mean(v)
        print("%-45s n=%-3d mean %.3f us  SD %.4f us  CV %.3f%%" % (label, len(v), m, statistics.stdev(v),
                                                                  100 * statistics.stdev(v) / m))
    kevo = [s for s in series if s[0].startswith("kevo")]
    others = [s for s in series if not s[0].startswith("kevo")]
    for kl, kv in kevo:
        for ol, ov in others:
            ratio = statistics.stdev(kv) / statistics.stdev(ov) if statistics.stdev(ov) > 0 else float("inf")
            lo, hi = sd_ratio_interval(kv, ov, args.resamples, rng)
            if hi < 1:
                say = "kevo's timings vary less"
            elif lo > 1:
                say = "kevo's timings vary more"
            else:
                say = "not distinguishable at these counts"
            print("SD ratio %s / %s: %.2f (90%% bootstrap interval %.2f-%.2f): %s" % (kl, ol, ratio, lo, hi, say))


if __name__ == "__main__":
    main()
