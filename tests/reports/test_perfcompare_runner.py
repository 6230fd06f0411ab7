#!/usr/bin/python3
"""Tests of coact_reports.perfcompare_runner's pair order and ETA line (the
runs themselves are tested end to end in tests/scripts)."""

import unittest
from unittest import mock

import support  # noqa: F401  (puts reports/ on the import path)

from coact_reports import perfcompare_runner as pr


class PairOrderTest(unittest.TestCase):
    def test_blocks_of_two_pairs_are_one_ab_and_one_ba(self):
        for seed in range(20):
            orders = pr.pair_orders(9, seed)
            self.assertEqual(len(orders), 9)
            for o in orders:
                self.assertIn(o, (("base", "cand"), ("cand", "base")))
            for i in range(0, 8, 2):
                self.assertNotEqual(orders[i], orders[i + 1])

    def test_seed_decides_the_order(self):
        self.assertEqual(pr.pair_orders(10, 5), pr.pair_orders(10, 5))
        self.assertGreater(len({tuple(pr.pair_orders(10, s)) for s in range(20)}), 1)


class EtaTest(unittest.TestCase):
    def test_time_left_from_the_mean_time_per_run(self):
        with mock.patch.object(pr.time, "monotonic", side_effect=[0.0, 10.0, 100.0, 130.0]):
            eta = pr.Eta(4)
            self.assertEqual(eta.step(), ", about 30s left")       # 10 s a run, 3 to go
            self.assertEqual(eta.step(), ", about 1m40s left")     # 50 s a run, 2 to go
            self.assertEqual(eta.step(), ", about 43s left")       # 130 / 3, 1 to go
            self.assertEqual(eta.step(), "")                       # done


if __name__ == "__main__":
    unittest.main()
