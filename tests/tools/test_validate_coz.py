"""`coact-profile validate --with-coz` end to end on one small row: the a2
line of fork_join_lines (known_answer.hpp, loop a2) at s = 0.5, predicted by
coact's sampled sweep and by Debian's Coz (`coz run --fixed-line`) on
coact-known-answer-coz. Checks the JSON row (region_kind, line, Coz's
prediction and error, no reason), that Coz really sampled that line in its
profiles (selected-samples > 0 at 50 %), that --line-experiment-period-us
reaches the line sweep, and the usage errors.

Environment: CPTEST_PROFILE_TOOL (coact-profile), CPTEST_KNOWN_ANSWER
(coact-known-answer; coact-known-answer-coz beside it). Takes ~20-40 s.
"""
import json
import math
import os
import subprocess
import tempfile
import unittest

TOOL = os.environ.get("CPTEST_PROFILE_TOOL", "")
KA = os.environ.get("CPTEST_KNOWN_ANSWER", "")


class ValidateWithCoz(unittest.TestCase):
    def run_tool(self, *args, timeout=240):
        return subprocess.run([TOOL, "validate", "--known-answer", KA, "--no-dedup", "--no-analytics", "--no-kv",
                               *args],
                              capture_output=True, text=True, timeout=timeout)

    def test_one_line_row_side_by_side(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_tool("-w", "fork_join_lines", "--stage", "a2", "--with-coz", "--json", "--sweep-s", "4",
                              "--chunks", "1", "--retries", "0", "--actual-s", "0.5", "--coz-s", "3", "--out", d)
            with open(os.path.join(d, "children.log")) as f:
                log = f.read()[-3000:]
            self.assertEqual(r.returncode, 0, r.stderr + log)
            j = json.loads(r.stdout)
            self.assertEqual(len(j["rows"]), 1, j["rows"])
            row = j["rows"][0]
            self.assertEqual(row["region_kind"], "line")
            self.assertEqual(row["line"], "known_answer.hpp:616")
            self.assertEqual(row["s"], 0.5)
            self.assertIsNone(row["coz_reason"], (row, log))
            self.assertIsInstance(row["coz_predicted"], float)
            self.assertTrue(-1.0 < row["coz_predicted"] < 1.0, row)
            self.assertTrue(math.isclose(row["coz_error_pts"], (row["coz_predicted"] - row["actual"]) * 100,
                                         abs_tol=1e-9), row)
            self.assertGreater(row["coz_experiments"], 0)
            self.assertEqual(j["coz_rows_compared"], 1)
            # Coz's own records: the selected line is a2's, and it was sampled at 50 %.
            sampled = 0
            profiles = [f for f in os.listdir(d) if f.startswith("fork_join_lines.coz-") and f.endswith(".coz")]
            self.assertEqual(len(profiles), 3, profiles)  # 0 %, 50 %, 0 %
            for f in profiles:
                with open(os.path.join(d, f)) as fh:
                    lines = fh.readlines()
                for line in lines:
                    fields = dict(x.split("=", 1) for x in line.rstrip("\n").split("\t")[1:] if "=" in x)
                    if line.startswith("experiment\t"):
                        self.assertTrue(fields["selected"].endswith("/known_answer.hpp:616"), line)
                        if fields["speedup"] == "0.50":
                            sampled += int(fields["selected-samples"])
            self.assertGreater(sampled, 0, "Coz never sampled loop a2 at 50 %")

    def test_unknown_stage(self):
        r = self.run_tool("-w", "fork_join_lines", "--stage", "none_such", "--with-coz")
        self.assertEqual(r.returncode, 2)
        self.assertIn("validate --stage 'none_such': no such stage in the selected workloads (expected one of: a1, a2, B)",
                      r.stderr)

    def test_line_experiment_period(self):
        # Bad values are usage errors naming the option and what it expects.
        for bad in ("5", "abc", "2000000"):
            r = self.run_tool("-w", "fork_join_lines", "--line-experiment-period-us", bad)
            self.assertEqual(r.returncode, 2, (bad, r.stderr))
            self.assertIn(f"--line-experiment-period-us: '{bad}': expected 0 (the sample period / 8) or an integer "
                          "in 10..1000000", r.stderr)
        # A good one reaches the line workload's sweep (its options record) and the JSON.
        with tempfile.TemporaryDirectory() as d:
            r = self.run_tool("-w", "fork_join_lines", "--stage", "a2", "--json", "--sweep-s", "2", "--chunks", "1",
                              "--retries", "0", "--actual-s", "0.3", "--line-experiment-period-us", "250",
                              "--out", d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["line_experiment_period_us"], 250)
            with open(os.path.join(d, "fork_join_lines.jsonl")) as f:
                self.assertIn('"line_experiment_period_us":250', f.read())

    def test_missing_coz(self):
        r = self.run_tool("-w", "fork_join_lines", "--stage", "a2", "--with-coz", "--coz", "/nonexistent/coz")
        self.assertEqual(r.returncode, 2)
        self.assertIn("validate --with-coz: '/nonexistent/coz' not found", r.stderr)


if __name__ == "__main__":
    unittest.main()
