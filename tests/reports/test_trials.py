#!/usr/bin/python3
"""Tests of coact_reports.trials, the one trial runner of scripts/bench.sh's
groups and perf-compare: its failures name the trial, its child runs
without COACT_BENCH_*, its orders interleave; and of bench_groups' peers
group driving fake programs through it."""

import json
import os
import subprocess
import sys
import textwrap
import time
import unittest
from unittest import mock

from support import REPORTS, TempDirCase, alive, read

from coact_reports import bench_costs, trials

PY = sys.executable


class RunnerTest(TempDirCase):
    def trial(self, code, **kw):
        return trials.Runner().trial([PY, "-c", code], "peers/ping_pong: coact trial 2/3", **kw)

    def test_last_json_line_is_returned(self):
        doc, fin = self.trial("print('starting'); print('{\"msgs\": 4}')", limit_s=30)
        self.assertEqual(doc, {"msgs": 4})
        self.assertEqual(fin.rc, 0)
        self.assertIn("starting", fin.stdout)

    def test_timeout_names_the_trial_and_ends_the_process_group(self):
        # The child starts a grandchild that would outlive a kill of the child alone.
        code = "import subprocess, time; subprocess.Popen(['sleep', '30']); time.sleep(30)"
        t0 = time.monotonic()
        with self.assertRaises(trials.TrialFailed) as e:
            self.trial(code, limit_s=0.5, detail="n=10")
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(str(e.exception), "peers/ping_pong: coact trial 2/3 timed out after 0.5s (n=10)")

    def test_timeout_ends_a_grandchild_that_ignores_sigterm(self):
        # The child dies at SIGTERM (as /usr/bin/time does under perf-compare); its
        # grandchild ignores it: SIGKILL ends it before the trial's failure is raised.
        pid_file = os.path.join(self.tmp, "grandchild.pid")
        code = ("import signal, subprocess, time\n"
                "g = subprocess.Popen(['sleep', '30'], preexec_fn=lambda: signal.signal(signal.SIGTERM, "
                "signal.SIG_IGN))\n"
                f"open({pid_file!r}, 'w').write(str(g.pid))\n"
                "time.sleep(30)\n")
        with self.assertRaises(trials.TrialFailed) as e:
            self.trial(code, limit_s=1)
        self.assertIn("timed out after 1s", str(e.exception))
        with open(pid_file) as f:
            grandchild = int(f.read())
        self.assertFalse(alive(grandchild), f"grandchild {grandchild} outlived the trial")

    def test_watchdog_exit_or_limit_is_a_hang(self):
        with self.assertRaises(trials.TrialFailed) as e:
            self.trial("import sys; sys.exit(3)", limit_s=30, watchdog_s=7, detail="n=10")
        self.assertEqual(str(e.exception), "peers/ping_pong: coact trial 2/3 hung: not done after 7s (n=10)")
        with self.assertRaises(trials.TrialFailed) as e:
            self.trial("import time; time.sleep(30)", limit_s=0.3, watchdog_s=7)
        self.assertIn("hung: not done after 7s", str(e.exception))

    def test_non_zero_exit_names_the_trial_and_status(self):
        with self.assertRaises(trials.TrialFailed) as e:
            self.trial("import sys; print('{}'); sys.exit(5)", limit_s=30, detail="n=10")
        self.assertEqual(str(e.exception), "peers/ping_pong: coact trial 2/3 failed (exit 5, n=10)")
        with self.assertRaises(trials.TrialFailed) as e:
            self.trial("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", limit_s=30)
        self.assertIn("failed (killed by signal 9)", str(e.exception))

    def test_no_json_line_quotes_the_last_line(self):
        for code, got in (("print('{\"a\": 1}'); print('done')", "done"), ("pass", ""),
                          ("print('{not json}')", "{not json}"), ("print('[1, 2]')", "[1, 2]")):
            with self.assertRaises(trials.TrialFailed) as e:
                self.trial(code, limit_s=30)
            self.assertEqual(str(e.exception),
                             f"peers/ping_pong: coact trial 2/3 printed no JSON line (got '{got}')")
        doc, _ = self.trial("print('no json here')", limit_s=30, want_json=False)
        self.assertIsNone(doc)

    def test_a_program_that_cannot_start(self):
        with self.assertRaises(trials.TrialFailed) as e:
            trials.Runner().trial([os.path.join(self.tmp, "missing")], "timers/x: caf trial 1/3", 30)
        self.assertTrue(str(e.exception).startswith("timers/x: caf trial 1/3: cannot start"), str(e.exception))

    def test_child_environment_has_no_bench_knobs(self):
        code = "import json, os; print(json.dumps(sorted(k for k in os.environ if k.startswith('COACT_'))))"
        with mock.patch.dict(os.environ, {"COACT_BENCH_TRIALS": "5", "COACT_BURST": "on"}):
            fin = trials.Runner().run([PY, "-c", code], "t", 30,
                                      env=trials.child_environ({"COACT_CAUSAL": "1"}))
        names = json.loads(fin.stdout)
        self.assertIn("COACT_BURST", names)
        self.assertIn("COACT_CAUSAL", names)
        self.assertFalse([k for k in names if k.startswith("COACT_BENCH_")], names)


class OrderTest(unittest.TestCase):
    def test_alternating_runs_every_side_once_per_round(self):
        self.assertEqual(trials.alternating(2, ["coact", "caf", "tokio"]),
                         [(1, "coact"), (1, "caf"), (1, "tokio"), (2, "coact"), (2, "caf"), (2, "tokio")])

    def test_rotating_moves_the_first_side_each_round(self):
        order = trials.rotating(3, ["a", "b", "c"])
        self.assertEqual([s for _, s in order], ["b", "c", "a", "c", "a", "b", "a", "b", "c"])
        self.assertEqual([t for t, _ in order], [1, 1, 1, 2, 2, 2, 3, 3, 3])


class CountParsingTest(TempDirCase):
    def test_callgrind_summary_line(self):
        path = self.write("cg.out", "version: 1\ncmd: x\nevents: Ir\nsummary: 123456\ntotals: 123456\n")
        self.assertEqual(bench_costs.callgrind_total(path), 123456)
        self.assertIsNone(bench_costs.callgrind_total(self.write("empty", "events: Ir\n")))

    def test_strace_total_row(self):
        table = textwrap.dedent("""\
            % time     seconds  usecs/call     calls    errors syscall
            ------ ----------- ----------- --------- --------- ----------------
             60.00    0.000600          12        50        10 futex
             40.00    0.000400           4       100           mmap
            ------ ----------- ----------- --------- --------- ----------------
            100.00    0.001000           6       150        10 total
            """)
        self.assertEqual(bench_costs.strace_total(self.write("st", table)), 150)

    def test_cpu_seconds_from_time(self):
        path = self.write("cpu", "Command exited with non-zero status 1\n0.10 0.20\n")
        self.assertEqual(bench_costs.cpu_seconds(path), 0.3)
        self.assertIsNone(bench_costs.cpu_seconds(self.write("none", "garbage\n")))


FAKE_PEERS = """\
#!{py}
# A stand-in for coact-peers / caf-peers / tokio-peers: one JSON row, and its
# runtime/variant appended to ORDER (with any COACT_BENCH_* it saw).
import argparse, json, os
p = argparse.ArgumentParser()
for o in ("--workload", "--n", "--workers", "--watchdog-s", "--style", "--channel", "--flavor"):
    p.add_argument(o)
a = p.parse_args()
rt = "{rt}"
variant = None
if rt == "tokio":
    variant = "actor_" + a.channel if a.style == "actor" else \
        "idiomatic" + ("_current_thread" if a.flavor else "")
with open("{order}", "a") as f:
    f.write(rt + (":" + variant if variant else "") +
            "".join(" " + k for k in os.environ if k.startswith("COACT_BENCH_")) + "\\n")
n = int(a.n)
row = {{"runtime": rt, "workload": a.workload, "n": n, "msgs": 2 * n, "msgs_per_s": 1000.0,
        "unit": "msgs", "seconds": 0.1}}
if variant:
    row["variant"] = variant
print(json.dumps(row))
"""


class PeersGroupTest(TempDirCase):
    """bench_groups' peers group on fake programs: the trial order and the row's shape."""

    def fake(self, rt, order):
        path = self.write(rt, FAKE_PEERS.format(py=PY, rt=rt, order=order))
        os.chmod(path, 0o755)
        return path

    def run_group(self, *extra, env=None):
        order = os.path.join(self.tmp, "order")
        if os.path.exists(order):
            os.remove(order)
        bins = [f"--bin={name}-peers={self.fake(name, order)}" for name in ("coact", "caf", "tokio")]
        e = dict(os.environ, COACT_BENCH_WORKLOADS="ping_pong", COACT_BENCH_TRIALS="3", **(env or {}))
        p = subprocess.run([PY, os.path.join(REPORTS, "coact_run.py"), "bench_groups", "peers", "--quick",
                            "--trials", "3", "--workers", "2", "--timeout-s", "30", *bins, *extra],
                           capture_output=True, text=True, env=e, timeout=120)
        lines = read(order).splitlines() if os.path.exists(order) else []
        return p, lines

    def test_runtimes_alternate_and_the_row_keeps_its_keys(self):
        p, order = self.run_group()
        self.assertEqual(p.returncode, 0, p.stderr)
        round_ = ["coact", "caf", "tokio:actor_bounded", "tokio:actor_unbounded", "tokio:idiomatic"]
        self.assertEqual(order, round_ * 3)     # no COACT_BENCH_* reached the programs either
        row = json.loads(p.stdout)
        for key in ("group", "workload", "parameters", "workers", "coact_msgs_per_s", "caf_msgs_per_s",
                    "ratio", "tokio_msgs_per_s", "tokio_variant", "coact", "caf", "tokio_variants",
                    "slow_mode", "trials"):
            self.assertIn(key, row)
        self.assertEqual(len(row["trials"]["coact"]), 3)
        self.assertIn("bench.sh: peers/ping_pong: coact trial 1/3: {", p.stderr)

    def test_runtimes_knob_and_a_bad_one(self):
        p, order = self.run_group(env={"COACT_BENCH_RUNTIMES": "coact"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(order, ["coact"] * 3)
        p, order = self.run_group(env={"COACT_BENCH_RUNTIMES": "caf"})
        self.assertEqual(p.returncode, 2)
        self.assertIn("COACT_BENCH_RUNTIMES='caf': coact is required", p.stderr)
        self.assertEqual(order, [])

    def test_a_failing_trial_ends_the_group_naming_it(self):
        p, _ = self.run_group("--bin", "caf-peers=/bin/false")
        self.assertEqual(p.returncode, 1)
        self.assertIn("bench.sh: peers/ping_pong: caf trial 1/3 failed (exit 1, n=20000)", p.stderr)
        self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    unittest.main()
