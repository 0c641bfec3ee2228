#!/usr/bin/env python3
"""The torch judge's rule for charging a candidate the excess of a paired
step (backends/torch/python/kevo_torch_eval.py: paired_excess, used for the
loads): the median of the pairs' differences, charged only when it is clear
of the margin (a quarter of the reference's step and 20 us) and of the
pairs' own noise; and store_excess, for the output copies of the checked
calls: their smallest excess, charged when it clears the margin and the
spread of the reference's loads.

  charges_test.py SOURCE_DIR
"""
import os
import sys
import unittest

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(SRC, "backends", "torch", "python"))
sys.dont_write_bytecode = True
import kevo_torch_eval as ev  # noqa: E402

MS = 1e6
# A fixed, symmetric spread (ns) to add to a difference.
QUIET = [-0.3 * MS, -0.2 * MS, -0.1 * MS, 0.0, 0.1 * MS, 0.2 * MS, 0.3 * MS, -0.15 * MS, 0.15 * MS, 0.05 * MS]
LOADED = [-20 * MS, -12 * MS, -6 * MS, -2 * MS, 0.0, 2 * MS, 6 * MS, 12 * MS, 20 * MS, 9 * MS]


class PairedExcess(unittest.TestCase):
    def test_a_clear_excess_on_a_quiet_machine_is_charged_its_median(self):
        diffs = [4 * MS + d for d in QUIET]
        self.assertAlmostEqual(ev.paired_excess(diffs, 10 * MS), 4 * MS + 0.025 * MS, delta=0.01 * MS)

    def test_differences_around_zero_are_not_charged(self):
        self.assertEqual(ev.paired_excess(list(QUIET), 10 * MS), 0.0)
        self.assertEqual(ev.paired_excess(list(LOADED), 10 * MS), 0.0)

    def test_an_excess_within_the_pairs_noise_is_not_charged(self):
        # A median of 4.5 ms, over the margin (2.52 ms), but the pairs
        # spread over +-20 ms (a loaded machine).
        diffs = [4 * MS + d for d in LOADED]
        self.assertGreater(ev.quantile(diffs, 0.5), 0.25 * 10 * MS + 20e3)
        self.assertEqual(ev.paired_excess(diffs, 10 * MS), 0.0)

    def test_an_excess_within_the_margin_is_not_charged(self):
        diffs = [2 * MS + d for d in QUIET]   # clear of the noise, under a quarter of 10 ms
        self.assertEqual(ev.paired_excess(diffs, 10 * MS), 0.0)

    def test_no_pairs_charge_nothing(self):
        self.assertEqual(ev.paired_excess([], 10 * MS), 0.0)


# The reference's loads (ns): about 1 ms with a small spread, and a loaded
# machine's 5-55 ms.
QUIET_LOADS = [1 * MS + d / 10 for d in QUIET]
LOADED_LOADS = [30 * MS + d for d in LOADED] + [5 * MS, 55 * MS]


class StoreExcess(unittest.TestCase):
    def test_a_lazy_hosts_copies_on_a_quiet_machine_are_charged_their_smallest_excess(self):
        ref = [0.5 * MS, 0.6 * MS, 0.55 * MS]
        cand = [r + 3 * MS + k * 0.1 * MS for k, r in enumerate(ref)]
        self.assertAlmostEqual(ev.store_excess(cand, ref, QUIET_LOADS), 3 * MS, delta=1)

    def test_an_honest_copy_slowed_by_a_loaded_machine_is_not_charged(self):
        # Over the margin in every checked pair (the old rule charged it),
        # within the spread that the reference's own loads show.
        ref = [6 * MS, 9 * MS]
        cand = [12 * MS, 16 * MS]
        self.assertGreater(min(c - r for c, r in zip(cand, ref)), 0.25 * 7.5 * MS + 20e3)
        self.assertEqual(ev.store_excess(cand, ref, LOADED_LOADS), 0.0)
        self.assertGreater(ev.store_excess(cand, ref, QUIET_LOADS), 0.0)

    def test_one_fast_pair_clears_a_lazy_host(self):
        ref = [0.5 * MS, 0.5 * MS]
        self.assertEqual(ev.store_excess([3.5 * MS, 0.55 * MS], ref, QUIET_LOADS), 0.0)

    def test_the_noise_is_the_references_own(self):
        # The spread comes from the reference's loads only: the same loads
        # give the same noise whatever the candidate's were.
        self.assertAlmostEqual(ev.step_noise(QUIET_LOADS), ev.step_noise(list(reversed(QUIET_LOADS))))
        self.assertEqual(ev.step_noise([1 * MS]), 0.0)
        self.assertEqual(ev.store_excess([], [], QUIET_LOADS), 0.0)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
