#!/usr/bin/python3
"""`coact-plot profile` on the profile of a very short sweep (found by a
new-user check): a valid profile with a few experiments and no region with
enough evidence exited 1 with "... nothing to plot". It now prints the same
ranking table, every region listed as "not enough evidence to rank" with its
experiment counts (regions without a curve yet too), plots what there is,
and exits 0; with nothing measured above speedup 0 it says in one line why
and about how long to sweep.

Run with Debian's interpreter:

    cd tests/reports && /usr/bin/python3 -m unittest discover -s .

Fixture: fixtures/short-sweep.coz, the first 3 experiments (3 s) of
fixtures/main-job-plot-nan.coz (a dedup sweep): Fingerprinter at speedup 0
(the only baseline), Index at 5 %, Writer at 55 %. No region has the 3
distinct speedups (baseline included) a curve needs.
"""

import json
import os
import unittest
import warnings

from support import FIXTURES, TempDirCase, read, run_cli

from coact_reports import estimate, profile

SHORT = os.path.join(FIXTURES, "short-sweep.coz")
FP = "coact::dedup::Fingerprinter::on(coact::dedup::RawChunk)"
IX = "coact::dedup::Index::on(coact::dedup::HashedChunk)"
WR = "coact::dedup::Writer::on(coact::dedup::PackedChunk)"


def table_rows(stdout):
    return [l for l in stdout.splitlines() if l[:6].strip() == "-" or l[:6].strip().isdigit()]


class ShortSweepCase(TempDirCase):
    def lines_of(self, name, keep):
        """A profile of the fixture's first `keep` lines."""
        return self.write(name, "".join(read(SHORT).splitlines(keepends=True)[:keep]))


class ShortSweepTableTest(ShortSweepCase):
    def test_table_lists_every_region_as_not_enough_evidence_and_plots(self):
        out = os.path.join(self.tmp, "curves.png")
        r = run_cli("profile", SHORT, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("nothing to plot", r.stderr)
        rows = table_rows(r.stdout)
        self.assertEqual([l.split()[1] for l in rows], [IX, WR, FP])
        for l in rows:
            self.assertTrue(l.strip().startswith("-"), l)          # no rank
            self.assertIn("not enough evidence to rank: ", l)
        self.assertIn("not enough evidence to rank: 1 experiment (needs 6)", rows[0])
        self.assertIn("no curve: 2 distinct speedups with the baseline (--min-points 3)", rows[0])
        self.assertIn("not enough evidence to rank: 0 experiments (needs 6)", rows[2])
        self.assertIn("not settled: no region has enough evidence to rank (3 listed without a rank)",
                      r.stdout)
        # The plot shows what there is: the measured points of Index and Writer.
        self.assertIn(f"wrote {out}", r.stderr)
        self.assertGreater(os.path.getsize(out), 1000)

    def test_json_lists_them_not_ranked(self):
        r = run_cli("profile", SHORT, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertFalse(doc["settled"])
        self.assertIsNone(doc["leader"])
        got = {(x["region"], x["experiments"], x["baseline_experiments"], x["ranked"], x["curve"],
                x["rank"]) for x in doc["regions"]}
        self.assertEqual(got, {(IX, 1, 1, False, False, None), (WR, 1, 1, False, False, None),
                               (FP, 0, 1, False, False, None)})
        ix = next(x for x in doc["regions"] if x["region"] == IX)
        self.assertIn("1 experiment (needs 6)", ix["why_unranked"])
        self.assertEqual([m["speedup"] for m in ix["measurements"]], [0.0, 0.05])
        self.assertIsNotNone(ix["measurements"][1]["program_speedup"])

    def test_only_baselines_says_how_long_to_sweep(self):
        # One experiment, at speedup 0: nothing to draw at all.
        p = self.lines_of("baseline-only.coz", 3)
        out = os.path.join(self.tmp, "never.png")
        r = run_cli("profile", p, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([l.split()[1] for l in table_rows(r.stdout)], [FP])
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)          # one line
        self.assertRegex(r.stderr, r"nothing to plot yet: the profile's only experiment \(1 s\) ran at "
                                   r"speedup 0 .*sweep longer, at least ~\d+ s")
        self.assertIn(f"{out} not written", r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_no_baseline_yet_is_said(self):
        # Experiments above speedup 0 only: no baseline to compare them with.
        with open(SHORT) as f:
            lines = f.read().splitlines(keepends=True)
        p = os.path.join(self.tmp, "nobase.coz")
        with open(p, "w") as f:
            f.write("".join([lines[0]] + lines[3:]))
        r = run_cli("profile", p, "-o", os.path.join(self.tmp, "x.png"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no baseline yet (no speedup-0 experiment)", r.stdout)
        self.assertIn("ran at speedup 0, so there is no baseline", r.stderr)


class KeepThinTest(ShortSweepCase):
    def test_analyze_keep_thin_and_the_default(self):
        prof = profile.load_profiles([SHORT])
        results = estimate.analyze(prof, keep_thin=True)
        self.assertEqual([r.region for r in results], [IX, WR, FP])
        for r in results:
            self.assertEqual(r.curves, [])
            self.assertFalse(r.ranked)
            self.assertIsNone(r.rank)
        self.assertEqual([t.experiments for r in results for t in r.thin], [1, 1, 0])
        self.assertEqual([t.drawable() for r in results for t in r.thin], [True, True, False])
        # Without keep_thin (estimate, coact-profile validate) it stays a data error.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", profile.ProfileWarning)
            with self.assertRaisesRegex(profile.ProfileError, "no region has a baseline"):
                estimate.analyze(prof)

    def test_estimate_is_still_a_data_error(self):
        # coact-profile validate reads exit 1 from the estimator as "no curve".
        r = run_cli("estimate", SHORT, "--json")
        self.assertEqual(r.returncode, 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
