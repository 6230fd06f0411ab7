"""perf-compare: the report. Per metric, the statistics and the verdict
(perfstats: paired relative deltas, bootstrap CI, noise floor raised by an
earlier A/A run's spread, outliers, the environment check), printed as one
JSON line on stdout and appended to OUT/summary.jsonl (analyze_metric); the
table for stderr and OUT/summary.txt (format_table); the titles that tell
the sides apart (side_labels); and the optional OUT/compare.png
(write_plot). Field names of the JSON lines are a contract: the header of
scripts/perf-compare.sh lists them.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from typing import List, Optional

import numpy as np

from . import perfstats as ps
from .perfcompare_common import Failure, log
from .perfcompare_runner import Runner
from .profile import ProfileWarning


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



def write_plot(a: argparse.Namespace, meta: dict, rows: List[dict], runner: Runner,
               out: str) -> bool:
    """OUT/compare.png of the metrics in rows (base and cand distributions
    and the paired deltas, coact-plot compare's figure). False, logged, if
    plotting failed: the verdicts already printed stand."""
    from .plot_perf import plot_compare      # matplotlib: only when plotting
    title = (f"perf-compare A/A: {meta['base_label']}" if a.aa else
             f"perf-compare: base {meta['base_label']} vs cand {meta['cand_label']}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ProfileWarning)
            shown = {r["metric"] for r in rows}      # not the one-sided names
            comps = ps.compare_trials([t for t in ps.load_trials(runner.trials_file)
                                       if t.metric in shown], 10000, 0)
            plot_compare(comps, os.path.join(out, "compare.png"), title)
    except Exception as e:   # a plot failure must not lose the verdicts above
        log(f"plotting failed: {e} (coact-plot compare {runner.trials_file} -o x.png)")
        return False
    return True
