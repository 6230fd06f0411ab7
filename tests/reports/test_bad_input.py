#!/usr/bin/python3
"""What `coact-plot` says about bad input and about its own bugs, and help
and docs that match the behaviour (found by a new-user check):

* a file that is not a profile at all (text, a binary, another tool's JSON)
  was called an "empty" profile (or a data error, exit 1); it is "not a
  coact or Coz profile", naming the file and its first line that is not a
  record, exit 2. An empty file is still an empty profile;
* util.guarded turned every ValueError, a bug included, into exit 2 as if it
  were a usage error: bad options stay exit 2, a bug is an "internal error",
  exit 3 with its traceback (not 1, a data error, which validate reads as no curve);
* `profile --help` did not say that a directory is accepted; the
  coact-profile README called the default fit "a quadratic".

Run with Debian's interpreter:

    cd tests/reports && /usr/bin/python3 -m unittest discover -s .
"""

import io
import os
import re
import shutil
import subprocess
import sys
import unittest
from contextlib import redirect_stderr
from unittest import mock

from support import FIXTURES, REPORTS, ROOT, TempDirCase, run_cli

from coact_reports import estimate, profile, util

TOY_COZ = os.path.join(FIXTURES, "toy.coz")
TRIALS = os.path.join(FIXTURES, "trials.jsonl")


class NotAProfileTest(TempDirCase):
    CASES = (
        ("text.coz", "The quick brown fox\njumps over the lazy dog\n", 1),
        ("words.coz", "hello\nworld\n", 1),                 # record-like words were "empty"
        ("cut.coz", "lorem ipsum dolor", 1),                 # no newline: was skipped as "truncated"
        ("later.coz", "\n\n  \nsome notes\n", 4),            # blank lines are not offending
        ("png.coz", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01", 1),
        ("bin.coz", bytes(range(256)) * 4, 1),
        ("other.jsonl", '{"variant":"base","trial":0,"metric":"m","value":1}\n', 1),
    )

    def test_cli_says_not_a_profile_naming_file_and_line_exit_2(self):
        for name, data, line in self.CASES:
            p = self.write(name, data)
            for cmd in ("profile", "estimate"):
                with self.subTest(name=name, cmd=cmd):
                    r = run_cli(cmd, p, "-o", os.path.join(self.tmp, "x.png")) if cmd == "profile" \
                        else run_cli(cmd, p)
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertEqual(r.stdout, "")
                    self.assertEqual(r.stderr.count("\n"), 1, r.stderr)      # one line
                    self.assertIn(f"error: {p}:{line}: not a coact or Coz profile (line {line},",
                                  r.stderr)
                    self.assertNotIn("empty", r.stderr)
                    self.assertNotIn("truncated", r.stderr)
                    self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.png")))

    def test_another_tools_file_from_the_fixtures(self):
        r = run_cli("profile", TRIALS)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"{TRIALS}:1: not a coact or Coz profile", r.stderr)

    def test_parser_raises_not_a_profile_error(self):
        p = self.write("junk.coz", "hello\nThe quick brown fox\n")
        with self.assertRaises(profile.NotAProfileError) as cm:
            profile.parse_profile(p)
        self.assertEqual((cm.exception.path, cm.exception.lineno), (p, 1))
        self.assertIsInstance(cm.exception, profile.ProfileError)    # callers catching it still do

    def test_empty_file_is_still_an_empty_profile(self):
        for name, text in (("empty.coz", ""), ("blank.coz", "\n\n")):
            p = self.write(name, text)
            r = run_cli("profile", p)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(f"{p}: profile is empty", r.stderr)

    def test_a_profile_with_a_bad_line_is_still_a_data_error(self):
        # A record first, then junk: a damaged profile (exit 1, its line), not "not a profile".
        with open(TOY_COZ) as f:
            text = f.read()
        p = self.write("damaged.coz", text.replace("runtime\t", "garbage here\n", 1))
        r = run_cli("profile", p)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, re.escape(p) + r":\d+: not a profile record")
        # Unknown record types before the first known one are still ignored.
        p = self.write("future.coz", "future-record\tx=1\n" + text)
        self.assertEqual(run_cli("profile", p).returncode, 0)


class GuardedTest(unittest.TestCase):
    def call(self, exc, env=None):
        def fn():
            raise exc
        err = io.StringIO()
        with mock.patch.dict(os.environ, env or {}, clear=False), redirect_stderr(err):
            rc = util.guarded("coact-plot", fn)
        return rc, err.getvalue()

    def test_internal_value_error_is_exit_3_with_its_traceback(self):
        rc, err = self.call(ValueError("math domain error"))
        self.assertEqual(rc, util.INTERNAL_ERROR_EXIT)
        self.assertEqual(rc, 3)
        self.assertIn("Traceback (most recent call last)", err)
        last = err.splitlines()[-1]
        self.assertIn("coact-plot: internal error", last)
        self.assertIn("ValueError: math domain error", last)

    def test_bad_input_and_data_errors_keep_their_status(self):
        for exc, rc_want in ((util.UsageError("--top must be >= 0"), 2),
                             (profile.NotAProfileError("not a coact or Coz profile", "f", 1), 2),
                             (profile.ProfileError("profile is empty", "f"), 1),
                             (profile.TrialsError("no pair", "t"), 1),
                             (OSError("disk full"), 1)):
            with self.subTest(exc=exc):
                rc, err = self.call(exc)
                self.assertEqual(rc, rc_want, err)
                self.assertTrue(err.startswith("coact-plot: error: "), err)
                self.assertEqual(err.count("\n"), 1, err)

    def test_cli_bug_is_an_internal_error_not_a_usage_error(self):
        # A ValueError from inside the estimator (a bug), through the real entry point.
        # Run from reports/: `python3 -c` puts the current directory on the import path.
        code = ("import sys\n"
                "from coact_reports import cli, estimate\n"
                "def boom(*a, **k): raise ValueError('operands could not be broadcast')\n"
                "cli.analyze = boom\n"
                "sys.exit(cli.main(['profile', %r]))\n") % (TOY_COZ,)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           cwd=REPORTS)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("internal error", r.stderr)
        self.assertIn("Traceback", r.stderr)

    def test_bad_options_are_still_usage_errors(self):
        for args in (("profile", TOY_COZ, "--rank-at", "2"),
                     ("profile", TOY_COZ, "--top", "-1"),
                     ("profile", TOY_COZ, "-o", "curves.jpg"),
                     ("estimate", TOY_COZ, "--at", "25")):
            with self.subTest(args=args):
                r = run_cli(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertTrue(r.stderr.startswith("coact_plot.py: error: "), r.stderr)
                self.assertNotIn("internal", r.stderr)


class HelpAndDocsTest(TempDirCase):
    def test_profile_help_names_the_directory_form_and_it_works(self):
        for cmd in ("profile", "estimate"):
            r = run_cli(cmd, "--help")
            self.assertEqual(r.returncode, 0, r.stderr)
            text = " ".join(r.stdout.split())
            self.assertIn("or a directory (its *.jsonl files, else its *.coz files", text, cmd)
        d = os.path.join(self.tmp, "sweep")
        os.makedirs(d)
        shutil.copy(TOY_COZ, d)
        by_dir, by_file = run_cli("profile", d, "--json"), run_cli("profile", TOY_COZ, "--json")
        self.assertEqual(by_dir.returncode, 0, by_dir.stderr)
        self.assertEqual(by_dir.stdout.replace(os.path.join(d, "toy.coz"), TOY_COZ), by_file.stdout)

    def test_docs_describe_the_fit_as_the_estimator_does(self):
        # estimate.py: a line through the origin, or a bend at a knee kept by an F test.
        self.assertRegex(estimate.__doc__, r"F\s+statistic")
        with open(os.path.join(ROOT, "tools", "coact-profile", "README.md")) as f:
            readme = f.read()
        para = readme[readme.index("2. Predicted speedup at *r*"):readme.index("3. Actual speedup")]
        self.assertIn("F test", para)
        self.assertIn("line y = b·s", para)
        for sentence in re.split(r"(?<=[.;])\s", " ".join(para.split())):
            if "quadratic" in sentence:          # only as what the bend does better than
                self.assertIn("instead", sentence)
        with open(os.path.join(REPORTS, "README.md")) as f:
            reports = f.read()
        self.assertNotIn("quadratic", reports)
        row = next(l for l in reports.splitlines() if l.startswith("| `--fit auto"))
        self.assertIn("a line through the origin, or a concave bend when an F test prefers it", row)


if __name__ == "__main__":
    unittest.main()
