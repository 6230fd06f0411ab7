#!/usr/bin/python3
"""Tests for reports/coact_plot.py.

Run from the repository root with Debian's interpreter:

    /usr/bin/python3 -m unittest discover -s tests/reports

Fixtures (hand-written, see the comments in each test for the planted values):
  fixtures/toy.coz     Coz 0.2.2 text format. Regions (selected lines):
                         toy.cpp:27  planted: throughput period = P0 * (1 - 0.5 s),
                                     latency = L0 * (1 - 0.4 s); two baseline
                                     experiments of different periods (600000 and
                                     466667 ns) whose *pooled* period is 500000 ns,
                                     and two experiments at s = 0.50 (pooled).
                         toy.cpp:35  flat: +-0.5% noise, no trend.
                         toy.cpp:50  baseline + one speedup (program speedup 0.1 at
                                     s = 0.5): only 2 points, below --min-points 3.
                         toy.cpp:61  no speedup-0 experiment: never has a curve.
                       Progress points: throughput "/home/coz/toy/toy.cpp:42",
                       latency "request".
  fixtures/toy.jsonl   coact JSON lines: Parser::Line planted with slope 0.8
                       (computed from effective_ns, not duration_ns),
                       Logger::Flush flat; extra fields and an unknown record type.
  fixtures/trials.jsonl perf-compare trials: throughput_ops cand = base + deltas
                       with median 5; p99_us deltas with median 0.
"""

import json
import os
import tempfile
import unittest
import warnings

import matplotlib

matplotlib.use("Agg")

from support import FIXTURES, ROOT, TempDirCase, read, run_cli  # noqa: E402

import coact_plot as cp  # noqa: E402

TOY_COZ = os.path.join(FIXTURES, "toy.coz")
TOY_JSONL = os.path.join(FIXTURES, "toy.jsonl")
TRIALS = os.path.join(FIXTURES, "trials.jsonl")

A = "/home/coz/toy/toy.cpp:27"
B = "/home/coz/toy/toy.cpp:35"
C = "/home/coz/toy/toy.cpp:50"
D = "/home/coz/toy/toy.cpp:61"
TP = "/home/coz/toy/toy.cpp:42"
LAT = "request"


def by_speedup(curve):
    return {m.speedup: m.program_speedup for m in curve.measurements}


def curve_of(results, region, point):
    for r in results:
        for c in r.curves:
            if c.region == region and c.point == point:
                return c
    raise AssertionError(f"no curve for {region} / {point}")


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------

class ParseCozTextTest(unittest.TestCase):
    def setUp(self):
        self.exps = cp.parse_profile(TOY_COZ)

    def test_experiment_count_and_order(self):
        self.assertEqual(len(self.exps), 14)
        self.assertEqual([e.region for e in self.exps[:3]], [A, B, A])
        self.assertEqual([e.speedup for e in self.exps[:3]], [0.0, 0.0, 0.25])

    def test_first_experiment_fields(self):
        e = self.exps[0]
        self.assertEqual(e.region, A)
        self.assertEqual(e.speedup, 0.0)
        self.assertEqual(e.duration_ns, 300000000)
        self.assertEqual(set(e.points), {TP, LAT})
        self.assertEqual(e.points[TP], cp.Throughput(500))
        self.assertEqual(e.points[LAT], cp.Latency(500, 500, 10))
        self.assertTrue(e.source.endswith("toy.coz:2"))

    def test_records_after_runtime_and_samples_attach_to_next_experiment(self):
        # Line 23-26 are runtime/samples records; experiment at line 27 follows.
        e = self.exps[7]
        self.assertEqual((e.region, e.speedup, e.duration_ns), (B, 0.75, 502500000))
        self.assertEqual(e.points[TP].delta, 1000)

    def test_regions_and_points(self):
        prof = cp.load_profiles([TOY_COZ])
        self.assertEqual(sorted({e.region for e in prof.experiments}), [A, B, C, D])
        self.assertEqual(prof.progress_points(), [TP, LAT])

    def test_older_progress_point_record_is_a_throughput_point(self):
        # Older Coz: progress-point name=.. type=source delta=..
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "old.coz")
            with open(p, "w") as f:
                f.write("startup\ttime=1\n"
                        "experiment\tselected=a.c:1\tspeedup=0.00\tduration=100\tselected-samples=1\n"
                        "progress-point\tname=a.c:9\ttype=source\tdelta=7\n")
            (e,) = cp.parse_profile(p)
            self.assertEqual(e.points, {"a.c:9": cp.Throughput(7)})


class ParseJsonTest(TempDirCase):
    def test_coact_jsonl(self):
        exps = cp.parse_profile(TOY_JSONL)
        self.assertEqual(len(exps), 8)          # startup + calibration ignored
        e = exps[2]
        self.assertEqual((e.region, e.speedup), ("Parser::Line", 0.25))
        self.assertEqual(e.duration_ns, 80000000)   # effective_ns, not duration_ns
        self.assertEqual(e.points, {"lines": cp.Throughput(1000)})

    def test_coact_duration_ns_used_without_effective_ns(self):
        p = self.write("d.jsonl", '{"type":"experiment","region":"R","speedup":0,'
                                  '"duration_ns":5,"progress":{"x":1}}\n')
        (e,) = cp.parse_profile(p)
        self.assertEqual(e.duration_ns, 5)

    def test_coact_latency_progress(self):
        p = self.write("l.jsonl", '{"type":"experiment","region":"R","speedup":0,"effective_ns":5,'
                                  '"progress":{"q":{"arrivals":3,"departures":2,"difference":1,'
                                  '"extra":true}}}\n')
        (e,) = cp.parse_profile(p)
        self.assertEqual(e.points, {"q": cp.Latency(3, 2, 1)})

    def test_newer_coz_json_lines(self):
        # Newer Coz writes the same records as JSON (libcoz/profiler.cpp, _json_output).
        p = self.write("new.jsonl", "\n".join([
            '{"type":"startup","time":1}',
            '{"type":"experiment","selected":"a.c:3","speedup":0.00,"duration":1000,"selected_samples":2}',
            '{"type":"throughput_point","name":"a.c:9","delta":10}',
            '{"type":"latency_point","name":"r","arrivals":4,"departures":4,"difference":1}',
            '{"type":"experiment","selected":"a.c:3","speedup":0.50,"duration":800,"selected_samples":2}',
            '{"type":"throughput-point","name":"a.c:9","delta":10}',
            '{"type":"runtime","time":5}']) + "\n")
        exps = cp.parse_profile(p)
        self.assertEqual([(e.region, e.speedup, e.duration_ns) for e in exps],
                         [("a.c:3", 0.0, 1000), ("a.c:3", 0.5, 800)])
        self.assertEqual(exps[0].points["r"], cp.Latency(4, 4, 1))
        res = cp.analyze(cp.load_profiles([p]), points=["a.c:9"], min_points=2)
        # period 100 -> 80 ns per visit: program speedup (100 - 80) / 100
        self.assertAlmostEqual(by_speedup(res[0].curves[0])[0.5], 0.2)


# ---------------------------------------------------------------------------
# Program speedups, fit, ranking
# ---------------------------------------------------------------------------

class ProgramSpeedupTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.profile = cp.load_profiles([TOY_COZ])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cp.ProfileWarning)
            cls.results = cp.analyze(cls.profile, min_points=3)

    def test_planted_throughput_program_speedups(self):
        c = curve_of(self.results, A, TP)
        want = {0.0: 0.0, 0.25: 0.125, 0.5: 0.25, 0.75: 0.375, 1.0: 0.5}
        got = by_speedup(c)
        self.assertEqual(sorted(got), sorted(want))
        for s, y in want.items():
            self.assertAlmostEqual(got[s], y, places=12, msg=f"speedup {s}")

    def test_baseline_is_pooled_not_mean_of_periods(self):
        # Baseline experiments: 300e6 ns / 500 visits (600000 ns) and
        # 700e6 / 1500 (466667 ns). Coz's viewer pools: 1e9 / 2000 = 500000,
        # not the mean of periods (533333).
        c = curve_of(self.results, A, TP)
        self.assertAlmostEqual(c.baseline, 500000.0, places=6)

    def test_same_speedup_experiments_are_grouped(self):
        c = curve_of(self.results, A, TP)
        counts = {m.speedup: m.experiments for m in c.measurements}
        # The baseline pools every region's speedup-0 experiments (A's 2, C's 2).
        self.assertEqual(counts, {0.0: 4, 0.25: 1, 0.5: 2, 0.75: 1, 1.0: 1})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cp.ProfileWarning)
            own = curve_of(cp.analyze(self.profile, baseline="region"), A, TP)
        self.assertEqual(own.measurements[0].experiments, 2)
        self.assertEqual(c.points, 5)
        self.assertEqual(c.experiments, 5)     # non-zero-speedup experiments behind the fit

    def test_latency_via_littles_law(self):
        # L = difference * duration / arrivals; baseline pooled
        # (10*300e6 + 10*700e6) / 2000 = 5e6 ns; planted L = L0 (1 - 0.4 s).
        c = curve_of(self.results, A, LAT)
        self.assertEqual(c.kind, "latency")
        self.assertAlmostEqual(c.baseline, 5e6, places=3)
        want = {0.0: 0.0, 0.25: 0.1, 0.5: 0.2, 0.75: 0.3, 1.0: 0.4}
        for s, y in want.items():
            self.assertAlmostEqual(by_speedup(c)[s], y, places=12, msg=f"speedup {s}")

    def test_flat_region_values(self):
        got = by_speedup(curve_of(self.results, B, TP))
        self.assertAlmostEqual(got[0.25], 0.0, places=12)
        self.assertAlmostEqual(got[0.75], -0.005, places=12)
        self.assertAlmostEqual(got[1.0], 0.005, places=12)

    def test_planted_slope_and_predictions(self):
        c = curve_of(self.results, A, TP)
        self.assertAlmostEqual(c.slope, 0.5, places=9)
        for s, want in ((0.10, 0.05), (0.25, 0.125), (0.50, 0.25)):
            v, lo, hi = c.predicted[s]
            self.assertAlmostEqual(v, want, places=9)
            self.assertLessEqual(lo, v + 1e-12)
            self.assertGreaterEqual(hi, v - 1e-12)
            self.assertFalse(c.extrapolated(s))
        lo, hi = c.slope_ci
        self.assertLess(lo, 0.5)      # two unequal baseline experiments: real width
        self.assertGreater(hi, 0.5)
        self.assertAlmostEqual(curve_of(self.results, A, LAT).slope, 0.4, places=9)

    def test_few_speedup_levels_fit_a_line_not_a_parabola(self):
        # Two non-zero levels (0.8, 0.9) on a flat truth with noise: a
        # quadratic through them dipped far below both (the archiver's Index
        # panel went to -65% at 45%); the model must be the line.
        lines = ["startup\ttime=1"]
        for sp, delta in ((0.0, 1000), (0.0, 1000), (0.8, 950), (0.9, 1010)):
            lines += [f"experiment\tselected=d.c:1\tspeedup={sp:.2f}\tduration=1000000\tselected-samples=1",
                      f"throughput-point\tname=p\tdelta={delta}"]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "few.coz")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            res = cp.analyze(cp.load_profiles([path]), min_points=3)
        c = curve_of(res, "d.c:1", "p")
        self.assertEqual(c.degree, 1)
        self.assertGreater(float(c.fit.min()), -0.1)
        self.assertFalse(c.ranked)                                   # 2 experiments, 2 levels
        self.assertIn("2 experiments (needs 6)", c.why_unranked)

    def test_band_brackets_fit(self):
        c = curve_of(self.results, A, TP)
        self.assertEqual(c.model, "line")   # exact planted line: the bend is no better
        lo, hi = c.band
        self.assertTrue(((lo <= c.fit + 1e-9) & (c.fit <= hi + 1e-9)).all())
        self.assertAlmostEqual(float(c.fit[0]), 0.0)    # through the origin

    def test_flat_slope_is_near_zero(self):
        for point in (TP, LAT):
            self.assertLess(abs(curve_of(self.results, B, point).slope), 0.01)

    def test_ranking_order_and_min_points(self):
        # C and D: 2 points < 3 (D has no speedup-0 experiment of its own;
        # the pooled baseline would give it one).
        self.assertEqual([r.region for r in self.results], [A, B])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cp.ProfileWarning)
            res2 = cp.analyze(self.profile, min_points=2)
        # Nothing in the toy has 6 experiments: no region is ranked; the
        # order is the same key (the prediction at 25%).
        self.assertFalse(any(r.ranked for r in res2))
        self.assertEqual([r.region for r in res2][:2], [A, C])
        self.assertAlmostEqual(curve_of(res2, C, TP).slope, 0.2, places=9)
        self.assertTrue(curve_of(res2, C, TP).extrapolated(0.5) is False)

    def test_region_without_baseline_warns_and_is_left_out(self):
        with self.assertWarnsRegex(cp.ProfileWarning, "no speedup-0"):
            res = cp.analyze(self.profile, min_points=2, baseline="region")
        self.assertNotIn(D, [r.region for r in res])

    def test_sort_keys(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cp.ProfileWarning)
            for key in ("rank", "area"):
                res = cp.analyze(self.profile, min_points=2, sort=key, baseline="region")
                self.assertEqual([r.region for r in res], [A, C, B], key)
            res = cp.analyze(self.profile, min_points=2, sort="name", baseline="region")
        self.assertEqual([r.region for r in res], [A, B, C])
        with self.assertRaisesRegex(ValueError, "sort must be one of"):
            cp.analyze(self.profile, sort="slope")

    def test_progress_point_selection(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cp.ProfileWarning)
            res = cp.analyze(self.profile, points=[LAT])
            self.assertEqual({c.point for r in res for c in r.curves}, {LAT})
            with self.assertRaisesRegex(cp.ProfileError, "no progress point named 'nope'; available"):
                cp.analyze(self.profile, points=["nope"])
            with self.assertRaisesRegex(cp.ProfileError, "no progress point named 'requst' "
                                                         r"\(did you mean 'request'\?\); available"):
                cp.analyze(self.profile, points=["requst"])

    def test_interval_is_deterministic(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cp.ProfileWarning)
            r1 = cp.analyze(self.profile)
            r2 = cp.analyze(self.profile)
        self.assertEqual(curve_of(r1, A, TP).slope_ci, curve_of(r2, A, TP).slope_ci)

    def test_ranking_table_and_json(self):
        table = cp.format_ranking(self.results)
        lines = table.splitlines()
        self.assertIn("model", lines[0])
        self.assertIn("@25% 95% CI", lines[0])
        self.assertNotIn("slope", lines[0])      # one model, one story: no separate line fit
        self.assertIn(A, lines[1])
        self.assertIn("+12.5%", lines[1])
        self.assertIn("not enough evidence to rank: 5 experiments (needs 6)", lines[1])
        self.assertTrue(any(l.startswith("not settled: no region has enough evidence") for l in lines))
        doc = json.loads(cp.ranking_json(self.results, self.profile, "rank"))
        first = doc["regions"][0]
        self.assertEqual((first["rank"], first["region"], first["point"]), (None, A, TP))
        self.assertFalse(first["ranked"])
        self.assertAlmostEqual(first["slope"], 0.5)
        self.assertAlmostEqual(first["predicted"]["0.25"]["program_speedup"], 0.125)
        self.assertEqual(len(first["ci"]), 2)
        self.assertFalse(doc["settled"])
        # With a lower bar the planted region ranks first and the toy settles.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cp.ProfileWarning)
            res = cp.analyze(self.profile, min_experiments=2)
        doc = json.loads(cp.ranking_json(res, self.profile, "rank"))
        self.assertEqual((doc["regions"][0]["rank"], doc["regions"][0]["region"]), (1, A))
        self.assertTrue(doc["regions"][0]["ranked"])


class CoactJsonAnalysisTest(unittest.TestCase):
    def test_planted_and_flat(self):
        res = cp.analyze(cp.load_profiles([TOY_JSONL]))
        self.assertEqual([r.region for r in res], ["Parser::Line", "Logger::Flush"])
        c = res[0].curves[0]
        # From effective_ns: (100000 - 80000) / 100000. From duration_ns it
        # would be 0.05.
        self.assertAlmostEqual(by_speedup(c)[0.25], 0.2, places=12)
        self.assertAlmostEqual(c.slope, 0.8, places=9)
        self.assertAlmostEqual(res[1].curves[0].slope, 0.0, places=12)


# ---------------------------------------------------------------------------
# Robustness: truncated, malformed, unknown, empty
# ---------------------------------------------------------------------------

class RobustnessTest(TempDirCase):
    def test_truncated_last_line_text_warns_and_continues(self):
        p = self.write("killed.coz", read(TOY_COZ) +
                       "experiment\tselected=/home/coz/toy/toy.cpp:27\tspeed")
        with self.assertWarnsRegex(cp.ProfileWarning, r"killed\.coz:53: last line is truncated"):
            exps = cp.parse_profile(p)
        self.assertEqual(len(exps), 14)

    def test_truncated_last_line_json_warns_and_continues(self):
        p = self.write("killed.jsonl", read(TOY_JSONL) +
                       '{"type":"experiment","region":"Parser::Li')
        with self.assertWarnsRegex(cp.ProfileWarning, r"killed\.jsonl:11: last line is truncated"):
            exps = cp.parse_profile(p)
        self.assertEqual(len(exps), 8)

    def test_unterminated_but_complete_last_line_is_kept(self):
        text = read(TOY_COZ).rstrip("\n")
        p = self.write("nonl.coz", text)
        with warnings.catch_warnings():
            warnings.simplefilter("error", cp.ProfileWarning)
            exps = cp.parse_profile(p)
        self.assertEqual(len(exps), 14)

    def test_malformed_line_errors_with_line_number(self):
        lines = read(TOY_COZ).splitlines(keepends=True)
        lines[4] = "throughput-point\tname=x\tdelta=abc\n"          # line 5
        p = self.write("bad.coz", "".join(lines))
        with self.assertRaises(cp.ProfileError) as cm:
            cp.parse_profile(p)
        self.assertEqual(cm.exception.lineno, 5)
        self.assertEqual(cm.exception.path, p)
        self.assertIn(f"{p}:5:", str(cm.exception))
        self.assertIn("delta", str(cm.exception))

    def test_malformed_non_record_line(self):
        p = self.write("junk.coz", "startup\ttime=1\nthis is not a record\n")
        with self.assertRaisesRegex(cp.ProfileError, r"junk\.coz:2: not a profile record"):
            cp.parse_profile(p)

    def test_missing_field_and_out_of_range(self):
        p = self.write("m.coz", "experiment\tselected=a.c:1\tspeedup=0.5\n"
                                "throughput-point\tname=x\tdelta=1\n")
        with self.assertRaisesRegex(cp.ProfileError, r"m\.coz:1: experiment record lacks field 'duration'"):
            cp.parse_profile(p)
        p = self.write("r.coz", "experiment\tselected=a.c:1\tspeedup=1.5\tduration=1\n")
        with self.assertRaisesRegex(cp.ProfileError, r"r\.coz:1: speedup must be"):
            cp.parse_profile(p)

    def test_malformed_json_mid_file(self):
        lines = read(TOY_JSONL).splitlines(keepends=True)
        lines[3] = '{"type":"experiment", nope}\n'                     # line 4
        p = self.write("bad.jsonl", "".join(lines))
        with self.assertRaisesRegex(cp.ProfileError, r"bad\.jsonl:4: invalid JSON"):
            cp.parse_profile(p)

    def test_coact_schema_mismatch_names_file_and_line(self):
        p = self.write("s.jsonl",
                       '{"type":"experiment","region":"R","speedup":0,"effective_ns":1,"progress":{"x":1}}\n'
                       '{"type":"experiment","region":"R","speedup":"fast","effective_ns":1,"progress":{"x":1}}\n')
        with self.assertRaisesRegex(cp.ProfileError, r"s\.jsonl:2: speedup must be a number"):
            cp.parse_profile(p)
        p = self.write("s2.jsonl", '{"type":"experiment","region":"R","speedup":0,"effective_ns":1}\n')
        with self.assertRaisesRegex(cp.ProfileError, r"s2\.jsonl:1: experiment record lacks field 'progress'"):
            cp.parse_profile(p)
        p = self.write("s3.jsonl", '{"type":"startup"}\n{"region":"R"}\n')
        with self.assertRaisesRegex(cp.ProfileError, r"s3\.jsonl:2: JSON record lacks a string field 'type'"):
            cp.parse_profile(p)
        # With no profile record at all, the file is not a profile (NotAProfileTest).
        p = self.write("s3b.jsonl", '{"region":"R"}\n')
        with self.assertRaisesRegex(cp.ProfileError, r"s3b\.jsonl:1: not a coact or Coz profile"):
            cp.parse_profile(p)
        p = self.write("s4.jsonl", '{"type":"experiment","region":"R","speedup":0,'
                                   '"effective_ns":1,"progress":{"x":"many"}}\n')
        with self.assertRaisesRegex(cp.ProfileError, r"s4\.jsonl:1: progress 'x' must be a number"):
            cp.parse_profile(p)

    def test_unknown_record_types_are_ignored(self):
        text = read(TOY_COZ).replace("runtime\ttime=4200000000\n",
                                     "runtime\ttime=4200000000\nfuture-record\tfoo=1\tbar\n"
                                     "shutdown\n")
        p = self.write("fut.coz", text)
        self.assertEqual(len(cp.parse_profile(p)), 14)

    def test_point_before_experiment_is_an_error(self):
        p = self.write("o.coz", "startup\ttime=1\nthroughput-point\tname=x\tdelta=1\n")
        with self.assertRaisesRegex(cp.ProfileError, r"o\.coz:2: throughput-point record before any experiment"):
            cp.parse_profile(p)

    def test_duplicate_point_in_one_experiment_is_an_error(self):
        p = self.write("dup.coz", "experiment\tselected=a.c:1\tspeedup=0.00\tduration=5\n"
                                  "throughput-point\tname=x\tdelta=1\n"
                                  "throughput-point\tname=x\tdelta=2\n")
        with self.assertRaisesRegex(cp.ProfileError, r"dup\.coz:3: progress point 'x' appears twice"):
            cp.parse_profile(p)

    def test_appended_runs_are_pooled(self):
        # Coz opens profile.coz in append mode: a second run starts with startup.
        p = self.write("two.coz", read(TOY_COZ) + read(TOY_COZ))
        self.assertEqual(len(cp.parse_profile(p)), 28)

    def test_empty_profile_is_an_error(self):
        for name, text in (("empty.coz", ""), ("blank.coz", "\n\n"),
                           ("noexp.coz", "startup\ttime=1\nruntime\ttime=2\n")):
            p = self.write(name, text)
            with self.assertRaisesRegex(cp.ProfileError, "profile is empty"):
                cp.load_profiles([p])

    def test_no_progress_point_data_is_an_error(self):
        p = self.write("nopp.coz", "startup\ttime=1\n"
                       "experiment\tselected=a.c:1\tspeedup=0.00\tduration=5\tselected-samples=0\n"
                       "experiment\tselected=a.c:1\tspeedup=0.50\tduration=5\tselected-samples=0\n")
        with self.assertRaisesRegex(cp.ProfileError, "no progress-point data"):
            cp.load_profiles([p])

    def test_nothing_plottable_is_an_error(self):
        # Only a region without baseline: data exist but no curve.
        p = self.write("nobase.coz", "experiment\tselected=a.c:1\tspeedup=0.50\tduration=5\n"
                                     "throughput-point\tname=x\tdelta=1\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cp.ProfileWarning)
            with self.assertRaisesRegex(cp.ProfileError, "no region has a baseline"):
                cp.analyze(cp.load_profiles([p]))

    def test_missing_file_is_an_error(self):
        with self.assertRaisesRegex(cp.ProfileError, "cannot read"):
            cp.parse_profile(os.path.join(self.tmp, "absent.coz"))


# ---------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------

class PlotTest(TempDirCase):
    @classmethod
    def setUpClass(cls):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cp.ProfileWarning)
            cls.results = cp.analyze(cp.load_profiles([TOY_COZ]), min_points=2)

    def test_png_written(self):
        out = os.path.join(self.tmp, "curves.png")
        cp.plot_profile(self.results, out, title="toy")
        with open(out, "rb") as f:
            head = f.read(8)
        self.assertEqual(head, b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(out), 1000)

    def test_svg_written(self):
        out = os.path.join(self.tmp, "curves.svg")
        cp.plot_profile(self.results, out)
        text = read(out)
        self.assertIn("<svg", text)
        self.assertGreater(len(text), 1000)

    def test_bad_extension(self):
        with self.assertRaisesRegex(ValueError, r"\.png or \.svg"):
            cp.plot_profile(self.results, os.path.join(self.tmp, "x.jpg"))


# ---------------------------------------------------------------------------
# perf-compare
# ---------------------------------------------------------------------------

class CompareTest(TempDirCase):
    def test_load_and_paired_medians(self):
        trials = cp.load_trials(TRIALS)
        self.assertEqual(len(trials), 32)
        comps = {m.metric: m for m in cp.compare_trials(trials)}
        tp = comps["throughput_ops"]
        self.assertEqual(tp.trials, list(range(8)))
        self.assertEqual(tp.median_delta, 5.0)
        self.assertLessEqual(tp.ci[0], 5.0)
        self.assertGreaterEqual(tp.ci[1], 5.0)
        self.assertGreater(tp.ci[0], 0.0)
        self.assertTrue(tp.ci_excludes_zero)
        p99 = comps["p99_us"]
        self.assertEqual(p99.median_delta, 0.0)
        self.assertLessEqual(p99.ci[0], 0.0)
        self.assertGreaterEqual(p99.ci[1], 0.0)
        self.assertFalse(p99.ci_excludes_zero)

    def test_plots_written(self):
        comps = cp.compare_trials(cp.load_trials(TRIALS))
        for ext in ("png", "svg"):
            out = os.path.join(self.tmp, f"cmp.{ext}")
            cp.plot_compare(comps, out)
            self.assertGreater(os.path.getsize(out), 1000)

    def test_unpaired_trial_warns(self):
        p = self.write("u.jsonl", read(TRIALS) +
                       '{"variant":"base","trial":99,"metric":"p99_us","value":1}\n')
        with self.assertWarnsRegex(cp.ProfileWarning, r"trial\(s\) \[99\]"):
            comps = cp.compare_trials(cp.load_trials(p))
        self.assertEqual(len(comps[0].trials), 8)

    def test_errors(self):
        p = self.write("bad.jsonl", read(TRIALS).replace(
            '{"variant":"cand","trial":0,"metric":"p99_us","value":251,"unit":"us"}',
            '{"variant":"cand","trial":0,"metric":"p99_us","unit":"us"}'))
        with self.assertRaisesRegex(cp.TrialsError, r"bad\.jsonl:4: trial record lacks field 'value'"):
            cp.load_trials(p)
        p = self.write("v.jsonl", '{"variant":"new","trial":0,"metric":"m","value":1}\n')
        with self.assertRaisesRegex(cp.TrialsError, r"v\.jsonl:1: variant must be"):
            cp.load_trials(p)
        p = self.write("dup.jsonl", '{"variant":"base","trial":0,"metric":"m","value":1}\n' * 2)
        with self.assertRaisesRegex(cp.TrialsError, r"dup\.jsonl:2: duplicate trial"):
            cp.load_trials(p)
        p = self.write("empty.jsonl", "")
        with self.assertRaisesRegex(cp.TrialsError, "no trials"):
            cp.load_trials(p)

    def test_truncated_last_line_warns(self):
        p = self.write("t.jsonl", read(TRIALS) + '{"variant":"base","tri')
        with self.assertWarnsRegex(cp.ProfileWarning, r"t\.jsonl:33: last line is truncated"):
            self.assertEqual(len(cp.load_trials(p)), 32)


# ---------------------------------------------------------------------------
# CLI (support.run_cli: reports/coact_plot.py in a child interpreter)
# ---------------------------------------------------------------------------

class CliTest(TempDirCase):
    def test_profile_png_and_table(self):
        out = os.path.join(self.tmp, "p.png")
        r = run_cli("profile", TOY_COZ, "--output", out, "--title", "toy")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [l for l in r.stdout.splitlines() if l[:6].strip() == "-" or l[:6].strip().isdigit()]
        # C and D have no curve (2 distinct speedups < --min-points 3): listed
        # last, not ranked, with their counts (they were dropped with a warning).
        self.assertEqual([l.split()[1] for l in rows], [A, A, B, B, C, C, D, D])
        for l in rows[4:]:
            self.assertIn("no curve: 2 distinct speedups with the baseline (--min-points 3)", l)
            self.assertIn("not enough evidence to rank: 1 experiment (needs 6)", l)
        self.assertIn("not settled", r.stdout)
        self.assertGreater(os.path.getsize(out), 1000)

    def test_main_job_profile_that_broke_the_plot(self):
        # A profile the main job wrote on which the plot stopped with "Axis
        # limits cannot be NaN or Inf" (exit 2): it plots, and the regions
        # with too few experiments are listed as not ranked.
        out = os.path.join(self.tmp, "nan.png")
        fixture = os.path.join(FIXTURES, "main-job-plot-nan.coz")
        r = run_cli("profile", fixture, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(os.path.getsize(out), 1000)
        self.assertIn("not enough evidence to rank: 3 experiments (needs 6)", r.stdout)
        r = run_cli("profile", fixture, "--json")
        doc = json.loads(r.stdout)
        for reg in doc["regions"]:
            self.assertIn(reg["ranked"], (True, False))
            lo, hi = reg["ci"]
            if lo is not None:
                self.assertGreater(hi - lo, 1e-6, reg["region"])   # no zero-width interval
                self.assertEqual(reg["systematic"], 0.02, reg["region"])
        self.assertEqual(doc["estimator"]["systematic"], 0.02)
        r = run_cli("profile", fixture, "--systematic", "0", "--json")
        stat = {(x["region"], x["point"]): x for x in json.loads(r.stdout)["regions"]}
        for reg in doc["regions"]:
            lo, hi = reg["ci"]
            if lo is None:
                continue
            # The same row without the profiler's own error: narrower by exactly that term.
            slo, shi = stat[(reg["region"], reg["point"])]["ci"]
            v = reg["key"]["program_speedup"]
            self.assertAlmostEqual(((hi - lo) / 2) ** 2, ((shi - slo) / 2) ** 2 + (0.02 * v) ** 2, places=12)
        r = run_cli("profile", fixture)
        self.assertIn("the profiler's own error (2% of the value", r.stdout)
        r = run_cli("profile", fixture, "--systematic", "nan")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--systematic nan", r.stderr)

    def test_band_above_100_percent_plots(self):
        # A 16 s settled wordcount sweep (the README's example): tokenize's band
        # reaches +124 % at s = 100 %, and the right-hand rate axis, infinite at
        # a 100 % program speedup, stopped the plot with "Axis limits cannot be
        # NaN or Inf" (exit 2). The view stops at 95 %.
        out = os.path.join(self.tmp, "band.png")
        fixture = os.path.join(FIXTURES, "wordcount-band-over-100.coz")
        r = run_cli("profile", fixture, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(os.path.getsize(out), 1000)
        self.assertIn("tokenize", r.stdout)

    def test_profile_svg_json_top(self):
        out = os.path.join(self.tmp, "p.svg")
        r = run_cli("profile", TOY_COZ, "-o", out, "--json", "--top", "1", "-p", TP,)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual([(x["region"], x["point"]) for x in doc["regions"]], [(A, TP)])
        self.assertAlmostEqual(doc["regions"][0]["slope"], 0.5)
        self.assertIn("<svg", read(out))

    def test_empty_profile_exits_nonzero_without_plot(self):
        empty = self.write("empty.coz", "")
        out = os.path.join(self.tmp, "never.png")
        r = run_cli("profile", empty, "-o", out)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"{empty}: profile is empty", r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_malformed_exits_nonzero_with_line(self):
        p = self.write("bad.coz", "startup\ttime=1\nexperiment\tselected=a.c:1\tspeedup=x\tduration=1\n")
        r = run_cli("profile", p)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"{p}:2:", r.stderr)

    def test_truncated_warns_and_succeeds(self):
        p = self.write("k.coz", read(TOY_COZ) + "throughput-point\tname=/home/coz/toy/t")
        r = run_cli("profile", p)
        # A name-only fragment still parses as a record lacking 'delta'.
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("last line is truncated", r.stderr)

    def test_version_is_the_projects(self):
        import re
        with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
            want = re.search(r"project\(coact VERSION ([0-9.]+)", f.read()).group(1)
        r = run_cli("--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), f"coact-plot {want}")

    def test_usage_errors(self):
        r = run_cli("profile", TOY_COZ, "-o", os.path.join(self.tmp, "x.jpg"))
        self.assertEqual(r.returncode, 2)
        # Regression: a plot into a missing directory printed the ranking, then a
        # Python traceback (FileNotFoundError, exit 1). Now one line, exit 2, before any work.
        for cmd, data in (("profile", TOY_COZ), ("compare", TRIALS)):
            r = run_cli(cmd, data, "-o", "/nonexistent/dir/x.png")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertIn("'/nonexistent/dir' does not exist", r.stderr)
            self.assertEqual(r.stdout, "")
        r = run_cli("profile", TOY_COZ, "-p", "nope")
        self.assertEqual(r.returncode, 1)
        self.assertIn("available", r.stderr)

    def test_compare_cli(self):
        out = os.path.join(self.tmp, "c.png")
        r = run_cli("compare", TRIALS, "-o", out, "--bootstrap", "1000")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("throughput_ops", r.stdout)
        self.assertGreater(os.path.getsize(out), 1000)
        r = run_cli("compare", TRIALS, "--json", "-m", "throughput_ops", "--bootstrap", "500")
        doc = json.loads(r.stdout)
        self.assertEqual(doc["metrics"][0]["median_delta"], 5.0)
        self.assertTrue(doc["metrics"][0]["ci_excludes_zero"])


if __name__ == "__main__":
    unittest.main()


class LineGroupingTest(unittest.TestCase):
    """Sampled-line regions qualified by a handler ("H @ file:line") are
    listed right after H; unqualified lines and other regions keep rank order."""

    def test_group_by_handler(self):
        from coact_reports.estimate import RegionResult
        from coact_reports.ranking import group_by_handler, region_group
        names = ["zstd_wrap.cpp:41", "Compressor::on(NewChunk) @ zstd_wrap.cpp:41",
                 "Index::on(Add)", "Compressor::on(NewChunk)",
                 "Index::on(Add) @ index.cpp:7", "Gone::on(X) @ a.cpp:1",
                 "Compressor::on(NewChunk) @ zstd_wrap.cpp:50"]
        res = [RegionResult(region=n, curves=[]) for n in names]
        self.assertEqual(region_group("H::on(M) @ f.cpp:3"), "H::on(M)")
        self.assertEqual(region_group("f.cpp:3"), "f.cpp:3")
        self.assertEqual([r.region for r in group_by_handler(res)],
                         ["zstd_wrap.cpp:41", "Index::on(Add)", "Index::on(Add) @ index.cpp:7",
                          "Compressor::on(NewChunk)",
                          "Compressor::on(NewChunk) @ zstd_wrap.cpp:41",
                          "Compressor::on(NewChunk) @ zstd_wrap.cpp:50",
                          "Gone::on(X) @ a.cpp:1"])

    def test_line_rows_name_their_caller(self):
        # Regression: with the handler rows filtered out, two callers of one
        # line printed two identical "  @ logpipe.cpp:24" rows.
        from coact_reports.ranking import _shown_name
        a = _shown_name({"region": "ns::Parser::on(ns::Line) @ logpipe.cpp:24", "group": "ns::Parser::on(ns::Line)"})
        b = _shown_name({"region": "ns::Sink::on(ns::Line) @ logpipe.cpp:24", "group": "ns::Sink::on(ns::Line)"})
        self.assertEqual(a, "  @ logpipe.cpp:24 (in Parser::on(Line))")
        self.assertEqual(b, "  @ logpipe.cpp:24 (in Sink::on(Line))")
