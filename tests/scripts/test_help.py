#!/usr/bin/python3
"""Every script answers --help without building anything, and an argument
mistake exits 2 with one line naming the fix."""

import os
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPTS = ["run.sh", "bench.sh", "perf-compare.sh", "test.sh", "readme-run.sh", "perfdoc.sh", "bootstrap.sh",
           "slurm-sweep.sh", "profile-kv.sh"]
MISTAKES = [
    ("run.sh", ["--duration", "5"], "did you mean --seconds"),
    ("run.sh", ["--out"], "--out needs a value"),
    ("bench.sh", ["--quik"], "did you mean --quick?"),
    ("bench.sh", ["peer"], "unknown group 'peer' (known: runtime peers timers burst scaling slowmode instructions sampling kv)"),
    ("bench.sh", [], "no group given"),
    ("bench.sh", ["peers", "--", "--benchmark_filter=x"], "only for group(s) runtime"),
    ("perf-compare.sh", ["--trails", "5"], "did you mean --trials?"),
    ("perf-compare.sh", ["./prog", "--flag"], "a command goes after `--`"),
    ("test.sh", ["--no-tsna"], "expected --no-tsan or --help"),
    ("readme-run.sh", ["--base", "HEAD"], "did you mean --base-rev REV?"),
    ("readme-run.sh", ["--max-load", "low"], "want a number such as 0.3"),
    ("readme-run.sh", ["--base-rev", "no-such-rev"], "is not a commit of"),
    ("readme-run.sh", ["--out"], "--out needs a value"),
    ("bootstrap.sh", ["--libary"], "unknown argument '--libary' (expected --library or nothing)"),
    ("slurm-sweep.sh", ["--shard", "4", "--", "true"], "unknown option '--shard': did you mean --shards?"),
    ("slurm-sweep.sh", ["--shards", "0", "--", "true"], "--shards '0': expected an integer in 1..1000"),
    ("slurm-sweep.sh", ["./prog"], "the program and its arguments come after --"),
    ("slurm-sweep.sh", ["--shards", "4"], "no program given"),
    ("profile-kv.sh", ["--secs", "5"], "unknown argument '--secs' (expected --seconds S"),
    ("profile-kv.sh", ["--seconds", "x"], "--seconds 'x': expected a whole number"),
    ("profile-kv.sh", ["--seconds", "5"], "a sweep needs at least 10 s"),
]


class HelpTest(unittest.TestCase):
    def run_script(self, name, args):
        with tempfile.TemporaryDirectory() as d:
            build = os.path.join(d, "build")
            env = dict(os.environ, COACT_BENCH_BUILD_DIR=build, PATH="/usr/bin:/bin")
            p = subprocess.run([os.path.join(ROOT, "scripts", name), *args], env=env,
                               capture_output=True, text=True, timeout=60, cwd=d)
            self.assertFalse(os.path.exists(build), f"{name} {args} created a build directory")
            return p

    def test_help(self):
        for name in SCRIPTS:
            with self.subTest(script=name):
                p = self.run_script(name, ["--help"])
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("sage", p.stdout)          # Usage / usage
                self.assertNotIn("==", p.stderr)         # no build/bootstrap step started

    def test_mistakes_name_the_fix(self):
        for name, args, what in MISTAKES:
            with self.subTest(script=name, args=args):
                p = self.run_script(name, args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(what, p.stderr)


if __name__ == "__main__":
    unittest.main()
