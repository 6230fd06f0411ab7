#!/usr/bin/python3
"""Tests of the slowmode group (coact_reports.bench_groups.run_slowmode) on a
fake coact-peers and a fake coact-host-probe: the conditions alternate per
round, each starting one later than the round before; every trial follows a
probe under the same condition; the probe's rates reach the rows and the
summary's "host" block (correlation, slow trials after a slow probe)."""

import json
import os
import subprocess
import sys
import unittest

from support import REPORTS, TempDirCase, read

PY = sys.executable

# A probe under condition A (env SLOWMODE_COND=A) or B; every third probe is
# slow (50 instead of 100). The trial right after reads the last probe and
# runs at 1000 x its rate, so trial and probe correlate exactly.
FAKE_PROBE = """\
#!{py}
import json, os
with open("{order}", "a") as f:
    f.write("probe " + os.environ.get("SLOWMODE_COND", "none") + "\\n")
n = sum(1 for line in open("{order}") if line.startswith("probe"))
rate = 50.0 if n % 3 == 0 else 100.0
open("{last}", "w").write(str(rate))
print(json.dumps({{"probe_msteps_per_s": rate, "steps": 1, "seconds": 1, "cpu": 0, "check": 0}}))
"""

FAKE_PEERS = """\
#!{py}
import argparse, json, os
p = argparse.ArgumentParser()
for o in ("--workload", "--n", "--workers", "--watchdog-s"):
    p.add_argument(o)
a = p.parse_args()
with open("{order}", "a") as f:
    f.write("trial " + os.environ.get("SLOWMODE_COND", "none") + " " + a.workload + "\\n")
rate = float(open("{last}").read()) * 1000
n = int(a.n)
print(json.dumps({{"runtime": "coact", "workload": a.workload, "n": n, "workers": int(a.workers),
                  "seconds": 1.0, "msgs": 2 * n, "msgs_per_s": rate, "unit": "msgs"}}))
"""


class SlowmodeGroupTest(TempDirCase):
    def run_group(self, trials=3):
        self.order = os.path.join(self.tmp, "order")
        last = os.path.join(self.tmp, "last")
        probe = self.write("coact-host-probe", FAKE_PROBE.format(py=PY, order=self.order, last=last))
        peers = self.write("coact-peers", FAKE_PEERS.format(py=PY, order=self.order, last=last))
        for f in (probe, peers):
            os.chmod(f, 0o755)
        env = dict(os.environ, COACT_BENCH_WORKLOADS="fan_out",
                   COACT_BENCH_SLOWMODE_WRAPS="none;env SLOWMODE_COND=A;env SLOWMODE_COND=B")
        return subprocess.run([PY, os.path.join(REPORTS, "coact_run.py"), "bench_groups", "slowmode", "--quick",
                               "--trials", str(trials), "--workers", "1", "--timeout-s", "30",
                               f"--bin=coact-peers={peers}", f"--bin=coact-host-probe={probe}"],
                              capture_output=True, text=True, env=env, timeout=300)

    def test_conditions_rotate_per_round_and_each_trial_follows_its_probe(self):
        p = self.run_group(trials=3)
        self.assertEqual(p.returncode, 0, p.stderr)
        runs = read(self.order).splitlines()
        # Round t runs the conditions from the (t mod 3)-th on; a probe, then its trial.
        conds = ["A", "B", "none", "B", "none", "A", "none", "A", "B"]
        self.assertEqual(runs, [x for c in conds for x in (f"probe {c}", f"trial {c} fan_out")])
        rows = [json.loads(line) for line in p.stdout.splitlines()]
        self.assertEqual([(r["group"], r.get("wrap")) for r in rows],
                         [("peers", None), ("peers", "env SLOWMODE_COND=A"), ("peers", "env SLOWMODE_COND=B"),
                          ("slowmode", None)])
        # Probes 3, 6 and 9 were slow: 'none' in round 1, 'A' in round 2, 'B' in round 3.
        self.assertEqual(rows[0]["coact"]["probe"], [50.0, 100.0, 100.0])
        self.assertEqual(rows[0]["coact"]["trials"], [50000.0, 100000.0, 100000.0])
        self.assertEqual(rows[1]["coact"]["probe"], [100.0, 50.0, 100.0])
        summary = rows[-1]
        self.assertEqual(summary["conditions"], ["none", "env SLOWMODE_COND=A", "env SLOWMODE_COND=B"])
        for cond in summary["conditions"]:
            host = summary["host"][cond]["fan_out"]
            self.assertEqual((host["corr"], host["slow_trials_after_slow_probe"], host["slow_probes"]), (1.0, 1, 1))
            self.assertEqual((host["min"], host["median"], host["max"]), (50.0, 100.0, 100.0))
            self.assertEqual(summary["slow_trials"][cond]["fan_out"], [1, 3])

    def check(self, wraps):
        env = dict(os.environ, COACT_BENCH_SLOWMODE_WRAPS=wraps)
        return subprocess.run([PY, os.path.join(REPORTS, "coact_run.py"), "bench_groups", "slowmode", "--check"],
                              capture_output=True, text=True, env=env, timeout=60)

    def test_blank_repeated_or_unknown_conditions_are_refused_with_exit_2(self):
        for wraps, why in (("none;;env A=1", "condition 2 is blank"), (";", "condition 1 is blank"),
                           ("none; none", "condition 'none' is given twice"),
                           ("env  A=1;env A=1", "condition 'env A=1' is given twice"),
                           ("nosuchcmd -x", "'nosuchcmd' is not a command")):
            p = self.check(wraps)
            self.assertEqual(p.returncode, 2, (wraps, p.stderr))
            self.assertIn(why, p.stderr)
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertEqual(self.check("none;taskset -c FIRST;").returncode, 0)

    def test_first_and_last_name_this_process_cpus(self):
        sys.path.insert(0, REPORTS)
        from coact_reports import bench_groups
        cpus = sorted(os.sched_getaffinity(0))
        old = os.environ.get("COACT_BENCH_SLOWMODE_WRAPS")
        try:
            os.environ["COACT_BENCH_SLOWMODE_WRAPS"] = "taskset -c FIRST; taskset -c LAST"
            if len(cpus) > 1:
                self.assertEqual(bench_groups.slowmode_conditions(),
                                 [f"taskset -c {cpus[0]}", f"taskset -c {cpus[-1]}"])
            os.environ.pop("COACT_BENCH_SLOWMODE_WRAPS")
            default = bench_groups.slowmode_conditions()
            self.assertEqual(default[:3], ["none", "setarch -R", f"taskset -c {cpus[0]}"])
            self.assertEqual(f"taskset -c {cpus[-1]}" in default[3:], len(cpus) > 1)
        finally:
            if old is not None:
                os.environ["COACT_BENCH_SLOWMODE_WRAPS"] = old


if __name__ == "__main__":
    unittest.main()
