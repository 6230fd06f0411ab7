"""scripts/bench.sh's cost groups (run through bench_groups' command line):

* instructions: coact-peers' instructions per message (valgrind
  --tool=callgrind; the "summary:" line of its output file) and syscalls per
  message (strace -f -c; the calls column of its "total" row), each as the
  difference between a run of n1 and one of n2 messages over the difference
  in messages, so start-up cancels;
* sampling: the archiver (coact-dedup) on five sides rotating within each
  trial, its CPU time by /usr/bin/time, then coact-sample-cost.

Every run goes through the one trial runner (trials.Runner via
bench_groups.Group.trial). The JSON each group prints is documented in
scripts/bench.sh's header.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from typing import Dict, List, Optional, Tuple

from . import bench, trials
from .bench_groups import PEER_WORKLOADS, Group, GroupFailed, Usage, aggregate, knob, log, selected_workloads

# The reply handler each peers workload's causal sweep counts as its progress point.
PROGRESS_HANDLER = {"ping_pong": "pong_msg", "fan_out": "rep_msg", "thread_ring": "token_msg",
                    "skynet": "skynet_reply"}


def check_instructions() -> None:
    """valgrind and strace installed (else GroupFailed), COACT_BENCH_BASE_PEERS
    an executable if set, COACT_BENCH_WORKLOADS peers workloads (else Usage)."""
    for tool in ("valgrind", "strace"):
        if shutil.which(tool) is None:
            raise GroupFailed(f"group instructions: {tool} not found (apt-get install {tool})")
    base = knob("COACT_BENCH_BASE_PEERS")
    if base and not (os.path.isfile(base) and os.access(base, os.X_OK)):
        raise Usage(f"COACT_BENCH_BASE_PEERS='{base}': not an executable")
    selected_workloads(PEER_WORKLOADS)


def callgrind_total(path: str) -> Optional[int]:
    """The instruction count of a callgrind output file: its "summary: N" line."""
    try:
        with open(path) as f:
            for line in f:
                m = re.fullmatch(r"summary: (\d+)", line.rstrip("\n"))
                if m:
                    return int(m.group(1))
    except OSError:
        pass
    return None


def strace_total(path: str) -> Optional[int]:
    """The syscall count of an `strace -c` table: the calls column (the
    fourth) of the row whose last column is "total"."""
    try:
        with open(path) as f:
            for line in f:
                cols = line.split()
                if len(cols) >= 4 and cols[-1] == "total":
                    try:
                        return int(float(cols[3]))
                    except ValueError:
                        return None
    except OSError:
        pass
    return None


def count_run(g: Group, kind: str, prog: str, wl: str, n: int, env: Dict[str, str]) -> Tuple[int, int]:
    """One run of prog under callgrind (kind "ir", 1 worker) or strace -c
    (kind "sys", COACT_BENCH_WORKERS workers) with env added; (messages,
    count)."""
    out = g.path(f"count.{kind}.log")
    if os.path.exists(out):
        os.remove(out)
    if kind == "ir":
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", prog,
                "--workload", wl, "--n", str(n), "--workers", "1"]
        limit = g.timeout_s * 20
    else:
        argv = ["strace", "-f", "-c", "-o", out, prog, "--workload", wl, "--n", str(n),
                "--workers", str(g.workers)]
        limit = g.timeout_s
    what = f"instructions/{wl}: {prog} under {kind}"
    doc, _ = g.trial(argv, what, limit, env=trials.child_environ(env), detail=f"n={n}",
                     stderr=trials.DISCARD)
    count = callgrind_total(out) if kind == "ir" else strace_total(out)
    msgs = doc.get("msgs")
    if not isinstance(msgs, (int, float)) or isinstance(msgs, bool) or count is None:
        raise GroupFailed(f"instructions/{wl}: no message count or no {kind} total from {prog} (n={n})")
    return msgs, count


def per_msg(g: Group, kind: str, prog: str, wl: str, ns: Tuple[int, int], env: Dict[str, str]):
    """(count(n2) - count(n1)) / (msgs(n2) - msgs(n1)) to 0.1, and the two message counts.
    A difference that rounds to zero is 0.0, never -0.0 (+ 0.0 makes it so)."""
    (m1, c1), (m2, c2) = (count_run(g, kind, prog, wl, n, env) for n in ns)
    if m2 == m1:
        raise GroupFailed(f"instructions/{wl}: {prog} sent {m1} messages at both n={ns[0]} and n={ns[1]}")
    return round((c2 - c1) / (m2 - m1), 1) + 0.0, [m1, m2]


def run_instructions(g: Group) -> None:
    """Per workload, burst off then on: instructions and syscalls per message;
    burst off adds the causal sweep's instructions and the base binary's
    figures (COACT_BENCH_BASE_PEERS). One object per row."""
    peers, base = g.bin("coact-peers"), knob("COACT_BENCH_BASE_PEERS")
    for wl in selected_workloads(PEER_WORKLOADS):
        ns = {"skynet": (10000, 100000), "thread_ring": (200000, 600000)}.get(wl, (100000, 300000))
        if g.quick:
            ns = (ns[0] // 10, ns[1] // 10)
        for burst in ("off", "on"):
            log(f"instructions/{wl}: burst {burst}, n={ns[0]} and {ns[1]}")
            val, msgs = {}, None
            for kind in ("ir", "sys"):
                val[kind], m = per_msg(g, kind, peers, wl, ns, {"COACT_BURST": burst})
                if kind == "ir":
                    msgs = m
                if kind == "ir" and burst == "off":
                    sweep_env = {"COACT_BURST": "off", "COACT_CAUSAL": "1", "COACT_CAUSAL_FIXED_SPEEDUP": "0",
                                 "COACT_CAUSAL_PROGRESS_HANDLER": PROGRESS_HANDLER[wl],
                                 "COACT_CAUSAL_OUTPUT": g.path("sweep.coz")}
                    val["sweep_ir"], _ = per_msg(g, "ir", peers, wl, ns, sweep_env)
                if base and burst == "off":
                    val["base_" + kind], _ = per_msg(g, kind, base, wl, ns, {})
            row = {"group": "instructions", "workload": wl, "workers": 1, "burst": burst, "n": list(ns),
                   "msgs": msgs, "instr_per_msg": val["ir"], "syscalls_per_msg": val["sys"],
                   "syscall_workers": g.workers, "sweep_instr_per_msg": val.get("sweep_ir"),
                   "base_instr_per_msg": val.get("base_ir"), "base_syscalls_per_msg": val.get("base_sys"),
                   "base_bin": base if "base_ir" in val else None}
            print(json.dumps({k: v for k, v in row.items() if v is not None}, separators=(",", ":")),
                  flush=True)


# ---- group sampling ------------------------------------------------------------------------
SAMPLING_SIDES = ("plain", "sweep0", "sampling", "profile_only", "sampling_no_sweep")


def cpu_seconds(path: str) -> Optional[float]:
    """user + sys from /usr/bin/time -f "%U %S"'s output file (its last line
    of two numbers), to 6 significant digits."""
    found = None
    try:
        with open(path) as f:
            for line in f:
                cols = line.split()
                if len(cols) == 2 and re.fullmatch(r"[0-9.]+", cols[0]):
                    try:
                        found = float(f"{float(cols[0]) + float(cols[1]):.6g}")
                    except ValueError:
                        pass
    except OSError:
        pass
    return found


def run_sampling(g: Group) -> None:
    """TRIALS rounds of the archiver on the five sides (trials.rotating), one
    row each, then coact-sample-cost; then the two objects."""
    dedup, cost = g.bin("coact-dedup"), g.bin("coact-sample-cost")
    passes, samples, src = (1, 200, "/usr/share/doc") if g.quick else (6, 2000, "/usr/share/doc")
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else g.tmp
    archive = os.path.join(shm, f"coact-bench-sampling-{os.getpid()}.cdar")
    profile_coz = g.path("profile.coz")
    sweep0 = {"COACT_CAUSAL": "1", "COACT_CAUSAL_FIXED_SPEEDUP": "0", "COACT_CAUSAL_PROGRESS": "chunks",
              "COACT_CAUSAL_OUTPUT": profile_coz}
    profile = {"COACT_CAUSAL": "1", "COACT_CAUSAL_PROFILE_ONLY": "1", "COACT_CAUSAL_OUTPUT": profile_coz}
    side_env = {"plain": {}, "sweep0": sweep0, "sampling": {**sweep0, "COACT_CAUSAL_SAMPLING": "1"},
                "profile_only": profile, "sampling_no_sweep": {**profile, "COACT_CAUSAL_SAMPLING": "1"}}
    summary_json, summary, cpu_file = g.path("summary.json"), g.path("summary"), g.path("cpu")
    rows: List[str] = []
    text = lambda v: v if isinstance(v, str) else json.dumps(v)  # noqa: E731
    try:
        for t, side in trials.rotating(g.trials, SAMPLING_SIDES):
            for p in (profile_coz, g.path("profile.jsonl"), summary_json):
                if os.path.exists(p):
                    os.remove(p)
            what = f"sampling/archiver: {side} trial {t}/{g.trials}"
            argv = ["/usr/bin/time", "-f", "%U %S", "-o", cpu_file, dedup, "archive", src,
                    "--passes", str(passes), "-o", archive, "--summary-json", summary_json]
            t0 = time.monotonic_ns()
            with open(summary, "w") as out:
                fin = g.runner.run(argv, what, g.timeout_s, trials.child_environ(side_env[side]),
                                   stdout=out, stderr=subprocess.STDOUT)
            ms = (time.monotonic_ns() - t0) // 1000000
            if fin.timed_out or fin.rc != 0:
                with open(summary, errors="replace") as f:
                    tail = "\n".join(f.read().rstrip("\n").splitlines()[-3:])
                how = f"timed out after {g.timeout_s}s" if fin.timed_out else f"exit {fin.rc}"
                raise GroupFailed(f"{what} failed ({how}): {tail}")
            # The archiver's --summary-json: the passes after the first are the steady state (the
            # first pays the start-up: with sampling, the symbolizer reading the line tables it
            # needs). --quick's one pass has no later passes.
            try:
                with open(summary_json) as f:
                    doc = json.load(f)
                last, later, ran = doc["last_pass_seconds"], doc["later_pass_seconds"], doc["passes"]
            except (OSError, ValueError, KeyError, TypeError):
                raise GroupFailed(f"{what}: no summary JSON from the archiver ({summary_json})")
            cpu = cpu_seconds(cpu_file)
            if cpu is None:
                raise GroupFailed(f"{what}: no CPU time from /usr/bin/time")
            row = {"side": side, "trial": t, "wall_s": ms / 1000, "last_pass_s": last}
            if ran > 1:
                row["later_pass_s"] = later
            row["cpu_s"] = cpu
            rows.append(json.dumps(row, separators=(",", ":")))
            log(f"{what}: {ms} ms, later passes {text(later) if ran > 1 else 'none'} s, "
                f"last pass {text(last)} s, CPU {text(cpu)} s")
    finally:
        if os.path.exists(archive):
            os.remove(archive)
    log(f"sampling/sample_cost: {cost} --samples {samples}")
    try:
        _, fin = g.runner.trial([cost, "--samples", str(samples)], "sampling/sample_cost", g.timeout_s,
                                want_json=False)
    except trials.TrialFailed:
        raise GroupFailed("sampling/sample_cost: coact-sample-cost failed")
    cost_json = g.path("cost.json")
    with open(cost_json, "w") as f:
        f.write(fin.stdout)
    rows_path = g.path("sampling.jsonl")
    with open(rows_path, "w") as f:
        f.writelines(r + "\n" for r in rows)
    params = {"dir": src, "passes": passes, "trials": g.trials, "samples": samples}
    aggregate(bench.sampling, [json.dumps(params, separators=(",", ":")), rows_path, cost_json],
              "group sampling: aggregating the rows failed")
