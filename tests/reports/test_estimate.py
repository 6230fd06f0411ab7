#!/usr/bin/python3
"""Tests of coact_reports.estimate: the one estimator of "predicted program
speedup at virtual speedup s" (used by the plots, the ranking table,
`coact-plot estimate` and coact-profile validate).

Fixture toy.coz, region toy.cpp:27 (see test_coact_plot.py): planted
throughput period P0 * (1 - 0.5 s), so program speedup = 0.5 s exactly,
measured at s = 0.25 (1 experiment), 0.50 (2), 0.75 (1), 1.00 (1); the
latency point is planted at 0.4 s.
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np

from support import FIXTURES, REPORTS, run_cli

from coact_reports import estimate, profile

TOY_COZ = os.path.join(FIXTURES, "toy.coz")
A = "/home/coz/toy/toy.cpp:27"
TP = "/home/coz/toy/toy.cpp:42"
LAT = "request"


def analyze_toy(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", profile.ProfileWarning)
        return estimate.analyze(profile.load_profiles([TOY_COZ]), **kw)


def run_module(*args):
    return subprocess.run([sys.executable, "-m", "coact_reports.estimate", *args],
                          cwd=REPORTS, capture_output=True, text=True, timeout=60)


class PredictTest(unittest.TestCase):
    def setUp(self):
        self.results = analyze_toy()
        self.rows = estimate.predictions(self.results, at=[0.33])

    def row(self, region, point):
        (r,) = [r for r in self.rows if r["region"] == region and r["point"] == point]
        return r

    def test_planted_linear_curve_recovered_at_every_measured_s(self):
        r = self.row(A, TP)
        got = {p["s"]: p for p in r["predictions"]}
        self.assertEqual(sorted(got), [0.25, 0.33, 0.5, 0.75, 1.0])
        for s, p in got.items():
            self.assertAlmostEqual(p["program_speedup"], 0.5 * s, places=6)
        lat = {p["s"]: p["program_speedup"] for p in self.row(A, LAT)["predictions"]}
        for s, v in lat.items():
            self.assertAlmostEqual(v, 0.4 * s, places=6)

    def test_experiment_counts_and_measured_values(self):
        got = {p["s"]: p for p in self.row(A, TP)["predictions"]}
        self.assertEqual({s: p["experiments"] for s, p in got.items()},
                         {0.25: 1, 0.33: 0, 0.5: 2, 0.75: 1, 1.0: 1})
        self.assertIsNone(got[0.33]["measured"])
        self.assertAlmostEqual(got[0.5]["measured"], 0.25, places=6)
        self.assertEqual(self.row(A, TP)["baseline_experiments"], 4)   # pooled over regions

    def test_ci_brackets_the_prediction(self):
        for r in self.rows:
            for p in r["predictions"]:
                lo, hi = p["ci"]
                self.assertLessEqual(lo, p["program_speedup"] + 1e-9)
                self.assertGreaterEqual(hi, p["program_speedup"] - 1e-9)

    def test_rate_gain_is_the_throughput_equivalent(self):
        p = [p for p in self.row(A, TP)["predictions"] if p["s"] == 1.0][0]
        self.assertAlmostEqual(p["rate_gain"], 1 / (1 - 0.5) - 1, places=6)

    def test_same_numbers_as_the_ranking_table(self):
        # One estimator: the ranking's @10/25/50% are Curve.predict at those s.
        for r in self.results:
            for c in r.curves:
                for s, (v, lo, hi) in c.predicted.items():
                    pv, plo, phi = c.predict(s)
                    self.assertAlmostEqual(pv, v, places=9)
                    self.assertAlmostEqual(plo, lo, places=9)
                    self.assertAlmostEqual(phi, hi, places=9)

    def test_no_zero_width_interval(self):
        # Exact planted data with identical baselines leave no residual: the
        # estimator prints no interval rather than a zero-width one.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "exact.coz")
            lines = ["startup\ttime=1"]
            for s in (0.0, 0.25, 0.5, 0.75):
                for _ in range(3):      # time per visit exactly 1 ms * (1 - s / 4)
                    lines += [f"experiment\tselected=e.c:1\tspeedup={s:.2f}\t"
                              f"duration={round(1e9 * (1 - s / 4))}\tselected-samples=1",
                              "throughput-point\tname=p\tdelta=1000"]
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            rows = estimate.predictions(estimate.analyze(profile.load_profiles([path])))
        self.assertTrue(all(p["ci"] == [None, None] for r in rows for p in r["predictions"]))
        self.assertTrue(all(not r["ranked"] for r in rows))


def knee_profile(path, curve, levels, per_level=2, period_ns=1_000_000):
    """A Coz profile of one region whose program speedup at virtual speedup s
    is exactly curve(s): throughput period period_ns * (1 - curve(s)), each
    level (and 0) measured by per_level experiments of 0.5 s."""
    with open(path, "w") as f:
        f.write("startup\ttime=1700000000000000000\n")
        for s in [0.0] + list(levels):
            for _ in range(per_level):
                duration = 500_000_000
                delta = round(duration / (period_ns * (1 - curve(s))))
                f.write(f"experiment\tselected=k.cpp:1\tspeedup={s:.2f}\tduration={duration}\tselected-samples=10\n")
                f.write(f"throughput-point\tname=done\tdelta={delta}\n")


class KneeTest(unittest.TestCase):
    """A program's speedup curve is concave and piecewise linear (its period is
    the longest of its paths, each linear in s): min(s, 1/2) for a fork-join,
    min(0.8 s, 0.6) for the farm of bench/causal. A polynomial through the
    origin rounds the bend off: on exact data at s = 0.05 .. 1.0 degree 2
    gives 0.448 at s = 0.5 and 0.546 at 0.75 (the weak rows of validate).
    The default fit bends once, at a knee searched between measured speedups,
    where an F test prefers that to the line."""

    LEVELS = [round(0.05 * i, 2) for i in range(1, 21)]

    def predict(self, curve, at, **kw):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "knee.coz")
            knee_profile(path, curve, self.LEVELS)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", profile.ProfileWarning)
                (r,) = estimate.analyze(profile.load_profiles([path]), **kw)
        (c,) = r.curves
        return c, {s: c.predict(s)[0] for s in at}

    def test_fork_join_knee_is_recovered(self):
        c, got = self.predict(lambda s: min(s, 0.5), [0.25, 0.5, 0.75])
        self.assertEqual(c.knee, 0.5)
        for s, v in got.items():
            self.assertAlmostEqual(v, min(s, 0.5), delta=0.005)

    def test_knee_between_measured_speedups_is_recovered(self):
        # The sweep measured 0.45 and 0.55 but not 0.5, where the paths cross: a knee
        # restricted to measured speedups (0.45) predicted 0.46 at s = 0.5 on data like
        # this (validate's fork_join A); the knee is searched between them.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "knee.coz")
            knee_profile(path, lambda s: min(s, 0.5), [round(0.05 + 0.1 * i, 2) for i in range(10)])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", profile.ProfileWarning)
                (r,) = estimate.analyze(profile.load_profiles([path]))
        (c,) = r.curves
        self.assertAlmostEqual(c.knee, 0.5, delta=0.006)
        for s in (0.25, 0.5, 0.75):
            self.assertAlmostEqual(c.predict(s)[0], min(s, 0.5), delta=0.005)

    def test_farm_knee_is_recovered(self):
        c, got = self.predict(lambda s: min(0.8 * s, 0.6), [0.25, 0.5, 0.75])
        for s, v in got.items():
            self.assertAlmostEqual(v, min(0.8 * s, 0.6), delta=0.005)

    def test_straight_line_stays_straight(self):
        _, got = self.predict(lambda s: s / 3, [0.25, 0.5, 0.75])
        for s, v in got.items():
            self.assertAlmostEqual(v, s / 3, delta=0.005)

    def test_no_convex_bend(self):
        # A convex bend would only fit noise (speedup curves are concave).
        c, _ = self.predict(lambda s: max(0.0, s - 0.5), [0.5])
        self.assertIsNone(c.knee)

    def test_line_fit_keeps_the_line(self):
        c, got = self.predict(lambda s: min(s, 0.5), [0.5], model="line")
        self.assertIsNone(c.knee)
        self.assertEqual(c.model, "line")
        self.assertLess(got[0.5], 0.45)  # the least-squares line through a bend


def noisy_profile(path, rng, regions, n_per_region, n_base, noise, period_ns=1_000_000,
                  outlier=None):
    """A Coz profile: each region (name -> true slope b) measured n_per_region
    times at random Coz levels, n_base speedup-0 experiments in all; each
    experiment's time per visit is period_ns * (1 - b s) * (1 + noise e),
    e standard normal. outlier: (region, s, y) adds one wild experiment."""
    import random
    lines = ["startup\ttime=1"]
    names = list(regions)
    duration = 1_000_000_000

    def exp(name, s, y_true):
        period = period_ns * (1 - y_true) * (1 + noise * rng.gauss(0, 1))
        lines.extend([f"experiment\tselected={name}\tspeedup={s:.2f}\tduration={duration}\tselected-samples=1",
                      f"throughput-point\tname=p\tdelta={max(1, round(duration / period))}"])
    for i in range(n_base):
        exp(names[i % len(names)], 0.0, 0.0)
    for name, b in regions.items():
        for _ in range(n_per_region):
            s = rng.randint(1, 20) * 0.05
            exp(name, s, b * s)
    if outlier is not None:
        name, s, y = outlier
        lines.extend([f"experiment\tselected={name}\tspeedup={s:.2f}\tduration={duration}\tselected-samples=1",
                      f"throughput-point\tname=p\tdelta={round(duration / (period_ns * (1 - y)))}"])
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


class HonestIntervalTest(unittest.TestCase):
    """The 95% interval holds at small n: over many simulated sweeps with
    few experiments per region (where a bootstrap of pooled points collapses
    to zero width), the interval at 25% contains the truth about 95% of the
    time, and is never zero-width."""

    def test_coverage_at_small_n(self):
        import random
        rng = random.Random(11)
        hits = total = 0
        with tempfile.TemporaryDirectory() as d:
            for trial in range(150):
                path = os.path.join(d, f"t{trial}.coz")
                noisy_profile(path, rng, {"A": 0.4, "B": 0.1}, n_per_region=rng.randint(4, 9),
                              n_base=rng.randint(3, 8), noise=0.06)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", profile.ProfileWarning)
                    res = estimate.analyze(profile.load_profiles([path]), model="line")
                for r in res:
                    truth = {"A": 0.4, "B": 0.1}[r.region] * 0.25
                    v, lo, hi = r.curves[0].predict(0.25)
                    self.assertTrue(hi - lo > 1e-6, "zero-width interval")
                    total += 1
                    hits += lo <= truth <= hi
        self.assertGreaterEqual(hits / total, 0.90, f"coverage {hits}/{total}")
        self.assertLessEqual(hits / total, 0.995, f"coverage {hits}/{total}: intervals far too wide")

    def test_ranking_settles_with_evidence_and_not_without(self):
        import random
        rng = random.Random(5)
        with tempfile.TemporaryDirectory() as d:
            many, few = os.path.join(d, "many.coz"), os.path.join(d, "few.coz")
            noisy_profile(many, rng, {"Big": 0.5, "Small": 0.1, "None": 0.0}, 20, 20, 0.03)
            noisy_profile(few, rng, {"Big": 0.5, "Small": 0.1, "None": 0.0}, 3, 20, 0.03)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", profile.ProfileWarning)
                res = estimate.analyze(profile.load_profiles([many]))
                res_few = estimate.analyze(profile.load_profiles([few]))
        self.assertEqual([r.region for r in res], ["Big", "Small", "None"])
        self.assertEqual([r.rank for r in res], [1, 2, 3])
        st = estimate.settlement(res)
        self.assertTrue(st.settled, st.message)
        self.assertEqual(st.leader, "Big")
        self.assertFalse(any(r.ranked for r in res_few))
        self.assertFalse(estimate.settlement(res_few).settled)

    def test_a_region_without_enough_evidence_keeps_the_ranking_from_settling(self):
        # Big and Small are ranked and apart; Thin has two experiments and may
        # still lead once measured, so the table must not say settled.
        import random
        rng = random.Random(5)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "thin.coz")
            noisy_profile(path, rng, {"Big": 0.5, "Small": 0.1}, 20, 20, 0.03)
            with open(path, "a") as f:
                for s in (0.25, 0.5):
                    f.write(f"experiment\tselected=Thin\tspeedup={s:.2f}\tduration=1000000000\tselected-samples=1\n"
                            f"throughput-point\tname=p\tdelta={round(1000 / (1 - 0.9 * s))}\n")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", profile.ProfileWarning)
                res = estimate.analyze(profile.load_profiles([path]))
        self.assertEqual({r.region: r.ranked for r in res}, {"Big": True, "Small": True, "Thin": False})
        st = estimate.settlement(res)
        self.assertFalse(st.settled, st.message)
        self.assertEqual((st.leader, st.unranked, st.overlapping), ("Big", ["Thin"], []))
        self.assertTrue(st.message.startswith("not settled: 1 region(s) without enough evidence to rank (Thin); "
                                              "among the ranked regions Big leads (@25% lower bound +"), st.message)

    @staticmethod
    def _thin_profile(path, rng, thin_share=None, floor=0.02, runs=1, record_runs=None, top_level=True):
        """Big and Small ranked and apart, Thin with two experiments; each
        of `runs` runs ends with the sweep's estimates record (time shares:
        Big 0.6, Small 0.3, Thin `thin_share`) unless its index is left out
        of `record_runs`. thin_share None: the record does not list Thin.
        top_level: the shares in "time_shares" (as the sweep writes them),
        else only per region under "points" (older records)."""
        import json
        with open(path, "w") as f:
            pass
        for k in range(runs):
            part = path + f".{k}"
            noisy_profile(part, rng, {"Big": 0.5, "Small": 0.1}, 20, 20, 0.03)
            with open(part) as src, open(path, "a") as f:
                f.write(src.read())
                for s in (0.25, 0.5):
                    f.write(f"experiment\tselected=Thin\tspeedup={s:.2f}\tduration=1000000000\tselected-samples=1\n"
                            f"throughput-point\tname=p\tdelta={round(1000 / (1 - 0.9 * s))}\n")
                if record_runs is None or k in record_runs:
                    regions = [{"name": "Big", "time_share": 0.6}, {"name": "Small", "time_share": 0.3}]
                    if thin_share is not None:
                        regions.append({"name": "Thin", "time_share": thin_share})
                    record = {"type": "estimates", "time_share_floor": floor, "settled": True,
                              "points": [{"point": "p", "regions": regions}]}
                    if top_level:
                        record["time_shares"] = {r["name"]: r.pop("time_share") for r in regions}
                    f.write(json.dumps(record) + "\n")

    def _settle(self, path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", profile.ProfileWarning)
            prof = profile.load_profiles([path])
            res = estimate.analyze(prof)
        return prof, estimate.settlement(res, shares=prof.time_shares)

    def test_a_region_under_the_sweeps_time_share_floor_does_not_hold_the_ranking_back(self):
        # The sweep's rule waits only for regions above its time-share
        # floor; its records say Thin ran 0.5% of the time, so the table
        # says settled too, and names Thin as under the floor.
        import random
        for top_level in (True, False):
            with tempfile.TemporaryDirectory() as d, self.subTest(top_level=top_level):
                path = os.path.join(d, "profile.jsonl")
                self._thin_profile(path, random.Random(5), thin_share=0.005, top_level=top_level)
                prof, st = self._settle(path)
                self.assertEqual(prof.time_shares.floor, 0.02)
                self.assertTrue(st.settled, st.message)
                self.assertEqual((st.leader, st.unranked, st.below_floor), ("Big", [], ["Thin"]))
                self.assertTrue(st.message.startswith("settled: Big leads;"), st.message)
                self.assertIn("1 region(s) under the sweep's time-share floor (2% of the running time) not ranked: "
                              "Thin (0.5%)", st.message)

    def test_with_no_floor_a_region_that_never_ran_is_still_not_waited_for(self):
        # The sweep's rule skips a region with no running time even at floor 0.
        import random
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "profile.jsonl")
            self._thin_profile(path, random.Random(5), thin_share=0.0, floor=0.0)
            _, st = self._settle(path)
        self.assertTrue(st.settled, st.message)
        self.assertEqual(st.below_floor, ["Thin"])

    def test_the_floor_exempts_only_what_every_record_puts_under_it(self):
        import random
        with tempfile.TemporaryDirectory() as d:
            cases = {
                "above": dict(thin_share=0.05),                       # Thin above the floor: waited for
                "unlisted": dict(thin_share=None),                    # no record gives Thin's share
                "one run without": dict(thin_share=0.005, runs=2, record_runs={0}),
            }
            for name, kw in cases.items():
                path = os.path.join(d, name.replace(" ", "-") + ".jsonl")
                self._thin_profile(path, random.Random(5), **kw)
                prof, st = self._settle(path)
                with self.subTest(name):
                    self.assertFalse(st.settled, st.message)
                    self.assertEqual((st.unranked, st.below_floor), (["Thin"], []))
                    self.assertTrue(st.message.startswith("not settled: 1 region(s) without enough evidence"),
                                    st.message)
            self.assertIsNone(prof.time_shares)        # the last case: one run recorded no shares

    def test_coact_plot_applies_the_floor_from_the_profile(self):
        # The table and --json of `coact-plot profile profile.jsonl` say what
        # settlement() says; the same experiments without the sweep's records
        # (as in profile.coz) are not settled.
        import random
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "profile.jsonl")
            self._thin_profile(path, random.Random(5), thin_share=0.005)
            bare = os.path.join(d, "profile.coz")
            with open(path) as src, open(bare, "w") as f:
                f.writelines(l for l in src if not l.startswith("{"))
            text = run_cli("profile", path)
            doc = run_cli("profile", path, "--json")
            coz = run_cli("profile", bare, "--json")
        self.assertEqual((text.returncode, doc.returncode, coz.returncode), (0, 0, 0), text.stderr + doc.stderr)
        self.assertIn("\nsettled: Big leads;", text.stdout)
        self.assertIn("under the sweep's time-share floor (2% of the running time) not ranked: Thin (0.5%)",
                      text.stdout)
        got = json.loads(doc.stdout)
        self.assertEqual((got["settled"], got["time_share_floor"], got["below_time_share_floor"]),
                         (True, 0.02, ["Thin"]))
        got = json.loads(coz.stdout)
        self.assertEqual((got["settled"], got["time_share_floor"], got["below_time_share_floor"]),
                         (False, None, []))

    def test_a_malformed_estimates_record_is_skipped_with_a_warning(self):
        import random
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.jsonl")
            self._thin_profile(path, random.Random(5), thin_share=0.005, floor=7)   # floor not a fraction
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                prof = profile.load_profiles([path])
        self.assertIsNone(prof.time_shares)
        self.assertTrue(any("estimates record without a time_share_floor" in str(w.message) for w in caught),
                        [str(w.message) for w in caught])

    def test_outlier_is_excluded_and_reported(self):
        import random
        rng = random.Random(3)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "o.coz")
            noisy_profile(path, rng, {"A": 0.3}, 12, 8, 0.02, outlier=("A", 0.5, -0.42))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", profile.ProfileWarning)
                (r,) = estimate.analyze(profile.load_profiles([path]))
        c = r.curves[0]
        self.assertEqual(len(c.outliers), 1)
        self.assertAlmostEqual(c.outliers[0][1], -0.42, delta=0.03)
        self.assertAlmostEqual(c.predict(0.25)[0], 0.075, delta=0.015)


def runs_profile(path, rng, runs, slope, run_sd, noise, per_run, base_per_run, period_ns=1_000_000):
    """A Coz profile of `runs` processes appended to one file (a startup
    record each), one region "A" whose true slope in run g is slope + run_sd
    * u_g (u_g standard normal: what a process's layout and placement do to
    all of its experiments at once), measured per_run times at random levels
    with within-run noise `noise`, and base_per_run speedup-0 experiments
    per run."""
    lines = []
    duration = 1_000_000_000

    def exp(s, y):
        period = period_ns * (1 - y) * (1 + noise * rng.gauss(0, 1))
        lines.extend([f"experiment\tselected=A\tspeedup={s:.2f}\tduration={duration}\tselected-samples=1",
                      f"throughput-point\tname=p\tdelta={max(1, round(duration / period))}"])
    for g in range(runs):
        lines.append(f"startup\ttime={g + 1}")
        b = slope + run_sd * rng.gauss(0, 1)
        for _ in range(base_per_run):
            exp(0.0, 0.0)
        for _ in range(per_run):
            s = rng.randint(1, 20) * 0.05
            exp(s, b * s)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


class RunsIntervalTest(unittest.TestCase):
    """With three or more runs (processes) in a profile, the interval also
    holds when each process moves all of its experiments together, which
    the fit's residuals cannot see (estimate.py, "Several runs")."""

    def analyze(self, path, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", profile.ProfileWarning)
            return estimate.analyze(profile.load_profiles([path]), model="line", **kw)

    def test_each_startup_record_begins_a_run(self):
        with tempfile.TemporaryDirectory() as d:
            coz, jsonl = os.path.join(d, "p.coz"), os.path.join(d, "p.jsonl")
            import random
            runs_profile(coz, random.Random(1), 3, 0.4, 0.0, 0.01, 4, 2)
            exp = {"type": "experiment", "region": "A", "speedup": 0.5, "duration_ns": 1e9,
                   "effective_ns": 1e9, "progress": {"p": 100}}
            with open(jsonl, "w") as f:
                for k in range(2):
                    f.write(json.dumps({"type": "startup", "program": "x", "args": []}) + "\n")
                    f.write(json.dumps(exp) + "\n" + json.dumps(exp) + "\n")
            coz_runs = [e.run for e in profile.load_profiles([coz]).experiments]
            json_runs = [e.run for e in profile.load_profiles([jsonl]).experiments]
        self.assertEqual(len(set(coz_runs)), 3)
        self.assertEqual([coz_runs.count(r) for r in dict.fromkeys(coz_runs)], [6, 6, 6])
        self.assertEqual(len(set(json_runs)), 2)
        self.assertEqual(json_runs[0], json_runs[1])
        self.assertNotEqual(json_runs[1], json_runs[2])

    def test_coverage_when_runs_differ(self):
        import random
        rng = random.Random(7)
        hits = {"auto": 0, "fit": 0}
        trials = 60
        with tempfile.TemporaryDirectory() as d:
            for trial in range(trials):
                path = os.path.join(d, f"r{trial}.coz")
                runs_profile(path, rng, rng.randint(3, 5), 0.4, 0.04, 0.005, 12, 4)
                for kind in hits:
                    (r,) = self.analyze(path, interval=kind)
                    c = r.curves[0]
                    self.assertEqual(c.interval, "fit and runs" if kind == "auto" else "fit")
                    _, lo, hi = c.predict(0.25)
                    hits[kind] += lo <= 0.1 <= hi
        # The truth is the slope over processes, 0.4: the fit's interval,
        # a few tenths of a point wide, misses most runs' common offset.
        print(f"\n  coverage over {trials} profiles: {hits}", file=sys.stderr)
        self.assertGreaterEqual(hits["auto"] / trials, 0.88, hits)
        self.assertLessEqual(hits["fit"] / trials, 0.6, hits)

    def test_interval_is_never_narrower_than_the_fit(self):
        import random
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.coz")
            runs_profile(path, random.Random(2), 4, 0.3, 0.0, 0.02, 10, 4)
            (auto,) = self.analyze(path)
            (fit,) = self.analyze(path, interval="fit")
        for s in (0.1, 0.25, 0.5, 0.9):
            a, f = auto.curves[0].predict(s), fit.curves[0].predict(s)
            self.assertAlmostEqual(a[0], f[0], places=12)
            self.assertGreaterEqual(a[2] - a[1], f[2] - f[1] - 1e-12)
        self.assertEqual(auto.curves[0].runs, 4)
        self.assertEqual(len(auto.curves[0].replicates), 4)

    def test_two_runs_keep_the_fit_interval(self):
        import random
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.coz")
            runs_profile(path, random.Random(3), 2, 0.3, 0.05, 0.01, 10, 4)
            (r,) = self.analyze(path)
        self.assertEqual((r.curves[0].runs, r.curves[0].interval, r.curves[0].replicates), (2, "fit", []))

    def test_a_run_that_holds_a_whole_curve_is_said(self):
        import random
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.coz")
            runs_profile(path, random.Random(4), 3, 0.3, 0.0, 0.01, 10, 4)
            with open(path, "a") as f:      # a fourth run, the only one to measure B
                f.write("startup\ttime=9\n")
                for s in (0.0, 0.0, 0.25, 0.5, 0.5, 0.75, 0.75, 1.0):
                    f.write(f"experiment\tselected=B\tspeedup={s:.2f}\tduration=1000000000\t"
                            "selected-samples=1\n"
                            f"throughput-point\tname=p\tdelta={round(1000 / (1 - 0.2 * s))}\n")
            res = {r.region: r for r in self.analyze(path)}
        self.assertEqual(res["A"].curves[0].interval, "fit and runs")
        self.assertEqual(res["B"].curves[0].interval,
                         "fit only: leaving out 1 of 4 runs leaves no curve")

    def test_json_says_which_interval(self):
        import random
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.coz")
            runs_profile(path, random.Random(5), 3, 0.3, 0.02, 0.01, 10, 4)
            out = run_module(path, "--json", "--fit", "line")
            fit = run_module(path, "--json", "--fit", "line", "--interval", "fit")
        self.assertEqual(out.returncode, 0, out.stderr)
        (row,) = json.loads(out.stdout)["regions"]
        (frow,) = json.loads(fit.stdout)["regions"]
        self.assertEqual((row["runs"], row["interval"]), (3, "fit and runs"))
        self.assertEqual((frow["runs"], frow["interval"]), (3, "fit"))
        self.assertIn("jackknife", json.loads(out.stdout)["estimator"]["ci"])


class SystematicTest(unittest.TestCase):
    """Every interval also holds the profiler's own error, a fraction of the
    value, in quadrature (estimate.py, "The profiler's own error")."""

    analyze = RunsIntervalTest.analyze

    def test_adds_in_quadrature(self):
        import random
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.coz")
            runs_profile(path, random.Random(11), 3, 0.4, 0.02, 0.01, 10, 4)
            (stat,) = self.analyze(path, systematic=0.0)
            (both,) = self.analyze(path)
        a, b = stat.curves[0], both.curves[0]
        self.assertEqual(b.systematic, estimate.SYSTEMATIC)
        for s in (0.1, 0.25, 0.5, 1.0):
            (v, lo, hi), (w, blo, bhi) = a.predict(s), b.predict(s)
            self.assertAlmostEqual(v, w, places=12)
            self.assertAlmostEqual(((bhi - blo) / 2) ** 2, ((hi - lo) / 2) ** 2 + (0.02 * v) ** 2, places=12)
        (lo, hi), (blo, bhi) = a.slope_ci, b.slope_ci
        self.assertAlmostEqual(((bhi - blo) / 2) ** 2, ((hi - lo) / 2) ** 2 + (0.02 * a.slope) ** 2, places=12)
        # The band the plot draws is the same interval.
        i = int(np.argmin(np.abs(b.grid - 0.5)))
        self.assertAlmostEqual(b.band[1][i], b.predict(float(b.grid[i]))[2], places=12)

    def test_holds_a_bias_the_statistics_cannot_see(self):
        # Every run measures 1.5 % of the effect low, with little noise: the
        # statistical interval misses the true slope, the printed one holds it.
        import random
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.coz")
            runs_profile(path, random.Random(12), 4, 0.4 * 0.985, 0.0, 0.002, 16, 4)
            (stat,) = self.analyze(path, systematic=0.0)
            (both,) = self.analyze(path)
        truth = 0.4 * 0.25
        _, lo, hi = stat.curves[0].predict(0.25)
        self.assertFalse(lo <= truth <= hi, (lo, hi))
        _, lo, hi = both.curves[0].predict(0.25)
        self.assertTrue(lo <= truth <= hi, (lo, hi))

    def test_no_statistical_interval_stays_none(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "exact.coz")
            with open(path, "w") as f:      # exact points on y = s: no residual, no interval
                for s, delta in ((0.0, 1000), (0.0, 1000), (0.0, 1000), (0.2, 1250), (0.5, 2000), (0.75, 4000)):
                    f.write(f"experiment\tselected=A\tspeedup={s:.2f}\tduration=1000000000\t"
                            "selected-samples=1\n"
                            f"throughput-point\tname=p\tdelta={delta}\n")
            (r,) = self.analyze(path)
        _, lo, hi = r.curves[0].predict(0.25)
        self.assertTrue(math.isnan(lo) and math.isnan(hi), (lo, hi))

    def test_command_line(self):
        import random
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.coz")
            runs_profile(path, random.Random(13), 1, 0.3, 0.0, 0.01, 20, 4)
            out = run_module(path, "--json")
            off = run_module(path, "--json", "--systematic", "0")
            bad = run_module(path, "--systematic", "1.5")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["estimator"]["systematic"], estimate.SYSTEMATIC)
        self.assertIn("own error", json.loads(out.stdout)["estimator"]["ci"])
        self.assertEqual(json.loads(off.stdout)["estimator"]["systematic"], 0.0)
        (a,), (b,) = json.loads(out.stdout)["regions"], json.loads(off.stdout)["regions"]
        self.assertGreater(a["slope_ci"][1] - a["slope_ci"][0], b["slope_ci"][1] - b["slope_ci"][0])
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--systematic 1.5", bad.stderr)


class SweepAgreesWithEstimatorTest(unittest.TestCase):
    """The sweep's running estimates (causal/src/evidence.cpp: the line model,
    which drives the experiment draw, the status line and --until-settled)
    are the same numbers estimate.py prints for the line model. Fixture: a
    real sweep of the archiver, its experiments and last "estimates" record."""

    def test_last_estimates_record_matches(self):
        path = os.path.join(FIXTURES, "archiver-sweep.jsonl")
        with open(path) as f:
            records = [json.loads(line) for line in f]
        (est,) = [r for r in records if r["type"] == "estimates"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", profile.ProfileWarning)
            # A record written before the sweep printed the profiler's own
            # error has no "systematic": its intervals are statistical only.
            res = estimate.analyze(profile.load_profiles([path]), model="line",
                                   rank_at=est["rank_at"], min_experiments=est["min_experiments"],
                                   systematic=est.get("systematic", 0.0))
        by_name = {r.region: r.curves[0] for r in res}
        (point,) = est["points"]
        self.assertGreaterEqual(len(point["regions"]), 4)
        for reg in point["regions"]:
            c = by_name[reg["name"]]
            v, lo, hi = c.predict(est["rank_at"])
            self.assertAlmostEqual(reg["key"], v, places=9, msg=reg["name"])
            # The sweep's t quantile comes from a table: equal to 1e-7.
            self.assertAlmostEqual(reg["ci"][0], lo, places=7, msg=reg["name"])
            self.assertAlmostEqual(reg["ci"][1], hi, places=7, msg=reg["name"])
            self.assertEqual(reg["experiments"], c.experiments, reg["name"])
            self.assertEqual(reg["ranked"], c.ranked, reg["name"])
        self.assertEqual(point["baseline_experiments"], c.baseline_experiments)


    def test_settled_verdict_matches_the_sweeps_with_a_region_under_the_floor(self):
        # A real scripts/run.sh sweep that settled with the Index (1.8% of the
        # running time, floor 2%) unranked: the table's verdict is the
        # sweep's (its summary record), and it names the Index. The fixture
        # keeps the experiments and the last estimates record.
        path = os.path.join(FIXTURES, "archiver-below-floor.jsonl")
        with open(path) as f:
            records = [json.loads(line) for line in f]
        (summary,) = [r for r in records if r["type"] == "summary"]
        index = "coact::dedup::Index::on(coact::dedup::HashedChunk)"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", profile.ProfileWarning)
            prof = profile.load_profiles([path])
            res = estimate.analyze(prof, keep_thin=True)
        self.assertEqual({r.region: r.ranked for r in res}[index], False)
        st = estimate.settlement(res, shares=prof.time_shares)
        self.assertTrue(summary["settled"])
        self.assertEqual((st.settled, st.leader), (summary["settled"], summary["leader"]), st.message)
        self.assertEqual(st.below_floor, [index])
        self.assertFalse(estimate.settlement(res).settled)   # the same table without the sweep's records


class CommandTest(unittest.TestCase):
    def test_json_interface(self):
        p = run_module(TOY_COZ, "--json", "-p", TP, "-r", A)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["version"], 2)
        (r,) = doc["regions"]
        self.assertEqual((r["region"], r["point"], r["kind"]), (A, TP, "throughput"))
        self.assertEqual([x["s"] for x in r["predictions"]], [0.25, 0.5, 0.75, 1.0])
        for x in r["predictions"]:
            self.assertEqual(set(x), {"s", "program_speedup", "ci", "rate_gain",
                                      "experiments", "measured", "extrapolated"})

    def test_table(self):
        p = run_module(TOY_COZ, "-p", TP, "-r", A)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"toy.cpp:27 .* 50% +2 +\+25\.0%")

    def test_unknown_region_is_a_data_error(self):
        p = run_module(TOY_COZ, "-r", "NoSuchRegion")
        self.assertEqual(p.returncode, 1)
        self.assertIn("no curve for region 'NoSuchRegion'", p.stderr)

    def test_bad_at_is_a_usage_error(self):
        p = run_module(TOY_COZ, "--at", "25")
        self.assertEqual(p.returncode, 2)
        self.assertIn("want a virtual speedup in (0, 1]", p.stderr)

    def test_same_output_as_coact_plot_estimate(self):
        a = run_module(TOY_COZ, "--json")
        b = run_cli("estimate", TOY_COZ, "--json", cwd=None, timeout=60)
        self.assertEqual(a.returncode, 0, a.stderr)
        self.assertEqual(json.loads(a.stdout)["regions"], json.loads(b.stdout)["regions"])


class LeftOutTest(unittest.TestCase):
    """A region that cannot get a curve is named in the warning, not only counted."""

    def test_warnings_name_the_regions_left_out(self):
        import tempfile
        lines = ["startup\ttime=1"]
        for s, d in ((0.0, 1000), (0.25, 1100), (0.5, 1200)):  # Good: baseline + 2 speedups
            lines += [f"experiment\tselected=Good::on(M)\tspeedup={s:.2f}\tduration=1000000000\tselected-samples=10",
                      f"throughput-point\tname=p\tdelta={d}"]
        for s in (0.25, 0.5):  # NoBase: never measured at speedup 0
            lines += [f"experiment\tselected=NoBase::on(M)\tspeedup={s:.2f}\tduration=1000000000\tselected-samples=10",
                      "throughput-point\tname=p\tdelta=1000"]
        for s in (0.0, 0.5):  # Few: baseline + one speedup < min_points 3
            lines += [f"experiment\tselected=Few::on(M)\tspeedup={s:.2f}\tduration=1000000000\tselected-samples=10",
                      "throughput-point\tname=p\tdelta=1000"]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.coz")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", profile.ProfileWarning)
                results = estimate.analyze(profile.load_profiles([path]), baseline="region")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", profile.ProfileWarning)
                pooled = estimate.analyze(profile.load_profiles([path]))
        self.assertEqual([r.region for r in results], ["Good::on(M)"])
        # Pooled (the default), NoBase's curve rests on the others' baselines.
        self.assertEqual(sorted(r.region for r in pooled), ["Good::on(M)", "NoBase::on(M)"])
        texts = [str(w.message) for w in caught if issubclass(w.category, profile.ProfileWarning)]
        self.assertTrue(any("no baseline" in t and "NoBase::on(M) @ p" in t for t in texts), texts)
        self.assertTrue(any("--min-points" in t and "Few::on(M) @ p" in t for t in texts), texts)


if __name__ == "__main__":
    unittest.main()
