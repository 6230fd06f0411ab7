#!/usr/bin/python3
"""Tests of the burst group on the one trial runner (coact_reports.bench_burst):
its on/off pairs run in ABBA order, one program run each; a row's medians
and pair ratios (bench.burst_row) are what coact-burst-bench reported when
it ran its own pairs; the burst group's and scaling's rows keep their keys
and order; a failed or wrong run names itself. Driven by a fake
coact-burst-bench."""

import json
import os
import subprocess
import sys
import unittest

from support import REPORTS, TempDirCase, read

from coact_reports import bench, trials

PY = sys.executable

# The keys of a burst row, in order (scripts/bench.sh's header), then the
# ones bench.burst adds.
ROW_KEYS = ["group", "workload", "width", "handler_us", "workers", "on_msgs_per_s", "off_msgs_per_s", "ratio",
            "ratio_of_medians", "syncs_on", "syncs_off", "sync_ratio", "trials", "on_trials", "off_trials",
            "pair_ratios"]
INTERVAL_KEYS = ["ratio_geomean", "ratio_ci95", "ratio_median_ci95", "loss_over_3pct_excluded", "verdict"]

FAKE_BURST_BENCH = """\
#!{py}
# A stand-in for coact-burst-bench's one-run mode: appends "ROW SIDE WORKERS"
# (and any COACT_BENCH_* it saw) to ORDER and prints the run's JSON line;
# burst on runs at 1100 msgs/s, off at 1000 (the n-th run of a side adds n),
# syncs 10 on, 40 off. FAIL_ROW / WRONG_ROW in the environment: that row
# exits 1 / prints another workload.
import argparse, json, os, sys
p = argparse.ArgumentParser()
for o in ("--side", "--row", "--width", "--handler-us", "--workload", "--peers", "--workers"):
    p.add_argument(o)
p.add_argument("--quick", action="store_true")
a = p.parse_args()
wl = a.workload if a.row == "peers" else a.row
width = 0 if a.row == "peers" else 1 if a.row == "chain" else int(a.width)
us = int(a.handler_us or 0)
label = f"{{wl}}/w{{width}}/{{us}}us"
with open("{order}", "a") as f:
    f.write(f"{{label}} {{a.side}} {{a.workers}}" +
            "".join(" " + k for k in os.environ if k.startswith("COACT_BENCH_")) + "\\n")
if os.environ.get("FAIL_ROW") == label:
    sys.exit(1)
n = sum(1 for line in open("{order}") if line.split()[:2] == [label, a.side])
rate = (1100.0 if a.side == "on" else 1000.0) + n
print(json.dumps({{"group": "burst", "workload": "other" if os.environ.get("WRONG_ROW") == label else wl,
                  "width": width, "handler_us": us, "workers": int(a.workers), "side": a.side,
                  "msgs": 100, "msgs_per_s": rate, "syncs": 10 if a.side == "on" else 40}}))
"""


class OrderTest(unittest.TestCase):
    def test_abba_pairs_alternate_which_side_runs_first(self):
        self.assertEqual(trials.abba(6, "on", "off"),
                         [("on", "off"), ("off", "on"), ("off", "on"), ("on", "off"), ("on", "off"),
                          ("off", "on")])

    def test_pair_orders_are_balanced_blocks(self):
        order = trials.pair_orders(8, seed=3)
        self.assertEqual(order, trials.pair_orders(8, seed=3))
        for i in range(0, 8, 2):
            self.assertEqual(order[i], tuple(reversed(order[i + 1])))


class BurstRowTest(unittest.TestCase):
    def test_medians_pair_ratios_and_keys(self):
        on = [(1200.0, 10), (900.0, 14), (1100.0, 12), (1000.0, 11)]
        off = [(1000.0, 40), (1000.0, 44), (1100.0, 42), (800.0, 41)]
        row = bench.burst_row("fan_out", 64, 20, 2, on, off)
        self.assertEqual(list(row), ROW_KEYS)
        # Medians of an even count are the higher middle trial, as coact-burst-bench's were.
        self.assertEqual(row["on_msgs_per_s"], 1100.0)
        self.assertEqual(row["off_msgs_per_s"], 1000.0)
        self.assertEqual(row["pair_ratios"], [1.2, 0.9, 1.0, 1.25])
        self.assertEqual(row["ratio"], 1.2)                     # of the pairs, not of the medians
        self.assertEqual(row["ratio_of_medians"], 1.1)
        self.assertEqual((row["syncs_on"], row["syncs_off"], row["sync_ratio"]), (12, 42, 3.5))
        self.assertEqual(row["trials"], 4)
        self.assertEqual(row["on_trials"], [1200.0, 900.0, 1100.0, 1000.0])

    def test_rounding_as_the_program_printed(self):
        row = bench.burst_row("chain", 1, 0, 2, [(1000.06, 0), (1.0, 0), (2.0, 0)],
                              [(3.0, 0), (1.0, 0), (3.0, 0)])
        self.assertEqual(row["on_trials"], [1000.1, 1.0, 2.0])
        self.assertEqual(row["pair_ratios"], [333.35333, 1.0, 0.66667])
        self.assertEqual(row["ratio"], 1.0)
        self.assertEqual(row["sync_ratio"], 0.0)                # syncs on 0: divided by 1

    def test_unmatched_pairs_are_an_error(self):
        with self.assertRaises(ValueError):
            bench.burst_row("chain", 1, 0, 2, [(1.0, 0)], [])


class BurstGroupTest(TempDirCase):
    """bench_groups' burst and scaling groups on a fake coact-burst-bench."""

    def run_group(self, group, trials_=4, env=None):
        self.order = os.path.join(self.tmp, "order")
        fake = self.write("coact-burst-bench", FAKE_BURST_BENCH.format(py=PY, order=self.order))
        os.chmod(fake, 0o755)
        e = dict(os.environ, COACT_BENCH_TRIALS="3", **(env or {}))
        return subprocess.run([PY, os.path.join(REPORTS, "coact_run.py"), "bench_groups", group, "--quick",
                               "--trials", str(trials_), "--workers", "2", "--timeout-s", "30",
                               f"--bin=coact-burst-bench={fake}", "--bin=coact-peers=/bin/true"],
                              capture_output=True, text=True, env=e, timeout=300)

    def runs(self):
        return [line.split() for line in read(self.order).splitlines()] if os.path.exists(self.order) else []

    def test_every_row_runs_abba_pairs_and_keeps_its_keys(self):
        p = self.run_group("burst")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [json.loads(line) for line in p.stdout.splitlines()]
        labels = [f"fan_out/w{w}/{us}us" for us in (0, 20) for w in (1, 8, 64, 512)] + \
            ["chain/w1/0us", "chain/w1/20us"] + [f"{wl}/w0/0us" for wl in
                                                   ("ping_pong", "fan_out", "thread_ring", "skynet")]
        self.assertEqual([r.get("workload") for r in rows],
                         [x.split("/")[0] for x in labels] + ["summary"])
        runs = self.runs()
        # One process per run, the rows in order, each row's sides in ABBA order, and no
        # COACT_BENCH_* reached the program.
        abba = ["on", "off", "off", "on", "off", "on", "on", "off"]
        self.assertEqual(runs, [[x, side, "2"] for x in labels for side in abba])
        for r in rows[:-1]:
            self.assertEqual(list(r), ROW_KEYS + INTERVAL_KEYS)
            self.assertEqual(r["trials"], 4)
            # on runs 1..4 are 1101..1104 in run order, off 1001..1004.
            self.assertEqual(r["on_trials"], [1101.0, 1102.0, 1103.0, 1104.0])
            self.assertEqual(r["off_trials"], [1001.0, 1002.0, 1003.0, 1004.0])
            self.assertEqual((r["on_msgs_per_s"], r["off_msgs_per_s"]), (1103.0, 1003.0))
            self.assertEqual((r["syncs_on"], r["syncs_off"], r["sync_ratio"]), (10, 40, 4.0))
            self.assertEqual(r["verdict"], "faster")
        self.assertEqual(rows[0]["width"], 1)
        self.assertEqual(rows[-1]["burst_default_supported"], True)
        self.assertIn("bench.sh: burst/fan_out/w512/20us: on 1103, off 1003 msgs/s", p.stderr)

    def test_a_failed_or_wrong_run_ends_the_group_naming_it(self):
        p = self.run_group("burst", trials_=1, env={"FAIL_ROW": "chain/w1/20us"})
        self.assertEqual(p.returncode, 1)
        self.assertIn("bench.sh: burst/chain/w1/20us: on run 1/1 failed (exit 1)", p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(self.runs()[-1], ["chain/w1/20us", "on", "2"])
        os.remove(self.order)
        p = self.run_group("burst", trials_=1, env={"WRONG_ROW": "skynet/w0/0us"})
        self.assertEqual(p.returncode, 1)
        self.assertIn("bench.sh: burst/skynet/w0/0us: on run 1/1 printed an unexpected row: {", p.stderr)

    def test_scaling_runs_the_same_pairs_at_each_worker_count(self):
        p = self.run_group("scaling", trials_=3, env={"COACT_BENCH_SCALING_WORKERS": "1,2"})
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [json.loads(line) for line in p.stdout.splitlines()]
        wls = ["fan_out_512", "ping_pong", "fan_out", "thread_ring", "skynet"]
        self.assertEqual([(r["workload"], r["workers"]) for r in rows[:-1]],
                         [(wl, k) for k in (1, 2) for wl in wls])
        self.assertEqual(list(rows[0]), ["group", "workload", "workers", "quick", "width", "handler_us",
                                         "on_msgs_per_s", "off_msgs_per_s", "ratio", "syncs_on", "syncs_off",
                                         "ratio_ci95", "ratio_median_ci95", "trials"])
        self.assertEqual(rows[0]["trials"], {"on": [1101.0, 1102.0, 1103.0], "off": [1001.0, 1002.0, 1003.0]})
        self.assertEqual(rows[-1]["workload"], "summary")
        runs = self.runs()
        self.assertEqual([r[2] for r in runs], ["1"] * 30 + ["2"] * 30)
        self.assertEqual([r[1] for r in runs[:6]], ["on", "off", "off", "on", "off", "on"])


if __name__ == "__main__":
    unittest.main()
