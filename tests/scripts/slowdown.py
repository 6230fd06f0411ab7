#!/usr/bin/python3
"""slowdown.py FRACTION CMD ARGS...: runs CMD and keeps it stopped FRACTION of
the wall time (SIGSTOP / SIGCONT to its process, a 20 ms period), so it takes
about 1 / (1 - FRACTION) times as long: a planted slowdown for testing
perf-compare (`--cand-prefix "tests/scripts/slowdown.py 0.1"`). The shim stays
in CMD's process group, so a timeout that kills the group kills both. Exit
status: CMD's (128 + N if a signal N ended it)."""

import os
import signal
import subprocess
import sys
import time

PERIOD_S = 0.020


def main(argv):
    if len(argv) < 2:
        print("usage: slowdown.py FRACTION CMD ARGS...", file=sys.stderr)
        return 2
    try:
        frac = float(argv[0])
    except ValueError:
        frac = -1
    if not 0 <= frac < 1:
        print(f"slowdown.py: FRACTION '{argv[0]}': want a number in [0, 1)", file=sys.stderr)
        return 2
    p = subprocess.Popen(argv[1:])
    stop_s, run_s = frac * PERIOD_S, (1 - frac) * PERIOD_S
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, f: (p.send_signal(signal.SIGCONT), p.send_signal(s)))
    while p.poll() is None:
        time.sleep(run_s)
        if stop_s > 0 and p.poll() is None:
            p.send_signal(signal.SIGSTOP)
            time.sleep(stop_s)
            p.send_signal(signal.SIGCONT)
    rc = p.returncode
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
