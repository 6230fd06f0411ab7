#!/usr/bin/python3
"""Tests of scripts/perf-compare.sh on any command, on Google Benchmark
suites and on two revisions (the peers mode: test_perf_compare.py).

Fakes (written to a temp dir):
  fake-app    prints {"rate": RATE, "latency": {"p99_us": LAT}} with a jitter
              of +-0.2%; FAKE_SLEEP sleeps first; with FAKE_COUNTER=FILE the
              FAKE_OUTLIER_AT-th run of that side prints 3 x RATE (an outlier);
              FAKE_NOJSON=1 prints no JSON; `--rate R` overrides FAKE_RATE.
  fake-gbench prints the Google Benchmark JSON file GB_FIXTURE with every
              real_time times GB_SCALE; fails unless run with
              --benchmark_format=json.
Run: /usr/bin/python3 -m unittest discover -s tests/scripts
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "perf-compare.sh")
FIX = os.path.join(ROOT, "tests", "reports", "fixtures")
NO_CHANGE = "no change (within noise)"

FAKE_APP = r"""#!/usr/bin/python3
import json, os, random, time
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
import sys
rate = float(os.environ.get("FAKE_RATE", "1000"))
if "--rate" in sys.argv:
    rate = float(sys.argv[sys.argv.index("--rate") + 1])
lat = float(os.environ.get("FAKE_LAT", "50"))
c = os.environ.get("FAKE_COUNTER")
if c:
    n = int(open(c).read()) + 1 if os.path.exists(c) else 1
    open(c, "w").write(str(n))
    if n == int(os.environ.get("FAKE_OUTLIER_AT", "0")):
        rate *= 3
j = lambda: 1 + random.uniform(-0.002, 0.002)
print("working...")
if not os.environ.get("FAKE_NOJSON"):
    print(json.dumps({"rate": rate * j(), "latency": {"p99_us": lat * j()}}))
"""

FAKE_GBENCH = r"""#!/usr/bin/python3
import json, os, random, sys
if "--benchmark_format=json" not in sys.argv:
    sys.exit("fake-gbench: expected --benchmark_format=json")
doc = json.load(open(os.environ["GB_FIXTURE"]))
scale = float(os.environ.get("GB_SCALE", "1"))
for b in doc["benchmarks"]:
    b["real_time"] *= scale * (1 + random.uniform(-0.002, 0.002))
print(json.dumps(doc, indent=1))
"""


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="perf-compare-any.")
        cls.app = cls.write_exe("fake-app", FAKE_APP)
        cls.gbench = cls.write_exe("fake-gbench", FAKE_GBENCH)
        cls.count = 0

    @classmethod
    def write_exe(cls, name, text):
        p = os.path.join(cls.tmp.name, name)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, 0o755)
        return p

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def pc(self, args, base_env="", cand_env="", extra_env=None, script=SCRIPT, timeout=180):
        type(self).count += 1
        out = os.path.join(self.tmp.name, f"out{self.count}")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("COACT_", "FAKE_", "GB_"))}
        env.update(PERF_BASE_ENV=base_env, PERF_CAND_ENV=cand_env)
        env.update(extra_env or {})
        p = subprocess.run([script, "--out", out, "--seed", "7", *args], env=env,
                           capture_output=True, text=True, timeout=timeout)
        rows = [json.loads(x) for x in p.stdout.splitlines()] if p.returncode == 0 else []
        return p, out, {r["metric"]: r for r in rows}


class CommandTest(Base):
    def test_json_metrics_with_directions(self):
        p, out, rows = self.pc(["--trials", "5", "--metric", "rate", "--metric", "latency.p99_us",
                                "--lower-is-better", "latency.p99_us", "--", self.app],
                               "FAKE_RATE=1000 FAKE_LAT=50", "FAKE_RATE=1200 FAKE_LAT=40")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(rows), ["latency.p99_us", "rate"])
        r, lat = rows["rate"], rows["latency.p99_us"]
        self.assertEqual((r["direction"], r["verdict"]), ("higher_is_better", "faster"))
        self.assertAlmostEqual(r["median_delta_pct"], 20, delta=1)
        # latency fell 20%: better for a lower-is-better metric, so "faster"
        self.assertEqual((lat["direction"], lat["verdict"]), ("lower_is_better", "faster"))
        self.assertAlmostEqual(lat["median_delta_pct"], -20, delta=1)
        for row in rows.values():
            self.assertEqual(row["outliers"], [])
            self.assertEqual(set(row["environment"]), {"base", "cand"})
            self.assertEqual(row["environment"]["base"]["trials"], 5)
            self.assertIsNone(row["environment_differs"])
        self.assertRegex(p.stderr, r"latency\.p99_us\s+5\s.*faster \(lower is better\)")
        with open(os.path.join(out, "trials.jsonl")) as f:
            trials = [json.loads(x) for x in f]
        self.assertEqual(len(trials), 2 * 5 * 2)      # two metrics per process
        self.assertTrue(all(t["max_rss_kb"] and t["wall_s"] > 0 for t in trials))

    def test_warmup_runs_are_run_not_recorded_and_an_eta_is_shown(self):
        counter = os.path.join(self.tmp.name, "warmup-counter")
        p, out, rows = self.pc(["--trials", "5", "--warmup", "2", "--metric", "rate", "--", self.app],
                               "FAKE_RATE=1000", "FAKE_RATE=1000", extra_env={"FAKE_COUNTER": counter})
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(counter) as f:
            self.assertEqual(int(f.read()), 2 * (5 + 2))  # every process ran, warm-ups included
        with open(os.path.join(out, "trials.jsonl")) as f:
            self.assertEqual(len(f.readlines()), 2 * 5)  # only the trials are recorded
        self.assertEqual(rows["rate"]["environment"]["base"]["trials"], 5)
        self.assertEqual(p.stderr.count("warm-up"), 4, p.stderr)
        self.assertRegex(p.stderr, r"trial 1/5: rate=.*, about \d+(m\d\ds|s) left")
        for bad in ("-1", "x", "1001"):
            q, _, _ = self.pc(["--warmup", bad, "--", self.app])
            self.assertEqual(q.returncode, 2)
            self.assertIn(f"--warmup '{bad}'", q.stderr)

    def test_wall_time_and_rss_without_metric(self):
        p, _, rows = self.pc(["--trials", "5", "--", self.app], "FAKE_SLEEP=0.02",
                             "FAKE_SLEEP=0.6 FAKE_NOJSON=1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(rows), ["max_rss_kb", "wall_s"])
        self.assertEqual(rows["wall_s"]["verdict"], "slower")
        self.assertEqual(rows["wall_s"]["direction"], "lower_is_better")
        # +0.58 s on a ~0.1-1 s Python start-up (slower on a loaded machine)
        self.assertGreater(rows["wall_s"]["median_delta_pct"], 25)
        # the max RSS is the program's (a Python interpreter: 5-60 MB), not the runner's
        self.assertGreater(rows["max_rss_kb"]["base_median"], 3000)
        self.assertLess(rows["max_rss_kb"]["base_median"], 60000)

    def test_outlier_trial_reported_in_table_and_json(self):
        counter = os.path.join(self.tmp.name, "outlier-counter")
        p, _, rows = self.pc(["--trials", "8", "--metric", "rate", "--", self.app],
                             "FAKE_RATE=1000", f"FAKE_RATE=1000 FAKE_COUNTER={counter} "
                             "FAKE_OUTLIER_AT=3")
        self.assertEqual(p.returncode, 0, p.stderr)
        (o,) = rows["rate"]["outliers"]
        self.assertEqual((o["variant"], o["trial"]), ("cand", 3))
        self.assertAlmostEqual(o["value"], 3000, delta=20)
        self.assertIn("3 x 1.4826 x MAD", rows["rate"]["outlier_rule"])
        self.assertRegex(p.stderr, r"cand#3=(29|30)\d\d")
        self.assertEqual(rows["rate"]["verdict"], NO_CHANGE)   # the median is not dragged

    def test_environment_differs_withholds_the_verdict(self):
        c1 = os.path.join(self.tmp.name, "cal1.json")
        c2 = os.path.join(self.tmp.name, "cal2.json")
        for path, text in ((c1, '{"a":1}'), (c2, '{"a":2}')):
            with open(path, "w") as f:
                f.write(text)
        args = ["--trials", "5", "--metric", "rate", "--", self.app]
        p, _, rows = self.pc(args, f"FAKE_RATE=1000 COACT_CALIBRATION_FILE={c1}",
                             f"FAKE_RATE=1300 COACT_CALIBRATION_FILE={c2}")
        self.assertEqual(p.returncode, 0, p.stderr)
        v = rows["rate"]["verdict"]
        self.assertTrue(v.startswith("no verdict: environment differs: calibration file"), v)
        p, _, rows = self.pc(["--ignore-env"] + args, f"FAKE_RATE=1000 COACT_CALIBRATION_FILE={c1}",
                             f"FAKE_RATE=1300 COACT_CALIBRATION_FILE={c2}")
        self.assertEqual(rows["rate"]["verdict"], "faster")
        self.assertIn("environment differs", rows["rate"]["environment_differs"])

    def test_per_side_arguments(self):
        p, _, rows = self.pc(["--trials", "5", "--metric", "rate", "--base-args", "--rate 1000",
                              "--cand-args", "--rate 900", "--", self.app])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(rows["rate"]["verdict"], "slower")
        self.assertAlmostEqual(rows["rate"]["median_delta_pct"], -10, delta=0.5)
        self.assertIn("fake-app --rate 900", p.stderr)

    def test_missing_metric_fails_naming_it(self):
        p, out, _ = self.pc(["--trials", "5", "--metric", "latency.p50_us", "--", self.app])
        self.assertEqual(p.returncode, 1)
        self.assertIn("--metric latency.p50_us: no key 'p50_us' at latency", p.stderr)

    def test_aa_is_no_change(self):
        p, _, rows = self.pc(["--aa", "--trials", "6", "--metric", "rate", "--", self.app],
                             "FAKE_RATE=1000", "FAKE_RATE=2000")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(rows["rate"]["verdict"], NO_CHANGE)
        self.assertTrue(rows["rate"]["aa"])


class GbenchTest(Base):
    def test_names_compared_units_converted_one_sided_warned(self):
        p, out, rows = self.pc(["--trials", "5", "--plot", "--gbench", self.gbench, "--",
                                "--benchmark_filter=."],
                               f"GB_FIXTURE={FIX}/gbench_base.json",
                               f"GB_FIXTURE={FIX}/gbench_cand.json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(rows), ["BM_send", "BM_spawn/64"])
        self.assertRegex(p.stderr, r"ran on base only.*BM_only_base")
        self.assertRegex(p.stderr, r"ran on cand only.*BM_only_cand")
        send = rows["BM_send"]
        self.assertEqual(send["direction"], "lower_is_better")
        self.assertAlmostEqual(send["base_median"], 121, delta=1)
        self.assertAlmostEqual(send["cand_median"], 110, delta=1)
        self.assertEqual(send["verdict"], "faster")            # 9% less time per iteration
        self.assertEqual(rows["BM_spawn/64"]["verdict"], NO_CHANGE)
        self.assertTrue(os.path.getsize(os.path.join(out, "compare.png")) > 0)

    def test_planted_slowdown_detected(self):
        fx = f"GB_FIXTURE={FIX}/gbench_cand.json"
        p, _, rows = self.pc(["--trials", "5", "--gbench", self.gbench], fx, fx + " GB_SCALE=1.1")
        self.assertEqual(p.returncode, 0, p.stderr)
        for name in ("BM_send", "BM_spawn/64", "BM_only_cand"):
            self.assertEqual(rows[name]["verdict"], "slower", name)
            self.assertAlmostEqual(rows[name]["median_delta_pct"], 10, delta=1)

    def test_no_name_in_common_is_an_error(self):
        only = os.path.join(self.tmp.name, "only.json")
        with open(only, "w") as f:
            json.dump({"benchmarks": [{"name": "BM_other", "real_time": 1, "time_unit": "ns"}]}, f)
        p, _, _ = self.pc(["--trials", "5", "--gbench", self.gbench],
                          f"GB_FIXTURE={FIX}/gbench_base.json", f"GB_FIXTURE={only}")
        self.assertEqual(p.returncode, 1)
        self.assertIn("no benchmark name in common", p.stderr)
        self.assertIn("BM_other", p.stderr)


class UsageTest(Base):
    def test_help_builds_nothing(self):
        p = subprocess.run([SCRIPT, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0)
        self.assertIn("-- CMD ARGS...", p.stdout)
        self.assertEqual(p.stderr, "")

    def test_mistakes_name_the_fix(self):
        cases = [(["sleep", "1"], "a command goes after `--`"),
                 (["--metrc", "x", "--", "true"], "did you mean --metric?"),
                 (["--trials", "5", "--lower-is-better", "lat", "--", "true"],
                  "add --metric lat"),
                 (["--base-rev", "HEAD", "--", "true"], "--base-rev and --cand-rev go together"),
                 (["--base-rev", "no-such-rev", "--cand-rev", "HEAD", "--", "true"],
                  "not a commit"),
                 (["--workloads", "ping_pong", "--", "true"], "after `--`"),
                 (["--", "./no/such/program"], "not an executable file"),
                 (["--gbench-field", "wall"], "real_time or cpu_time"),
                 (["--trials"], "needs a value")]
        for args, what in cases:
            with self.subTest(args=args):
                p, out, _ = self.pc(args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(what, p.stderr)
                self.assertFalse(os.path.exists(out), "a usage error leaves no output directory")


class RevisionTest(Base):
    """--base-rev/--cand-rev on a tiny CMake project in its own git repository
    (perfcompare.main(root=...), with scripts/lib.sh copied in)."""

    def test_two_revisions_built_in_worktrees_and_cached(self):
        repo = os.path.join(self.tmp.name, "repo")
        os.makedirs(os.path.join(repo, "scripts"))
        shutil.copy(os.path.join(ROOT, "scripts", "lib.sh"), os.path.join(repo, "scripts"))

        def commit(rate):
            with open(os.path.join(repo, "CMakeLists.txt"), "w") as f:
                f.write("cmake_minimum_required(VERSION 3.16)\nproject(t C)\n"
                        "add_executable(prog prog.c)\n")
            with open(os.path.join(repo, "prog.c"), "w") as f:
                f.write('#include <stdio.h>\nint main(void) { printf("{\\"rate\\": %d}\\n", '
                        f"{rate}); return 0; }}\n")
            subprocess.run(["git", "-C", repo, "add", "-A"], check=True)
            subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t",
                            "commit", "-qm", f"rate {rate}"], check=True)
        subprocess.run(["git", "init", "-q", repo], check=True)
        with open(os.path.join(repo, ".gitignore"), "w") as f:
            f.write("build/\n")
        commit(1000)
        commit(1250)
        runner = (f"import sys; sys.path.insert(0, {os.path.join(ROOT, 'reports')!r}); "
                  "from coact_reports.perfcompare import main; "
                  f"sys.exit(main(sys.argv[1:], root={repo!r}))")
        script = os.path.join(self.tmp.name, "pc-rev")
        with open(script, "w") as f:
            f.write(f"#!/bin/sh\nexec /usr/bin/python3 -c {json.dumps(runner)} \"$@\"\n")
        os.chmod(script, 0o755)
        args = ["--trials", "5", "--base-rev", "HEAD~1", "--cand-rev", "HEAD", "--metric", "rate",
                "--", "prog"]
        p, _, rows = self.pc(args, script=script, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(rows["rate"]["verdict"], "faster")
        self.assertAlmostEqual(rows["rate"]["median_delta_pct"], 25.0, delta=0.01)
        revs = os.path.join(repo, "build", "perf-compare", "revs")
        self.assertEqual(len(os.listdir(revs)), 2)
        p, _, rows = self.pc(args, script=script, timeout=600)     # cached: no checkout
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.count("reusing"), 2)
        self.assertNotIn("configuring", p.stderr)


if __name__ == "__main__":
    unittest.main()
