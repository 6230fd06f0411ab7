"""perf-compare: A/B a knob or a build on any command, with paired,
interleaved trials and a verdict that refuses to call noise a change.

This module is the command line: the --help text, parsing and validating
the arguments (every mistake a Usage error, exit 2, before anything is built
or run) and main, which maps the outcome to the exit status. The command
line is scripts/perf-compare.sh (which runs this module with Debian's
/usr/bin/python3) and the installed coact-perf-compare; `--help` documents
it, and the statistics are in perfstats.py (one implementation with the
`compare` plot). The other parts, one mechanism each:
  perfcompare_common   the name in messages, log(), Usage / Failure
  perfcompare_builds   the programs of the two sides; builds (scripts/lib.sh)
  perfcompare_env      the environment sampled around each trial
  perfcompare_runner   trials: processes, metrics, pair order, ETA
  perfcompare_report   per-metric statistics, verdict, JSON line, table, plot
  perfcompare_session  one run end to end: signals, meta.json, groups

Three ways to say what runs:
  peers    (no command): coact-peers --workload W --n N --workers W, metric
           <W>.msgs_per_s from its last JSON line (higher is better).
  command  (-- CMD ARGS...): any program; metrics from its JSON output
           (--metric KEY, a dotted path, several), else its wall time and
           max RSS (lower is better).
  gbench   (--gbench BIN): a Google Benchmark binary run with
           --benchmark_format=json; one metric per benchmark name (time per
           iteration in ns, lower is better).
Builds (the default coact-peers, --base-rev/--cand-rev worktrees) are done by
scripts/lib.sh, called after the arguments are checked.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from datetime import datetime
from typing import List, Optional, Sequence

from . import perfcompare_common as common
from . import perfstats as ps
from .perfcompare_builds import resolve_programs
from .perfcompare_common import BUILTIN_METRICS, Failure, Usage, log
from .perfcompare_runner import Runner
from .perfcompare_session import run

PEER_WORKLOADS = ("ping_pong", "fan_out", "thread_ring", "skynet")
ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

USAGE = """\
usage: scripts/perf-compare.sh [options] [-- CMD ARGS...]
       PERF_BASE_ENV="K=V ..." PERF_CAND_ENV="K=V ..." scripts/perf-compare.sh ...

A/B comparison in balanced random pairs of fresh processes; one JSON summary
line per metric on stdout, the table and progress on stderr.

What runs (one of):
  (nothing)              the peers benchmark, coact-peers (built in build/release if
                         missing): --workloads, --n, --workers apply
  -- CMD ARGS...         any command; PERF_BASE_ENV / PERF_CAND_ENV are added to its
                         environment
  --gbench BIN [-- ARGS] a Google Benchmark binary (ARGS go to it, e.g.
                         --benchmark_filter=BM_spawn); one metric per benchmark

Options:
  --trials N             pairs (default 10, minimum 5)
  --warmup N             runs of each side before the trials, not recorded (default 0):
                         page cache, CPU frequency and lazily built state settle first
  --metric KEY           (command) the number at dotted path KEY in the command's JSON
                         output (its whole stdout, else its last JSON-object line);
                         repeatable. Default: wall_s and max_rss_kb, measured here
                         (also accepted as KEYs)
  --lower-is-better KEY  KEY is better when lower (latency, seconds); repeatable.
                         wall_s, max_rss_kb and gbench times are lower-is-better
  --gbench-field F       real_time (default) or cpu_time
  --base-bin PATH, --cand-bin PATH
                         the program for that side (replaces CMD, BIN or coact-peers)
  --base-prefix WORDS, --cand-prefix WORDS
                         words put before that side's command (e.g. 'nice -n 5')
  --base-args WORDS, --cand-args WORDS
                         words appended to that side's command (a program's own flag as
                         the knob: --base-args '--compressors 4' --cand-args '--compressors 8')
  --base-rev REV --cand-rev REV
                         build each revision in its own git worktree under
                         build/perf-compare/revs/ (cached by commit) and run its
                         program: CMD / BIN / coact-peers, a path relative to the
                         build directory (e.g. examples/dedup/coact-dedup)
  --target T             cmake target to build for --*-rev (default: the program's name)
  --workloads W1,W2      (peers) subset of ping_pong,fan_out,thread_ring,skynet
  --n N, --workers W     (peers) workload size (default 1000000), workers (default 2)
  --aa                   A/A: cand runs exactly as base (base env, prefix, program)
  --noise-floor PCT      fixed part of the noise floor, percent (default 2)
  --aa-from DIR|FILE     an earlier --aa run: its A/A spread per metric raises the floor
  --outlier-k K          report trials more than K robust SDs from their side's median
                         (default 3)
  --env-load-margin L    withhold the verdict if the sides' mean load averages differ
                         by more than L (default 1.0)
  --ignore-env           give a verdict even if the environment differs (it is still
                         recorded and reported)
  --out DIR              output directory (default build/perf-compare/<time>-<pid>)
  --plot                 also write OUT/compare.png
  --seed S               pair-order seed (default from the clock; recorded)
  --timeout-s S          seconds before a trial counts as hung (default 300)
  -h, --help             this text

Verdict per metric: "faster" / "slower" (better / worse in the metric's direction)
only if the bootstrap 95% CI of the median paired relative delta excludes 0 AND
|median| > the noise floor; else "no change (within noise)"; "no verdict: REASON"
if the environment differs or a base value is 0. Exit status: 0 done, 1 a trial,
build or plot failed, 2 usage error, 130 interrupted. Details: reports/README.md.
"""

OPTIONS_WITH_VALUE = ("--trials", "--warmup", "--metric", "--lower-is-better", "--gbench", "--gbench-field",
                      "--base-bin", "--cand-bin", "--base-prefix", "--cand-prefix",
                      "--base-args", "--cand-args", "--base-rev", "--cand-rev", "--target", "--workloads", "--n",
                      "--workers", "--noise-floor", "--aa-from", "--outlier-k",
                      "--env-load-margin", "--out", "--seed", "--timeout-s")
FLAGS = ("--aa", "--plot", "--ignore-env", "-h", "--help")


def _suggest(opt: str) -> str:
    close = difflib.get_close_matches(opt, OPTIONS_WITH_VALUE + FLAGS, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else "; see --help"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parses argv (everything after the first `--` is the command). Raises
    Usage naming the fix; prints USAGE and exits 0 on --help."""
    argv = list(argv)
    command: List[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1:]
    if "-h" in argv or "--help" in argv:
        prog = common.PROG
        sys.stdout.write(USAGE if prog == "perf-compare.sh" else USAGE.replace("scripts/perf-compare.sh", prog))
        sys.exit(0)
    a = argparse.Namespace(
        trials="10", warmup="0", metrics=[], lower=[], gbench=None, gbench_field="real_time",
        base_bin=None, cand_bin=None, base_prefix="", cand_prefix="", base_args="",
        cand_args="", base_rev=None,
        cand_rev=None, target=None, workloads=None, n=None, workers="2",
        noise_floor="2", aa_from=None, outlier_k=str(ps.DEFAULT_OUTLIER_K),
        env_load_margin=str(ps.DEFAULT_LOAD_MARGIN), out=None, seed=None,
        timeout_s="300", aa=False, plot=False, ignore_env=False, command=command)
    dest = {o: o.lstrip("-").replace("-", "_") for o in OPTIONS_WITH_VALUE}
    dest.update({"--metric": "metrics", "--lower-is-better": "lower"})
    i = 0
    while i < len(argv):
        arg = argv[i]
        opt, eq, val = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if opt in ("--aa", "--plot", "--ignore-env"):
            if eq:
                raise Usage(f"{opt} takes no value (got '{arg}')")
            setattr(a, opt[2:].replace("-", "_"), True)
            i += 1
            continue
        if opt in OPTIONS_WITH_VALUE:
            if not eq:
                if i + 1 >= len(argv):
                    raise Usage(f"option {opt} needs a value (see --help)")
                val = argv[i + 1]
                i += 1
            i += 1
            if opt in ("--metric", "--lower-is-better"):
                getattr(a, dest[opt]).extend(v for v in val.split(",") if v)
            else:
                setattr(a, dest[opt], val)
            continue
        if arg.startswith("-"):
            raise Usage(f"unknown argument '{arg}'{_suggest(opt)}")
        raise Usage(f"unexpected argument '{arg}': a command goes after `--` "
                    f"({common.PROG} [options] -- CMD ARGS...)")
    return a


def _uint(name: str, text: str, lo: int, hi: int, want: str) -> int:
    if not re.fullmatch(r"[0-9]+", text or "") or not lo <= int(text) <= hi:
        raise Usage(f"{name} '{text}': want {want}")
    return int(text)


def _number(name: str, text: str, want: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise Usage(f"{name} '{text}': want {want}") from None
    if not math.isfinite(x) or x < 0:
        raise Usage(f"{name} '{text}': want {want}")
    return x


def parse_env(name: str, coact_only: bool) -> List[str]:
    """PERF_BASE_ENV / PERF_CAND_ENV: space-separated KEY=VALUE entries."""
    entries, keys = [], set()
    for e in os.environ.get(name, "").split():
        if "=" not in e:
            raise Usage(f"{name}: bad entry '{e}': not KEY=VALUE (want space-separated "
                        "KEY=VALUE entries, e.g. COACT_SPIN_WINDOW_US=50)")
        key, value = e.split("=", 1)
        if coact_only and not key.startswith("COACT_"):
            raise Usage(f"{name}: bad entry '{e}': key '{key}' does not start with COACT_ "
                        "(only coact's own knobs can be compared on the peers benchmark)")
        if coact_only and not re.fullmatch(r"COACT_[A-Z0-9_]+", key):
            raise Usage(f"{name}: bad entry '{e}': key '{key}' is not of the form "
                        "COACT_[A-Z0-9_]+")
        if not ENV_KEY.match(key):
            raise Usage(f"{name}: bad entry '{e}': '{key}' is not an environment variable name")
        if value == "":
            raise Usage(f"{name}: bad entry '{e}': empty value for {key}")
        if key in keys:
            raise Usage(f"{name}: bad entry '{e}': {key} is set twice")
        keys.add(key)
        entries.append(e)
    return entries


def check_args(a: argparse.Namespace, root: str) -> None:
    """Validates and normalizes everything before anything is built or run."""
    a.mode = "gbench" if a.gbench else ("command" if a.command else "peers")
    if a.gbench and not a.gbench.strip():
        raise Usage("--gbench needs the path of a Google Benchmark binary")
    a.trials = _uint("--trials", a.trials, 5, 100000,
                     "an integer >= 5 (fewer pairs cannot give a usable CI)")
    a.warmup = _uint("--warmup", a.warmup, 0, 1000, "an integer in 0..1000 (runs of each side)")
    a.workers = _uint("--workers", a.workers, 1, 1024, "an integer in 1..1024")
    a.timeout_s = _uint("--timeout-s", a.timeout_s, 1, 86400, "an integer in 1..86400")
    a.noise_floor = _number("--noise-floor", a.noise_floor,
                            "a number of percent >= 0 (e.g. 2 or 1.5)")
    a.outlier_k = _number("--outlier-k", a.outlier_k, "a number > 0 (e.g. 3)")
    if a.outlier_k == 0:
        raise Usage("--outlier-k '0': want a number > 0 (e.g. 3)")
    a.env_load_margin = _number("--env-load-margin", a.env_load_margin,
                                "a load-average difference >= 0 (e.g. 1.0)")
    if a.seed is None:
        a.seed = (time.time_ns() ^ os.getpid()) % 2147483647
    else:
        a.seed = _uint("--seed", a.seed, 0, 2147483647, "an integer in 0..2147483647")
    if a.gbench_field not in ("real_time", "cpu_time"):
        raise Usage(f"--gbench-field '{a.gbench_field}': want real_time or cpu_time")
    if a.mode == "peers":
        a.n = _uint("--n", a.n, 1, 10 ** 15, "a positive integer") if a.n else 1000000
        a.workloads_list = list(PEER_WORKLOADS)
        if a.workloads is not None:
            wl = a.workloads.split(",")
            if not any(wl):
                raise Usage("--workloads: empty list")
            for w in wl:
                if w not in PEER_WORKLOADS:
                    raise Usage(f"--workloads: unknown workload '{w}' "
                                f"(known: {' '.join(PEER_WORKLOADS)})")
            if len(set(wl)) != len(wl):
                raise Usage(f"--workloads: a workload is given twice ('{a.workloads}')")
            a.workloads_list = wl
        if "skynet" in a.workloads_list and not re.fullmatch(r"10*", str(a.n)):
            raise Usage(f"--n {a.n}: skynet needs a power of 10 (the number of leaves)")
        if a.metrics or a.lower:
            raise Usage("--metric / --lower-is-better apply to a command (-- CMD ARGS...); "
                        "the peers benchmark's metric is msgs_per_s")
    else:
        for opt, val in (("--workloads", a.workloads), ("--n", a.n)):
            if val is not None:
                raise Usage(f"{opt} is for the peers benchmark; with a command, pass the "
                            "program's own arguments after `--`")
    if a.mode == "gbench" and (a.metrics or a.lower):
        raise Usage("--metric / --lower-is-better do not apply to --gbench (every benchmark "
                    "is a metric, time per iteration, lower is better); use "
                    "--benchmark_filter=REGEX after `--` to choose benchmarks")
    if a.mode == "command":
        a.metrics = a.metrics or list(BUILTIN_METRICS)
        if len(set(a.metrics)) != len(a.metrics):
            raise Usage(f"--metric: a metric is given twice ({', '.join(a.metrics)})")
        unknown = [k for k in a.lower if k not in a.metrics]
        if unknown:
            raise Usage(f"--lower-is-better {unknown[0]}: not one of the metrics "
                        f"({', '.join(a.metrics)}); add --metric {unknown[0]}")
    if (a.base_rev is None) != (a.cand_rev is None):
        raise Usage("--base-rev and --cand-rev go together (give both)")
    if a.base_rev is not None and (a.base_bin or a.cand_bin):
        raise Usage("--base-rev/--cand-rev choose the programs; drop --base-bin/--cand-bin")
    for opt in ("base_prefix", "cand_prefix", "base_args", "cand_args"):
        try:
            setattr(a, opt + "_words", shlex.split(getattr(a, opt)))
        except ValueError as e:
            raise Usage(f"--{opt.replace('_', '-')} '{getattr(a, opt)}': {e} (quote words "
                        "as in a shell)") from None
    if (a.base_args or a.cand_args) and a.mode == "peers":
        raise Usage("--base-args/--cand-args apply to a command or --gbench; coact-peers "
                    "takes its arguments from --workloads, --n, --workers")
    coact_only = a.mode == "peers"
    a.base_env = parse_env("PERF_BASE_ENV", coact_only)
    a.cand_env = parse_env("PERF_CAND_ENV", coact_only)
    if a.aa:
        if os.environ.get("PERF_CAND_ENV"):
            log(f"--aa: ignoring PERF_CAND_ENV ('{os.environ['PERF_CAND_ENV']}'); "
                "both variants use PERF_BASE_ENV")
        if a.cand_bin or a.cand_prefix or a.cand_args or a.cand_rev:
            log("--aa: ignoring --cand-bin/--cand-prefix/--cand-args/--cand-rev; cand runs "
                "as base")
        a.cand_env, a.cand_bin = list(a.base_env), a.base_bin
        a.cand_prefix_words, a.cand_rev = list(a.base_prefix_words), a.base_rev
        a.cand_args_words = list(a.base_args_words)
    for opt in ("base_bin", "cand_bin"):
        p = getattr(a, opt)
        if p is not None:
            if not (os.path.isfile(p) and os.access(p, os.X_OK)):
                raise Usage(f"--{opt.replace('_', '-')} '{p}': not an executable file")
            setattr(a, opt, os.path.abspath(p))
    if a.aa_from is not None and not os.path.exists(a.aa_from):
        raise Usage(f"--aa-from '{a.aa_from}': no such file or directory (want an earlier "
                    "--aa run's OUT directory or its summary.jsonl)")
    for opt in ("base_rev", "cand_rev"):
        rev = getattr(a, opt)
        if rev is not None:
            r = subprocess.run(["git", "-C", root, "rev-parse", "--verify", "--quiet",
                                rev + "^{commit}"], capture_output=True, text=True)
            if r.returncode != 0:
                raise Usage(f"--{opt.replace('_', '-')} '{rev}': not a commit of {root}")
            setattr(a, opt + "_sha", r.stdout.strip())


def main(argv: Optional[Sequence[str]] = None, root: Optional[str] = None,
         installed: bool = False) -> int:
    """scripts/perf-compare.sh passes the source tree as root. The installed
    launcher (coact-perf-compare) passes installed=True: no source tree, so
    the peers benchmark and --base-rev/--cand-rev (which build from it) are
    refused, and the default --out is under the current directory."""
    root = root or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    common.set_prog(installed)
    try:
        a = parse_args(sys.argv[1:] if argv is None else argv)
        if installed:
            if not a.command and not a.gbench:
                raise Usage("give the command to compare after `--` (or --gbench BIN): the peers "
                            "benchmark is run from a coact source tree (scripts/perf-compare.sh)")
            if a.base_rev is not None or a.cand_rev is not None:
                raise Usage("--base-rev/--cand-rev build revisions of a coact source tree: run "
                            "scripts/perf-compare.sh there (installed, compare two binaries with "
                            "--base-bin/--cand-bin)")
            root = os.getcwd()
        check_args(a, root)
        base_dir = os.path.join(root, "perf-compare") if installed else os.path.join(root, "build", "perf-compare")
        out = os.path.abspath(a.out or os.path.join(base_dir, datetime.now().strftime("%Y%m%d-%H%M%S") +
                                                    f"-{os.getpid()}"))
        tf = os.path.join(out, "trials.jsonl")
        if os.path.exists(tf) and os.path.getsize(tf) > 0:
            raise Usage(f"--out '{out}' already holds trials.jsonl (from an earlier run); "
                        "choose another --out or remove it")
        resolve_programs(a, root)
        # Only now, so that a usage error (a program that is not there) leaves no directory.
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise Usage(f"--out '{out}': cannot create the directory ({e.strerror})")
    except Usage as e:
        log(str(e))
        return 2
    except Failure as e:
        log(str(e))
        return 1
    for name in ("trials.jsonl", "summary.jsonl", "stderr.log", "stdout.log"):
        open(os.path.join(out, name), "w").close()
    runner = Runner(a, root, out)
    try:
        return run(a, root, out, runner)
    finally:
        shutil.rmtree(runner.tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
