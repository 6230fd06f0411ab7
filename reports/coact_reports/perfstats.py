"""perf-compare statistics: trials, pairing, bootstrap CIs."""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .profile import ProfileWarning, TrialsError
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
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise TrialsError(f"invalid JSON ({e.msg} at column {e.colno})",
                          path, lineno) from None
    if not isinstance(obj, dict):
        raise TrialsError("trial record is not a JSON object", path, lineno)
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


def _bootstrap_median_ci(x: np.ndarray, n_boot: int, rng) -> Tuple[float, float]:
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
            _bootstrap_median_ci(delta, n_boot, rng),
            float(np.median(rel)) if rel_ok else math.nan,
            _bootstrap_median_ci(rel, n_boot, rng) if rel_ok else (math.nan, math.nan)))
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
