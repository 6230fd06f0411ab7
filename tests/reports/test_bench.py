#!/usr/bin/python3
"""Tests of coact_reports.bench, scripts/bench.sh's aggregation."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from support import FIXTURES, REPORTS


def bench(*args):
    return subprocess.run([sys.executable, "-m", "coact_reports.bench", *args], cwd=REPORTS,
                          capture_output=True, text=True, timeout=60)


class BenchAggregationTest(unittest.TestCase):
    def test_runtime_rows(self):
        p = bench("runtime", os.path.join(FIXTURES, "gbench_base.json"))
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [json.loads(x) for x in p.stdout.splitlines()]
        self.assertEqual(len(rows), 9)
        spawn = [r for r in rows if r["workload"] == "BM_spawn/64"]
        self.assertEqual(sorted(r["repetition"] for r in spawn), [0, 1, 2])
        self.assertEqual(spawn[0]["parameters"]["arg0"], 64)
        self.assertEqual({r.get("aggregate") for r in rows} - {None}, {"mean", "median"})

    @staticmethod
    def write_rows(d, name, rows):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        return path

    def peer_rows(self, d):
        paths = {}
        for rt, rates in (("coact", [300, 100, 200]), ("caf", [50, 100, 150])):
            paths[rt] = self.write_rows(d, rt, [
                {"runtime": rt, "workload": "ping_pong", "n": 10, "msgs": 20, "msgs_per_s": r,
                 "unit": "msgs", "seconds": 0.1} for r in rates])
        # tokio: idiomatic is the fastest variant by median (100 vs 80 vs 40), whatever
        # the order and although actor_unbounded has the best single trial. The
        # actor-style rows carry only "channel" (as before --style), the idiomatic
        # ones "variant".
        tokio = [("bounded", 40), ("unbounded", 190), ("bounded", 30), ("unbounded", 80),
                 ("bounded", 50), ("unbounded", 10)]
        rows = [{"runtime": "tokio", "workload": "ping_pong", "n": 10, "msgs": 20, "msgs_per_s": r,
                 "unit": "msgs", "seconds": 0.1, "channel": ch} for ch, r in tokio]
        rows += [{"runtime": "tokio", "workload": "ping_pong", "n": 10, "msgs": 20, "msgs_per_s": r,
                  "unit": "msgs", "seconds": 0.1, "channel": "unbounded", "variant": "idiomatic"}
                 for r in (100, 110, 70)]
        paths["tokio"] = self.write_rows(d, "tokio", rows)
        return paths

    def test_peers_medians_and_ratios(self):
        with tempfile.TemporaryDirectory() as d:
            paths = self.peer_rows(d)
            p = bench("peers", "ping_pong", "10", "2", "1", paths["coact"], paths["caf"], paths["tokio"])
            self.assertEqual(p.returncode, 0, p.stderr)
            row = json.loads(p.stdout)
            self.assertEqual((row["coact_msgs_per_s"], row["caf_msgs_per_s"], row["ratio"]),
                             (200, 100, 2.0))
            self.assertEqual((row["tokio_msgs_per_s"], row["tokio_variant"], row["coact_over_tokio"]),
                             (100, "idiomatic", 2.0))
            self.assertEqual(row["tokio_msgs_per_s_by_variant"],
                             {"actor_bounded": 40, "actor_unbounded": 80, "idiomatic": 100})
            self.assertEqual(row["coact_over_tokio_by_variant"]["actor_bounded"], 5.0)
            # Both (all) variants' medians, ranges and every trial are in the row.
            self.assertEqual(row["tokio_variants"]["actor_unbounded"]["min"], 10)
            self.assertEqual(row["tokio_variants"]["actor_unbounded"]["max"], 190)
            self.assertEqual(row["tokio_variants"]["idiomatic"]["trials"], [100, 110, 70])
            self.assertEqual(row["trials"]["tokio_actor_bounded"], [40, 30, 50])
            # The slow mode: below 0.8 x the best trial of the same runtime/variant.
            # coact 300/100/200: 100 and 200 are below 240; idiomatic: 70 < 88.
            self.assertEqual((row["coact"]["min"], row["coact"]["max"]), (100, 300))
            self.assertAlmostEqual(row["slow_mode"]["share"]["coact"], 0.6667)
            self.assertAlmostEqual(row["slow_mode"]["share"]["tokio_idiomatic"], 0.3333)
            self.assertEqual(row["slow_mode"]["fraction"], 0.8)
            self.assertEqual(row["slow_mode"]["share"]["tokio_actor_unbounded"], 0.6667)
            # Per round against the fastest variant: 300/100, 100/110, 200/70.
            paired = row["coact_over_tokio_paired"]
            self.assertEqual((paired["variant"], paired["ratios"], paired["median"]),
                             ("idiomatic", [3.0, 0.9091, 2.8571], 2.8571))
            lo, hi = paired["median_ci95"]
            self.assertTrue(0.9091 <= lo <= 2.8571 <= hi <= 3.0, paired)
            self.assertEqual(len(paired["geomean_ci95"]), 2)
            p = bench("peers", "fan_out", "10", "2", "1", paths["coact"], paths["caf"], paths["tokio"])
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("peers/fan_out: coact printed an unexpected row", p.stderr)

    def test_sampling_overheads_are_medians_of_per_trial_ratios(self):
        with tempfile.TemporaryDirectory() as d:
            walls = {"plain": [1.0, 2.0, 1.0], "sweep0": [1.0, 2.2, 1.1], "sampling": [1.02, 2.2, 1.21]}
            rows = self.write_rows(d, "rows", [{"side": s, "trial": t + 1, "wall_s": w + 1, "last_pass_s": w, "cpu_s": 2 * w}
                                               for s, ws in walls.items() for t, w in enumerate(ws)])
            cost = os.path.join(d, "cost")
            with open(cost, "w") as f:
                f.write('{"samples":200,"handler_ns":60.0,"drain_ns":40000.0}\n')
            p = bench("sampling", '{"passes":3}', rows, cost)
            self.assertEqual(p.returncode, 0, p.stderr)
            archiver, sample = [json.loads(x) for x in p.stdout.splitlines()]
            self.assertEqual(archiver["metric"], "last_pass_s")
            self.assertEqual(archiver["median_last_pass_s"], {"plain": 1.0, "sweep0": 1.1, "sampling": 1.21})
            self.assertEqual(archiver["wall"]["median_wall_s"], {"plain": 2.0, "sweep0": 2.1, "sampling": 2.21})
            # per-trial sampling/sweep0: 1.02, 1.0, 1.1 -> median 1.02; sampling/plain: 1.02, 1.1, 1.21 -> 1.1
            self.assertAlmostEqual(archiver["sampling_over_sweep0_pct"], 2.0)
            self.assertAlmostEqual(archiver["sampling_over_plain_pct"], 10.0)
            self.assertAlmostEqual(archiver["cpu"]["sampling_over_sweep0_pct"], 2.0)
            self.assertEqual(sample["figures"]["drain_ns"], 40000.0)
            self.assertNotIn("sampling_no_sweep_over_plain_pct", archiver)
            # With the two sides without a sweep: sampling's overhead with no sweep.
            walls.update({"profile_only": [1.0, 2.1, 1.0], "sampling_no_sweep": [1.01, 2.1, 1.03]})
            rows = self.write_rows(d, "rows5", [{"side": s, "trial": t + 1, "wall_s": w + 1, "last_pass_s": w,
                                                 "cpu_s": 2 * w} for s, ws in walls.items() for t, w in enumerate(ws)])
            p = bench("sampling", '{"passes":3}', rows, cost)
            self.assertEqual(p.returncode, 0, p.stderr)
            archiver = json.loads(p.stdout.splitlines()[0])
            # per-trial sampling_no_sweep/plain: 1.01, 1.05, 1.03 -> 1.03; over profile_only: 1.01, 1.0, 1.03 -> 1.01
            self.assertAlmostEqual(archiver["sampling_no_sweep_over_plain_pct"], 3.0)
            self.assertAlmostEqual(archiver["sampling_no_sweep_over_profile_only_pct"], 1.0)
            self.assertAlmostEqual(archiver["profile_only_over_plain_pct"], 0.0)
            self.assertAlmostEqual(archiver["cpu"]["sampling_no_sweep_over_plain_pct"], 3.0)
            self.assertEqual(archiver["median_last_pass_s"]["sampling_no_sweep"], 1.03)
            # With the passes after the first in every row, they are the metric;
            # the last pass's overheads move under "last_pass".
            rows = self.write_rows(d, "rows6", [{"side": s, "trial": t + 1, "wall_s": w + 1, "last_pass_s": w,
                                                 "later_pass_s": w / 2, "cpu_s": 2 * w}
                                                for s, ws in walls.items() for t, w in enumerate(ws)])
            p = bench("sampling", '{"passes":6}', rows, cost)
            self.assertEqual(p.returncode, 0, p.stderr)
            archiver = json.loads(p.stdout.splitlines()[0])
            self.assertEqual(archiver["metric"], "later_pass_s")
            self.assertEqual(archiver["median_later_pass_s"]["sampling_no_sweep"], 0.515)
            self.assertAlmostEqual(archiver["sampling_no_sweep_over_plain_pct"], 3.0)
            self.assertAlmostEqual(archiver["last_pass"]["sampling_no_sweep_over_plain_pct"], 3.0)
            self.assertEqual(archiver["trials"]["plain"], [0.5, 1.0, 0.5])
            rows = self.write_rows(d, "rows2", [{"side": "plain", "trial": 1, "wall_s": 1.0}])
            p = bench("sampling", "{}", rows, cost)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("bench sampling/archiver: no trial of side 'sweep0' with wall_s", p.stderr)

    def test_peers_needs_the_actor_and_idiomatic_tokio_variants(self):
        with tempfile.TemporaryDirectory() as d:
            paths = self.peer_rows(d)
            only = self.write_rows(d, "only", [
                {"runtime": "tokio", "workload": "ping_pong", "n": 10, "msgs": 20, "msgs_per_s": 5,
                 "unit": "msgs", "seconds": 0.1, "channel": ch} for ch in ("bounded", "unbounded")])
            p = bench("peers", "ping_pong", "10", "2", "1", paths["coact"], paths["caf"], only)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("need the actor_bounded, actor_unbounded and an idiomatic variant", p.stderr)
            # Without CAF or tokio rows (COACT_BENCH_RUNTIMES=coact): their fields are null.
            empty = self.write_rows(d, "empty", [])
            p = bench("peers", "ping_pong", "10", "2", "1", paths["coact"], empty, empty, "setarch -R")
            self.assertEqual(p.returncode, 0, p.stderr)
            row = json.loads(p.stdout)
            self.assertEqual((row["caf_msgs_per_s"], row["tokio_variant"], row["coact_over_tokio"]),
                             (None, None, None))
            self.assertEqual(row["wrap"], "setarch -R")

    def test_burst_intervals_and_the_default_decision(self):
        with tempfile.TemporaryDirectory() as d:
            base = {"group": "burst", "width": 8, "handler_us": 0, "workers": 2, "trials": 8}
            # Row a: pairs around 1.00 +- 1 %: both intervals above 0.97. Row b: around
            # 0.95: a 5 % loss, slower, not excluded.
            a = dict(base, workload="fan_out", pair_ratios=[0.99, 1.01, 1.0, 1.02, 0.98, 1.0, 1.01, 0.99])
            b = dict(base, workload="chain", pair_ratios=[0.95, 0.94, 0.96, 0.95, 0.94, 0.96, 0.95, 0.95])
            rows = self.write_rows(d, "burst", [a])
            p = bench("burst", rows)
            self.assertEqual(p.returncode, 0, p.stderr)
            row, summary = [json.loads(x) for x in p.stdout.splitlines()]
            self.assertLess(row["ratio_ci95"][0], 1.0)
            self.assertGreater(row["ratio_ci95"][0], 0.97)
            self.assertTrue(row["loss_over_3pct_excluded"])
            self.assertEqual(row["verdict"], "no difference shown")
            self.assertTrue(summary["burst_default_supported"])
            rows = self.write_rows(d, "burst2", [a, b])
            p = bench("burst", rows)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = [json.loads(x) for x in p.stdout.splitlines()]
            self.assertEqual(out[1]["verdict"], "slower")
            self.assertFalse(out[1]["loss_over_3pct_excluded"])
            self.assertFalse(out[2]["burst_default_supported"])
            self.assertEqual(out[2]["rows_not_excluding_loss"], ["chain/w8/0us"])
            self.assertEqual(out[2]["worst_row"]["row"], "chain/w8/0us")
            # The same rows give the same intervals (the bootstrap's seed is fixed).
            self.assertEqual(bench("burst", rows).stdout, p.stdout)

    def test_scaling_rows_join_tokio_by_workload_and_workers(self):
        with tempfile.TemporaryDirectory() as d:
            burst = self.write_rows(d, "burst", [
                {"group": "burst", "workload": w, "width": width, "handler_us": 0, "workers": k,
                 "on_msgs_per_s": on, "off_msgs_per_s": off, "ratio": on / off,
                 "on_trials": [on] * 3, "off_trials": [off] * 3, "pair_ratios": [on / off] * 3}
                for k, (w, width, on, off) in [(1, ("fan_out", 512, 10, 8)), (1, ("ping_pong", 0, 20, 20)),
                                               (2, ("fan_out", 512, 30, 8)), (2, ("ping_pong", 0, 10, 30))]])
            tokio = self.write_rows(d, "tokio", [
                {"runtime": "tokio", "workload": "ping_pong", "workers": k, "msgs_per_s": x, "variant": "idiomatic"}
                for k, x in ((1, 4), (1, 5), (1, 6), (2, 10), (2, 10), (2, 20))])
            p = bench("scaling", burst, tokio, "0")
            self.assertEqual(p.returncode, 0, p.stderr)
            out = [json.loads(x) for x in p.stdout.splitlines()]
            self.assertEqual([(r["workload"], r["workers"]) for r in out[:4]],
                             [("fan_out_512", 1), ("ping_pong", 1), ("fan_out_512", 2), ("ping_pong", 2)])
            self.assertNotIn("tokio_msgs_per_s", out[0])
            self.assertEqual((out[1]["tokio_msgs_per_s"], out[1]["coact_over_tokio"]), (5, 4.0))
            self.assertEqual(out[3]["coact_over_tokio"], 3.0)  # the faster coact side (off) over tokio
            self.assertEqual(out[3]["trials"]["tokio"], [10, 10, 20])
            summary = out[4]
            self.assertEqual(summary["workers"], [1, 2])
            self.assertEqual(summary["speedup"]["fan_out_512"], {"on": [1.0, 3.0], "off": [1.0, 1.0]})
            self.assertEqual(summary["speedup"]["ping_pong"]["tokio"], [1.0, 2.0])

    def test_slowmode_summary_by_condition(self):
        with tempfile.TemporaryDirectory() as d:
            paths = self.peer_rows(d)
            rows = []
            for wrap in ("", "setarch -R"):
                p = bench("peers", "ping_pong", "10", "2", "1", paths["coact"], paths["caf"], paths["tokio"], wrap)
                self.assertEqual(p.returncode, 0, p.stderr)
                rows.append(json.loads(p.stdout))
            p = bench("slowmode", self.write_rows(d, "sm", rows), "2")
            self.assertEqual(p.returncode, 0, p.stderr)
            out = json.loads(p.stdout)
            self.assertEqual(out["conditions"], ["none", "setarch -R"])
            self.assertEqual(out["slow_trials"]["setarch -R"]["ping_pong"], [2, 3])
            self.assertAlmostEqual(out["share"]["none"]["ping_pong"], 0.6667)
            self.assertEqual(out["max"]["none"]["ping_pong"], 300)
            self.assertEqual(out["host"], {})  # rows without the host probe

    def test_timers_idle_cpu_targets_and_tokio(self):
        with tempfile.TemporaryDirectory() as d:
            paths = {rt: self.write_rows(d, rt, [
                {"runtime": rt, "scenario": "idle_cpu", "cpu_pct": x, "ticks": 600} for x in xs])
                for rt, xs in (("coact", [0.4, 0.6, 0.5]), ("caf", [20, 25, 30]), ("tokio", [0.5, 1.0, 2.0]))}
            # coact's rows carry the breakdown (early-wake spin, the kernel's floor): medians.
            paths["coact"] = self.write_rows(d, "coact-breakdown", [
                {"runtime": "coact", "scenario": "idle_cpu", "cpu_pct": x, "ticks": 600,
                 "early_spin_us_per_park": x * 10, "floor_cpu_pct": x / 2} for x in (0.4, 0.6, 0.5)])
            for period, met in ((5, True), (20, False)):
                p = bench("timers", "idle_cpu", f"idle_cpu.{period}",
                          json.dumps({"period_ms": period, "duration_ms": 3000}), "2", "0",
                          paths["coact"], paths["caf"], paths["tokio"])
                self.assertEqual(p.returncode, 0, p.stderr)
                row = json.loads(p.stdout)
                self.assertEqual((row["coact_cpu_pct"], row["tokio_cpu_pct"], row["coact_over_tokio"]),
                                 (0.5, 1.0, 0.5))
                self.assertEqual(row["target"]["met"], met)
                self.assertEqual(row["coact_breakdown"]["early_spin_us_per_park"], 5.0)
                self.assertEqual(row["coact_breakdown"]["floor_cpu_pct"], 0.25)
                self.assertIsNone(row["coact_breakdown"]["floor_late_p99_us"])  # not in these rows
                # The floor-relative goal next to the absolute one: floor + 0.1 point.
                self.assertEqual(row["target"]["below_floor"], period == 20)  # 0.15 < 0.25
                self.assertEqual(row["target"]["floor_relative"]["coact_cpu_pct_at_most"], 0.35)
                self.assertFalse(row["target"]["floor_relative"]["met"])
                self.assertEqual(row["target"]["at_most_tokio"], {"tokio_cpu_pct": 1.0, "met": True})

    def test_timers_idle_cpu_per_tick(self):
        # tokio ticks less often (its late timer): per tick it costs more although its
        # share of a core is lower.
        with tempfile.TemporaryDirectory() as d:
            def rows(rt, cpu_s, ticks):
                return self.write_rows(d, rt, [{"runtime": rt, "scenario": "idle_cpu", "cpu_pct": c * 20,
                                                "cpu_s": c, "ticks": t} for c, t in zip(cpu_s, ticks)])
            paths = [rows("coact", [0.038, 0.040, 0.036], [1000, 1000, 1000]),
                     rows("caf", [1.5, 1.5, 1.5], [970, 970, 970]),
                     rows("tokio", [0.034, 0.033, 0.035], [815, 815, 815])]
            p = bench("timers", "idle_cpu", "idle_cpu.5", json.dumps({"period_ms": 5, "duration_ms": 5000}),
                      "2", "0", *paths)
            self.assertEqual(p.returncode, 0, p.stderr)
            row = json.loads(p.stdout)
            self.assertEqual(row["us_per_tick"]["coact"], 38.0)
            self.assertEqual(row["us_per_tick"]["tokio"], round(0.034e6 / 815, 2))
            self.assertGreater(row["coact_cpu_pct"], row["tokio_cpu_pct"])
            self.assertLess(row["coact_over_tokio_per_tick"], 1)

    def test_timers_idle_lateness_reports_the_floor(self):
        with tempfile.TemporaryDirectory() as d:
            def rows(rt, p99s, floor=None):
                out = []
                for x in p99s:
                    r = {"runtime": rt, "scenario": "lateness", "p50_us": x / 4, "p99_us": x, "max_us": 2 * x,
                         "fired": 100, "expected": 100, "busy_util": 0.0}
                    if floor is not None:
                        r.update({"floor_late_p5_us": floor / 4, "floor_late_p50_us": floor / 2,
                                  "floor_late_p99_us": floor, "floor_cpu_pct": 2.0})
                    out.append(r)
                return self.write_rows(d, rt, out)
            paths = [rows("coact", [40.0, 45.0, 60.0], floor=120.0), rows("caf", [400.0] * 3),
                     rows("tokio", [1200.0] * 3)]
            p = bench("timers", "lateness", "lateness.idle", json.dumps({"load": "idle", "timers": 100}),
                      "2", "0", *paths)
            self.assertEqual(p.returncode, 0, p.stderr)
            row = json.loads(p.stdout)
            self.assertEqual(row["coact"]["p99_us"], 45.0)
            self.assertTrue(row["target"]["met"])
            self.assertEqual(row["target"]["floor_late_p99_us"], 120.0)
            self.assertTrue(row["target"]["needs_spin"])  # the bare wake's p99 is above 50 µs
            self.assertEqual(row["coact_breakdown"]["floor_late_p50_us"], 60.0)


if __name__ == "__main__":
    unittest.main()
