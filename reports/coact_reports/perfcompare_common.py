"""perf-compare's shared vocabulary: the name its messages use, its stderr
message line, the two failure kinds and the exit statuses they stand for,
and the metrics it measures itself.

Every perfcompare_* module raises Usage or Failure and writes through log();
only perfcompare.main turns them into exit statuses (2 and 1).
"""

from __future__ import annotations

import sys

# The name in every message and in --help: "perf-compare.sh" from the source
# tree, "coact-perf-compare" installed (perfcompare.main sets it).
PROG = "perf-compare.sh"

BUILTIN_METRICS = ("wall_s", "max_rss_kb")     # measured here, lower is better


def set_prog(installed: bool) -> None:
    """Names the tool in messages: the installed command or the script."""
    global PROG
    PROG = "coact-perf-compare" if installed else "perf-compare.sh"


class Usage(Exception):
    """A usage error: one line naming the argument and the fix; exit 2."""


class Failure(Exception):
    """A trial, build or analysis failed; exit 1."""


def log(msg: str) -> None:
    """One progress or diagnostic line on stderr, "PROG: msg"."""
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)
