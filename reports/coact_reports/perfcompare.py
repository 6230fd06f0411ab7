"""perf-compare: A/B a knob or a build on any command, with paired,
interleaved trials and a verdict that refuses to call noise a change.

The command line is scripts/perf-compare.sh (which runs this module with
Debian's /usr/bin/python3); `perf-compare.sh --help` documents it, and the
statistics are in perfstats.py (one implementation with the `compare` plot).

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
scripts/lib.sh, called from here after the arguments are checked.
"""

from __future__ import annotations

import argparse
import difflib
import glob
import hashlib
import json
import math
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import datetime
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import perfstats as ps
from .profile import ProfileWarning

PROG = "perf-compare.sh"
PEER_WORKLOADS = ("ping_pong", "fan_out", "thread_ring", "skynet")
BUILTIN_METRICS = ("wall_s", "max_rss_kb")     # measured here, lower is better
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
DEFAULT_PEERS_BIN = "build/release/bench/peers/coact-peers"
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


class Usage(Exception):
    """A usage error: one line naming the argument and the fix; exit 2."""


class Failure(Exception):
    """A trial, build or analysis failed; exit 1."""


def log(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Arguments
# --------------------------------------------------------------------------

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
        sys.stdout.write(USAGE if PROG == "perf-compare.sh" else USAGE.replace("scripts/perf-compare.sh", PROG))
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
                    f"({PROG} [options] -- CMD ARGS...)")
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


# --------------------------------------------------------------------------
# Programs and builds
# --------------------------------------------------------------------------

def _lib(root: str, *args: str) -> str:
    """Runs a scripts/lib.sh function; its stderr (cmake's output) passes
    through, the last stdout line is returned."""
    r = subprocess.run(["bash", "-c", 'source "$1"; shift; "$@"', "lib",
                        os.path.join(root, "scripts", "lib.sh"), *args],
                       stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise Failure(f"{args[0]} {' '.join(args[1:])} failed (see the output above)")
    return r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""


def resolve_programs(a: argparse.Namespace, root: str) -> None:
    """Sets a.base_program / a.cand_program (absolute paths), building what
    is needed: the default coact-peers, or each --*-rev in its worktree."""
    if a.mode == "peers":
        rel = "bench/peers/coact-peers"
    elif a.mode == "gbench":
        rel = a.gbench
    else:
        rel = a.command[0]
    if a.base_rev is not None:
        if os.path.isabs(rel):
            raise Usage(f"with --base-rev/--cand-rev the program '{rel}' must be a path "
                        "relative to the build directory (e.g. examples/dedup/coact-dedup)")
        target = a.target or os.path.basename(rel)
        for side in ("base", "cand"):
            sha = getattr(a, side + "_rev_sha")
            log(f"{side}: revision {getattr(a, side + '_rev')} = {sha[:12]}; building {target}")
            bdir = _lib(root, "coact_rev_build", root, sha, target)
            prog = os.path.join(bdir, rel)
            if not os.access(prog, os.X_OK):
                raise Failure(f"{side}: built {target} at {sha[:12]}, but {prog} is missing "
                              "(is the program path relative to the build directory?)")
            setattr(a, side + "_program", prog)
        return
    if a.mode == "peers":
        default = os.path.join(root, DEFAULT_PEERS_BIN)
        if (a.base_bin is None or a.cand_bin is None) and not os.access(default, os.X_OK):
            log(f"{default} is missing; building it")
            _lib(root, "coact_build", os.path.join(root, "build", "release"), "Release",
                 "coact-peers")
            if not os.access(default, os.X_OK):
                raise Failure(f"built coact-peers, but {default} is still missing")
    else:
        default = rel if os.sep in rel else (_which(rel) or rel)
        if os.sep in rel and not os.access(rel, os.X_OK) and \
                (a.base_bin is None or a.cand_bin is None):
            what = "--gbench" if a.mode == "gbench" else "the command"
            raise Usage(f"{what} '{rel}': not an executable file")
        if os.sep not in rel and not _which(rel) and (a.base_bin is None or a.cand_bin is None):
            raise Usage(f"the command '{rel}' is not found on PATH (give a path)")
        default = os.path.abspath(default) if os.sep in default else default
    a.base_program = a.base_bin or default
    a.cand_program = a.cand_bin or default


def _which(name: str) -> Optional[str]:
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


# --------------------------------------------------------------------------
# Environment
# --------------------------------------------------------------------------

def _read(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _cpu_model() -> Optional[str]:
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.startswith("model name") or line.startswith("Model"):
            return line.split(":", 1)[1].strip()
    return None


def calibration_path(env: Dict[str, str]) -> Optional[str]:
    """The calibration file coact would read with this environment (same
    order as calibrate/src/calibration_file.cpp)."""
    if env.get("COACT_CALIBRATION_FILE"):
        return env["COACT_CALIBRATION_FILE"]
    if env.get("XDG_CACHE_HOME"):
        return os.path.join(env["XDG_CACHE_HOME"], "coact", "calibration.json")
    if env.get("HOME"):
        return os.path.join(env["HOME"], ".cache", "coact", "calibration.json")
    return None


def _calibration(env: Dict[str, str]) -> dict:
    path = calibration_path(env)
    if path is None:
        return {"path": None}
    try:
        with open(path, "rb") as f:
            return {"path": path, "sha256": hashlib.sha256(f.read()).hexdigest()[:16]}
    except OSError:
        return {"path": path, "sha256": None}


def _freq_mhz() -> Optional[float]:
    xs = []
    for p in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq"):
        t = _read(p)
        if t and t.strip().isdigit():
            xs.append(int(t) / 1000)
    if not xs:
        for line in (_read("/proc/cpuinfo") or "").splitlines():
            if line.startswith("cpu MHz"):
                try:
                    xs.append(float(line.split(":", 1)[1]))
                except ValueError:
                    pass
    return round(sum(xs) / len(xs), 1) if xs else None


def _governor() -> Optional[str]:
    govs = {(_read(p) or "").strip() for p in
            glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")}
    govs.discard("")
    return ",".join(sorted(govs)) if govs else None


def _load1() -> Optional[float]:
    t = _read("/proc/loadavg")
    return float(t.split()[0]) if t else None


def sample_environment(env: Dict[str, str]) -> dict:
    """What is recorded before each trial (load1_after is added after it)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    return {"cpu_model": _cpu_model(), "cores": cores, "governor": _governor(),
            "freq_mhz": _freq_mhz(), "calibration": _calibration(env),
            "load1_before": _load1()}


# --------------------------------------------------------------------------
# Running trials
# --------------------------------------------------------------------------

class Runner:
    def __init__(self, a: argparse.Namespace, root: str, out: str):
        self.a, self.root, self.out = a, root, out
        self.trials_file = os.path.join(out, "trials.jsonl")
        self.stderr_log = os.path.join(out, "stderr.log")
        self.stdout_log = os.path.join(out, "stdout.log")
        self.done = 0
        self.tmp = tempfile.mkdtemp(prefix="perf-compare.")
        self.child: Optional[subprocess.Popen] = None
        self.seen_warnings = set()
        self.env_samples: Dict[str, Dict[str, List[dict]]] = {}
        self.run_id = datetime.now().strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
        base = {k: v for k, v in os.environ.items()
                if k not in ("PERF_BASE_ENV", "PERF_CAND_ENV") and not k.startswith("COACT_BENCH_")}
        self.envs = {}
        for side in ("base", "cand"):
            e = dict(base)
            e.update(x.split("=", 1) for x in getattr(a, side + "_env"))
            self.envs[side] = e

    def argv(self, side: str, workload: Optional[str]) -> List[str]:
        a = self.a
        prog = getattr(a, side + "_program")
        prefix = getattr(a, side + "_prefix_words")
        if a.mode == "peers":
            rest = ["--workload", workload, "--n", str(a.n), "--workers", str(a.workers),
                    "--watchdog-s", str(a.timeout_s)]
        elif a.mode == "gbench":
            rest = ["--benchmark_format=json"] + a.command
        else:
            rest = a.command[1:]
        return prefix + [prog] + rest + getattr(a, side + "_args_words")

    def run(self, side: str, label: str, t: int, pos: int, workload: Optional[str],
            warmup: bool = False) -> dict:
        """Runs one trial (or, with warmup, the t-th warm-up run: its
        environment sample is not kept, and the caller records nothing);
        returns {"stdout", "wall_s", "max_rss_kb", "env"}."""
        a = self.a
        what = f"{label}: {side} warm-up {t}/{a.warmup}" if warmup else f"{label}: {side} trial {t}/{a.trials}"
        argv = self.argv(side, workload)
        sample = sample_environment(self.envs[side])
        # Max RSS by GNU time: a process forked from this one starts with this
        # interpreter's pages counted (~35 MB with numpy), which the kernel keeps
        # as its high-water mark; time's own fork is ~1 MB.
        rss_file = os.path.join(self.tmp, "maxrss")
        timed = [TIME, "-o", rss_file, "-f", "%M", "--"] if TIME else []
        with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
            t0 = time.monotonic()
            try:
                self.child = subprocess.Popen(timed + argv, stdout=fo, stderr=fe,
                                              env=self.envs[side], start_new_session=True)
            except OSError as e:
                raise Failure(f"FAILED: {what}: cannot start {argv[0]}: {e.strerror}")
            rc, timed_out = None, False
            limit = a.timeout_s + (30 if a.mode == "peers" else 0)
            while rc is None:
                pid, status, _ = os.wait4(self.child.pid, os.WNOHANG)
                if pid:
                    rc = os.waitstatus_to_exitcode(status)
                    self.child.returncode = rc
                    break
                if time.monotonic() - t0 > limit:
                    timed_out = True
                    self.kill_child()
                    rc = -9
                    break
                time.sleep(0.002)
            wall = time.monotonic() - t0
            self.child = None
            fo.seek(0)
            fe.seek(0)
            stdout, stderr = fo.read(), fe.read()
        sample["load1_after"] = _load1()
        max_rss_kb = None
        if TIME:
            text = (_read(rss_file) or "").strip().splitlines()
            if text and text[-1].strip().isdigit():
                max_rss_kb = int(text[-1])
            if text and text[0].startswith("Command terminated by signal") and rc >= 128:
                rc = -(rc - 128)
        if not warmup:
            self.env_samples.setdefault(label, {}).setdefault(side, []).append(sample)
        env_str = " ".join(getattr(a, side + "_env"))
        with open(self.stderr_log, "a") as f:
            f.write(f"=== {what} (pos {pos}, env '{env_str}', exit {rc}) ===\n{stderr}")
        with open(self.stdout_log, "a") as f:
            f.write(f"=== {what} ===\n{stdout}")
        for w in [x for x in stderr.splitlines() if "warning" in x.lower()][:5]:
            if (side, w) not in self.seen_warnings:
                self.seen_warnings.add((side, w))
                log(f"{side}: program warning: {w}")

        def fail(why):
            msg = [f"FAILED: {what}: {why} (command: {shlex.join(argv)}, env '{env_str}')"]
            if stderr.strip():
                msg.append("its stderr (last lines; all of it in " + self.stderr_log + "):")
                msg += ["    " + x for x in stderr.rstrip().splitlines()[-8:]]
            msg.append(f"{self.done} finished trial(s) are kept in {self.trials_file}")
            raise Failure("\n".join(msg))
        if timed_out:
            fail(f"timed out after {limit}s")
        if a.mode == "peers" and rc == 3:
            fail(f"hung: not done after {a.timeout_s}s (the program's watchdog fired)")
        if rc != 0:
            fail(f"exit status {rc}" if rc > 0 else f"killed by signal {-rc}")
        return {"stdout": stdout, "wall_s": wall, "max_rss_kb": max_rss_kb,
                "env": sample, "fail": fail, "env_str": env_str}

    def kill_child(self) -> None:
        c = self.child
        if c is not None and c.returncode is None:
            try:
                os.killpg(c.pid, signal.SIGTERM)
                for _ in range(200):
                    pid, status, _ = os.wait4(c.pid, os.WNOHANG)
                    if pid:
                        c.returncode = os.waitstatus_to_exitcode(status)
                        return
                    time.sleep(0.01)
                os.killpg(c.pid, signal.SIGKILL)
                os.wait4(c.pid, 0)
                c.returncode = -9
            except (ProcessLookupError, ChildProcessError):
                pass

    def metrics_of(self, r: dict, workload: Optional[str]) -> Dict[str, float]:
        """The trial's metric values (name -> value), or r["fail"](why)."""
        a = self.a
        if a.mode == "peers":
            doc = ps.json_output(r["stdout"].strip().splitlines()[-1] if r["stdout"].strip() else "")
            if not isinstance(doc, dict):
                last = (r["stdout"].strip().splitlines() or [""])[-1]
                r["fail"](f"printed no JSON line (last stdout line: '{last[:200]}')")
            try:
                v = ps.metric_value(doc, "msgs_per_s")
            except (KeyError, ValueError):
                r["fail"](f"its JSON line has no numeric msgs_per_s: {json.dumps(doc)[:200]}")
            if v <= 0:
                r["fail"](f"msgs_per_s is not positive ({v})")
            if doc.get("workload", workload) != workload:
                r["fail"](f"it ran workload '{doc.get('workload')}', not '{workload}'")
            r["unit"] = doc.get("unit")
            return {f"{workload}.msgs_per_s": v}
        if a.mode == "gbench":
            doc = ps.json_output(r["stdout"])
            try:
                return ps.gbench_times(doc, a.gbench_field)
            except ValueError as e:
                r["fail"](f"bad Google Benchmark output: {e}")
        out = {}
        doc = None
        for m in a.metrics:
            if m in BUILTIN_METRICS:
                if r[m] is None:
                    r["fail"](f"no {m}: /usr/bin/time (Debian package `time`) is needed to "
                              "measure the max RSS; install it, or use --metric wall_s")
                out[m] = float(r[m])
                continue
            if doc is None:
                doc = ps.json_output(r["stdout"])
                if doc is None:
                    r["fail"](f"printed no JSON (wanted --metric {m}; without --metric the "
                              "wall time and max RSS are compared)")
            try:
                out[m] = ps.metric_value(doc, m)
            except (KeyError, ValueError) as e:
                r["fail"](f"--metric {m}: {e.args[0]}")
        return out

    def record(self, side: str, t: int, pos: int, r: dict, values: Dict[str, float],
               workload: Optional[str]) -> None:
        a = self.a
        lines = []
        for metric, v in values.items():
            rec = {"type": "trial", "variant": side, "trial": t, "metric": metric, "value": v,
                   "pos": pos, "env": r["env_str"], "bin": getattr(a, side + "_program"),
                   "wall_s": round(r["wall_s"], 6), "max_rss_kb": r["max_rss_kb"],
                   "load1": r["env"]["load1_before"], "load1_after": r["env"]["load1_after"],
                   "unit": r.get("unit"), "run": self.run_id}
            if workload:
                rec.update(workload=workload, n=a.n, workers=a.workers)
            lines.append(json.dumps(rec, separators=(",", ":")) + "\n")
        with open(self.trials_file, "a") as f:       # one write: a kill keeps whole lines
            f.write("".join(lines))
        self.done += 1


# --------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------

def _sig(x: float) -> float:
    return float(f"{x:.6g}")


def aa_spread_for(aa_from: Optional[str], metric: str, workload: Optional[str],
                  meta: dict) -> Optional[float]:
    if not aa_from:
        return None
    path = os.path.join(aa_from, "summary.jsonl") if os.path.isdir(aa_from) else aa_from
    rows = []
    try:
        with open(path) as f:
            rows = [json.loads(x) for x in f if x.strip()]
    except (OSError, ValueError) as e:
        raise Failure(f"--aa-from {aa_from}: cannot read {path}: {e}")
    hits = [r for r in rows if r.get("aa") is True and
            (r.get("metric") == metric or (workload and r.get("workload") == workload))]
    if not hits:
        log(f"warning: --aa-from {path} has no A/A result for {metric}; "
            "the floor is --noise-floor alone")
        return None
    r = hits[-1]
    if workload and (r.get("n"), r.get("workers")) != (meta.get("n"), meta.get("workers")):
        log(f"warning: the A/A run for {workload} used n={r.get('n')} workers={r.get('workers')}, "
            f"this run n={meta.get('n')} workers={meta.get('workers')}")
    return float(r["aa_spread_pct"])


def analyze_metric(a, runner: Runner, meta: dict, metric: str, label: str,
                   workload: Optional[str], higher: bool) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProfileWarning)
        trials = [t for t in ps.load_trials(runner.trials_file) if t.metric == metric]
        (m,) = ps.compare_trials(trials, n_boot=10000, seed=0, source=runner.trials_file)
    floor, floor_src = a.noise_floor, "--noise-floor"
    aa_spread = aa_spread_for(a.aa_from, metric, workload, meta)
    if aa_spread is not None and aa_spread > floor:
        floor, floor_src = aa_spread, f"A/A spread ({a.aa_from})"
    samples = runner.env_samples.get(label, {})
    env = {s: ps.summarize_environment(samples.get(s, [])) for s in ("base", "cand")}
    differs = ps.environment_differs(env["base"], env["cand"], a.env_load_margin)
    v = ps.verdict(m, higher, floor, None if a.ignore_env else differs)
    outliers = []
    for side, xs in (("base", m.base), ("cand", m.cand)):
        for o in ps.find_outliers(m.trials, xs, a.outlier_k):
            outliers.append({"variant": side, **o})
    out = {"tool": "perf-compare", "run": meta["run"], "mode": a.mode}
    if workload:
        out["workload"] = workload
    out.update({
        "metric": metric, "direction": "higher_is_better" if higher else "lower_is_better",
        "verdict": v["verdict"],
        "base_median": _sig(float(np.median(m.base))),
        "cand_median": _sig(float(np.median(m.cand))),
        "median_delta_pct": v["median_delta_pct"], "ci95_pct": v["ci95_pct"],
        "ci_excludes_zero": v["ci_excludes_zero"],
        "noise_floor_pct": round(floor, 3), "noise_floor_source": floor_src,
        "reason": v["reason"], "pairs": len(m.trials),
        "outliers": outliers, "outlier_rule": f"|x - median| > {a.outlier_k:g} x 1.4826 x MAD "
                                              "of its side (mean abs. deviation x 1.2533 when "
                                              "the MAD is 0) and > 1% of the median",
        "environment": env, "environment_differs": differs,
        "aa": a.aa, "base_env": meta["base_env"], "cand_env": meta["cand_env"],
        "base_bin": meta["base_bin"], "cand_bin": meta["cand_bin"],
        "base_trials": [float(x) for x in m.base], "cand_trials": [float(x) for x in m.cand],
        "deltas_pct": [round(float(c / b - 1) * 100, 3) if b else None
                       for b, c in zip(m.base, m.cand)],
        "order_seed": a.seed, "higher_is_better": higher,
    })
    if workload:
        out.update(n=a.n, workers=a.workers)
    if aa_spread is not None:
        out["aa_from_spread_pct"] = aa_spread
    if a.aa and v["median_delta_pct"] is not None:
        out["aa_spread_pct"] = round(max(abs(v["ci95_pct"][0]), abs(v["ci95_pct"][1])), 3)
    line = json.dumps(out, separators=(",", ":"))
    print(line, flush=True)
    with open(os.path.join(runner.out, "summary.jsonl"), "a") as f:
        f.write(line + "\n")
    med = v["median_delta_pct"]
    log(f"{label if workload else metric}: base {out['base_median']:,.6g}  cand "
        f"{out['cand_median']:,.6g}  delta {'n/a' if med is None else f'{med:+.2f}%'}  "
        f"floor {floor:.2f}%  => {v['verdict'].upper()}")
    if differs:
        log(f"{metric}: {differs}" + ("" if not a.ignore_env else " (--ignore-env: verdict given)"))
    if a.aa and v["verdict"] not in (ps.NO_CHANGE,) and not v["verdict"].startswith("no verdict"):
        log(f"WARNING: the A/A run of {metric} called a change ({v['verdict']}): this box/setup "
            "is noisier than the rule assumes; use more trials or a larger --noise-floor")
    return out


def _pct(x) -> str:
    return "n/a" if x is None else f"{x:+.2f}%"


def format_table(rows: List[dict], meta: dict) -> str:
    head = ["metric", "pairs", "base median", "cand median", "median delta",
            "95% CI of delta", "floor", "outliers", "verdict"]
    table = [head]
    for r in rows:
        lo, hi = r["ci95_pct"]
        v = r["verdict"] + (f" (A/A spread {r['aa_spread_pct']:.2f}%)"
                            if r.get("aa") and "aa_spread_pct" in r else "")
        better = "higher" if r["higher_is_better"] else "lower"
        outl = ", ".join(f"{o['variant']}#{o['trial']}={o['value']:.6g}" for o in r["outliers"])
        table.append([r.get("workload") or r["metric"], str(r["pairs"]),
                      f"{r['base_median']:,.6g}", f"{r['cand_median']:,.6g}",
                      _pct(r["median_delta_pct"]), f"[{_pct(lo)}, {_pct(hi)}]",
                      f"{r['noise_floor_pct']:.2f}%", outl or "-", f"{v} ({better} is better)"])
    w = [max(len(r[i]) for r in table) for i in range(len(head))]
    lines = [f"perf-compare {meta['run']}: base {meta['base_label']} vs cand "
             f"{meta['cand_label']}" + (" (A/A)" if meta["aa"] else ""),
             f"  base: {meta['base_cmd']}", f"  cand: {meta['cand_cmd']}"]
    lines += ["  ".join(c.ljust(w[i]) if i in (0, 7, 8) else c.rjust(w[i])
                        for i, c in enumerate(r)).rstrip() for r in table]
    lines.append("delta = median over pairs of cand/base - 1; CI: bootstrap 95% of that median; "
                 "verdict: faster/slower (better/worse in the metric's direction) only if the "
                 "CI excludes 0 AND |median delta| > floor.")
    lines.append(f"outliers: trials more than {meta['outlier_k']:g} robust SDs from their side's "
                 "median (reported, not removed).")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def side_labels(a, meta: dict) -> tuple:
    """What tells the two sides apart, for titles: env, then arguments,
    prefix, revision, program (only the parts that differ; "env ''" if none)."""
    parts = {"base": [], "cand": []}
    for key, what in (("env", "env"), ("args", "args"), ("prefix", "prefix"),
                      ("rev", "rev"), ("bin", "bin")):
        vals = {}
        for side in ("base", "cand"):
            if key == "env":
                vals[side] = meta[side + "_env"]
            elif key in ("args", "prefix"):
                vals[side] = " ".join(getattr(a, f"{side}_{key}_words"))
            elif key == "rev":
                vals[side] = (meta.get(side + "_rev") or "")[:12]
            else:
                vals[side] = os.path.basename(meta[side + "_bin"] or "")
        if vals["base"] != vals["cand"] or (key == "env" and vals["base"]):
            for side in ("base", "cand"):
                parts[side].append(f"{what} '{vals[side]}'")
    return tuple(", ".join(parts[s]) or "env ''" for s in ("base", "cand"))


def pair_orders(trials: int, seed: int) -> List[tuple]:
    """Balanced random order: blocks of two pairs, one AB and one BA, which
    comes first drawn from the seed."""
    rng = random.Random(seed)
    out, first = [], "base"
    for t in range(trials):
        if t % 2 == 0:
            first = "cand" if rng.random() < 0.5 else "base"
        else:
            first = "cand" if first == "base" else "base"
        out.append((first, "cand" if first == "base" else "base"))
    return out


class Eta:
    """The time left, from the mean time per finished run (the run itself plus
    this runner's overhead between runs) times the runs still to come."""

    def __init__(self, total_runs: int):
        self.total, self.done, self.t0 = total_runs, 0, time.monotonic()

    def step(self) -> str:
        """Counts one finished run; returns ", about 1m05s left" (or "")."""
        self.done += 1
        left = self.total - self.done
        if left <= 0:
            return ""
        secs = round((time.monotonic() - self.t0) / self.done * left)
        return f", about {secs // 60}m{secs % 60:02d}s left" if secs >= 60 else f", about {secs}s left"


def main(argv: Optional[Sequence[str]] = None, root: Optional[str] = None,
         installed: bool = False) -> int:
    """scripts/perf-compare.sh passes the source tree as root. The installed
    launcher (coact-perf-compare) passes installed=True: no source tree, so
    the peers benchmark and --base-rev/--cand-rev (which build from it) are
    refused, and the default --out is under the current directory."""
    root = root or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    global PROG
    PROG = "coact-perf-compare" if installed else "perf-compare.sh"
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
        out = a.out or os.path.join(base_dir, datetime.now().strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}")
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise Usage(f"--out '{out}': cannot create the directory ({e.strerror})")
        out = os.path.abspath(out)
        tf = os.path.join(out, "trials.jsonl")
        if os.path.exists(tf) and os.path.getsize(tf) > 0:
            raise Usage(f"--out '{out}' already holds trials.jsonl (from an earlier run); "
                        "choose another --out or remove it")
        resolve_programs(a, root)
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
        return _run(a, root, out, runner)
    finally:
        import shutil
        shutil.rmtree(runner.tmp, ignore_errors=True)


def _run(a, root: str, out: str, runner: Runner) -> int:

    def on_signal(signum, frame):
        runner.kill_child()
        log(f"interrupted ({signal.Signals(signum).name}) after {runner.done} trial(s); they "
            f"are kept in {runner.trials_file} (coact-plot compare {runner.trials_file} "
            "analyses them)")
        sys.exit(130)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    base_cmd = shlex.join(runner.argv("base", "WORKLOAD"))
    cand_cmd = shlex.join(runner.argv("cand", "WORKLOAD"))
    meta = {"run": runner.run_id, "mode": a.mode, "root": root,
            "git": subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                                  capture_output=True, text=True).stdout.strip() or "unknown",
            "base_env": " ".join(a.base_env), "cand_env": " ".join(a.cand_env),
            "base_bin": a.base_program, "cand_bin": a.cand_program,
            "base_cmd": base_cmd, "cand_cmd": cand_cmd,
            "base_rev": getattr(a, "base_rev_sha", None), "cand_rev": getattr(a, "cand_rev_sha", None),
            "aa": a.aa, "trials": a.trials, "seed": a.seed, "noise_floor_pct": a.noise_floor,
            "outlier_k": a.outlier_k, "env_load_margin": a.env_load_margin,
            "nproc": os.cpu_count(), "n": a.n if a.mode == "peers" else None,
            "workers": a.workers if a.mode == "peers" else None,
            "ambient": " ".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                                if k.startswith("COACT_") and not k.startswith("COACT_BENCH_"))}
    meta["base_label"], meta["cand_label"] = side_labels(a, meta)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f)
    log(f"run {runner.run_id}: out={out}")
    log(f"base: env '{meta['base_env']}' command {base_cmd}")
    log(f"cand: env '{meta['cand_env']}' command {cand_cmd}" + (" (A/A: same as base)" if a.aa else ""))
    if meta["ambient"]:
        log(f"ambient COACT_* (applies to both variants unless a variant sets the key): "
            f"{meta['ambient']}")
    bkeys = dict(x.split("=", 1) for x in a.base_env)
    ckeys = dict(x.split("=", 1) for x in a.cand_env)
    for one, other, side, oside in ((bkeys, ckeys, "base", "cand"), (ckeys, bkeys, "cand", "base")):
        for k in sorted(set(one) - set(other)):
            amb = os.environ.get(k)
            log(f"note: {k} is set only for {side}; {oside} gets "
                + (f"the ambient value '{amb}'" if amb is not None else "the program's default"))
    if a.mode == "peers" and ("COACT_WORKERS" in bkeys or "COACT_WORKERS" in ckeys):
        log(f"warning: coact-peers forces the worker count to --workers ({a.workers}); "
            "COACT_WORKERS has no effect there")
    if not a.aa and base_cmd == cand_cmd and a.base_env == a.cand_env:
        log("warning: base and cand are identical (same env, same command): this is an A/A "
            "run; use --aa to say so")
    log(f"pair order seed {a.seed} (balanced: one AB and one BA per block of two pairs)")

    rows = []
    try:
        groups = [(w, w) for w in a.workloads_list] if a.mode == "peers" else [(a.mode, None)]
        eta = Eta(len(groups) * 2 * (a.trials + a.warmup))
        for label, workload in groups:
            if workload:
                log(f"{workload}: n={a.n}, workers={a.workers}, {a.trials} pairs, "
                    "balanced-random order")
            for w in range(1, a.warmup + 1):
                for side in ("base", "cand"):
                    r = runner.run(side, label, w, 0, workload, warmup=True)
                    runner.metrics_of(r, workload)  # a warm-up run must produce the metrics too
                    log(f"{label}: {side} warm-up {w}/{a.warmup} ({r['wall_s']:.2f}s, not recorded)"
                        f"{eta.step()}")
            names: Dict[str, set] = {"base": set(), "cand": set()}
            for t, order in enumerate(pair_orders(a.trials, a.seed), start=1):
                for pos, side in enumerate(order):
                    r = runner.run(side, label, t, pos, workload)
                    values = runner.metrics_of(r, workload)
                    names[side] |= set(values)
                    if a.mode == "gbench" and t == 1 and pos == 1:
                        common = names["base"] & names["cand"]
                        if not common:
                            raise Failure(
                                "the two sides have no benchmark name in common: base ran "
                                f"{sorted(names['base'])[:8]}, cand ran {sorted(names['cand'])[:8]}")
                    runner.record(side, t, pos, r, values, workload)
                    shown = ", ".join(f"{k}={v:.6g}" for k, v in list(values.items())[:3])
                    more = f" (+{len(values) - 3} more)" if len(values) > 3 else ""
                    log(f"{label}: {side} trial {t}/{a.trials}: {shown}{more} "
                        f"({r['wall_s']:.2f}s, load {r['env']['load1_before']}){eta.step()}")
            common = sorted(names["base"] & names["cand"])
            for side, other in (("base", "cand"), ("cand", "base")):
                only = sorted(names[side] - names[other])
                if only:
                    log(f"warning: {len(only)} metric(s) ran on {side} only, not compared: "
                        + ", ".join(only[:20]) + (" ..." if len(only) > 20 else ""))
            metrics = common if a.mode != "command" else a.metrics
            for metric in metrics:
                if a.mode == "peers":
                    higher = True
                elif a.mode == "gbench":
                    higher = False
                else:
                    higher = metric not in BUILTIN_METRICS and metric not in a.lower
                rows.append(analyze_metric(a, runner, meta, metric, label, workload, higher))
    except Failure as e:
        log(str(e))
        return 1
    text = format_table(rows, meta)
    sys.stderr.write(text)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(text)
    if a.plot:
        from .perfstats import compare_trials, load_trials
        from .plot_perf import plot_compare
        title = (f"perf-compare A/A: {meta['base_label']}" if a.aa else
                 f"perf-compare: base {meta['base_label']} vs cand {meta['cand_label']}")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ProfileWarning)
                shown = {r["metric"] for r in rows}      # not the one-sided names
                comps = compare_trials([t for t in load_trials(runner.trials_file)
                                        if t.metric in shown], 10000, 0)
                plot_compare(comps, os.path.join(out, "compare.png"), title)
        except Exception as e:   # a plot failure must not lose the verdicts above
            log(f"plotting failed: {e} (coact-plot compare {runner.trials_file} -o x.png)")
            return 1
    log(f"trials: {runner.trials_file}; summary: {out}/summary.jsonl, {out}/summary.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
