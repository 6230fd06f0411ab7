"""coact_reports: causal-profile reports and perf-compare statistics.

Modules (each importable on its own; this package re-exports the public names):
  profile       reading profile.coz / profile.jsonl (ProfileError, load_profiles)
  estimate      the one estimator of predicted program speedup at virtual speedup s
                (analyze, Curve.predict, predictions); `python3 -m coact_reports.estimate`
  ranking       the ranking table (text, JSON)
  plot_curves   speedup-curve panels (plot_profile)
  perfstats     perf-compare trials, paired statistics, outliers, verdicts, gbench JSON
  plot_perf     perf-compare plots
  cli           the `coact-plot` command (reports/coact_plot.py in the source tree)

Runs on Debian's /usr/bin/python3 (numpy, scipy, matplotlib; no network).
"""

__version__ = "0.1.0"   # the project's version (CMakeLists.txt project(); a test keeps them equal)

import importlib

# Public names -> module; loaded on first use (PEP 562), so that
# `python3 -m coact_reports.estimate` does not import its own module twice.
_EXPORTS = {
    "profile": ("Experiment", "Latency", "Profile", "ProfileError", "ProfileWarning",
                "Throughput", "TrialsError", "load_profiles", "parse_profile"),
    "estimate": ("PREDICT_AT", "SORT_KEYS", "Curve", "Measurement", "RegionResult",
                 "analyze", "predictions"),
    "ranking": ("format_ranking", "group_by_handler", "ranking_json", "ranking_rows", "region_group"),
    "plot_curves": ("plot_profile",),
    "perfstats": ("MetricComparison", "Trial", "compare_trials", "comparison_json",
                  "format_comparison", "load_trials"),
    "plot_perf": ("plot_compare",),
    "cli": ("main",),
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module("." + _WHERE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
