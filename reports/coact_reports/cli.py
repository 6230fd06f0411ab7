"""The command line: `coact-plot` (installed) or `reports/coact_plot.py`.

Subcommands: profile (ranking + speedup curves), estimate (predicted program
speedup per region at each measured s), compare (perf-compare trials), trace
(span distributions of a per-mail trace, COACT_TRACE),
verdict (perf-compare's verdict on a trials file; used by
scripts/perf-compare.sh). Exit status: 0 ok, 1 data error, 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from . import estimate as _estimate
from .estimate import SORT_KEYS, analyze
from .perfstats import TrialsError, compare_trials, comparison_json, format_comparison, load_trials
from .plot_perf import plot_compare
from .plot_curves import plot_profile
from .plotting import _check_output
from .profile import load_profiles
from .ranking import format_ranking, group_by_handler, ranking_json
from .util import guarded


def _prog() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name in ("coact-plot", "coact_plot.py") else "coact-plot"


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=_prog(),
        description="Speedup-curve plots from causal profiles (Coz profile.coz or "
                    "coact JSON lines) and perf-compare distribution plots.")
    from . import __version__
    p.add_argument("--version", action="version", version=f"coact-plot {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    pp = sub.add_parser("profile", help="rank regions and plot speedup curves",
                        description="Rank regions by causal impact, print the ranking "
                                    "and optionally plot one panel per region.")
    pp.add_argument("profiles", nargs="+", metavar="PROFILE",
                    help="profile.coz or .jsonl file(s); several are pooled")
    pp.add_argument("-o", "--output", help="plot file, .png or .svg (default: no plot)")
    pp.add_argument("-n", "--top", type=int, default=10,
                    help="show the N best regions (0 = all; default 10)")
    pp.add_argument("--sort", choices=SORT_KEYS, default="rank",
                    help="order: rank (default: ranked regions by the prediction at --rank-at, "
                         "then those without enough evidence), area (Coz's impact), name")
    _estimate.add_common_arguments(pp)
    pp.add_argument("-t", "--title", help="figure title")
    pp.add_argument("--json", action="store_true", help="print the ranking as JSON")

    pe = sub.add_parser("estimate", help="predicted program speedup per region at each measured s",
                        description="Predicted program speedup at each measured virtual "
                                    "speedup, per region: the estimator of the plots and of "
                                    "coact-profile validate (reports/README.md).")
    _estimate.add_arguments(pe)

    pc = sub.add_parser("compare", help="plot perf-compare trials",
                        description="Paired comparison of base and cand trials.")
    pc.add_argument("trials", metavar="TRIALS.jsonl")
    pc.add_argument("-o", "--output", help="plot file, .png or .svg (default: no plot)")
    pc.add_argument("-m", "--metric", action="append", dest="metrics", metavar="NAME",
                    help="metric to show (repeatable; default all)")
    pc.add_argument("--bootstrap", type=int, default=10000, metavar="N",
                    help="bootstrap replicates for the CI (default 10000)")
    pc.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    pc.add_argument("-t", "--title", help="figure title")
    pc.add_argument("--json", action="store_true", help="print the result as JSON")

    pt = sub.add_parser("trace", help="plot the span distributions of a per-mail trace",
                        description="Box plots of the construct, queued, drain and handler "
                                    "spans per recipient handler region, from a trace written "
                                    "with COACT_TRACE=on (coact-trace summary prints the numbers).")
    pt.add_argument("trace", metavar="TRACE.json")
    pt.add_argument("-o", "--output", required=True, help="plot file, .png or .svg")
    pt.add_argument("-n", "--top", type=int, default=8, help="regions with most mails to show (default 8)")
    pt.add_argument("-t", "--title", help="figure title")
    return p


def _run_trace(a) -> int:
    from .plot_trace import load_spans, plot_trace
    if a.top < 1:
        raise ValueError("--top must be >= 1")
    _check_output(a.output)
    spans = load_spans(a.trace)
    shown = plot_trace(spans, a.output, a.top, a.title)
    print(f"{_prog()}: wrote {a.output} ({len(shown)} regions)", file=sys.stderr)
    return 0


def _run_profile(a) -> int:
    if a.top < 0 or a.min_points < 2 or a.min_experiments < 2:
        raise ValueError("--top must be >= 0, --min-points and --min-experiments >= 2")
    if not (0 < a.rank_at <= 1):
        raise ValueError(f"--rank-at {a.rank_at:g}: want a virtual speedup in (0, 1], a fraction")
    if a.output:
        _check_output(a.output)
    profile = load_profiles(a.profiles)
    results = analyze(profile, a.points, a.min_points, a.sort, a.fit, a.baseline,
                      a.min_experiments, a.rank_at)
    shown = group_by_handler(results[:a.top] if a.top else results)
    if a.json:
        sys.stdout.write(ranking_json(shown, profile, a.sort, _estimate.estimator_json(a),
                                      a.rank_at) + "\n")
    else:
        sys.stdout.write(format_ranking(shown, a.rank_at))
    if a.output:
        plot_profile(shown, a.output, a.title)
        print(f"{_prog()}: wrote {a.output}", file=sys.stderr)
    return 0


def _run_compare(a) -> int:
    if a.output:
        _check_output(a.output)
    trials = load_trials(a.trials)
    if a.metrics:
        known = {t.metric for t in trials}
        missing = [m for m in a.metrics if m not in known]
        if missing:
            raise TrialsError(f"no metric named {', '.join(map(repr, missing))}; "
                              f"available: {', '.join(sorted(known))}", a.trials)
        trials = [t for t in trials if t.metric in a.metrics]
    comps = compare_trials(trials, a.bootstrap, a.seed, a.trials)
    sys.stdout.write((comparison_json(comps) + "\n") if a.json else format_comparison(comps))
    if a.output:
        plot_compare(comps, a.output, a.title, a.seed)
        print(f"{_prog()}: wrote {a.output}", file=sys.stderr)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """CLI entry point; returns the exit status (0 ok, 1 data error, 2 usage)."""
    a = _build_parser().parse_args(argv)        # exits 2 on a usage error
    run = {"profile": _run_profile, "compare": _run_compare,
           "estimate": _estimate.run, "trace": _run_trace}[a.command]
    return guarded(_prog(), run, a)


if __name__ == "__main__":
    sys.exit(main())
