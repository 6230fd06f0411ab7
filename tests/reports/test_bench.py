#!/usr/bin/python3
"""Tests of coact_reports.bench, scripts/bench.sh's aggregation."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPORTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "reports")


def bench(*args):
    return subprocess.run([sys.executable, "-m", "coact_reports.bench", *args], cwd=REPORTS,
                          capture_output=True, text=True, timeout=60)


class BenchAggregationTest(unittest.TestCase):
    def test_runtime_rows(self):
        p = bench("runtime", os.path.join(HERE, "fixtures", "gbench_base.json"))
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [json.loads(x) for x in p.stdout.splitlines()]
        self.assertEqual(len(rows), 9)
        spawn = [r for r in rows if r["workload"] == "BM_spawn/64"]
        self.assertEqual(sorted(r["repetition"] for r in spawn), [0, 1, 2])
        self.assertEqual(spawn[0]["parameters"]["arg0"], 64)
        self.assertEqual({r.get("aggregate") for r in rows} - {None}, {"mean", "median"})

    def test_peers_medians_and_ratio(self):
        with tempfile.TemporaryDirectory() as d:
            paths = {}
            for rt, rates in (("coact", [300, 100, 200]), ("caf", [50, 100, 150])):
                paths[rt] = os.path.join(d, rt)
                with open(paths[rt], "w") as f:
                    for r in rates:
                        f.write(json.dumps({"runtime": rt, "workload": "ping_pong", "n": 10,
                                            "msgs": 20, "msgs_per_s": r, "unit": "msgs",
                                            "seconds": 0.1}) + "\n")
            p = bench("peers", "ping_pong", "10", "2", "1", paths["coact"], paths["caf"])
            self.assertEqual(p.returncode, 0, p.stderr)
            row = json.loads(p.stdout)
            self.assertEqual((row["coact_msgs_per_s"], row["caf_msgs_per_s"], row["ratio"]),
                             (200, 100, 2.0))
            p = bench("peers", "fan_out", "10", "2", "1", paths["coact"], paths["caf"])
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("peers/fan_out: coact printed an unexpected row", p.stderr)


if __name__ == "__main__":
    unittest.main()
