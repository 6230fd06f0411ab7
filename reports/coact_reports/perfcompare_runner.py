"""perf-compare: the trials. Runs each side's program as a fresh process
through the benchmark tools' one trial runner (trials.Runner: a timeout,
wall time measured around it; here under /usr/bin/time for its max RSS,
the environment sampled around it), reads the trial's metric
values from its output, and appends each trial to OUT/trials.jsonl as soon
as it ends. run_group runs one group's warm-ups and its pairs in balanced
random order (trials.pair_orders), with the ETA line (Eta). A trial that fails,
hangs or prints no metric raises Failure naming it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import tempfile
import time
from datetime import datetime
from typing import Dict, List, Optional

from . import perfstats as ps
from . import trials
from .trials import pair_orders
from .perfcompare_common import BUILTIN_METRICS, Failure, log
from .perfcompare_env import load1, read_text, sample_environment

TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


class Runner:
    """The trials of one run: each side's environment (this process's, less
    PERF_BASE_ENV, PERF_CAND_ENV and COACT_BENCH_*, plus that side's
    entries) and command line, the child being run (kill_child ends it),
    OUT/trials.jsonl, OUT/stdout.log and OUT/stderr.log, and the environment
    samples of the recorded trials per group and side."""

    def __init__(self, a: argparse.Namespace, root: str, out: str):
        self.a, self.root, self.out = a, root, out
        self.trials_file = os.path.join(out, "trials.jsonl")
        self.stderr_log = os.path.join(out, "stderr.log")
        self.stdout_log = os.path.join(out, "stdout.log")
        self.done = 0
        self.tmp = tempfile.mkdtemp(prefix="perf-compare.")
        self.proc = trials.Runner()
        self.seen_warnings = set()
        self.env_samples: Dict[str, Dict[str, List[dict]]] = {}
        self.run_id = datetime.now().strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
        self.envs = {side: trials.child_environ(dict(x.split("=", 1) for x in getattr(a, side + "_env")),
                                                drop=("PERF_BASE_ENV", "PERF_CAND_ENV"))
                     for side in ("base", "cand")}

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
        limit = a.timeout_s + (30 if a.mode == "peers" else 0)
        try:
            fin = self.proc.run(timed + argv, what, limit, self.envs[side],
                                stdout=trials.CAPTURE, stderr=trials.CAPTURE)
        except trials.TrialFailed as e:        # it could not start
            raise Failure(f"FAILED: {e}")
        rc, timed_out, wall = fin.rc, fin.timed_out, fin.wall_s
        stdout, stderr = fin.stdout, fin.stderr
        sample["load1_after"] = load1()
        max_rss_kb = None
        if TIME:
            text = (read_text(rss_file) or "").strip().splitlines()
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
        """Ends the trial being run, if any (trials.Runner.kill)."""
        self.proc.kill()

    def metrics_of(self, r: dict, workload: Optional[str]) -> Dict[str, float]:
        """The trial's metric values (name -> value), or r["fail"](why)."""
        a = self.a
        if a.mode == "peers":
            doc = trials.last_json(r["stdout"])
            if doc is None:
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


def run_group(a: argparse.Namespace, runner: Runner, label: str, workload: Optional[str],
              eta: Eta) -> List[str]:
    """One group's trials (a peers workload, or the whole command or gbench
    run): --warmup runs of each side, not recorded (each must still produce
    the metrics), then a.trials pairs in pair_orders' order, each trial
    recorded as it ends. Returns the metric names both sides produced,
    sorted (names one side produced are warned about); raises Failure (with
    gbench, when the first pair has no benchmark name in common)."""
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
    return common
