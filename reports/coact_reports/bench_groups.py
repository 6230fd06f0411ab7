"""scripts/bench.sh's trial-running groups: peers, timers, scaling and
slowmode here, burst in bench_burst, instructions and sampling in
bench_costs. bench.sh checks the common knobs, builds and finds the
programs, then calls

  coact_run.py bench_groups GROUP --check
  coact_run.py bench_groups GROUP [--quick] --trials T --workers K --timeout-s S
                            [--wrap CMD] --bin NAME=PATH...

--check resolves the group's own knobs (KNOBS) and exits: 0, or 2 with one
line naming the knob, its value and what is accepted (bench.sh runs it
before building). Without it the group's trials run, each through the one
trial runner (trials.Runner), in the order bench.sh's header documents
(alternating runtimes per round; sampling's rotation; burst's ABBA
pairs), and the rows are aggregated by coact_reports.bench, whose JSON
lines are printed on stdout. Progress goes to stderr as "bench.sh: ...";
the programs run without COACT_BENCH_* in their environment
(trials.child_environ). A failed trial ends the group with one line
naming it and exit status 1.

The JSON each group prints is documented in scripts/bench.sh's header.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from . import bench, trials

PROG = "bench.sh"
PEER_WORKLOADS = ("ping_pong", "fan_out", "thread_ring", "skynet")
TIMER_SCENARIOS = ("lateness", "idle_cpu", "cancel_rate")
PEER_RUNTIMES = ("coact", "caf", "tokio")
DEFAULT_SLOWMODE_WRAPS = "none;setarch -R;taskset -c FIRST;taskset -c LAST;env GLIBC_TUNABLES=glibc.malloc.hugetlb=1"

# The knobs the groups read here (bench.sh resolves the common ones: build
# directory, trials, workers, timeout, wrap). Name -> the groups that read it.
KNOBS = {
    "COACT_BENCH_WORKLOADS": ("peers", "timers", "slowmode", "instructions"),
    "COACT_BENCH_RUNTIMES": ("peers", "slowmode"),
    "COACT_BENCH_SCALING_WORKERS": ("scaling",),
    "COACT_BENCH_SLOWMODE_WRAPS": ("slowmode",),
    "COACT_BENCH_BASE_PEERS": ("instructions",),
}


class Usage(Exception):
    """A bad knob: exit 2 with the message."""


class GroupFailed(Exception):
    """A trial or the aggregation failed: exit 1 with the message."""


def log(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def knob(name: str) -> str:
    return os.environ.get(name, "")


# ---- the group knobs ---------------------------------------------------------------
def selected_workloads(known, what: str = "workload") -> List[str]:
    """COACT_BENCH_WORKLOADS split at commas (each must be in `known`), or all of known."""
    value = knob("COACT_BENCH_WORKLOADS")
    if not value:
        return list(known)
    out = value.split(",")
    for w in out:
        if w not in known:
            raise Usage(f"COACT_BENCH_WORKLOADS: unknown {what} '{w}' (known: {' '.join(known)})")
    return out


def peer_runtimes(default: str = "coact,caf,tokio") -> List[str]:
    """COACT_BENCH_RUNTIMES: a comma-separated subset of coact, caf, tokio
    with coact in it."""
    value = knob("COACT_BENCH_RUNTIMES") or default
    want = value.split(",")
    for rt in want:
        if rt not in PEER_RUNTIMES:
            raise Usage(f"COACT_BENCH_RUNTIMES: unknown runtime '{rt}' (known: coact, caf, tokio)")
    if "coact" not in want:
        raise Usage(f"COACT_BENCH_RUNTIMES='{value}': coact is required")
    return want


def scaling_workers() -> List[int]:
    """COACT_BENCH_SCALING_WORKERS (comma-separated, each in 1..1024), or
    those of 1, 2, 4, 8, 16 at most twice the cores this process may use."""
    value = knob("COACT_BENCH_SCALING_WORKERS")
    if not value:
        cores = len(os.sched_getaffinity(0))
        return [k for k in (1, 2, 4, 8, 16) if k <= 2 * cores]
    out = []
    for k in value.split(","):
        if not (k.isascii() and k.isdigit()) or not 1 <= int(k) <= 1024:
            raise Usage(f"COACT_BENCH_SCALING_WORKERS='{value}': want comma-separated worker counts in 1..1024")
        out.append(int(k))
    return out


def slowmode_conditions() -> List[str]:
    """COACT_BENCH_SLOWMODE_WRAPS split at ';' (default DEFAULT_SLOWMODE_WRAPS),
    each condition's blanks collapsed. The words FIRST and LAST stand for the
    first and the last CPU this process may use; with only one CPU the
    default's second pinned condition is left out (it would repeat the
    first). Each condition's first word must be a command, or the condition
    is "none"; a blank or repeated condition is refused (its trials would be
    merged with another's)."""
    value = knob("COACT_BENCH_SLOWMODE_WRAPS")
    cpus = sorted(os.sched_getaffinity(0))
    if not value:
        value = DEFAULT_SLOWMODE_WRAPS
        if len(cpus) == 1:
            value = value.replace("taskset -c LAST;", "")
    parts = value.split(";")
    if len(parts) > 1 and parts[-1].strip() == "":
        parts.pop()  # a trailing ';'
    conds = []
    for i, part in enumerate(parts, 1):
        words = ["none"] if part.split() == ["none"] else part.split()
        if not words:
            raise Usage(f"COACT_BENCH_SLOWMODE_WRAPS='{value}': condition {i} is blank "
                        "(want ';'-separated commands; none for the plain condition)")
        cond = " ".join({"FIRST": str(cpus[0]), "LAST": str(cpus[-1])}.get(w, w) for w in words)
        if cond in conds:
            raise Usage(f"COACT_BENCH_SLOWMODE_WRAPS='{value}': condition '{cond}' is given twice")
        if cond != "none" and shutil.which(words[0]) is None:
            raise Usage(f"COACT_BENCH_SLOWMODE_WRAPS: '{words[0]}' is not a command (condition '{cond}')")
        conds.append(cond)
    return conds


def wrap_words(cond: str) -> List[str]:
    """A wrap command split at blanks; "none" and blank are no command."""
    words = cond.split()
    return [] if words == ["none"] else words


def check_knobs(group: str) -> None:
    """Resolves every knob `group` reads; raises Usage on a bad one."""
    if group in ("peers", "slowmode"):
        if group == "slowmode":
            slowmode_conditions()
        selected_workloads(PEER_WORKLOADS)
        peer_runtimes("coact" if group == "slowmode" else "coact,caf,tokio")
    elif group == "timers":
        selected_workloads(TIMER_SCENARIOS, "timers scenario")
    elif group == "scaling":
        scaling_workers()
    elif group == "instructions":
        from .bench_costs import check_instructions
        check_instructions()


# ---- the run of one group ------------------------------------------------------------
@dataclass
class Group:
    """What a group's run has: bench.sh's resolved knobs, the programs
    (bins: target name -> path), the runner, a temporary directory."""
    name: str
    quick: bool
    trials: int
    workers: int
    timeout_s: int
    wrap: List[str]
    bins: Dict[str, str]
    tmp: str
    runner: trials.Runner = field(default_factory=trials.Runner)

    def bin(self, name: str) -> Optional[str]:
        return self.bins.get(name) or None

    def path(self, name: str) -> str:
        return os.path.join(self.tmp, name)

    def trial(self, argv, what: str, limit_s: float, **kw):
        """One trial (trials.Runner.trial); a failure becomes GroupFailed."""
        try:
            return self.runner.trial(argv, what, limit_s, **kw)
        except trials.TrialFailed as e:
            raise GroupFailed(str(e))


def write_rows(path: str, lines: List[str]) -> str:
    with open(path, "w") as f:
        f.writelines(line + "\n" for line in lines)
    return path


def aggregate(fn: Callable, args: List, failure: str) -> None:
    """coact_reports.bench's fn on args (its JSON lines go to stdout); its
    exit becomes GroupFailed(failure) after its own message."""
    sys.stdout.flush()
    try:
        fn([str(a) for a in args])
    except SystemExit as e:
        if e.code in (None, 0):
            return
        if not isinstance(e.code, int):
            print(e.code, file=sys.stderr, flush=True)
        raise GroupFailed(failure)
    sys.stdout.flush()


# ---- group peers -------------------------------------------------------------------------
def peer_n(wl: str, quick: bool) -> int:
    """n per workload: the issue's sizes (ping_pong round trips, fan_out
    requests, thread_ring hops, skynet leaves), or small ones for --quick."""
    if quick:
        return {"ping_pong": 20000, "fan_out": 20000, "thread_ring": 50000, "skynet": 10000}[wl]
    return 1000000


def tokio_variants(workers: int) -> List[str]:
    """The tokio variants every peers trial runs (bench/tokio/src/bin/tokio-peers.rs
    says what each is): the actor emulation with bounded and unbounded channels,
    and the idiomatic program (fan_out and skynet: their JoinHandle shape, the
    faster of their two); at 1 worker also the idiomatic program on tokio's
    current-thread scheduler, a one-thread tokio program's idiom."""
    v = ["tokio-actor_bounded", "tokio-actor_unbounded", "tokio-idiomatic"]
    return v + ["tokio-idiomatic_current_thread"] if workers == 1 else v


def peer_trial_runtimes(g: Group, default: str) -> List[str]:
    """What each round of a peers trial runs, in order: coact, caf if
    COACT_BENCH_RUNTIMES (default `default`) names it, then every tokio
    variant if it names tokio."""
    want = peer_runtimes(default)
    return ["coact"] + (["caf"] if "caf" in want else []) + (tokio_variants(g.workers) if "tokio" in want else [])


def peer_argv(g: Group, rt: str, wl: str, n: int, wrap: List[str]) -> List[str]:
    """One peers trial's command: RUNTIME is coact, caf or tokio-VARIANT,
    under the wrap command (COACT_BENCH_WRAP, or slowmode's condition)."""
    idiom = "join" if wl in ("skynet", "fan_out") else "idiomatic"
    variant = {
        "coact": [], "caf": [],
        "tokio-actor_bounded": ["--style", "actor", "--channel", "bounded"],
        "tokio-actor_unbounded": ["--style", "actor", "--channel", "unbounded"],
        "tokio-idiomatic": ["--style", idiom],
        "tokio-idiomatic_current_thread": ["--style", idiom, "--flavor", "current_thread"],
    }[rt]
    prog = g.bin({"coact": "coact-peers", "caf": "caf-peers"}.get(rt, "tokio-peers"))
    return wrap + [prog, "--workload", wl, "--n", str(n), "--workers", str(g.workers),
                   "--watchdog-s", str(g.timeout_s)] + variant


def run_peers(g: Group, wrap: List[str], runtimes_default: str = "coact,caf,tokio") -> None:
    """The peers group: per workload, TRIALS rounds of every runtime (and
    tokio variant) in turn, then the aggregated row."""
    runtimes = peer_trial_runtimes(g, runtimes_default)
    wrap_text = " ".join(wrap)
    for wl in selected_workloads(PEER_WORKLOADS):
        n = peer_n(wl, g.quick)
        rows: Dict[str, List[str]] = {"coact": [], "caf": [], "tokio": []}
        log(f"peers/{wl}: n={n}, workers={g.workers}, {g.trials} trials per runtime, alternating "
            f"{' '.join(runtimes)}" + (f" under '{wrap_text}'" if wrap else ""))
        for t, rt in trials.alternating(g.trials, runtimes):
            what = f"peers/{wl}: {rt} trial {t}/{g.trials}"
            # The program's own watchdog reports a hang with the runtime's counters
            # (exit 3); the runner's limit is the backstop should it not manage that.
            _, fin = g.trial(peer_argv(g, rt, wl, n, wrap), what, g.timeout_s + 30,
                             watchdog_s=g.timeout_s, detail=f"n={n}")
            line = fin.stdout.rstrip().splitlines()[-1].strip()
            rows[rt.split("-")[0]].append(line)
            log(f"{what}: {line}")
        paths = [write_rows(g.path(f"{wl}.{rt}"), rows[rt]) for rt in ("coact", "caf", "tokio")]
        aggregate(bench.peers, [wl, n, g.workers, int(g.quick), *paths, wrap_text],
                  f"peers/{wl}: aggregating the trials failed")


# ---- group slowmode ------------------------------------------------------------------------
def probe_host(g: Group, wrap: List[str], what: str) -> Optional[float]:
    """coact-host-probe under the trial's wrap: the speed of the slowest CPU
    the trial may run on (under `taskset -c K`: CPU K's) just before the
    trial, or None without the probe."""
    prog = g.bin("coact-host-probe")
    if prog is None:
        return None
    doc, _ = g.trial(wrap + [prog, "--steps", "2000000"], f"{what}: host probe", 60)
    return doc["probe_msteps_per_s"]


def run_slowmode(g: Group) -> None:
    """The peers trials (COACT_BENCH_RUNTIMES default coact) under every
    condition, alternating: each round runs every condition once, starting
    one condition later than the round before, so that the host's drift
    over the run falls on all of them alike. Each trial follows a host
    probe under the same condition (its rate goes into the row as
    "probe_msteps_per_s"). Then per condition the peers rows (each with
    "wrap"), and the summary."""
    runtimes = peer_trial_runtimes(g, "coact")
    conds = slowmode_conditions()
    rows = []
    for wl in selected_workloads(PEER_WORKLOADS):
        n = peer_n(wl, g.quick)
        got: Dict[str, Dict[str, List[str]]] = {c: {"coact": [], "caf": [], "tokio": []} for c in conds}
        log(f"slowmode/{wl}: n={n}, workers={g.workers}, {g.trials} rounds of {len(conds)} conditions "
            f"({'; '.join(conds)}), each {' '.join(runtimes)}")
        for t, cond in trials.rotating(g.trials, conds):
            wrap = wrap_words(cond)
            for rt in runtimes:
                what = f"slowmode/{wl}: '{cond}' {rt} trial {t}/{g.trials}"
                probe = probe_host(g, wrap, what)
                doc, _ = g.trial(peer_argv(g, rt, wl, n, wrap), what, g.timeout_s + 30,
                                 watchdog_s=g.timeout_s, detail=f"n={n}")
                doc["probe_msteps_per_s"] = probe
                line = json.dumps(doc, separators=(",", ":"))
                got[cond][rt.split("-")[0]].append(line)
                log(f"{what}: {line}")
        for cond in conds:
            paths = [write_rows(g.path(f"{wl}.{rt}"), got[cond][rt]) for rt in ("coact", "caf", "tokio")]
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                aggregate(bench.peers, [wl, n, g.workers, int(g.quick), *paths, " ".join(wrap_words(cond))],
                          f"slowmode/{wl}: aggregating the trials of '{cond}' failed")
            sys.stdout.write(buf.getvalue())
            sys.stdout.flush()
            rows += buf.getvalue().splitlines()
    aggregate(bench.slowmode, [write_rows(g.path("slowmode.jsonl"), rows), g.workers],
              "group slowmode: aggregating the rows failed")


# ---- group timers --------------------------------------------------------------------------
def describe_timer_row(doc: dict) -> str:
    """A timers trial's figure for the progress line."""
    text = lambda v: v if isinstance(v, str) else json.dumps(v)  # noqa: E731
    if "fired" in doc and "p99_us" in doc:
        return f"fired {text(doc['fired'])}, p99 {text(doc['p99_us'])} us"
    if "cpu_pct" in doc:
        return f"cpu {text(doc['cpu_pct'])} %"
    return f"{text(doc.get('pairs_per_s'))} pairs/s"


def run_timer_config(g: Group, label: str, args: List[str]) -> Dict[str, List[str]]:
    """TRIALS rounds of coact, caf and tokio on one configuration; their rows."""
    rows: Dict[str, List[str]] = {"coact": [], "caf": [], "tokio": []}
    log(f"timers/{label}: workers={g.workers}, {g.trials} trials per runtime, alternating coact/caf/tokio")
    for t, rt in trials.alternating(g.trials, ("coact", "caf", "tokio")):
        # tokio 1.24 starves its timers under the saturating pairs load (a chain's timers
        # fire ~0.5 s late, so 10^4 timers would take ~10 minutes): its runs end after
        # 60 s and the timers not fired by then count as unfired.
        guard = ["--max-run-s", "60"] if rt == "tokio" else []
        argv = [g.bin(f"{rt}-timers"), *args, "--workers", str(g.workers),
                "--watchdog-s", str(g.timeout_s), *guard]
        what = f"timers/{label}: {rt} trial {t}/{g.trials}"
        doc, fin = g.trial(argv, what, g.timeout_s + 30, watchdog_s=g.timeout_s, detail=" ".join(args))
        rows[rt].append(fin.stdout.rstrip().splitlines()[-1].strip())
        log(f"{what}: {describe_timer_row(doc)}")
    return rows


def run_timers(g: Group) -> None:
    """Per scenario and configuration: run_timer_config, then the aggregated row."""
    quick = g.quick
    timers, idle_ms, cancel_ms = (1000, 500, 200) if quick else (10000, 5000, 1000)
    chains, period_us, grace_ms, busy_actors, busy_us, delay_ms = 10, 1000, 2000, 4, 100, 10
    configs = []   # (scenario, label, key, args, params)
    for sc in selected_workloads(TIMER_SCENARIOS, "timers scenario"):
        if sc == "lateness":
            for load in ("idle", "self", "pairs"):
                args = ["--scenario", "lateness", "--load", load, "--timers", timers, "--chains", chains,
                        "--period-us", period_us, "--grace-ms", grace_ms, "--busy-actors", busy_actors,
                        "--busy-us", busy_us]
                params = {"load": load, "timers": timers, "chains": chains, "period_us": period_us,
                          "grace_ms": grace_ms, "busy_actors": 0 if load == "idle" else busy_actors,
                          "busy_us": busy_us}
                configs.append((sc, f"lateness/load={load}", f"lateness.{load}", args, params))
        elif sc == "idle_cpu":
            for period in (5, 20, 100):
                configs.append((sc, f"idle_cpu/period_ms={period}", f"idle_cpu.{period}",
                                ["--scenario", "idle_cpu", "--period-ms", period, "--duration-ms", idle_ms],
                                {"period_ms": period, "duration_ms": idle_ms}))
        else:
            configs.append((sc, "cancel_rate", "cancel_rate",
                            ["--scenario", "cancel_rate", "--delay-ms", delay_ms, "--duration-ms", cancel_ms],
                            {"delay_ms": delay_ms, "duration_ms": cancel_ms, "pairs_per_handler": 256}))
    for sc, label, key, args, params in configs:
        rows = run_timer_config(g, label, [str(a) for a in args])
        paths = [write_rows(g.path(f"timers.{key}.{rt}"), rows[rt]) for rt in ("coact", "caf", "tokio")]
        aggregate(bench.timers, [sc, key, json.dumps(params, separators=(",", ":")), g.workers,
                                 int(quick), *paths],
                  f"timers/{sc}({key}): aggregating the trials failed")


# ---- group scaling -------------------------------------------------------------------------
def run_scaling(g: Group) -> None:
    """At each worker count: the burst on / off rows of the fan-out of width
    512 (0 us handlers) and the four peers workloads (bench_burst.run_row:
    TRIALS pairs each), then tokio's idiomatic variant (multi-thread
    scheduler), TRIALS trials per workload; then the rows."""
    from .bench_burst import fan_out, peers_rows, run_row
    tokio_bin = g.bin("tokio-peers")
    burst_rows: List[str] = []
    tokio_rows: List[str] = []
    for k in scaling_workers():
        # coact: its peers rows run coact-peers at n = 3x the peers group's (skynet 10^6).
        log(f"scaling: workers={k}: burst on / off, {g.trials} pairs per row (ABBA)")
        for row in [fan_out(512, 0)] + peers_rows():
            burst_rows.append(json.dumps(run_row(g, row, k, "scaling"), separators=(",", ":")))
        if not tokio_bin:
            continue
        # tokio: its idiomatic variant (multi-thread scheduler at every k), the same n.
        for wl in PEER_WORKLOADS:
            n = 1000000 if wl == "skynet" else 3000000
            if g.quick:
                n = 1000 if wl == "skynet" else n // 100
            style = "join" if wl in ("skynet", "fan_out") else "idiomatic"
            for t, _ in trials.alternating(g.trials, ("tokio",)):
                argv = [tokio_bin, "--workload", wl, "--n", str(n), "--workers", str(k), "--style", style,
                        "--watchdog-s", str(g.timeout_s)]
                _, fin = g.trial(argv, f"scaling/{wl}: tokio trial {t}/{g.trials} at {k} workers",
                                 g.timeout_s + 30, watchdog_s=g.timeout_s, detail=f"n={n}")
                tokio_rows.append(fin.stdout.rstrip().splitlines()[-1].strip())
            log(f"scaling/{wl}: tokio, {g.trials} trials at {k} workers done")
    aggregate(bench.scaling, [write_rows(g.path("scaling.burst"), burst_rows),
                              write_rows(g.path("scaling.tokio"), tokio_rows), int(g.quick)],
              "group scaling: aggregating the rows failed")


# ---- the command line ----------------------------------------------------------------------
def groups() -> Dict[str, Callable[[Group], None]]:
    from .bench_costs import run_instructions, run_sampling
    from .bench_burst import run_burst
    return {"peers": lambda g: run_peers(g, g.wrap), "timers": run_timers, "burst": run_burst,
            "scaling": run_scaling, "slowmode": run_slowmode, "instructions": run_instructions,
            "sampling": run_sampling}


def parse(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="coact_run.py bench_groups",
                                description="scripts/bench.sh's trial-running groups (see its --help)")
    p.add_argument("group", choices=sorted(groups()))
    p.add_argument("--check", action="store_true", help="resolve the group's knobs and exit")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout-s", type=int, default=300)
    p.add_argument("--wrap", default="", help="COACT_BENCH_WRAP: a command every peers trial runs under")
    p.add_argument("--bin", action="append", default=[], metavar="NAME=PATH",
                   help="a program the group runs (NAME: its CMake target)")
    return p.parse_args(argv)


def main(argv: List[str], prog: str = PROG) -> int:
    """The command line (module docstring); the exit status: 0, 1 (a trial,
    a needed tool or the aggregation failed), 2 (a bad knob), 130
    (interrupted)."""
    global PROG
    PROG = prog
    a = parse(argv)
    # SIGTERM ends the running trial too (trials.Runner.run kills its child on
    # any exception), as SIGINT does through KeyboardInterrupt.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        check_knobs(a.group)
        if a.check:
            return 0
        bins = {}
        for b in a.bin:
            name, sep, path = b.partition("=")
            if not sep:
                raise Usage(f"--bin '{b}': want NAME=PATH")
            bins[name] = path
        with tempfile.TemporaryDirectory(prefix="coact-bench.") as tmp:
            groups()[a.group](Group(a.group, a.quick, a.trials, a.workers, a.timeout_s, a.wrap.split(),
                                    bins, tmp))
    except Usage as e:
        log(str(e))
        return 2
    except GroupFailed as e:
        log(str(e))
        return 1
    except KeyboardInterrupt:
        log(f"group {a.group}: interrupted")
        return 130
    return 0
