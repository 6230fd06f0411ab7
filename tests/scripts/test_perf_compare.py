#!/usr/bin/python3
"""Tests of scripts/perf-compare.sh against a fake benchmark program.

The fake (written to a temp dir) takes coact-peers' arguments and prints one
JSON line whose msgs_per_s is COACT_FAKE_SPEED (default 1e6) with a uniform
jitter of +-COACT_FAKE_JITTER_PPM (default 5000 = 0.5%). COACT_FAKE_FAIL_AT=K
with COACT_FAKE_COUNTER=FILE makes the K-th process (over the whole run) exit 7;
COACT_FAKE_WARN=1 prints a coact-style "unknown environment key" warning.

Run: /usr/bin/python3 -m unittest discover -s tests/scripts   (about 20 s)
"""

import json
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "perf-compare.sh")

FAKE = r"""#!/bin/bash
wl=?
while (($#)); do case $1 in --workload) wl=$2; shift ;; esac; shift; done
s=${COACT_FAKE_SPEED:-1000000}
ppm=${COACT_FAKE_JITTER_PPM:-5000}
if [[ -n ${COACT_FAKE_COUNTER:-} ]]; then
  c=$(( $(cat "$COACT_FAKE_COUNTER" 2>/dev/null || echo 0) + 1 ))
  echo $c >"$COACT_FAKE_COUNTER"
  if [[ $c == "${COACT_FAKE_FAIL_AT:-}" ]]; then echo "fake: failing on purpose" >&2; exit 7; fi
fi
[[ -n ${COACT_FAKE_WARN:-} ]] && echo "coact: warning: unknown environment key COACT_FAKE_WARN (known: ...)" >&2
j=0
if ((ppm > 0)); then j=$(( (RANDOM * 32768 + RANDOM) % (2 * ppm + 1) - ppm )); fi
v=$(( s + s * j / 1000000 ))
echo "some progress line"
echo "{\"runtime\":\"fake\",\"workload\":\"$wl\",\"msgs_per_s\":$v.0,\"unit\":\"msgs\"}"
"""

NO_CHANGE = "no change (within noise)"


class PerfCompareTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="perf-compare-test.")
        cls.fake = os.path.join(cls.tmp.name, "fake-peers")
        with open(cls.fake, "w") as f:
            f.write(FAKE)
        os.chmod(cls.fake, 0o755)
        cls.count = 0

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_pc(self, base_env="", cand_env="", args=(), extra_env=None, fake=True):
        """Runs perf-compare.sh; returns (proc, out_dir, summaries)."""
        type(self).count += 1
        out = os.path.join(self.tmp.name, f"out{self.count}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("COACT_")}
        env["PERF_BASE_ENV"] = base_env
        env["PERF_CAND_ENV"] = cand_env
        env.update(extra_env or {})
        cmd = [SCRIPT, "--out", out, "--seed", "1", "--n", "100"]
        if fake:
            cmd += ["--base-bin", self.fake, "--cand-bin", self.fake]
        cmd += list(args)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        summaries = []
        if p.returncode == 0:
            for line in p.stdout.splitlines():
                summaries.append(json.loads(line))   # stdout: JSON lines only
        return p, out, summaries

    def trials(self, out):
        with open(os.path.join(out, "trials.jsonl")) as f:
            return [json.loads(line) for line in f]

    def assertOk(self, p):
        self.assertEqual(p.returncode, 0, f"stderr:\n{p.stderr}")

    # ---- verdicts ---------------------------------------------------------------------

    def test_real_20pct_difference_is_faster_and_trials_recorded(self):
        p, out, (s,) = self.run_pc("COACT_FAKE_SPEED=1000000", "COACT_FAKE_SPEED=1200000",
                                   ["--trials", "6", "--workloads", "ping_pong"])
        self.assertOk(p)
        self.assertEqual(s["verdict"], "faster")
        self.assertEqual(s["workload"], "ping_pong")
        self.assertAlmostEqual(s["median_delta_pct"], 20.0, delta=1.5)
        self.assertGreater(s["ci95_pct"][0], 0)
        self.assertEqual(s["pairs"], 6)
        self.assertAlmostEqual(s["base_median"], 1e6, delta=1e4)
        self.assertAlmostEqual(s["cand_median"], 1.2e6, delta=1.2e4)
        # trials.jsonl: 2 x trials lines, in coact_plot's format, one base + one cand per trial
        rows = self.trials(out)
        self.assertEqual(len(rows), 12)
        for r in rows:
            self.assertEqual(r["type"], "trial")
            self.assertEqual(r["metric"], "ping_pong.msgs_per_s")
            self.assertIsInstance(r["value"], float)
        for t in range(1, 7):
            pair = [r for r in rows if r["trial"] == t]
            self.assertEqual(sorted(r["variant"] for r in pair), ["base", "cand"])
            self.assertEqual(sorted(r["pos"] for r in pair), [0, 1])
        base = [r for r in rows if r["variant"] == "base"]
        self.assertTrue(all(r["env"] == "COACT_FAKE_SPEED=1000000" for r in base))
        # balanced order: each block of two pairs has one AB and one BA
        firsts = [r["variant"] for r in rows if r["pos"] == 0]
        for i in range(0, 6, 2):
            self.assertNotEqual(firsts[i], firsts[i + 1])
        # interleaved: the file alternates pair by pair
        self.assertEqual([r["trial"] for r in rows], [t for t in range(1, 7) for _ in (0, 1)])
        # human table on stderr and in summary.txt; JSON in summary.jsonl
        self.assertRegex(p.stderr, r"ping_pong\s+6\s+.*\+(19|20|21)\.\d\d%.*faster")
        with open(os.path.join(out, "summary.jsonl")) as f:
            self.assertEqual(json.loads(f.read())["verdict"], "faster")
        self.assertTrue(os.path.exists(os.path.join(out, "summary.txt")))

    def test_slower_and_per_workload_lines(self):
        p, out, ss = self.run_pc("COACT_FAKE_SPEED=1000000", "COACT_FAKE_SPEED=800000",
                                 ["--trials", "5", "--workloads", "ping_pong,thread_ring"])
        self.assertOk(p)
        self.assertEqual([s["workload"] for s in ss], ["ping_pong", "thread_ring"])
        for s in ss:
            self.assertEqual(s["verdict"], "slower")
            self.assertAlmostEqual(s["median_delta_pct"], -20.0, delta=1.5)
        self.assertEqual(len(self.trials(out)), 2 * 5 * 2)

    def test_aa_run_is_no_change(self):
        # --aa ignores PERF_CAND_ENV: both variants run with the base env
        p, out, (s,) = self.run_pc("COACT_FAKE_SPEED=1000000", "COACT_FAKE_SPEED=1200000",
                                   ["--aa", "--trials", "6", "--workloads", "fan_out"])
        self.assertOk(p)
        self.assertEqual(s["verdict"], NO_CHANGE)
        self.assertTrue(s["aa"])
        self.assertLess(abs(s["median_delta_pct"]), 1.0)
        self.assertIn("aa_spread_pct", s)
        rows = self.trials(out)
        self.assertEqual(len(rows), 12)
        self.assertTrue(all(r["env"] == "COACT_FAKE_SPEED=1000000" for r in rows))

    def test_consistent_delta_below_floor_is_no_change(self):
        # 1% faster with no jitter: the CI excludes 0, but 1% < the 2% floor
        env = {"COACT_FAKE_JITTER_PPM": "0"}
        p, _, (s,) = self.run_pc("COACT_FAKE_SPEED=1000000", "COACT_FAKE_SPEED=1010000",
                                 ["--trials", "5", "--workloads", "ping_pong"], env)
        self.assertOk(p)
        self.assertTrue(s["ci_excludes_zero"])
        self.assertEqual(s["verdict"], NO_CHANGE)
        self.assertIn("noise floor", s["reason"])
        # with a 0.5% floor the same data is a change
        p, _, (s,) = self.run_pc("COACT_FAKE_SPEED=1000000", "COACT_FAKE_SPEED=1010000",
                                 ["--trials", "5", "--workloads", "ping_pong",
                                  "--noise-floor", "0.5"], env)
        self.assertOk(p)
        self.assertEqual(s["verdict"], "faster")

    def test_aa_from_raises_the_floor(self):
        aa = os.path.join(self.tmp.name, "aa-summary.jsonl")
        with open(aa, "w") as f:
            f.write(json.dumps({"workload": "ping_pong", "aa": True, "aa_spread_pct": 25.0,
                                "n": 100, "workers": 2}) + "\n")
        p, _, (s,) = self.run_pc("COACT_FAKE_SPEED=1000000", "COACT_FAKE_SPEED=1200000",
                                 ["--trials", "5", "--workloads", "ping_pong", "--aa-from", aa])
        self.assertOk(p)
        self.assertEqual(s["noise_floor_pct"], 25.0)
        self.assertIn("A/A", s["noise_floor_source"])
        self.assertEqual(s["verdict"], NO_CHANGE)

    # ---- environment ------------------------------------------------------------------

    def test_variant_env_applies_on_top_of_current_environment(self):
        # base sets nothing: it gets the ambient COACT_FAKE_SPEED; cand overrides it
        p, _, (s,) = self.run_pc("", "COACT_FAKE_SPEED=1200000",
                                 ["--trials", "5", "--workloads", "ping_pong"],
                                 {"COACT_FAKE_SPEED": "1000000", "COACT_FAKE_WARN": "1"})
        self.assertOk(p)
        self.assertEqual(s["verdict"], "faster")
        self.assertAlmostEqual(s["base_median"], 1e6, delta=1e4)
        self.assertIn("ambient COACT_*", p.stderr)
        self.assertIn("set only for cand", p.stderr)
        self.assertIn("program warning: coact: warning: unknown environment key", p.stderr)

    def test_bad_env_entries_error_naming_them(self):
        cases = [
            ("PERF_CAND_ENV", "COACT_FAKE_SPEED=1 SPIN_WINDOW=5", "SPIN_WINDOW=5"),
            ("PERF_CAND_ENV", "COACT_FAKE_SPEED", "COACT_FAKE_SPEED"),
            ("PERF_BASE_ENV", "COACT_X=", "COACT_X="),
            ("PERF_BASE_ENV", "coact_x=1", "coact_x=1"),
        ]
        for var, value, entry in cases:
            with self.subTest(var=var, value=value):
                base = value if var == "PERF_BASE_ENV" else ""
                cand = value if var == "PERF_CAND_ENV" else ""
                p, out, _ = self.run_pc(base, cand, ["--workloads", "ping_pong"])
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(var, p.stderr)
                self.assertIn(f"'{entry}'", p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertFalse(os.path.exists(os.path.join(out, "trials.jsonl")))

    # ---- failures and usage -----------------------------------------------------------

    def test_failed_trial_exits_nonzero_naming_it_and_keeps_trials(self):
        counter = os.path.join(self.tmp.name, "counter")
        p, out, _ = self.run_pc("COACT_FAKE_SPEED=1000000", "COACT_FAKE_SPEED=1200000",
                                ["--trials", "5", "--workloads", "fan_out"],
                                {"COACT_FAKE_COUNTER": counter, "COACT_FAKE_FAIL_AT": "3"})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"FAILED: fan_out: (base|cand) trial 2/5: exit status 7")
        self.assertIn("fake: failing on purpose", p.stderr)
        self.assertEqual(len(self.trials(out)), 2)   # the first pair is kept
        self.assertEqual(p.stdout, "")

    def test_usage_errors(self):
        for args, what in [(["--trials", "4"], "--trials"),
                           (["--workloads", "ping_pong,nope"], "nope"),
                           (["--bogus"], "--bogus"),
                           (["--workloads", "skynet", "--n", "1234"], "power of 10")]:
            with self.subTest(args=args):
                p, _, _ = self.run_pc("", "", args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(what, p.stderr)

    def test_refuses_to_append_to_an_earlier_run(self):
        p, out, _ = self.run_pc("", "", ["--aa", "--trials", "5", "--workloads", "ping_pong"])
        self.assertOk(p)
        p2 = subprocess.run([SCRIPT, "--out", out, "--base-bin", self.fake, "--aa",
                             "--trials", "5", "--workloads", "ping_pong"],
                            capture_output=True, text=True, timeout=60)
        self.assertEqual(p2.returncode, 2)
        self.assertIn("already holds trials.jsonl", p2.stderr)
        self.assertEqual(len(self.trials(out)), 10)

    def test_plot(self):
        p, out, (s,) = self.run_pc("COACT_FAKE_SPEED=1000000", "COACT_FAKE_SPEED=1200000",
                                   ["--trials", "5", "--workloads", "ping_pong", "--plot"])
        self.assertOk(p)
        png = os.path.join(out, "compare.png")
        self.assertTrue(os.path.exists(png))
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main()
