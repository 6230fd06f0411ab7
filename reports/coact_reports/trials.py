"""The one trial runner of the benchmark tools: scripts/bench.sh's groups
(bench_groups, bench_costs) and perf-compare (perfcompare_runner) run every
trial through it.

It provides:

* child_environ(): this process's environment less the COACT_BENCH_* knobs
  (and any other names given), plus extra entries: what a benchmark program
  runs with, so coact's tuning resolver never sees the tools' own knobs;
* Runner: runs one program at a time as a fresh process in its own session
  (a timeout or an interrupt ends its whole process group), with a wall-clock
  limit; Runner.trial also checks its exit status and returns its last JSON
  line; Runner.kill ends the running child (for signal handlers);
* last_json(): the last line of a program's stdout as a JSON object;
* the trial orders: alternating (each round runs every side once, in the
  given order), rotating (the first side of round t moves by one each
  round), pair_orders (perf-compare's balanced AB/BA blocks, which first
  drawn at random) and abba (the same blocks in a fixed order: AB BA BA AB).

A trial that cannot start, runs past its limit, exits non-zero or prints no
JSON line raises TrialFailed, whose message starts with the trial's name
(the caller's `what`, e.g. "peers/ping_pong: coact trial 2/3"). The runner
itself writes nothing to stderr; the child's stderr goes where the caller
says (inherited by default).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

KNOB_PREFIX = "COACT_BENCH_"

# Where a child's stream goes: captured (returned as text), inherited from
# this process, or discarded.
CAPTURE, INHERIT, DISCARD = "capture", "inherit", "discard"


class TrialFailed(Exception):
    """A trial failed; the message names it and says how (one or more lines)."""


@dataclass
class Finished:
    """One finished (or ended) run: its exit status (negative: the signal
    that ended it), whether the limit ended it, its wall time in seconds and
    its captured output (None where not captured)."""
    rc: int
    timed_out: bool
    wall_s: float
    stdout: Optional[str]
    stderr: Optional[str]


def child_environ(extra: Optional[Dict[str, str]] = None, drop: Iterable[str] = ()) -> Dict[str, str]:
    """This process's environment without COACT_BENCH_* and the names in
    `drop`, updated with `extra`."""
    drop = set(drop)
    env = {k: v for k, v in os.environ.items() if not k.startswith(KNOB_PREFIX) and k not in drop}
    env.update(extra or {})
    return env


def last_json(stdout: Optional[str]) -> Optional[dict]:
    """The last line of `stdout` (trailing blank lines ignored) parsed as a
    JSON object, or None if it is not one."""
    lines = (stdout or "").rstrip().splitlines()
    if not lines:
        return None
    line = lines[-1].strip()
    if not (line.startswith("{") and line.endswith("}")):
        return None
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def alternating(trials: int, sides: Sequence[str]) -> List[Tuple[int, str]]:
    """(trial, side) for trials 1..trials, each round running every side
    once in the order given: a, b, c, a, b, c, ..."""
    return [(t, side) for t in range(1, trials + 1) for side in sides]


def rotating(trials: int, sides: Sequence[str]) -> List[Tuple[int, str]]:
    """(trial, side) for trials 1..trials, round t running the sides from
    sides[t % len(sides)] on: every side takes each position in turn."""
    n = len(sides)
    return [(t, sides[(i + t) % n]) for t in range(1, trials + 1) for i in range(n)]


def balanced_pairs(trials: int, a: str, b: str, block_starts_with_a) -> List[tuple]:
    """`trials` pairs of sides a and b in blocks of two pairs, one AB and one
    BA: block_starts_with_a() is asked once per block (before its first
    pair) whether that block runs AB first. A side that runs first gains
    or loses the same in every block, so it cancels within each block."""
    out, first = [], a
    for t in range(trials):
        if t % 2 == 0:
            first = a if block_starts_with_a() else b
        else:
            first = b if first == a else a
        out.append((first, b if first == a else a))
    return out


def pair_orders(trials: int, seed: int) -> List[tuple]:
    """Balanced random order of base/cand pairs (perf-compare's): blocks of
    two pairs, one AB and one BA, which comes first drawn from the seed."""
    rng = random.Random(seed)
    return balanced_pairs(trials, "cand", "base", lambda: rng.random() < 0.5)


def abba(trials: int, a: str, b: str) -> List[tuple]:
    """The fixed balanced order of a/b pairs: (a, b), (b, a), (b, a), (a, b),
    (a, b), (b, a), ... (balanced_pairs with the blocks starting AB and BA
    in turn; the burst group's on/off pairs)."""
    starts = itertools.cycle((True, False))
    return balanced_pairs(trials, a, b, lambda: next(starts))


class Runner:
    """Runs trials one at a time. Not thread-safe; kill() may be called from
    a signal handler of the thread that runs them."""

    def __init__(self) -> None:
        self.child: Optional[subprocess.Popen] = None

    def run(self, argv: Sequence[str], what: str, limit_s: float, env: Optional[Dict[str, str]] = None,
            stdout=CAPTURE, stderr=INHERIT) -> Finished:
        """Runs argv (env: child_environ() when None) until it exits or
        limit_s seconds pass (then its process group gets SIGTERM, SIGKILL
        after 2 s, and run waits for the program's exit). stdout / stderr: CAPTURE, INHERIT, DISCARD or an open
        file (stderr also subprocess.STDOUT). Raises TrialFailed only when
        the program cannot start; an exception here (KeyboardInterrupt)
        ends the child first."""
        env = child_environ() if env is None else env
        files = []
        try:
            streams = []
            for s in (stdout, stderr):
                if s == CAPTURE:
                    f = tempfile.TemporaryFile("w+")
                    files.append(f)
                    streams.append(f)
                elif s == INHERIT:
                    streams.append(None)
                elif s == DISCARD:
                    streams.append(subprocess.DEVNULL)
                else:
                    streams.append(s)
            t0 = time.monotonic()
            try:
                self.child = subprocess.Popen(list(argv), stdout=streams[0], stderr=streams[1],
                                              env=env, start_new_session=True)
            except OSError as e:
                raise TrialFailed(f"{what}: cannot start {argv[0]}: {e.strerror}")
            # This thread blocks in wait4 (no polling, so the runner takes no
            # CPU from the program it measures, and the wall time is exact); a
            # timer thread ends the process group at the limit.
            expired = threading.Event()
            timer = threading.Timer(limit_s, self._expire, (self.child.pid, expired))
            timer.daemon = True
            timer.start()
            try:
                try:
                    _, status, _ = os.wait4(self.child.pid, 0)
                    self.child.returncode = os.waitstatus_to_exitcode(status)
                except ChildProcessError:  # reaped by kill() from a signal handler
                    pass
                rc = self.child.returncode if self.child.returncode is not None else -9
            except BaseException:
                self.kill()
                raise
            finally:
                timer.cancel()
            wall = time.monotonic() - t0
            timed_out = expired.is_set()
            if timed_out:
                timer.join()  # what is left of the group (the child is gone) is ended too
            self.child = None
            out = []
            for s, f in ((stdout, files[0] if stdout == CAPTURE else None),
                         (stderr, files[-1] if stderr == CAPTURE else None)):
                if f is None:
                    out.append(None)
                else:
                    f.seek(0)
                    out.append(f.read())
            return Finished(rc, timed_out, wall, out[0], out[1])
        finally:
            for f in files:
                f.close()

    @staticmethod
    def _end_group(pgid: int, child: Optional[subprocess.Popen] = None) -> None:
        """SIGTERM to the process group, then SIGKILL after 2 s if any of it
        is left (a member that ignores SIGTERM), and up to 1 s more for it
        to be gone. With `child`, also reaps it
        (its returncode set); without, reaping stays with run()."""
        try:
            os.killpg(pgid, signal.SIGTERM)
            for _ in range(200):
                if child is not None and child.returncode is None:
                    pid, status, _ = os.wait4(child.pid, os.WNOHANG)
                    if pid:
                        child.returncode = os.waitstatus_to_exitcode(status)
                os.killpg(pgid, 0)  # ProcessLookupError once the group is gone
                time.sleep(0.01)
            os.killpg(pgid, signal.SIGKILL)
            for _ in range(100):  # SIGKILL takes effect soon after, not at once
                time.sleep(0.01)
                os.killpg(pgid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        if child is not None and child.returncode is None:
            try:
                os.wait4(child.pid, 0)
            except ChildProcessError:
                pass
            child.returncode = -9

    def _expire(self, pgid: int, expired: threading.Event) -> None:
        """The limit passed (timer thread): the process group is ended."""
        expired.set()
        self._end_group(pgid)

    def kill(self) -> None:
        """Ends the running child's process group, if a child runs (SIGTERM,
        then SIGKILL after 2 s for what is left of it), and reaps the child."""
        c = self.child
        if c is None:
            return
        # Also after the child's exit (reaped, the limit's group ending still
        # under way): members of its group may be left.
        self._end_group(c.pid, c if c.returncode is None else None)

    def trial(self, argv: Sequence[str], what: str, limit_s: float, env: Optional[Dict[str, str]] = None,
              watchdog_s: Optional[float] = None, detail: str = "", want_json: bool = True,
              stdout=CAPTURE, stderr=INHERIT) -> Tuple[Optional[dict], Finished]:
        """run(), then checks the outcome; returns (its last JSON line as a
        dict, or None without want_json; the Finished). Raises TrialFailed:
        "WHAT hung: not done after Ws (DETAIL)" when watchdog_s is given and
        the program's watchdog fired (exit 3) or the limit ended it; "WHAT
        timed out after Ls (DETAIL)" for the limit otherwise; "WHAT failed
        (exit N, DETAIL)"; "WHAT printed no JSON line (got 'LINE')"."""
        fin = self.run(argv, what, limit_s, env, stdout=stdout, stderr=stderr)
        note = f" ({detail})" if detail else ""
        if watchdog_s is not None and (fin.timed_out or fin.rc == 3):
            raise TrialFailed(f"{what} hung: not done after {watchdog_s:g}s{note}")
        if fin.timed_out:
            raise TrialFailed(f"{what} timed out after {limit_s:g}s{note}")
        if fin.rc != 0:
            how = f"exit {fin.rc}" if fin.rc > 0 else f"killed by signal {-fin.rc}"
            raise TrialFailed(f"{what} failed ({how}{', ' + detail if detail else ''})")
        if not want_json:
            return None, fin
        doc = last_json(fin.stdout)
        if doc is None:
            last = ((fin.stdout or "").rstrip().splitlines() or [""])[-1]
            raise TrialFailed(f"{what} printed no JSON line (got '{last[:200]}')")
        return doc, fin
