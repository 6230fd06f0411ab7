"""perf-compare statistics: trials, pairing, bootstrap CIs."""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .profile import ProfileWarning, TrialsError, json_object_line
from .util import clean as _clean, pct as _pct

@dataclass(frozen=True)
class Trial:
    variant: str      # "base" | "cand"
    trial: int
    metric: str
    value: float


@dataclass
class MetricComparison:
    metric: str
    trials: List[int]            # paired trial ids
    base: np.ndarray
    cand: np.ndarray
    delta: np.ndarray            # cand - base, paired by trial
    median_delta: float
    ci: Tuple[float, float]
    rel_median: float            # median of (cand - base) / base, nan if base has 0
    rel_ci: Tuple[float, float]

    @property
    def ci_excludes_zero(self) -> bool:
        return self.ci[0] > 0 or self.ci[1] < 0


def load_trials(path: str) -> List[Trial]:
    """Read perf-compare trials, one JSON object per line:
    {"variant":"base"|"cand","trial":i,"metric":name,"value":x} (extra fields
    ignored). Same robustness rules as profiles; raises TrialsError."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
    except OSError as e:
        raise TrialsError(f"cannot read: {e.strerror}", path) from None
    lines = text.split("\n")
    terminated = text.endswith("\n")
    if terminated:
        lines.pop()
    trials: List[Trial] = []
    seen: Dict[Tuple[str, int, str], int] = {}
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        try:
            t = _parse_trial(line, path, lineno)
        except TrialsError as e:
            if lineno == len(lines) and not terminated:
                warnings.warn(f"{path}:{lineno}: last line is truncated (no newline and "
                              f"does not parse: {e.message}); skipped",
                              ProfileWarning, stacklevel=2)
                break
            raise
        if t is None:
            continue
        k = (t.variant, t.trial, t.metric)
        if k in seen:
            raise TrialsError(f"duplicate trial: variant {t.variant!r} trial {t.trial} "
                              f"metric {t.metric!r} already at line {seen[k]}",
                              path, lineno)
        seen[k] = lineno
        trials.append(t)
    if not trials:
        raise TrialsError("no trials in file", path)
    return trials


def _parse_trial(line: str, path: str, lineno: int) -> Optional[Trial]:
    obj = json_object_line(line, path, lineno, TrialsError, "trial record is not a JSON object")
    if "type" in obj and obj.get("type") != "trial":
        return None                      # other record kinds are ignored
    for k in ("variant", "trial", "metric", "value"):
        if k not in obj:
            raise TrialsError(f"trial record lacks field '{k}'", path, lineno)
    variant = obj["variant"]
    if variant not in ("base", "cand"):
        raise TrialsError(f"variant must be \"base\" or \"cand\", got {variant!r}",
                          path, lineno)
    tid = obj["trial"]
    if isinstance(tid, bool) or not isinstance(tid, int):
        raise TrialsError(f"trial must be an integer, got {tid!r}", path, lineno)
    metric = obj["metric"]
    if not isinstance(metric, str) or not metric:
        raise TrialsError(f"metric must be a non-empty string, got {metric!r}",
                          path, lineno)
    value = obj["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(float(value)):
        raise TrialsError(f"value must be a finite number, got {value!r}", path, lineno)
    return Trial(variant, tid, metric, float(value))


def bootstrap_median_ci(x: np.ndarray, n_boot: int, rng) -> Tuple[float, float]:
    """Percentile-bootstrap 95% interval of the median of x: n_boot resamples
    of x with replacement drawn from rng (a numpy Generator; the same seed
    gives the same interval), the 2.5th and 97.5th percentiles of their
    medians. (nan, nan) when x is empty or n_boot is not positive. The one
    bootstrap of a median: perf-compare's paired deltas and bench.py's
    per-pair ratios."""
    if len(x) == 0 or n_boot <= 0:
        return (math.nan, math.nan)
    idx = rng.integers(0, len(x), size=(n_boot, len(x)))
    meds = np.median(x[idx], axis=1)
    return (float(np.percentile(meds, 2.5)), float(np.percentile(meds, 97.5)))


def compare_trials(trials: Sequence[Trial], n_boot: int = 10000,
                   seed: int = 0, source: str = "") -> List[MetricComparison]:
    """Pair base and cand by (metric, trial); per metric, the median of the
    paired deltas (cand - base) and a percentile-bootstrap 95% CI of that
    median (pairs resampled with replacement, fixed seed). Unpaired trials
    are left out with a warning; a metric with no pair raises TrialsError."""
    rng = np.random.default_rng(seed)
    by_metric: Dict[str, Dict[str, Dict[int, float]]] = {}
    for t in trials:
        by_metric.setdefault(t.metric, {"base": {}, "cand": {}})[t.variant][t.trial] = t.value
    out = []
    for metric in sorted(by_metric):
        b, c = by_metric[metric]["base"], by_metric[metric]["cand"]
        ids = sorted(set(b) & set(c))
        unpaired = sorted(set(b) ^ set(c))
        if unpaired:
            warnings.warn(f"metric {metric!r}: trial(s) {unpaired} have only one variant; "
                          "left out of the paired comparison", ProfileWarning, stacklevel=2)
        if not ids:
            raise TrialsError(f"metric {metric!r} has no trial with both base and cand",
                              source or None)
        base = np.array([b[i] for i in ids])
        cand = np.array([c[i] for i in ids])
        delta = cand - base
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = delta / base
        rel_ok = np.all(base != 0)
        out.append(MetricComparison(
            metric, ids, base, cand, delta, float(np.median(delta)),
            bootstrap_median_ci(delta, n_boot, rng),
            float(np.median(rel)) if rel_ok else math.nan,
            bootstrap_median_ci(rel, n_boot, rng) if rel_ok else (math.nan, math.nan)))
    return out


def comparison_json(comps: Sequence[MetricComparison]) -> str:
    return json.dumps({"metrics": [{
        "metric": m.metric, "pairs": len(m.trials),
        "base_median": float(np.median(m.base)), "cand_median": float(np.median(m.cand)),
        "median_delta": m.median_delta, "ci": list(m.ci),
        "relative_median_delta": _clean(m.rel_median),
        "relative_ci": [_clean(m.rel_ci[0]), _clean(m.rel_ci[1])],
        "ci_excludes_zero": m.ci_excludes_zero} for m in comps]}, indent=2)


def format_comparison(comps: Sequence[MetricComparison]) -> str:
    head = ["metric", "pairs", "base median", "cand median", "median delta",
            "95% CI", "rel. delta", "rel. 95% CI"]
    rows = [head]
    for m in comps:
        rows.append([m.metric, str(len(m.trials)), f"{np.median(m.base):.6g}",
                     f"{np.median(m.cand):.6g}", f"{m.median_delta:+.6g}",
                     f"[{m.ci[0]:+.6g}, {m.ci[1]:+.6g}]",
                     _pct(m.rel_median),
                     "n/a" if not math.isfinite(m.rel_ci[0])
                     else f"[{_pct(m.rel_ci[0])}, {_pct(m.rel_ci[1])}]"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.rjust(widths[i]) if i else c.ljust(widths[i])
                       for i, c in enumerate(r)).rstrip() for r in rows]
    return "\n".join(lines) + "\ndelta = cand - base, paired by trial; CI: bootstrap " \
        "of the median paired delta\n"


# --------------------------------------------------------------------------
# perf-compare's verdict, outliers, environment check, metric extraction and
# Google Benchmark JSON: one implementation for scripts/perf-compare.sh, the
# `compare` plot and the tests.
# --------------------------------------------------------------------------

NO_CHANGE = "no change (within noise)"
MAD_SCALE = 1.4826          # MAD * 1.4826 estimates sigma for normal data
MEAN_AD_SCALE = 1.2533      # mean absolute deviation * sqrt(pi/2) estimates sigma
DEFAULT_OUTLIER_K = 3.0
OUTLIER_MIN_REL = 0.01      # and more than 1% from the median: a tight cluster of
                            # 5 trials can have a tiny MAD that flags ordinary noise
DEFAULT_LOAD_MARGIN = 1.0   # load-average points between the two sides' means
DEFAULT_FREQ_MARGIN = 0.10  # relative difference of the sides' mean CPU frequency


def find_outliers(ids: Sequence[int], values: Sequence[float],
                  k: float = DEFAULT_OUTLIER_K, min_rel: float = OUTLIER_MIN_REL) -> List[dict]:
    """Trials more than k robust standard deviations from their side's median:
    |x - median| > k * 1.4826 * MAD, and also more than min_rel (1%) of
    |median| away (with 5 trials the MAD can be tiny by chance). When the MAD is 0 (more than half the
    trials identical) the scale is the mean absolute deviation from the
    median times 1.2533 instead; when that is 0 too (all trials identical)
    there is no outlier. Returns [{"trial", "value", "mads"}], "mads" being
    |x - median| over that scale. Outliers are reported, not removed (the
    verdict uses medians, which they cannot drag)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 3:
        return []
    med = float(np.median(x))
    dev = np.abs(x - med)
    scale = float(np.median(dev)) * MAD_SCALE
    if scale == 0:
        scale = float(np.mean(dev)) * MEAN_AD_SCALE
    if scale == 0:
        return []
    return [{"trial": int(i), "value": float(v), "mads": round(float(d / scale), 2)}
            for i, v, d in zip(ids, x, dev) if d > k * scale and d > min_rel * abs(med)]


def verdict(m: MetricComparison, higher_is_better: bool, floor_pct: float,
            withhold: Optional[str] = None) -> dict:
    """The verdict rule (scripts/perf-compare.sh's header says why): "faster"
    (better in the metric's direction) or "slower" only if the bootstrap 95%
    CI of the median relative paired delta excludes 0 AND |median| > the
    noise floor; otherwise "no change (within noise)". "no verdict: REASON"
    when a relative delta does not exist (a base trial is 0) or `withhold`
    gives a reason (e.g. the environment differs). Percent figures."""
    out = {"median_delta_pct": None, "ci95_pct": [None, None], "ci_excludes_zero": False}
    if not math.isfinite(m.rel_median):
        zeros = [t for t, b in zip(m.trials, m.base) if b == 0]
        out.update(verdict="no verdict: a base trial is 0, so there is no relative delta",
                   reason=f"base value 0 in trial(s) {zeros}")
        return out
    med = m.rel_median * 100
    lo, hi = m.rel_ci[0] * 100, m.rel_ci[1] * 100
    excl = lo > 0 or hi < 0
    out.update(median_delta_pct=round(med, 3), ci95_pct=[round(lo, 3), round(hi, 3)],
               ci_excludes_zero=bool(excl))
    if excl and abs(med) > floor_pct:
        better = med > 0 if higher_is_better else med < 0
        v = "faster" if better else "slower"
        reason = (f"95% CI [{lo:+.2f}%, {hi:+.2f}%] excludes 0 and |median delta| "
                  f"{abs(med):.2f}% > noise floor {floor_pct:.2f}%")
    elif excl:
        v = NO_CHANGE
        reason = (f"95% CI excludes 0 but |median delta| {abs(med):.2f}% <= noise floor "
                  f"{floor_pct:.2f}%: consistent but too small to tell from run-level bias")
    else:
        v = NO_CHANGE
        reason = f"95% CI [{lo:+.2f}%, {hi:+.2f}%] includes 0"
        if abs(med) > floor_pct:
            reason += (f" (|median delta| {abs(med):.2f}% is above the floor: inconclusive, "
                       "more trials may settle it)")
    if withhold:
        out.update(verdict=f"no verdict: {withhold}",
                   reason=f"{withhold}; the data alone would say: {v} ({reason})")
    else:
        out.update(verdict=v, reason=reason)
    return out


def summarize_environment(samples: Sequence[dict]) -> dict:
    """One side's environment from its per-trial samples (see
    perfcompare_env.sample_environment): constant facts as sets, loads and
    frequency as means."""
    def mean(key):
        xs = [s[key] for s in samples if s.get(key) is not None]
        return round(float(np.mean(xs)), 3) if xs else None

    def distinct(key):
        return sorted({json.dumps(s.get(key), sort_keys=True) for s in samples})

    return {
        "trials": len(samples),
        "cpu_model": [json.loads(x) for x in distinct("cpu_model")],
        "cores": [json.loads(x) for x in distinct("cores")],
        "governor": [json.loads(x) for x in distinct("governor")],
        "calibration": [json.loads(x) for x in distinct("calibration")],
        "freq_mhz_mean": mean("freq_mhz"),
        "load1_before_mean": mean("load1_before"),
        "load1_after_mean": mean("load1_after"),
    }


def environment_differs(base: dict, cand: dict, load_margin: float = DEFAULT_LOAD_MARGIN,
                        freq_margin: float = DEFAULT_FREQ_MARGIN) -> Optional[str]:
    """A reason to withhold the verdict, or None. The sides ran under visibly
    different conditions if their CPU model, usable core count, frequency
    governor or calibration file (path and content) differ, if their mean
    1-minute load average before a trial differs by more than load_margin,
    or their mean CPU frequency by more than freq_margin (relative)."""
    reasons = []
    for key, what in (("cpu_model", "CPU model"), ("cores", "usable cores"),
                      ("governor", "frequency governor"), ("calibration", "calibration file")):
        if base.get(key) != cand.get(key):
            reasons.append(f"{what} {base.get(key)} vs {cand.get(key)}")
    lb, lc = base.get("load1_before_mean"), cand.get("load1_before_mean")
    if lb is not None and lc is not None and abs(lb - lc) > load_margin:
        reasons.append(f"mean load average before a trial {lb:.2f} (base) vs {lc:.2f} (cand), "
                       f"more than {load_margin:g} apart")
    fb, fc = base.get("freq_mhz_mean"), cand.get("freq_mhz_mean")
    if fb and fc and abs(fb - fc) / max(fb, fc) > freq_margin:
        reasons.append(f"mean CPU frequency {fb:.0f} vs {fc:.0f} MHz, more than "
                       f"{freq_margin * 100:g}% apart")
    return "environment differs: " + "; ".join(reasons) if reasons else None


def metric_value(doc, path: str):
    """The number at dotted path `path` in a parsed JSON document ("a.b.2.c":
    object keys, list indices). A key that itself contains dots is found too
    (the longest matching key first). Raises KeyError / ValueError with a
    message naming the path and what was there."""
    def walk(node, parts, done):
        if not parts:
            return node
        if isinstance(node, dict):
            for n in range(len(parts), 0, -1):          # longest key first
                key = ".".join(parts[:n])
                if key in node:
                    return walk(node[key], parts[n:], done + [key])
            raise KeyError(f"no key {parts[0]!r} at {'.'.join(done) or 'the top level'}"
                           f" (keys there: {', '.join(map(str, list(node)[:12]))})")
        if isinstance(node, list) and parts[0].lstrip("-").isdigit():
            i = int(parts[0])
            if -len(node) <= i < len(node):
                return walk(node[i], parts[1:], done + [parts[0]])
            raise KeyError(f"index {i} out of range at {'.'.join(done) or 'the top level'}")
        raise KeyError(f"{'.'.join(done) or 'the top level'} is not an object or list")
    v = walk(doc, path.split("."), [])
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise ValueError(f"{path} is {json.dumps(v)[:60]}, not a finite number")
    return float(v)


def json_output(text: str):
    """The JSON document a program printed: its whole stdout if that parses,
    else the last line that parses as a JSON object. None if there is none."""
    s = text.strip()
    if s:
        try:
            return json.loads(s)
        except ValueError:
            pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict):
                return doc
    return None


_TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def gbench_times(doc, field: str = "real_time") -> Dict[str, float]:
    """Per benchmark name, the median over its repetitions of `field`
    (real_time or cpu_time) in nanoseconds, from Google Benchmark's JSON
    (--benchmark_format=json). Repetitions are grouped by run_name (else
    name), whatever their order; aggregate rows (mean, median, stddev, cv)
    are skipped. Raises ValueError on a malformed document, an unknown time
    unit or a benchmark that reported an error."""
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ValueError("not Google Benchmark JSON (no 'benchmarks' list)")
    groups: Dict[str, List[float]] = {}
    for b in doc["benchmarks"]:
        if not isinstance(b, dict) or "name" not in b:
            raise ValueError("a benchmark entry has no name")
        if b.get("run_type") == "aggregate":
            continue
        name = b.get("run_name") or b["name"]
        if b.get("error_occurred"):
            raise ValueError(f"benchmark {name!r} reported an error: "
                             f"{b.get('error_message', '?')}")
        unit = b.get("time_unit", "ns")
        if unit not in _TIME_UNITS_NS:
            raise ValueError(f"benchmark {name!r}: unknown time_unit {unit!r} "
                             f"(expected one of {', '.join(_TIME_UNITS_NS)})")
        v = b.get(field)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"benchmark {name!r}: {field} is {v!r}, not a number")
        groups.setdefault(name, []).append(float(v) * _TIME_UNITS_NS[unit])
    if not groups:
        raise ValueError("no benchmark results (all filtered out?)")
    return {n: float(np.median(v)) for n, v in groups.items()}
