"""perf-compare: one run from checked arguments to exit status. Installs the
SIGINT/SIGTERM handler (the child is killed, finished trials are kept, exit
130), writes OUT/meta.json and the notes on how the two sides differ, runs
each group's trials (perfcompare_runner.run_group) and reports each metric
(perfcompare_report), then the table, OUT/summary.txt and the plot.
Returns 0, or 1 when a trial or the plot failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys

from .perfcompare_common import BUILTIN_METRICS, Failure, log
from .perfcompare_report import analyze_metric, format_table, side_labels, write_plot
from .perfcompare_runner import Eta, Runner, run_group


def run(a: argparse.Namespace, root: str, out: str, runner: Runner) -> int:
    """Runs every group's trials and reports them (arguments checked,
    programs resolved, OUT created and empty); the exit status."""

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
            common = run_group(a, runner, label, workload, eta)
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
    if a.plot and not write_plot(a, meta, rows, runner, out):
        return 1
    log(f"trials: {runner.trials_file}; summary: {out}/summary.jsonl, {out}/summary.txt")
    return 0
