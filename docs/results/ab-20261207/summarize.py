#!/usr/bin/python3
"""Summarises the A/B data of docs/perf/history/2026-12-07-ab-rows.md.

separate-runs.jsonl: twelve 6 s runs of the baseline archiver (--summary-json).
alternating-runs.jsonl: eight 9 s runs of `--alternate --level 1`.
windows.jsonl: per experiment of fixed-speedup runs of the baseline, 15 s each,
windows alternating 0 and 23 % on Compressor::on(NewChunk), by window length.

Usage: summarize.py [DIR]   (default: this file's directory)
"""
import json
import os
import statistics as st
import sys


def lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    sep = lines(os.path.join(d, "separate-runs.jsonl"))
    lp = [r["later_pass_seconds"] for r in sep]
    print(f"separate runs: {len(lp)} runs, later_pass_seconds mean {st.mean(lp):.4f} s, "
          f"sd {100 * st.stdev(lp) / st.mean(lp):.1f} % between runs")
    # Within a run: the last pass against the mean of the run's later passes.
    dev = [(r["last_pass_seconds"] - r["later_pass_seconds"]) / r["later_pass_seconds"] for r in sep]
    print(f"  last pass vs its run's mean: sd {100 * st.stdev(dev):.1f} % (one pass); "
          f"a run's mean of ~{round(st.mean(r['passes'] for r in sep)) - 1} passes would scatter "
          f"{100 * st.stdev(dev) / (st.mean(r['passes'] for r in sep) - 1) ** 0.5:.1f} % if passes were independent")
    alt = lines(os.path.join(d, "alternating-runs.jsonl"))
    sp = []
    for r in alt:
        a = st.mean(r["alternate"]["baseline"]["pass_seconds"])
        b = st.mean(r["alternate"]["variant"]["pass_seconds"])
        sp.append(100 * (1 - b / a))
    print(f"alternating runs (--level 1): speedup per run {[round(x, 1) for x in sp]}, "
          f"mean {st.mean(sp):.2f}, sd {st.stdev(sp):.2f} points")
    win = lines(os.path.join(d, "windows.jsonl"))
    for w in sorted({e["window_ms"] for e in win}):
        preds = []
        for run in sorted({e["run"] for e in win if e["window_ms"] == w}):
            exps = [e for e in win if e["window_ms"] == w and e["run"] == run][1:]  # first: start-up
            v = [sum(e["chunks"] for e in exps if (e["speedup"] > 0) == k) for k in (False, True)]
            t = [sum(e["effective_ns"] for e in exps if (e["speedup"] > 0) == k) for k in (False, True)]
            preds.append(100 * (1 - (v[0] / t[0]) / (v[1] / t[1])))
        print(f"windows of {w} ms: {len(preds)} runs, 1 - rate(0)/rate(23 %) per run "
              f"{[round(p, 1) for p in preds]}, mean {st.mean(preds):.2f}, sd {st.stdev(preds):.2f} points")


if __name__ == "__main__":
    main()
