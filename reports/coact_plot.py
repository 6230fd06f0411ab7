#!/usr/bin/python3
"""coact_plot: speedup-curve plots from causal profiles, and perf-compare plots.

Two subcommands (also importable as functions):

  coact_plot.py profile PROFILE [PROFILE ...] [--output x.png|x.svg] ...
      Reads Coz ``profile.coz`` files (text format of Debian's coz-profiler
      0.2.2) and/or coact JSON-lines profiles, computes one speedup curve per
      (region, progress point), prints a ranking table (or --json), and draws
      one panel per region.

  coact_plot.py compare TRIALS.jsonl [--output x.png|x.svg] ...
      Reads perf-compare trials and draws per-metric distributions with the
      paired deltas; prints the median paired delta and a bootstrap 95% CI.

Run it with Debian's interpreter, ``/usr/bin/python3`` (it needs numpy and
matplotlib; scipy is not used). Exit status: 0 on success, 1 on a data error
(a ``ProfileError`` / ``TrialsError``: malformed line, empty profile, no
progress-point data, nothing left to plot), 2 on a usage error.

Input formats
=============

Coz ``profile.coz`` (text)
--------------------------
One record per line, fields separated by tabs; the first field is the record
type, the others are ``key=value`` (split at the first ``=``). Verified against
Coz's source (plasma-umass/coz):

  ``libcoz/profiler.cpp`` (``profiler_thread`` and ``log_samples``)::

      startup    time=<ns>
      experiment selected=<file>:<line> speedup=<0.00..1.00> duration=<ns>
                 selected-samples=<n>
      runtime    time=<ns>
      samples    location=<file>:<line> count=<n>

  ``libcoz/progress_point.h`` (``saved::log``)::

      throughput-point name=<name> delta=<n>
      latency-point    name=<name> arrivals=<n> departures=<n> difference=<n>

  Older Coz wrote ``progress-point name=<name> type=<t> delta=<n>``; the viewer
  treats it as a throughput point and so does this tool.

The output stream is ``ios::fixed`` with ``precision(2)``, so ``speedup`` is
written as ``0.00`` .. ``1.00`` (``SpeedupDivisions = 20`` in
``libcoz/profiler.h``: 5% steps). ``duration`` is the experiment's wall time
minus the delay inserted during it, in nanoseconds. Each progress-point record
belongs to the nearest ``experiment`` record above it. Coz opens the file in
append mode, so one file may hold several runs, each beginning with
``startup``. Newer Coz also writes the same records as JSON lines
(``{"type":"experiment","selected":..,"speedup":..,"duration":..}``,
``throughput_point`` / ``latency_point``); those are accepted too, since the
viewer (``viewer/ts/profile.ts``, ``parseLine``) decides text vs JSON per line
by a leading ``{``, and so does this tool.

coact JSON lines
----------------
One JSON object per line, each with a string ``type``. Experiments::

    {"type":"experiment","region":"Parser::Line","speedup":0.25,
     "duration_ns":120000000,"effective_ns":100000000,
     "progress":{"lines":1000, "req":{"arrivals":9,"departures":9,"difference":2}}}

``effective_ns`` (wall time minus injected delay, the quantity Coz calls
``duration``) is used when present, else ``duration_ns``. A ``progress`` value
that is a number is a throughput count; an object with ``arrivals``,
``departures`` and ``difference`` is a latency point. Extra fields anywhere are
ignored; records of other types are ignored.

Robustness rules (both formats)
-------------------------------
* A last line with no terminating newline that does not parse (a run killed
  mid-write) is skipped with a ``ProfileWarning``. (A cut inside the last
  number of a text record cannot be detected; such a line is kept.)
* Unknown record types are ignored.
* Any other line that does not parse, or lacks a required field, or has a
  non-numeric / negative number, raises ``ProfileError`` naming file and line.
* No experiments at all, or experiments without any progress-point data,
  raise ``ProfileError`` (the CLI exits 1 and draws nothing).

The math (same as Coz's viewer)
===============================
Source: ``viewer/ts/profile.ts`` (compiled to ``viewer/js/profile.js``),
``Profile.addThroughputMeasurement``, ``addLatencyMeasurement``,
``getDataPoint`` and ``getSpeedupData``.

1. Experiments are pooled per (selected region, progress point, speedup):
   throughput sums ``delta`` and ``duration``; latency sums ``arrivals``,
   ``departures`` and ``duration`` and keeps a duration-weighted mean of
   ``difference``.
2. Each pool gives one data point, a quantity where lower is better:
   throughput period = duration / delta (time per visit; the progress rate is
   its inverse, delta / duration); latency, by Little's law,
   difference / (arrivals / duration) (mean number in flight divided by the
   arrival rate). Pooled, both are sum(num) / sum(den) with num = duration,
   den = delta (throughput) and num = difference * duration, den = arrivals
   (latency).
3. The baseline is the speedup = 0 pool of the *same region and progress
   point*, i.e. the duration-pooled value over all of that region's speedup-0
   experiments (sum of durations over sum of deltas, not the mean of the
   per-experiment periods). A region without speedup-0 experiments, or whose
   baseline is not a finite positive number, has no curve (as in Coz).
4. program speedup = (baseline - value) / baseline. Values outside [-1, 2] are
   dropped, as the viewer does.
5. Deliberate difference: for latency points the viewer then negates the
   result (``shouldMaximize`` is false for latency), which shows a latency
   *reduction* as a program *slow-down* (plasma-umass/coz issue #104 reports
   exactly that symptom). Here a latency reduction is a positive program
   speedup, the same sign convention as throughput.
6. ``points`` of a curve counts distinct speedup values including 0, which is
   what the viewer's "minimum points" slider compares against.

Fit and confidence band
=======================
The curve is a weighted least-squares polynomial *through the origin*,
``y = c1*s + c2*s^2 + ... + cd*s^d`` (``--degree``, default 2; lowered so
that there are at least two distinct non-zero speedups per coefficient: a
quadratic through two levels bends freely between them, e.g. an archiver
region measured only at 80% and 90% dipped to -65% at 45%), fitted to the
per-experiment program speedups ``(baseline - value_i) / baseline`` of all
non-zero-speedup experiments, weighted by each experiment's duration. It goes
through the origin because program speedup is 0 at speedup 0 by definition of
the baseline. ``slope`` is the separate degree-1 fit, sum(w*s*y)/sum(w*s^2):
the average program speedup per unit of virtual speedup (1.0 = the region is
the whole critical path).

The 95% band is a pointwise percentile bootstrap (``--bootstrap`` replicates,
default 1000, ``--seed`` fixed so output is reproducible): each replicate
resamples with replacement (a) the speedup-0 experiments, recomputing the
pooled baseline, so baseline noise is carried into every point, and (b) the
other experiments within each speedup value (stratified, so every replicate
has the same design and the fit stays identifiable); it then refits. The band
is the 2.5th..97.5th percentile of the refitted curves at each speedup; the
same replicates give the CIs of ``slope`` and of the predictions. With one
experiment per speedup value and one baseline experiment the band has zero
width: the tool cannot invent noise it did not observe.

Ranking (``--sort``): ``slope`` (default), ``max`` (largest value of the fitted
curve over the observed speedup range), ``area`` (Coz's "impact":
``max_normalized_area`` of the pooled points, ported from profile.ts) or
``name``. A region ranks by its best curve among the selected progress points.
Predictions at 10/25/50% beyond the largest observed speedup are marked as
extrapolated (``*`` in the table).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = [
    "ProfileError", "ProfileWarning", "TrialsError",
    "Experiment", "Throughput", "Latency", "Profile",
    "parse_profile", "load_profiles",
    "Measurement", "Curve", "RegionResult", "analyze",
    "ranking_rows", "format_ranking", "ranking_json", "plot_profile",
    "Trial", "MetricComparison", "load_trials", "compare_trials",
    "format_comparison", "comparison_json", "plot_compare", "main",
]

PREDICT_AT = (0.10, 0.25, 0.50)
SPEEDUP_RANGE = (-1.0, 2.0)        # viewer: keep -1 <= progress_speedup <= 2
_SPEEDUP_KEY_DIGITS = 6            # speedups equal to 1e-6 share one pool


class ProfileError(Exception):
    """A profile cannot be used. ``str()`` is ``path:line: message`` when a
    line is at fault, else ``path: message``."""

    def __init__(self, message: str, path: Optional[str] = None,
                 lineno: Optional[int] = None):
        self.path, self.lineno, self.message = path, lineno, message
        where = ""
        if path is not None:
            where = f"{path}:{lineno}: " if lineno is not None else f"{path}: "
        super().__init__(where + message)


class TrialsError(ProfileError):
    """A perf-compare trials file cannot be used (same message format)."""


class ProfileWarning(UserWarning):
    """Something was skipped but the rest of the input is usable."""


# --------------------------------------------------------------------------
# Profile model and parsing
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Throughput:
    delta: float


@dataclass(frozen=True)
class Latency:
    arrivals: float
    departures: float
    difference: float


@dataclass
class Experiment:
    region: str
    speedup: float               # 0..1
    duration_ns: float           # effective: wall time minus injected delay
    points: Dict[str, object] = field(default_factory=dict)  # name -> Throughput|Latency
    source: str = ""             # "path:line" of the experiment record


@dataclass
class Profile:
    experiments: List[Experiment]
    paths: List[str]

    def progress_points(self) -> List[str]:
        return sorted({n for e in self.experiments for n in e.points})


_RECORD_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_IGNORED_TYPES = {"startup", "shutdown", "runtime", "samples"}
_THROUGHPUT_TYPES = {"throughput-point", "throughput_point", "progress-point"}
_LATENCY_TYPES = {"latency-point", "latency_point"}


def _number(value, what: str, path: str, lineno: int, *, lo: float = 0.0,
            hi: float = math.inf) -> float:
    """Parse a finite number in [lo, hi]; ProfileError otherwise."""
    if isinstance(value, bool):
        raise ProfileError(f"{what} must be a number, got {value!r}", path, lineno)
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, str):
        try:
            x = float(value)
        except ValueError:
            raise ProfileError(f"{what} must be a number, got {value!r}",
                               path, lineno) from None
    else:
        raise ProfileError(f"{what} must be a number, got {value!r}", path, lineno)
    if not math.isfinite(x) or x < lo or x > hi:
        rng = f"[{lo:g}, {hi:g}]" if math.isfinite(hi) else f">= {lo:g}"
        raise ProfileError(f"{what} must be a finite number {rng}, got {value!r}",
                           path, lineno)
    return x


def _require(fields: dict, key: str, rtype: str, path: str, lineno: int):
    if key not in fields:
        raise ProfileError(f"{rtype} record lacks field '{key}'", path, lineno)
    return fields[key]


def _parse_text_line(line: str, path: str, lineno: int) -> Tuple[str, dict]:
    parts = line.split("\t")
    rtype = parts[0].strip()
    if not _RECORD_TYPE.match(rtype):
        raise ProfileError(f"not a profile record: {line[:60]!r}", path, lineno)
    fields = {}
    for part in parts[1:]:
        if part == "":
            continue
        key, eq, value = part.partition("=")
        if not eq or not key:
            if rtype in _IGNORED_TYPES or not _is_known(rtype):
                continue            # viewer skips such fields; only known records are strict
            raise ProfileError(f"field {part[:40]!r} of {rtype} record is not key=value",
                               path, lineno)
        fields[key] = value
    return rtype, fields


def _is_known(rtype: str) -> bool:
    return (rtype == "experiment" or rtype in _THROUGHPUT_TYPES
            or rtype in _LATENCY_TYPES)


def _point_from_fields(rtype: str, fields: dict, path: str, lineno: int):
    name = _require(fields, "name", rtype, path, lineno)
    if not isinstance(name, str) or name == "":
        raise ProfileError(f"{rtype} record has an empty or non-string name", path, lineno)
    if rtype in _THROUGHPUT_TYPES:
        return name, Throughput(_number(_require(fields, "delta", rtype, path, lineno),
                                        "delta", path, lineno))
    vals = [_number(_require(fields, k, rtype, path, lineno), k, path, lineno)
            for k in ("arrivals", "departures", "difference")]
    return name, Latency(*vals)


def _experiment_from_fields(fields: dict, path: str, lineno: int, *,
                            coact: bool) -> Experiment:
    region_key = "region" if coact else "selected"
    region = _require(fields, region_key, "experiment", path, lineno)
    if not isinstance(region, str) or region == "":
        raise ProfileError(f"experiment field '{region_key}' must be a non-empty string",
                           path, lineno)
    speedup = _number(_require(fields, "speedup", "experiment", path, lineno),
                      "speedup", path, lineno, hi=1.0)
    if coact:
        if "effective_ns" in fields:
            dur = _number(fields["effective_ns"], "effective_ns", path, lineno)
        elif "duration_ns" in fields:
            dur = _number(fields["duration_ns"], "duration_ns", path, lineno)
        else:
            raise ProfileError("experiment record lacks field 'effective_ns' "
                               "(or 'duration_ns')", path, lineno)
    else:
        dur = _number(_require(fields, "duration", "experiment", path, lineno),
                      "duration", path, lineno)
    return Experiment(region, speedup, dur, {}, f"{path}:{lineno}")


def _coact_points(exp: Experiment, progress, path: str, lineno: int) -> None:
    if not isinstance(progress, dict):
        raise ProfileError("experiment field 'progress' must be an object "
                           "{name: count | {arrivals, departures, difference}}",
                           path, lineno)
    for name, value in progress.items():
        if isinstance(value, dict):
            vals = []
            for k in ("arrivals", "departures", "difference"):
                if k not in value:
                    raise ProfileError(f"latency progress '{name}' lacks field '{k}'",
                                       path, lineno)
                vals.append(_number(value[k], f"progress '{name}' {k}", path, lineno))
            exp.points[name] = Latency(*vals)
        else:
            exp.points[name] = Throughput(
                _number(value, f"progress '{name}'", path, lineno))


def parse_profile(path: str) -> List[Experiment]:
    """Parse one profile file (Coz text, Coz JSON or coact JSON lines, mixed
    per line). Returns experiments in file order, each with its progress
    points. Raises ProfileError on a malformed line or an unreadable file;
    warns (ProfileWarning) and skips an unterminated, unparseable last line.
    Does not check emptiness: see load_profiles."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ProfileError(f"cannot read: {e.strerror}", path) from None
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    terminated = text.endswith("\n")
    if terminated:
        lines.pop()                       # the empty string after the final '\n'
    experiments: List[Experiment] = []
    current: Optional[Experiment] = None
    current_line = 0
    last = len(lines)
    for lineno, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        if line.strip() == "":
            continue
        try:
            if line.lstrip().startswith("{"):
                current, current_line = _handle_json(line, path, lineno, experiments,
                                                     current, current_line)
            else:
                current, current_line = _handle_text(line, path, lineno, experiments,
                                                     current, current_line)
        except ProfileError as e:
            if lineno == last and not terminated:
                warnings.warn(f"{path}:{lineno}: last line is truncated (no newline "
                              f"and does not parse: {e.message}); skipped",
                              ProfileWarning, stacklevel=2)
                break
            raise
    return experiments


def _attach(current: Optional[Experiment], current_line: int, name: str, point,
            rtype: str, path: str, lineno: int) -> None:
    if current is None:
        raise ProfileError(f"{rtype} record before any experiment record", path, lineno)
    if name in current.points:
        raise ProfileError(f"progress point {name!r} appears twice for the experiment "
                           f"at line {current_line}", path, lineno)
    current.points[name] = point


def _handle_text(line, path, lineno, experiments, current, current_line):
    rtype, fields = _parse_text_line(line, path, lineno)
    if rtype == "experiment":
        exp = _experiment_from_fields(fields, path, lineno, coact=False)
        experiments.append(exp)
        return exp, lineno
    if rtype in _THROUGHPUT_TYPES or rtype in _LATENCY_TYPES:
        name, point = _point_from_fields(rtype, fields, path, lineno)
        _attach(current, current_line, name, point, rtype, path, lineno)
        return current, current_line
    if rtype == "startup":
        return None, 0                    # a new run appended to the same file
    return current, current_line          # runtime, samples, shutdown, unknown


def _handle_json(line, path, lineno, experiments, current, current_line):
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise ProfileError(f"invalid JSON ({e.msg} at column {e.colno})",
                           path, lineno) from None
    if not isinstance(obj, dict):
        raise ProfileError("JSON record is not an object", path, lineno)
    rtype = obj.get("type")
    if not isinstance(rtype, str) or not rtype:
        raise ProfileError("JSON record lacks a string field 'type'", path, lineno)
    if rtype == "experiment":
        coact = "region" in obj or "selected" not in obj
        exp = _experiment_from_fields(obj, path, lineno, coact=coact)
        if coact:
            _coact_points(exp, _require(obj, "progress", "experiment", path, lineno),
                          path, lineno)
        experiments.append(exp)
        return exp, lineno
    if rtype in _THROUGHPUT_TYPES or rtype in _LATENCY_TYPES:
        name, point = _point_from_fields(rtype, obj, path, lineno)
        _attach(current, current_line, name, point, rtype, path, lineno)
        return current, current_line
    if rtype == "startup":
        return None, 0
    return current, current_line


def load_profiles(paths: Sequence[str]) -> Profile:
    """Parse and pool several profile files. Raises ProfileError if none of
    them holds an experiment, or no experiment carries progress-point data."""
    if not paths:
        raise ProfileError("no profile files given")
    exps: List[Experiment] = []
    for p in paths:
        exps.extend(parse_profile(p))
    where = paths[0] if len(paths) == 1 else ", ".join(paths)
    if not exps:
        raise ProfileError("profile is empty: it contains no experiment records "
                           "(did the run reach a progress point, and last long "
                           "enough for one experiment?)", where)
    if not any(e.points for e in exps):
        raise ProfileError(f"profile has {len(exps)} experiment(s) but no "
                           "progress-point data (no throughput/latency point "
                           "records or empty 'progress')", where)
    return Profile(exps, list(paths))


# --------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------

@dataclass
class Measurement:
    """One pooled point: all experiments of one region at one speedup."""
    speedup: float
    program_speedup: float
    experiments: int
    duration_ns: float


@dataclass
class Curve:
    region: str
    point: str
    kind: str                          # "throughput" | "latency"
    baseline: float                    # ns per visit, or ns of latency
    measurements: List[Measurement]    # sorted by speedup, baseline included
    exp_speedup: np.ndarray            # per-experiment points used by the fit
    exp_program_speedup: np.ndarray
    degree: int
    coef: np.ndarray                   # c1..cd
    slope: float
    slope_ci: Tuple[float, float]
    grid: np.ndarray
    fit: np.ndarray
    band: Optional[Tuple[np.ndarray, np.ndarray]]
    predicted: Dict[float, Tuple[float, float, float]]  # s -> (value, lo, hi)
    max_speedup: float                 # largest observed speedup

    @property
    def experiments(self) -> int:
        return int(sum(m.experiments for m in self.measurements))

    @property
    def points(self) -> int:
        return len(self.measurements)

    def extrapolated(self, s: float) -> bool:
        return s > self.max_speedup + 1e-9

    def max_normalized_area(self) -> float:
        """Coz's "impact" sort key, ported from viewer/ts/profile.ts."""
        best, area = 0.0, 0.0
        ms = self.measurements
        for j in range(1, len(ms)):
            prev, cur = ms[j - 1], ms[j]
            area += (prev.program_speedup + cur.program_speedup) / 2 * \
                (cur.speedup - prev.speedup)
            if cur.speedup > 0:
                best = max(best, area / cur.speedup)
        return best

    def max_fitted(self) -> float:
        inside = self.grid <= self.max_speedup + 1e-9
        return float(np.max(self.fit[inside])) if inside.any() else 0.0


@dataclass
class RegionResult:
    region: str
    curves: List[Curve]
    score: float = 0.0


def _num_den(kind: str, p, duration: float) -> Tuple[float, float]:
    if kind == "throughput":
        return duration, p.delta                      # period = duration / delta
    return p.difference * duration, p.arrivals        # Little: diff / (arr / dur)


def _basis(s: np.ndarray, degree: int) -> np.ndarray:
    return np.stack([s ** k for k in range(1, degree + 1)], axis=-1)


def _wls(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    return coef


def _curve(region: str, point: str, kind: str, exps: List[Experiment],
           degree: int, n_boot: int, rng: np.random.Generator,
           grid: np.ndarray) -> Optional[Curve]:
    key = lambda s: round(s, _SPEEDUP_KEY_DIGITS)
    pools: Dict[float, List[Tuple[float, float, float]]] = {}
    for e in exps:
        num, den = _num_den(kind, e.points[point], e.duration_ns)
        pools.setdefault(key(e.speedup), []).append((num, den, e.duration_ns))
    if 0.0 not in pools:
        return None
    base_arr = np.array(pools[0.0], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        baseline = base_arr[:, 0].sum() / base_arr[:, 1].sum()
    if not (math.isfinite(baseline) and baseline > 0):
        return None
    lo_y, hi_y = SPEEDUP_RANGE
    measurements = []
    for s in sorted(pools):
        arr = np.array(pools[s], dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = arr[:, 0].sum() / arr[:, 1].sum()
            y = (baseline - value) / baseline
        if math.isfinite(y) and lo_y <= y <= hi_y:
            measurements.append(Measurement(s, float(y), len(arr), float(arr[:, 2].sum())))

    # Per-experiment points for the fit (non-zero speedups only).
    xs, vs, ws = [], [], []
    for s in sorted(pools):
        if s == 0.0:
            continue
        for num, den, dur in pools[s]:
            if den <= 0:
                continue
            v = num / den
            y = (baseline - v) / baseline
            if math.isfinite(y) and lo_y <= y <= hi_y:
                xs.append(s), vs.append(v), ws.append(dur)
    xs, vs, ws = (np.array(a, dtype=float) for a in (xs, vs, ws))
    if len(xs) == 0:
        return None
    if ws.sum() <= 0:
        ws = np.ones_like(ws)
    ws = ws / ws.mean()
    ys = (baseline - vs) / baseline
    distinct = np.unique(xs)
    deg = max(1, min(degree, int(np.count_nonzero(distinct)) // 2))
    coef = _wls(_basis(xs, deg), ys, ws)
    slope = float(np.sum(ws * xs * ys) / np.sum(ws * xs * xs))
    fit = _basis(grid, deg) @ coef
    pred_s = np.array(PREDICT_AT)
    pred = _basis(pred_s, deg) @ coef

    band = None
    slope_ci = (math.nan, math.nan)
    pred_ci = np.full((2, len(pred_s)), np.nan)
    if n_boot > 0:
        # (a) baseline: resample speedup-0 experiments, re-pool.
        n0 = len(base_arr)
        i0 = rng.integers(0, n0, size=(n_boot, n0))
        with np.errstate(divide="ignore", invalid="ignore"):
            b_star = base_arr[i0, 0].sum(axis=1) / base_arr[i0, 1].sum(axis=1)
        b_star[~(np.isfinite(b_star) & (b_star > 0))] = np.nan
        # (b) other experiments: resample within each speedup value.
        cols = []
        for s in distinct:
            members = np.flatnonzero(xs == s)
            cols.append(members[rng.integers(0, len(members),
                                             size=(n_boot, len(members)))])
        J = np.concatenate(cols, axis=1)                      # (R, m)
        xs_b, ws_b = xs[J], ws[J]
        ys_b = (b_star[:, None] - vs[J]) / b_star[:, None]
        X = _basis(xs_b, deg)                                  # (R, m, d)
        A = np.einsum("rmi,rm,rmj->rij", X, ws_b, X)
        rhs = np.einsum("rmi,rm,rm->ri", X, ws_b, np.nan_to_num(ys_b))
        try:
            coef_b = np.linalg.solve(A, rhs[..., None])[..., 0]    # (R, d)
        except np.linalg.LinAlgError:                          # zero-weight strata
            coef_b = np.stack([np.linalg.lstsq(A[r], rhs[r], rcond=None)[0]
                               for r in range(n_boot)])
        ok = np.isfinite(b_star)
        coef_b[~ok] = np.nan
        slope_b = np.sum(ws_b * xs_b * ys_b, axis=1) / np.sum(ws_b * xs_b ** 2, axis=1)
        slope_b[~ok] = np.nan
        if ok.any():
            fits_b = coef_b @ _basis(grid, deg).T
            band = (np.nanpercentile(fits_b, 2.5, axis=0),
                    np.nanpercentile(fits_b, 97.5, axis=0))
            slope_ci = (float(np.nanpercentile(slope_b, 2.5)),
                        float(np.nanpercentile(slope_b, 97.5)))
            preds_b = coef_b @ _basis(pred_s, deg).T
            pred_ci = np.stack([np.nanpercentile(preds_b, 2.5, axis=0),
                                np.nanpercentile(preds_b, 97.5, axis=0)])
    predicted = {float(s): (float(pred[i]), float(pred_ci[0, i]), float(pred_ci[1, i]))
                 for i, s in enumerate(pred_s)}
    return Curve(region, point, kind, float(baseline), measurements, xs, ys, deg,
                 coef, slope, slope_ci, grid, fit, band, predicted,
                 float(distinct.max()))


SORT_KEYS = ("slope", "max", "area", "name")


def analyze(profile: Profile, points: Optional[Sequence[str]] = None,
            min_points: int = 3, degree: int = 2, sort: str = "slope",
            n_boot: int = 1000, seed: int = 0) -> List[RegionResult]:
    """Compute speedup curves and rank regions (best first).

    points: progress-point names to use (default: all). min_points: a curve
    needs this many distinct speedups including the baseline. Raises
    ProfileError if a named point does not exist or no region has a curve."""
    if min_points < 2:
        raise ValueError("min_points must be >= 2 (the baseline plus one speedup)")
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {SORT_KEYS}")
    where = ", ".join(profile.paths)
    available = profile.progress_points()
    if points:
        missing = [p for p in points if p not in available]
        if missing:
            raise ProfileError(f"no progress point named {', '.join(map(repr, missing))}; "
                               f"available: {', '.join(map(repr, available))}", where)
        chosen = list(points)
    else:
        chosen = available
    rng = np.random.default_rng(seed)
    grid = np.linspace(0.0, 1.0, 101)
    by_region: Dict[str, List[Experiment]] = {}
    for e in profile.experiments:
        by_region.setdefault(e.region, []).append(e)
    no_baseline = too_few = 0
    results = []
    for region in sorted(by_region):
        curves = []
        for point in chosen:
            exps = [e for e in by_region[region] if point in e.points]
            kinds = {type(e.points[point]) for e in exps}
            if not exps:
                continue
            if len(kinds) > 1:
                raise ProfileError(f"progress point {point!r} is both a throughput "
                                   "and a latency point", where)
            kind = "throughput" if kinds == {Throughput} else "latency"
            if not any(round(e.speedup, _SPEEDUP_KEY_DIGITS) == 0 for e in exps):
                no_baseline += 1
                continue
            c = _curve(region, point, kind, exps, degree, n_boot, rng, grid)
            if c is not None and c.points >= min_points:
                curves.append(c)
            else:
                too_few += 1
        if curves:
            results.append(RegionResult(region, curves))
    if no_baseline:
        warnings.warn(f"{no_baseline} region/progress-point pair(s) have no "
                      "speedup-0 experiment (no baseline) and were left out",
                      ProfileWarning, stacklevel=2)
    if too_few:
        warnings.warn(f"{too_few} region/progress-point pair(s) have fewer than "
                      f"{min_points} usable distinct speedups (--min-points) and were "
                      "left out", ProfileWarning, stacklevel=2)
    if not results:
        raise ProfileError(f"no region has a baseline and at least {min_points} "
                           f"distinct speedups for progress point(s) "
                           f"{', '.join(map(repr, chosen))}; nothing to plot "
                           "(lower --min-points, or run the sweep longer)", where)
    for r in results:
        if sort == "slope":
            r.score = max(c.slope for c in r.curves)
        elif sort == "max":
            r.score = max(c.max_fitted() for c in r.curves)
        elif sort == "area":
            r.score = max(c.max_normalized_area() for c in r.curves)
    if sort == "name":
        results.sort(key=lambda r: r.region)
    else:
        results.sort(key=lambda r: (-r.score, r.region))
    return results


# --------------------------------------------------------------------------
# Ranking output
# --------------------------------------------------------------------------

def _clean(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def ranking_rows(results: Sequence[RegionResult]) -> List[dict]:
    """One dict per (region, progress point), in rank order. Speedups are
    fractions (0.125 = 12.5%)."""
    rows = []
    for rank, r in enumerate(results, start=1):
        for c in r.curves:
            rows.append({
                "rank": rank,
                "region": c.region,
                "point": c.point,
                "kind": c.kind,
                "experiments": c.experiments,
                "points": c.points,
                "degree": c.degree,
                "baseline_ns": _clean(c.baseline),
                "slope": _clean(c.slope),
                "slope_ci": [_clean(c.slope_ci[0]), _clean(c.slope_ci[1])],
                "predicted": {
                    f"{s:g}": {"program_speedup": _clean(v), "ci": [_clean(lo), _clean(hi)],
                               "extrapolated": c.extrapolated(s)}
                    for s, (v, lo, hi) in c.predicted.items()},
                "measurements": [
                    {"speedup": m.speedup, "program_speedup": _clean(m.program_speedup),
                     "experiments": m.experiments} for m in c.measurements],
            })
    return rows


def ranking_json(results: Sequence[RegionResult], profile: Profile, sort: str) -> str:
    doc = {"files": profile.paths, "sort": sort,
           "progress_points": sorted({c.point for r in results for c in r.curves}),
           "regions": ranking_rows(results)}
    return json.dumps(doc, indent=2)


def _pct(x: float, signed: bool = True) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x * 100:+.1f}%" if signed else f"{x * 100:.1f}%"


def format_ranking(results: Sequence[RegionResult]) -> str:
    rows = ranking_rows(results)
    head = ["rank", "region", "progress point", "exps", "pts", "slope", "slope 95% CI"] + \
        [f"@{int(s * 100)}%" for s in PREDICT_AT]
    table = [head]
    for row in rows:
        ci = row["slope_ci"]
        ci_s = "n/a" if ci[0] is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
        preds = []
        for s in PREDICT_AT:
            p = row["predicted"][f"{s:g}"]
            v = p["program_speedup"]
            preds.append(_pct(v if v is not None else math.nan) +
                         ("*" if p["extrapolated"] else ""))
        point = row["point"] + (" (latency)" if row["kind"] == "latency" else "")
        table.append([str(row["rank"]), row["region"], point, str(row["experiments"]),
                      str(row["points"]),
                      "n/a" if row["slope"] is None else f"{row['slope']:+.3f}", ci_s]
                     + preds)
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    right = {0, 3, 4, 5, 7, 8, 9}
    out = []
    for r in table:
        out.append("  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                             for i, c in enumerate(r)).rstrip())
    note = ("program speedup predicted by the fitted curve at 10/25/50% virtual "
            "speedup; * = beyond the largest measured speedup (extrapolated)")
    return "\n".join(out) + "\n" + note + "\n"


# --------------------------------------------------------------------------
# Plotting (matplotlib, object-oriented API: no pyplot, no global backend)
# --------------------------------------------------------------------------

_PLOT_FORMATS = ("png", "svg")


def _check_output(path: str) -> str:
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in _PLOT_FORMATS:
        raise ValueError(f"output {path!r}: extension must be .png or .svg")
    return ext


def _figure(width: float, height: float):
    import matplotlib
    matplotlib.rcParams["svg.hashsalt"] = "coact"      # reproducible SVG ids
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: str) -> None:
    ext = _check_output(path)
    meta = {"Date": None} if ext == "svg" else {"Software": None}
    fig.savefig(path, format=ext, metadata=meta)
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        raise OSError(f"{path}: plot was not written")


def _ellipsize(s: str, n: int = 48) -> str:
    return s if len(s) <= n else "…" + s[-(n - 1):]


def plot_profile(results: Sequence[RegionResult], output: str,
                 title: Optional[str] = None, columns: int = 3) -> None:
    """One panel per region (in the given order): pooled points (size grows
    with the number of experiments), faint per-experiment points, the fitted
    curve (dashed where extrapolated) and its 95% band; one colour per
    progress point. All panels share the y scale, as in Coz's viewer."""
    from matplotlib.ticker import PercentFormatter
    if not results:
        raise ValueError("nothing to plot")
    _check_output(output)
    n = len(results)
    ncols = max(1, min(columns, n))
    nrows = math.ceil(n / ncols)
    fig = _figure(4.3 * ncols, 3.2 * nrows + 1.1)
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    all_points = sorted({c.point for r in results for c in r.curves})
    colours = {p: f"C{i % 10}" for i, p in enumerate(all_points)}
    handles = {}
    ylo, yhi = 0.0, 0.0
    for idx, r in enumerate(results):
        ax = axes[idx // ncols][idx % ncols]
        ax.axhline(0, color="0.6", lw=0.8, zorder=0)
        for c in r.curves:
            col = colours[c.point]
            if c.band is not None:
                ax.fill_between(c.grid * 100, c.band[0] * 100, c.band[1] * 100,
                                color=col, alpha=0.18, lw=0)
            inside = c.grid <= c.max_speedup + 1e-9
            line, = ax.plot(c.grid[inside] * 100, c.fit[inside] * 100, color=col, lw=1.6)
            if (~inside).any():
                ax.plot(c.grid[~inside] * 100, c.fit[~inside] * 100, color=col,
                        lw=1.2, ls="--")
            ax.scatter(c.exp_speedup * 100, c.exp_program_speedup * 100, s=6,
                       color=col, alpha=0.3, lw=0)
            ms = c.measurements
            ax.scatter([m.speedup * 100 for m in ms],
                       [m.program_speedup * 100 for m in ms],
                       s=[14 + 10 * math.sqrt(m.experiments) for m in ms],
                       color=col, edgecolor="black", lw=0.5, zorder=3, clip_on=False)
            handles.setdefault(c.point + (" (latency)" if c.kind == "latency" else ""), line)
            vals = [m.program_speedup for m in ms] + list(c.fit)
            if c.band is not None:
                vals += list(c.band[0][inside]) + list(c.band[1][inside])
            finite = [v for v in vals if math.isfinite(v)]
            ylo, yhi = min([ylo] + finite), max([yhi] + finite)
        best = max(r.curves, key=lambda c: c.slope)
        ax.set_title(f"{idx + 1}. {_ellipsize(r.region)}\nslope {best.slope:+.2f}",
                     fontsize=9)
        ax.grid(True, color="0.92")
        ax.set_xlim(0, 100)
        ax.xaxis.set_major_formatter(PercentFormatter(decimals=0))
        ax.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    pad = max(0.02, 0.05 * (yhi - ylo))
    axes[0][0].set_ylim((ylo - pad) * 100, (yhi + pad) * 100)
    for j in range(n, nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    for row in axes:
        row[0].set_ylabel("program speedup")
    for ax in axes[-1]:
        ax.set_xlabel("region speedup (virtual)")
    for j in range(max(0, n - ncols), n):      # bottom visible panel of each column
        axes[j // ncols][j % ncols].xaxis.set_tick_params(labelbottom=True)
        axes[j // ncols][j % ncols].set_xlabel("region speedup (virtual)")
    height = fig.get_figheight()
    fig.suptitle(title or "Causal profile: speedup curves", fontsize=11,
                 y=1 - 0.08 / height, va="top")
    fig.legend(list(handles.values()), list(handles.keys()), loc="upper center",
               bbox_to_anchor=(0.5, 1 - 0.36 / height), ncol=min(4, len(handles)),
               fontsize=8, frameon=False)
    fig.text(0.5, 0.06 / height, "dots: pooled experiments per speedup (size ~ count), "
             "faint: single experiments; line: fit (dashed: extrapolated); "
             "band: 95% bootstrap", ha="center", va="bottom", fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.25 / height, 1, 1 - 0.6 / height))
    _save(fig, output)


# --------------------------------------------------------------------------
# perf-compare
# --------------------------------------------------------------------------

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


def plot_compare(comps: Sequence[MetricComparison], output: str,
                 title: Optional[str] = None, seed: int = 0) -> None:
    """Per metric, two panels: base and cand values (box + jittered strip,
    grey lines join the two runs of one trial), and the paired deltas (box +
    strip, median with its bootstrap 95% CI as an error bar, zero line)."""
    if not comps:
        raise ValueError("nothing to plot")
    _check_output(output)
    rng = np.random.default_rng(seed)
    n = len(comps)
    fig = _figure(9.0, 2.8 * n + 0.6)
    axes = fig.subplots(n, 2, squeeze=False, gridspec_kw={"width_ratios": [3, 2]})
    for i, m in enumerate(comps):
        ax, dx = axes[i]
        ax.boxplot([m.base, m.cand], positions=[0, 1], widths=0.45, showfliers=False,
                   medianprops={"color": "black"})
        jb = rng.uniform(-0.12, 0.12, len(m.base))
        jc = rng.uniform(-0.12, 0.12, len(m.cand))
        for k in range(len(m.base)):
            ax.plot([0 + jb[k], 1 + jc[k]], [m.base[k], m.cand[k]], color="0.75", lw=0.6,
                    zorder=1)
        ax.scatter(jb, m.base, s=14, color="C0", zorder=3, label="base")
        ax.scatter(1 + jc, m.cand, s=14, color="C1", zorder=3, label="cand")
        ax.set_xticks([0, 1])
        ax.set_xticklabels(["base", "cand"])
        ax.set_title(f"{m.metric} ({len(m.trials)} paired trials)", fontsize=9)
        ax.grid(True, axis="y", color="0.92")

        dx.axhline(0, color="0.5", lw=0.8)
        dx.boxplot([m.delta], positions=[0], widths=0.4, showfliers=False,
                   medianprops={"color": "black"})
        dx.scatter(rng.uniform(-0.1, 0.1, len(m.delta)), m.delta, s=14, color="C2",
                   zorder=3)
        lo, hi = m.ci
        dx.errorbar([0.35], [m.median_delta], yerr=[[m.median_delta - lo], [hi - m.median_delta]],
                    fmt="D", color="C3", capsize=4, ms=5)
        dx.set_xlim(-0.5, 0.7)
        dx.set_xticks([0, 0.35])
        dx.set_xticklabels(["cand - base", "median\n95% CI"], fontsize=8)
        rel = "" if not math.isfinite(m.rel_median) else f" ({_pct(m.rel_median)})"
        dx.set_title(f"paired delta: median {m.median_delta:+.4g}{rel}", fontsize=9)
        dx.grid(True, axis="y", color="0.92")
    fig.suptitle(title or "perf-compare: base vs cand", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    _save(fig, output)


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------

def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="coact_plot.py",
        description="Speedup-curve plots from causal profiles (Coz profile.coz or "
                    "coact JSON lines) and perf-compare distribution plots.")
    sub = p.add_subparsers(dest="command", required=True)

    pp = sub.add_parser("profile", help="rank regions and plot speedup curves",
                        description="Rank regions by causal impact, print the ranking "
                                    "and optionally plot one panel per region.")
    pp.add_argument("profiles", nargs="+", metavar="PROFILE",
                    help="profile.coz or .jsonl file(s); several are pooled")
    pp.add_argument("-o", "--output", help="plot file, .png or .svg (default: no plot)")
    pp.add_argument("-p", "--progress-point", action="append", dest="points",
                    metavar="NAME", help="progress point to use (repeatable; default all)")
    pp.add_argument("-n", "--top", type=int, default=10,
                    help="show the N best regions (0 = all; default 10)")
    pp.add_argument("--min-points", type=int, default=3,
                    help="distinct speedups, baseline included, a curve needs "
                         "(default 3; Coz's viewer defaults to 10)")
    pp.add_argument("--degree", type=int, default=2, choices=(1, 2, 3),
                    help="degree of the fitted polynomial through the origin (default 2)")
    pp.add_argument("--sort", choices=SORT_KEYS, default="slope",
                    help="ranking key (default slope)")
    pp.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                    help="bootstrap replicates for the 95%% band (0 = no band; default 1000)")
    pp.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    pp.add_argument("-t", "--title", help="figure title")
    pp.add_argument("--json", action="store_true", help="print the ranking as JSON")

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
    return p


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"coact_plot: warning: {message}", file=sys.stderr)


def _run_profile(a) -> int:
    if a.top < 0 or a.min_points < 2 or a.bootstrap < 0:
        raise ValueError("--top must be >= 0, --min-points >= 2, --bootstrap >= 0")
    if a.output:
        _check_output(a.output)
    profile = load_profiles(a.profiles)
    results = analyze(profile, a.points, a.min_points, a.degree, a.sort,
                      a.bootstrap, a.seed)
    shown = results[:a.top] if a.top else results
    if a.json:
        sys.stdout.write(ranking_json(shown, profile, a.sort) + "\n")
    else:
        sys.stdout.write(format_ranking(shown))
    if a.output:
        plot_profile(shown, a.output, a.title)
        print(f"coact_plot: wrote {a.output}", file=sys.stderr)
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
        print(f"coact_plot: wrote {a.output}", file=sys.stderr)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """CLI entry point; returns the exit status (0 ok, 1 data error, 2 usage)."""
    a = _build_parser().parse_args(argv)        # exits 2 on a usage error
    with warnings.catch_warnings():             # restores showwarning on exit
        warnings.simplefilter("always", ProfileWarning)
        warnings.showwarning = _show_warning
        try:
            return _run_profile(a) if a.command == "profile" else _run_compare(a)
        except ProfileError as e:               # includes TrialsError
            print(f"coact_plot: error: {e}", file=sys.stderr)
            return 1
        except ValueError as e:                 # bad option values
            print(f"coact_plot: error: {e}", file=sys.stderr)
            return 2

if __name__ == "__main__":
    sys.exit(main())
