#!/usr/bin/python3
"""Tests of coact_reports.perfstats: perf-compare's verdict, outliers,
environment check, metric paths and Google Benchmark JSON (the statistics
behind scripts/perf-compare.sh and `coact-plot compare`).

Fixtures: gbench_base.json / gbench_cand.json: repetitions in shuffled order,
aggregate rows (whose values would change the medians if they were counted),
times in ns/us/ms/s, and one name on each side only:
  base  BM_spawn/64 1.30, 1.20, 1.25 us -> 1250 ns; BM_send 121, 119, 500 ns
        -> 121 ns; BM_only_base 5 ms
  cand  BM_send 1.1e-7 s, 0.110 us -> 110 ns; BM_spawn/64 0.00125 ms, 1250 ns
        -> 1250 ns; BM_only_cand 7 ns
"""

import json
import math
import os
import unittest

import numpy as np
from support import FIXTURES

from coact_reports import perfstats as ps


def load(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def comparison(base, cand, metric="m"):
    trials = [ps.Trial("base", i, metric, float(b)) for i, b in enumerate(base)] + \
             [ps.Trial("cand", i, metric, float(c)) for i, c in enumerate(cand)]
    (m,) = ps.compare_trials(trials, n_boot=2000, seed=0)
    return m


class GbenchTest(unittest.TestCase):
    def test_shuffled_repetitions_grouped_by_name_aggregates_skipped(self):
        t = ps.gbench_times(load("gbench_base.json"))
        self.assertEqual(sorted(t), ["BM_only_base", "BM_send", "BM_spawn/64"])
        self.assertAlmostEqual(t["BM_spawn/64"], 1250.0)
        self.assertAlmostEqual(t["BM_send"], 121.0)     # not 246.7 / 9999 (aggregates)

    def test_mixed_time_units_converted_to_ns(self):
        b = ps.gbench_times(load("gbench_base.json"))
        c = ps.gbench_times(load("gbench_cand.json"))
        self.assertAlmostEqual(b["BM_only_base"], 5e6)
        self.assertAlmostEqual(c["BM_send"], 110.0, places=6)
        self.assertAlmostEqual(c["BM_spawn/64"], 1250.0, places=6)
        self.assertAlmostEqual(c["BM_only_cand"], 7.0)
        self.assertEqual(set(b) ^ set(c), {"BM_only_base", "BM_only_cand"})

    def test_cpu_time_field(self):
        self.assertAlmostEqual(ps.gbench_times(load("gbench_base.json"), "cpu_time")["BM_send"],
                               120.0)

    def test_bad_documents(self):
        for doc, what in [({"x": 1}, "no 'benchmarks'"),
                          ({"benchmarks": [{"name": "a", "real_time": 1, "time_unit": "ps"}]},
                           "unknown time_unit"),
                          ({"benchmarks": [{"name": "a", "error_occurred": True,
                                            "error_message": "boom"}]}, "boom"),
                          ({"benchmarks": []}, "no benchmark results")]:
            with self.subTest(what=what):
                with self.assertRaises(ValueError) as cm:
                    ps.gbench_times(doc)
                self.assertIn(what, str(cm.exception))


class VerdictTest(unittest.TestCase):
    def test_higher_is_better(self):
        m = comparison([100, 101, 99, 100, 100, 102], [120, 121, 119, 120, 122, 120])
        self.assertEqual(ps.verdict(m, True, 2.0)["verdict"], "faster")
        self.assertEqual(ps.verdict(m, False, 2.0)["verdict"], "slower")

    def test_lower_is_better_metric(self):
        # latency went down 20%: better, so "faster" for a lower-is-better metric
        m = comparison([10.0, 10.1, 9.9, 10.0, 10.2, 10.0], [8.0, 8.1, 7.9, 8.0, 8.0, 8.1])
        v = ps.verdict(m, False, 2.0)
        self.assertEqual(v["verdict"], "faster")
        self.assertLess(v["median_delta_pct"], -15)
        self.assertEqual(ps.verdict(m, True, 2.0)["verdict"], "slower")

    def test_zero_baseline_is_no_verdict(self):
        m = comparison([0, 1, 1, 1, 1], [1, 1, 1, 1, 1])
        v = ps.verdict(m, True, 2.0)
        self.assertTrue(v["verdict"].startswith("no verdict: a base trial is 0"), v)
        self.assertIsNone(v["median_delta_pct"])

    def test_all_identical_trials(self):
        m = comparison([5] * 6, [5] * 6)
        v = ps.verdict(m, True, 2.0)
        self.assertEqual(v["verdict"], ps.NO_CHANGE)
        self.assertEqual(v["ci95_pct"], [0.0, 0.0])
        self.assertEqual(ps.find_outliers(range(6), [5] * 6), [])

    def test_below_floor_is_no_change(self):
        m = comparison([100] * 6, [101] * 6)
        v = ps.verdict(m, True, 2.0)
        self.assertTrue(v["ci_excludes_zero"])
        self.assertEqual(v["verdict"], ps.NO_CHANGE)
        self.assertEqual(ps.verdict(m, True, 0.5)["verdict"], "faster")

    def test_withheld_verdict_keeps_what_the_data_says(self):
        m = comparison([100] * 6, [120] * 6)
        v = ps.verdict(m, True, 2.0, "environment differs: load")
        self.assertEqual(v["verdict"], "no verdict: environment differs: load")
        self.assertIn("faster", v["reason"])


class BootstrapTest(unittest.TestCase):
    """perfstats.bootstrap_median_ci is the one percentile bootstrap of a
    median: perf-compare's paired deltas and bench.py's per-pair ratios
    (burst, scaling) both call it."""

    X = np.array([0.9513, 1.0437, 0.9921, 1.1042, 0.9687, 1.0215,
                  1.0118, 0.9334, 1.0671, 1.0032, 0.9876, 1.0254])

    def test_same_generator_state_same_interval(self):
        a = ps.bootstrap_median_ci(self.X, 2000, np.random.default_rng(3))
        b = ps.bootstrap_median_ci(self.X, 2000, np.random.default_rng(3))
        self.assertEqual(a, b)
        lo, hi = a
        self.assertLessEqual(self.X.min(), lo)
        self.assertLessEqual(lo, float(np.median(self.X)))
        self.assertLessEqual(float(np.median(self.X)), hi)
        self.assertLessEqual(hi, self.X.max())

    def test_resamples_with_replacement_as_choice_does(self):
        # Resamples are Generator.integers index draws: the same draws as
        # Generator.choice(x, replace=True) from the same generator state.
        for seed in (0, 1, 7):
            rng = np.random.default_rng(seed)
            meds = np.median(rng.choice(self.X, size=(3000, len(self.X)), replace=True), axis=1)
            want = (float(np.percentile(meds, 2.5)), float(np.percentile(meds, 97.5)))
            self.assertEqual(ps.bootstrap_median_ci(self.X, 3000, np.random.default_rng(seed)), want)

    def test_nothing_to_resample_is_nan(self):
        for x, n_boot in ((np.array([]), 100), (self.X, 0)):
            lo, hi = ps.bootstrap_median_ci(x, n_boot, np.random.default_rng(0))
            self.assertTrue(math.isnan(lo) and math.isnan(hi))

    def test_bench_ratio_intervals_use_it(self):
        from coact_reports import bench
        gmean, t_ci, boot = bench.ratio_intervals(list(self.X))
        lo, hi = ps.bootstrap_median_ci(self.X, 10000, np.random.default_rng(1))
        self.assertEqual(boot, [round(lo, 4), round(hi, 4)])
        self.assertEqual(boot, [0.9782, 1.0346])     # pinned: bench.sh's burst rows report it
        self.assertEqual(t_ci, [0.9782, 1.039])


class OutlierTest(unittest.TestCase):
    def test_outlier_trial_listed_with_value(self):
        xs = [100, 101, 99, 100, 102, 98, 100, 160]
        (o,) = ps.find_outliers(range(1, 9), xs, k=3)
        self.assertEqual((o["trial"], o["value"]), (8, 160.0))
        self.assertGreater(o["mads"], 3)

    def test_k_is_honoured(self):
        xs = [100, 101, 99, 100, 102, 98, 100, 105]
        self.assertEqual(ps.find_outliers(range(8), xs, k=3)[0]["value"], 105.0)
        self.assertEqual(ps.find_outliers(range(8), xs, k=10), [])

    def test_zero_mad_uses_mean_absolute_deviation(self):
        (o,) = ps.find_outliers(range(6), [5, 5, 5, 5, 5, 9], k=3)
        self.assertEqual(o["value"], 9.0)
        self.assertFalse(any(math.isinf(x["mads"]) for x in [o]))


class EnvironmentTest(unittest.TestCase):
    def sample(self, **kw):
        s = {"cpu_model": "X", "cores": 2, "governor": "performance", "freq_mhz": 3000.0,
             "calibration": {"path": "/c", "sha256": "ab"}, "load1_before": 1.0,
             "load1_after": 1.1}
        s.update(kw)
        return s

    def test_same_environment(self):
        b = ps.summarize_environment([self.sample(), self.sample(load1_before=1.5)])
        c = ps.summarize_environment([self.sample(load1_before=1.2)])
        self.assertIsNone(ps.environment_differs(b, c))
        self.assertEqual(b["load1_before_mean"], 1.25)

    def test_load_margin(self):
        b = ps.summarize_environment([self.sample(load1_before=1.0)])
        c = ps.summarize_environment([self.sample(load1_before=2.5)])
        why = ps.environment_differs(b, c, load_margin=1.0)
        self.assertIn("environment differs", why)
        self.assertIn("load average", why)
        self.assertIsNone(ps.environment_differs(b, c, load_margin=2.0))

    def test_calibration_and_governor(self):
        b = ps.summarize_environment([self.sample()])
        c = ps.summarize_environment([self.sample(calibration={"path": "/c", "sha256": "cd"},
                                                  governor="powersave")])
        why = ps.environment_differs(b, c)
        self.assertIn("calibration file", why)
        self.assertIn("frequency governor", why)

    def test_unreadable_facts_are_not_a_difference(self):
        b = ps.summarize_environment([self.sample(governor=None, freq_mhz=None)])
        c = ps.summarize_environment([self.sample(governor=None, freq_mhz=None)])
        self.assertIsNone(ps.environment_differs(b, c))


class MetricPathTest(unittest.TestCase):
    DOC = {"throughput": {"req_per_s": 1200.5}, "lat": {"p99.us": 7},
           "runs": [{"s": 1.5}, {"s": 2}], "flag": True, "name": "x"}

    def test_paths(self):
        self.assertEqual(ps.metric_value(self.DOC, "throughput.req_per_s"), 1200.5)
        self.assertEqual(ps.metric_value(self.DOC, "lat.p99.us"), 7.0)   # key with a dot
        self.assertEqual(ps.metric_value(self.DOC, "runs.1.s"), 2.0)
        self.assertEqual(ps.metric_value(self.DOC, "runs.-1.s"), 2.0)

    def test_errors_name_the_path(self):
        with self.assertRaisesRegex(KeyError, "no key 'nope' at throughput"):
            ps.metric_value(self.DOC, "throughput.nope")
        with self.assertRaisesRegex(ValueError, "flag is true, not a finite number"):
            ps.metric_value(self.DOC, "flag")
        with self.assertRaisesRegex(KeyError, "out of range"):
            ps.metric_value(self.DOC, "runs.5.s")

    def test_json_output(self):
        self.assertEqual(ps.json_output('{"a": 1}\n'), {"a": 1})
        self.assertEqual(ps.json_output('progress\n{"a": 1}\n{"a": 2}\ndone\n'), {"a": 2})
        self.assertEqual(ps.json_output('{\n "a": [1,\n 2]\n}\n'), {"a": [1, 2]})
        self.assertIsNone(ps.json_output("no json here\n"))


if __name__ == "__main__":
    unittest.main()
