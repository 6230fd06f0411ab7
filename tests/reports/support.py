"""Shared helpers of the tests in tests/reports (not a test module itself).

It provides:

* ROOT (the repository), REPORTS (reports/), FIXTURES (tests/reports/fixtures)
  and COACT_PLOT (reports/coact_plot.py);
* run_cli(*args): `coact_plot.py ARGS` in a child interpreter (sys.executable),
  its output captured as text;
* read(path): a file's text (UTF-8);
* alive(pid): whether a process runs (a zombie, waiting for its reaper,
  does not);
* TempDirCase: a TestCase with a fresh temporary directory, self.tmp, for each
  test, and self.write(name, data) to put a file in it.

This module is the ONE place the tests put reports/ on the import path, so
that `from coact_reports import ...` and `import coact_plot` work in them; it
does so once, when first imported (and only if reports/ is not there yet).
The installed tools and the scripts do it through their own launchers
(coact-plot, coact-perf-compare), not through this. A child interpreter that a
test starts with `-c CODE` builds its own path (test_bad_input's GuardedTest).

The test files import it as a top-level module (`import support` / `from
support import ...`): unittest's discovery puts tests/reports on sys.path
(`discover -s tests/reports -t tests/reports`, or `discover -s .` from
tests/reports), and `python3 -m unittest test_x` is run from tests/reports.
"""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REPORTS = os.path.join(ROOT, "reports")
FIXTURES = os.path.join(HERE, "fixtures")
COACT_PLOT = os.path.join(REPORTS, "coact_plot.py")

if REPORTS not in sys.path:
    sys.path.insert(0, REPORTS)


def run_cli(*args, env=None, cwd=ROOT, timeout=120):
    """Run `coact_plot.py ARGS` with this interpreter, in cwd (None: the current
    directory), with env (None: this process's environment); returns the
    subprocess.CompletedProcess, stdout and stderr captured as text."""
    return subprocess.run([sys.executable, COACT_PLOT, *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout, env=env)


def alive(pid):
    """Whether pid runs (a zombie, waiting for its reaper, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def read(path):
    """The text of the file at path, read as UTF-8."""
    with open(path, encoding="utf-8") as f:
        return f.read()


class TempDirCase(unittest.TestCase):
    """A TestCase with a temporary directory, self.tmp, made for each test and
    removed after it."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, data):
        """Write data (bytes as they are, str as UTF-8) to name under self.tmp,
        making its directories (name may be "sub/file"); returns the path."""
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(data, bytes):
            with open(path, "wb") as f:
                f.write(data)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(data)
        return path
