#!/usr/bin/env python3
"""The torch judge's rule for charging a candidate on the GPU the excess of
the one step of its host's outside its timed calls that sees their inputs
(backends/torch/python/kevo_torch_eval.py): prime_excess, for the primes
before the timed calls (the paired differences' median, charged only when
clear of three standard errors of a median and of the floor); and the null
round trip subtracted from every timed call (Judge.calibrate), which a
moment of load must not inflate.

  charges_test.py SOURCE_DIR
"""
import os
import sys
import time
import unittest

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(SRC, "backends", "torch", "python"))
sys.dont_write_bytecode = True
import kevo_torch_eval as ev  # noqa: E402

US = 1e3
# A fixed, symmetric spread (ns) to add to a difference: a quiet GPU's
# primes (a few us), and a noisy one's (tens of us).
QUIET = [-3 * US, -2 * US, -1 * US, 0.0, 1 * US, 2 * US, 3 * US, -1.5 * US, 1.5 * US, 0.5 * US] * 10
NOISY = [-60 * US, -40 * US, -20 * US, -5 * US, 0.0, 5 * US, 20 * US, 40 * US, 60 * US, 30 * US]


class PrimeExcess(unittest.TestCase):
    def test_work_in_the_prime_on_a_quiet_gpu_is_charged_its_median(self):
        # A softmax of about 46 us done in the prime, 100 pairs.
        diffs = [46 * US + d for d in QUIET]
        self.assertAlmostEqual(ev.prime_excess(diffs), ev.quantile(diffs, 0.5))
        self.assertGreater(ev.prime_excess(diffs), 45 * US)

    def test_differences_around_zero_are_not_charged(self):
        self.assertEqual(ev.prime_excess(list(QUIET)), 0.0)
        self.assertEqual(ev.prime_excess(list(NOISY)), 0.0)

    def test_an_excess_within_the_pairs_noise_is_not_charged(self):
        # A median of 15 us, over the floor, but 10 pairs spread over +-60 us.
        diffs = [15 * US + d for d in NOISY]
        self.assertGreater(ev.quantile(diffs, 0.5), ev.STEP_FLOOR_NS)
        self.assertEqual(ev.prime_excess(diffs), 0.0)

    def test_an_excess_under_the_floor_is_not_charged(self):
        diffs = [ev.STEP_FLOOR_NS * 0.9] * 50   # no spread at all, under the floor
        self.assertEqual(ev.prime_excess(diffs), 0.0)
        self.assertGreater(ev.prime_excess([ev.STEP_FLOOR_NS * 1.5] * 50), 0.0)

    def test_no_pairs_charge_nothing(self):
        self.assertEqual(ev.prime_excess([]), 0.0)


class FakeHost:
    """A host whose null round trips (ns) come from a list."""

    def __init__(self, samples):
        self.samples = list(samples)
        self.stopped = 0

    def null_call(self, timeout, stop=False):
        return self.samples.pop(0)

    def stop(self, wait=False):
        self.stopped += 1


class NullRoundTrip(unittest.TestCase):
    """Judge.calibrate: what is subtracted from every timed call. On the
    H200 one calibration beside running builds took 70 ms instead of 1 ms;
    its median, subtracted, made the reference's median 1 ns (0.00x)."""

    def judge(self, ref, cand):
        j = ev.Judge.__new__(ev.Judge)
        j.hosts = [ref, cand]
        j.direct = True
        j.deadline = time.monotonic() + 100.0
        return j

    def test_a_calibration_under_a_burst_of_load_gives_the_quiet_round_trip(self):
        # 15 null calls, the middle 9 slowed 70x by load.
        quiet, loaded = 1000.0, 70000.0
        ref = FakeHost([quiet] * 3 + [loaded] * 9 + [quiet] * 3)
        cand = FakeHost([quiet] * ev.NULL_CALLS)
        j = self.judge(ref, cand)
        self.assertEqual(ev.NULL_CALLS, 15)
        self.assertLessEqual(j.calibrate(ref), quiet * 1.01)
        self.assertEqual(cand.stopped, 1)   # the other host stopped while the reference's were measured

    def test_a_quiet_calibration_gives_its_typical_round_trip(self):
        samples = [1000.0 + 10.0 * i for i in range(ev.NULL_CALLS)]
        ref, cand = FakeHost(samples), FakeHost([])
        got = self.judge(ref, cand).calibrate(ref)
        self.assertGreaterEqual(got, min(samples))
        self.assertLessEqual(got, ev.quantile(samples, 0.5))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
