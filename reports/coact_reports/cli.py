"""The command line: `coact-plot` (installed) or `reports/coact_plot.py`.

Subcommands: profile (ranking + speedup curves), estimate (predicted program
speedup per region at each measured s), compare (perf-compare trials), trace
(span distributions of a per-mail trace, COACT_TRACE),
verdict (perf-compare's verdict on a trials file; used by
scripts/perf-compare.sh). Exit status: 0 ok (also for a valid profile too
short to rank or plot anything: the table says so), 1 data error (or an
internal error, which says so), 2 usage error (a bad option, or an input that
is not a profile at all); util.guarded.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Optional, Sequence

from . import estimate as _estimate
from .estimate import MIN_LEVELS, SORT_KEYS, analyze
from .perfstats import TrialsError, compare_trials, comparison_json, format_comparison, load_trials
from .plot_perf import plot_compare
from .plot_curves import plot_profile, plottable
from .plotting import _check_output
from .profile import load_profiles
from .ranking import format_ranking, group_by_handler, ranking_json
from .util import UsageError, guarded


PROFILES_HELP = ("profile.coz or .jsonl file(s), or a directory (its *.jsonl files, "
                 "else its *.coz files: a sharded sweep's output); several are pooled")

# The sweep's draw of a virtual speedup: 0 with probability 8/28, as Coz's
# (causal/src/controller.cpp).
ZERO_SPEEDUP_SHARE = 8 / 28


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
                    help=PROFILES_HELP)
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
        raise UsageError("--top must be >= 1")
    _check_output(a.output)
    spans = load_spans(a.trace)
    shown = plot_trace(spans, a.output, a.top, a.title)
    print(f"{_prog()}: wrote {a.output} ({len(shown)} regions)", file=sys.stderr)
    return 0


def _run_profile(a) -> int:
    if a.top < 0 or a.min_points < 2 or a.min_experiments < 2:
        raise UsageError("--top must be >= 0, --min-points and --min-experiments >= 2")
    if not (0 < a.rank_at <= 1):
        raise UsageError(f"--rank-at {a.rank_at:g}: want a virtual speedup in (0, 1], a fraction")
    _estimate.check_systematic(a.systematic)
    if a.output:
        _check_output(a.output)
    profile = load_profiles(a.profiles)
    # keep_thin: a short sweep's regions without a curve are listed, not dropped.
    results = analyze(profile, a.points, a.min_points, a.sort, a.fit, a.baseline,
                      a.min_experiments, a.rank_at, keep_thin=True, interval=a.interval,
                      systematic=a.systematic)
    shown = group_by_handler(results[:a.top] if a.top else results)
    if a.json:
        sys.stdout.write(ranking_json(shown, profile, a.sort, _estimate.estimator_json(a),
                                      a.rank_at) + "\n")
    else:
        sys.stdout.write(format_ranking(shown, a.rank_at, profile.time_shares))
    if not plottable(shown):
        # A valid profile too thin to draw: say why and how long to sweep (exit 0).
        print(f"{_prog()}: nothing to plot yet: {_why_nothing(profile, a.points)}; "
              f"{_sweep_hint(profile, a.min_experiments)}"
              + (f"; {a.output} not written" if a.output else ""), file=sys.stderr)
    elif a.output:
        plot_profile(shown, a.output, a.title)
        print(f"{_prog()}: wrote {a.output}", file=sys.stderr)
    return 0


def _why_nothing(profile, points) -> str:
    """Why no region of a valid profile has a point to draw."""
    exps = [e for e in profile.experiments if not points or any(p in e.points for p in points)]
    secs = sum(e.duration_ns for e in exps) / 1e9
    above = [e for e in exps if round(e.speedup, 6) > 0]
    if not above:
        which = (f"the profile's only experiment ({secs:.3g} s) ran" if len(exps) == 1 else
                 f"all {len(exps)} experiments of the profile ({secs:.3g} s) ran")
        return f"{which} at speedup 0 (a baseline), none at a region speedup above 0"
    if len(above) == len(exps):
        return (f"none of the profile's {len(exps)} experiment{'s' if len(exps) != 1 else ''} "
                f"({secs:.3g} s) ran at speedup 0, so there is no baseline to compare with")
    return "no region shown has a usable program speedup above speedup 0"


def _sweep_hint(profile, min_experiments: int) -> str:
    """About how long a sweep must run before regions can be ranked."""
    exps = profile.experiments
    regions = len({e.region for e in exps})
    mean_s = sum(e.duration_ns for e in exps) / len(exps) / 1e9
    per = math.ceil(min_experiments / (1 - ZERO_SPEEDUP_SHARE))
    return (f"sweep longer, at least ~{max(1, math.ceil(per * regions * mean_s))} s: a region is "
            f"ranked after {min_experiments} experiments above speedup 0 at {MIN_LEVELS}+ speedups, "
            f"about {per} experiments of {mean_s:.2g} s each with the speedup-0 ones, for "
            + (f"each of the {regions} regions" if regions != 1 else "the one region")
            + " seen so far "
            "(coact-profile run --until-settled stops once the ranking settles)")


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
