#!/usr/bin/python3
"""Tests of coact_reports.kvbench (scripts/bench.sh kv): the parsing of
redis-benchmark's CSV, and a tiny run of coact-kv against redis-server that
leaves no server behind."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

from support import REPORTS, ROOT, alive

from coact_reports import kvbench

COACT_KV = os.environ.get("KVBENCH_TEST_COACT_KV", os.path.join(ROOT, "build", "relwithdebinfo", "examples", "kv", "coact-kv"))
TOOLS = ("/usr/bin/redis-server", "/usr/bin/redis-benchmark", "/usr/bin/redis-cli")

# redis-benchmark 7.0.15 -t set,get -n 2000 -c 50 --csv, as it printed it.
CSV = '''"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET","22727.27","1.351","0.216","1.255","2.167","4.983","5.263"
"GET","24390.24","1.267","0.184","1.175","2.095","4.607","5.223"
'''


class CsvTest(unittest.TestCase):
    def test_rows_by_test(self):
        rows = kvbench.parse_csv(CSV)
        self.assertEqual(sorted(rows), ["get", "set"])
        self.assertEqual(rows["set"]["rps"], 22727.27)
        self.assertEqual(rows["set"]["p50_ms"], 1.255)
        self.assertEqual(rows["set"]["p99_ms"], 4.983)
        self.assertEqual(rows["get"]["max_ms"], 5.223)

    def test_lines_before_the_header_are_skipped(self):
        rows = kvbench.parse_csv("WARNING: something\n" + CSV)
        self.assertEqual(rows["get"]["rps"], 24390.24)

    def test_no_header_or_a_bad_row_is_an_error(self):
        with self.assertRaises(kvbench.BenchError):
            kvbench.parse_csv("ERROR: Connection refused\n")
        with self.assertRaises(kvbench.BenchError):
            kvbench.parse_csv(CSV.splitlines()[0] + '\n"SET","n/a","1","1","1","1","1","1"\n')

    def test_distribution_and_ratios(self):
        a = kvbench.parse_args(["--coact-kv", "/bin/true", "--redis-server", "/bin/true",
                                "--redis-benchmark", "/bin/true", "--redis-cli", "/bin/true", "--trials", "2"])
        t = {"coact": [{"rps": 30.0, "p50_ms": 1.0, "p99_ms": 2.0, "cpu_s_per_100k": 1.0},
                       {"rps": 10.0, "p50_ms": 1.0, "p99_ms": 4.0, "cpu_s_per_100k": 3.0}],
             "redis": [{"rps": 10.0, "p50_ms": 1.0, "p99_ms": 3.0, "cpu_s_per_100k": 1.0},
                       {"rps": 10.0, "p50_ms": 1.0, "p99_ms": 3.0, "cpu_s_per_100k": 1.0}]}
        row = kvbench.row_object(a, "set", 1, t)
        self.assertEqual(row["coact"]["rps"], {"median": 20.0, "min": 10.0, "max": 30.0, "trials": [30.0, 10.0]})
        self.assertEqual(row["coact_over_redis_rps"], 2.0)
        self.assertEqual(row["p99_coact_over_redis"], 1.0)
        self.assertEqual(row["pairs"], [3.0, 1.0])
        self.assertEqual(row["target"], {"rps_at_least_redis": True, "p99_no_worse": True, "rps_ahead": True,
                                         "met": True})
        self.assertEqual((a.requests, a.trials, a.shards, a.pipelines), (1000000, 2, 2, [1, 16]))
        # Trials without the client's and the run queue's figures: those are null, not client-bound.
        self.assertIsNone(row["coact"]["client_cpu_share"])
        self.assertIsNone(row["redis"]["runq_s_per_100k"])
        self.assertFalse(row["client_bound"])

    def test_run_queue_wait_of_this_process_and_of_none(self):
        self.assertGreaterEqual(kvbench.runq_wait_seconds(os.getpid()) or 0.0, 0.0)
        if os.path.exists("/proc/self/schedstat"):
            self.assertIsNotNone(kvbench.runq_wait_seconds(os.getpid()))
        self.assertIsNone(kvbench.runq_wait_seconds(2 ** 22 + 7))  # above pid_max's limit: no such process

    def test_client_bound_when_neither_server_kept_the_client_waiting(self):
        a = kvbench.parse_args(["--coact-kv", "/bin/true", "--redis-server", "/bin/true",
                                "--redis-benchmark", "/bin/true", "--redis-cli", "/bin/true", "--trials", "3"])

        def trials(shares):
            return [{"rps": 1.0, "p50_ms": 1.0, "p99_ms": 1.0, "cpu_s_per_100k": 1.0, "client_cpu_share": x,
                     "runq_s_per_100k": 0.01 * i} for i, x in enumerate(shares)]
        bound = kvbench.row_object(a, "set", 1, {"coact": trials([0.97, 0.5, 0.95]),
                                                 "redis": trials([0.99, 0.91, 0.2])})
        self.assertEqual(bound["coact"]["client_cpu_share"]["median"], 0.95)
        self.assertEqual(bound["redis"]["runq_s_per_100k"], {"median": 0.01, "min": 0.0, "max": 0.02,
                                                              "trials": [0.0, 0.01, 0.02]})
        self.assertTrue(bound["client_bound"])
        waited = kvbench.row_object(a, "set", 1, {"coact": trials([0.97, 0.95, 0.96]),
                                                  "redis": trials([0.8, 0.85, 0.99])})
        self.assertFalse(waited["client_bound"])  # redis-benchmark waited for redis-server


@unittest.skipUnless(os.access(COACT_KV, os.X_OK), f"{COACT_KV} not built")
@unittest.skipUnless(all(os.access(t, os.X_OK) for t in TOOLS), "redis-server or redis-tools not installed")
class TinyRunTest(unittest.TestCase):
    def test_tiny_run_against_redis_server(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "kv.jsonl")
            p = subprocess.run([sys.executable, "-B", "-m", "coact_reports.kvbench", "--coact-kv", COACT_KV,
                                "--requests", "2000", "--trials", "1", "--pipelines", "1,4", "--out", out],
                               cwd=REPORTS, capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            rows = [json.loads(line) for line in p.stdout.splitlines()]
            with open(out) as f:
                self.assertEqual([json.loads(line) for line in f], rows)
        summary = rows.pop()
        self.assertEqual(summary["workload"], "summary")
        self.assertEqual(summary["exit_status"], {"redis": 0, "coact": 0})
        self.assertRegex(summary["versions"]["redis_server"] or "", r"^7\.")
        self.assertEqual(sorted((r["workload"], r["pipeline"]) for r in rows),
                         [("get", 1), ("get", 4), ("set", 1), ("set", 4)])
        for r in rows:
            self.assertEqual(r["group"], "kv")
            for side in ("coact", "redis"):
                self.assertGreater(r[side]["rps"]["median"], 0)
                self.assertEqual(len(r[side]["rps"]["trials"]), 1)
                self.assertGreaterEqual(r[side]["p99_ms"]["median"], r[side]["p50_ms"]["median"])
                self.assertGreater(r[side]["client_cpu_share"]["median"], 0)
                self.assertLess(r[side]["client_cpu_share"]["median"], 1.5)  # one client thread
                if os.path.exists("/proc/self/schedstat"):
                    self.assertGreaterEqual(r[side]["runq_s_per_100k"]["median"], 0)
            self.assertIsInstance(r["client_bound"], bool)
            self.assertGreater(r["coact_over_redis_rps"], 0)
        # The servers it started (their PIDs: the summary's, and its log's) are gone.
        pids = [int(x) for x in re.findall(r"kvbench: started \S+ pid (\d+)", p.stderr)]
        self.assertEqual(sorted(pids), sorted(summary["pids"].values()), p.stderr)
        for pid in pids:
            self.assertFalse(alive(pid), f"process {pid} left running")

    def test_a_server_that_fails_to_start_is_named_and_nothing_is_left(self):
        p = subprocess.run([sys.executable, "-B", "-m", "coact_reports.kvbench", "--coact-kv", COACT_KV,
                            "--redis-server", "/bin/false", "--requests", "2000", "--trials", "1"],
                           cwd=REPORTS, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertIn("kvbench: redis-server (/bin/false) exited with status 1 before answering PING", p.stderr)
        pids = [int(x) for x in re.findall(r"kvbench: started coact-kv pid (\d+)", p.stderr)]
        self.assertEqual(len(pids), 1, p.stderr)
        self.assertFalse(alive(pids[0]), f"coact-kv {pids[0]} left running")


if __name__ == "__main__":
    unittest.main()
