#!/usr/bin/python3
"""Ties in the ranking (coact_reports.ranking.tie_ranks): regions whose
intervals the data cannot order share a rank ("2=" in the table)."""
import unittest

import support  # noqa: F401  (puts reports/ on the import path)

from coact_reports.ranking import tie_ranks


def row(region, rank, lo, hi):
    return {"region": region, "rank": rank, "ci": [lo, hi]}


class TieRanks(unittest.TestCase):
    def test_a_separated_leader_and_a_tied_rest(self):
        # The archiver's shape: the leader apart, the rest overlapping each other.
        rows = [row("C", 1, 0.043, 0.085), row("W", 2, -0.005, 0.041), row("F", 3, -0.008, 0.041),
                row("R", 4, -0.009, 0.040)]
        self.assertEqual(tie_ranks(rows), {"C": 1, "W": 2, "F": 2, "R": 2})

    def test_a_group_is_compared_with_its_first_region_not_chained(self):
        # B overlaps A, C overlaps B but not A: C starts the next group.
        rows = [row("A", 1, 0.10, 0.20), row("B", 2, 0.05, 0.12), row("C", 3, 0.00, 0.08)]
        self.assertEqual(tie_ranks(rows), {"A": 1, "B": 1, "C": 3})

    def test_all_apart(self):
        rows = [row("A", 1, 0.3, 0.4), row("B", 2, 0.1, 0.2), row("C", 3, -0.1, 0.0)]
        self.assertEqual(tie_ranks(rows), {"A": 1, "B": 2, "C": 3})

    def test_unranked_and_intervalless_rows_have_no_tie_rank(self):
        rows = [row("A", 1, 0.1, 0.2), row("U", None, 0.0, 0.3), row("N", 2, None, None),
                row("A", 1, 0.1, 0.2)]  # a second progress point of A
        self.assertEqual(tie_ranks(rows), {"A": 1})

    def test_rows_out_of_rank_order_are_walked_by_rank(self):
        rows = [row("B", 2, 0.05, 0.12), row("A", 1, 0.10, 0.20)]
        self.assertEqual(tie_ranks(rows), {"A": 1, "B": 1})


if __name__ == "__main__":
    unittest.main()
