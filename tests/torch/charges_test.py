#!/usr/bin/env python3
"""The torch judge's rules for charging a candidate on the GPU the excess of
a step outside its timed call (backends/torch/python/kevo_torch_eval.py):
prime_excess, for the primes before the timed calls (the paired
differences' median, charged only when clear of three standard errors of
a median and of the floor), and store_charges, for each call's output copy
into the judge's memory (its excess over the median of the reference's
copies, charged only when clear of three of their spreads and the floor).

  charges_test.py SOURCE_DIR
"""
import os
import sys
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


# The reference's output copies (ns): about 10 us with a spread of about 1 us.
REF_STORES = [10 * US + d / 3 for d in QUIET]


class StoreCharges(unittest.TestCase):
    def test_a_call_whose_copy_did_the_work_is_charged_its_excess(self):
        cand = [10 * US, 56 * US, 10.2 * US]
        charges = ev.store_charges(cand, REF_STORES)
        self.assertEqual(charges[0], 0.0)
        self.assertAlmostEqual(charges[1], 56 * US - ev.quantile(REF_STORES, 0.5))
        self.assertEqual(charges[2], 0.0)

    def test_honest_copies_within_the_references_spread_are_not_charged(self):
        cand = [10 * US + d / 3 for d in reversed(QUIET)]
        self.assertEqual(sum(ev.store_charges(cand, REF_STORES)), 0.0)

    def test_a_copy_skipped_earns_nothing(self):
        # A host that returned a view of the judge's memory copies nothing:
        # no charge, and no credit either.
        self.assertEqual(ev.store_charges([0.0, 1.0], REF_STORES), [0.0, 0.0])

    def test_the_bar_is_the_references_spread_or_the_floor(self):
        wide = [10 * US + d for d in NOISY]   # spread of tens of us
        self.assertEqual(ev.store_charges([60 * US], wide), [0.0])
        flat = [10 * US] * 20                 # no spread: the floor
        self.assertEqual(ev.store_charges([10 * US + ev.STEP_FLOOR_NS * 0.9], flat), [0.0])
        self.assertGreater(ev.store_charges([10 * US + ev.STEP_FLOOR_NS * 1.5], flat)[0], 0.0)

    def test_no_reference_copies_charge_nothing(self):
        self.assertEqual(ev.store_charges([5 * US], []), [0.0])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
