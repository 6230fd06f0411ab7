"""The one estimator of "predicted program speedup at virtual speedup s" for a
region: the plots, the ranking table, ``coact-plot estimate`` and
``coact-profile validate`` all use :func:`analyze` / :func:`predict`.

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

The bend (``--fit auto``, the default, with degree >= 2): a program's period
is the longest of its paths, each linear in s, so a speedup curve is concave
and piecewise linear (min(s, 1/2) for a fork-join), and a polynomial through
the origin rounds its knee off (degree 2 on exact min(s, 1/2) data at s =
0.05..1.0: 0.448 at s = 0.5). So the fit also tries ``y = a*min(s, k) +
b*max(s - k, 0)`` for every measured speedup k with at least two measured
levels on each side and a concave bend (a >= b: a convex one only fits
noise), and keeps whichever of these and the polynomial has the smallest
weighted residual (``Curve.knee``: the k kept, None for the
polynomial). The bootstrap refits keep k. Simulated (40 experiments over the
20 levels, noise 4 points per experiment): bias at a knee -5.3 -> -0.9
points (farm W at 0.75: -5.4 -> -1.2), RMSE on a straight line 0.7-0.9 ->
0.9 points.

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
extrapolated (``*`` in the table)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .profile import Experiment, Profile, ProfileError, ProfileWarning, Throughput

PREDICT_AT = (0.10, 0.25, 0.50)
SPEEDUP_RANGE = (-1.0, 2.0)        # viewer: keep -1 <= progress_speedup <= 2
_SPEEDUP_KEY_DIGITS = 6            # speedups equal to 1e-6 share one pool

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
    coef_boot: Optional[np.ndarray] = None   # (R, d) bootstrap refits; None: no band
    knee: Optional[float] = None       # the bend of a hinge fit (coef: slopes below, above); None: polynomial

    def predict(self, s: float) -> Tuple[float, float, float]:
        """The fitted program speedup at virtual speedup s (a fraction, 0..1),
        with the 2.5th and 97.5th percentiles of the bootstrap refits (NaN
        when run without bootstrap). Beyond max_speedup it is an
        extrapolation (see extrapolated())."""
        x = np.array([float(s)])
        value = float((_basis(x, self.degree, self.knee) @ self.coef)[0])
        if self.coef_boot is None:
            return value, math.nan, math.nan
        preds = self.coef_boot @ _basis(x, self.degree, self.knee)[0]
        if not np.isfinite(preds).any():
            return value, math.nan, math.nan
        return (value, float(np.nanpercentile(preds, 2.5)),
                float(np.nanpercentile(preds, 97.5)))

    def measurement_at(self, s: float) -> Optional["Measurement"]:
        for m in self.measurements:
            if abs(m.speedup - s) < 10 ** -_SPEEDUP_KEY_DIGITS:
                return m
        return None

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


def _basis(s: np.ndarray, degree: int, knee: Optional[float] = None) -> np.ndarray:
    if knee is not None:  # a line through the origin that bends at s = knee
        return np.stack([np.minimum(s, knee), np.maximum(s - knee, 0.0)], axis=-1)
    return np.stack([s ** k for k in range(1, degree + 1)], axis=-1)


def _wsse(X: np.ndarray, y: np.ndarray, w: np.ndarray, coef: np.ndarray) -> float:
    r = y - X @ coef
    return float(np.sum(w * r * r))


def _wls(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    return coef


def _curve(region: str, point: str, kind: str, exps: List[Experiment],
           degree: int, n_boot: int, rng: np.random.Generator,
           grid: np.ndarray, model: str = "auto") -> Optional[Curve]:
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
    # The hinge: a line through the origin that bends once, at a measured
    # speedup with at least two measured levels on each side, when its
    # weighted residual is smaller than the polynomial's. A program's period
    # is the longest of its paths, each linear in s, so its speedup curve is
    # concave and piecewise linear (min(s, 1/2) for a fork-join); a polynomial
    # through the origin rounds the bend off and misses there by several
    # points even on exact data (degree 2 on min(s, 1/2) measured at
    # 0.05..1.0: 0.448 at s = 0.5; on min(0.8 s, 0.6): 0.546 at 0.75).
    knee = None
    if degree >= 2 and model == "auto":
        nz = distinct[distinct > 0]
        best = _wsse(_basis(xs, deg), ys, ws, coef)
        for k in nz:
            if np.count_nonzero(nz <= k) < 2 or np.count_nonzero(nz > k) < 2:
                continue
            Xk = _basis(xs, 2, float(k))
            ck = _wls(Xk, ys, ws)
            e = _wsse(Xk, ys, ws, ck)
            if e < best and ck[0] >= ck[1]:  # concave only: a convex bend fits noise
                best, knee, coef = e, float(k), ck
        if knee is not None:
            deg = 2
    slope = float(np.sum(ws * xs * ys) / np.sum(ws * xs * xs))
    fit = _basis(grid, deg, knee) @ coef
    pred_s = np.array(PREDICT_AT)
    pred = _basis(pred_s, deg, knee) @ coef

    band = None
    coef_boot = None
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
        X = _basis(xs_b, deg, knee)                                  # (R, m, d)
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
            coef_boot = coef_b
            fits_b = coef_b @ _basis(grid, deg, knee).T
            band = (np.nanpercentile(fits_b, 2.5, axis=0),
                    np.nanpercentile(fits_b, 97.5, axis=0))
            slope_ci = (float(np.nanpercentile(slope_b, 2.5)),
                        float(np.nanpercentile(slope_b, 97.5)))
            preds_b = coef_b @ _basis(pred_s, deg, knee).T
            pred_ci = np.stack([np.nanpercentile(preds_b, 2.5, axis=0),
                                np.nanpercentile(preds_b, 97.5, axis=0)])
    predicted = {float(s): (float(pred[i]), float(pred_ci[0, i]), float(pred_ci[1, i]))
                 for i, s in enumerate(pred_s)}
    return Curve(region, point, kind, float(baseline), measurements, xs, ys, deg,
                 coef, slope, slope_ci, grid, fit, band, predicted,
                 float(distinct.max()), coef_boot, knee)


SORT_KEYS = ("slope", "max", "area", "name")


def _listed(names: List[str], most: int = 5) -> str:
    """The first `most` names, then how many more."""
    shown = "; ".join(names[:most])
    return shown + (f"; and {len(names) - most} more" if len(names) > most else "")


def analyze(profile: Profile, points: Optional[Sequence[str]] = None,
            min_points: int = 3, degree: int = 2, sort: str = "slope",
            n_boot: int = 1000, seed: int = 0, model: str = "auto") -> List[RegionResult]:
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
    no_baseline: List[str] = []  # "region @ point" left out for want of a speedup-0 experiment
    too_few: List[str] = []      # ... for want of --min-points distinct speedups
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
                no_baseline.append(f"{region} @ {point}")
                continue
            c = _curve(region, point, kind, exps, degree, n_boot, rng, grid, model)
            if c is not None and c.points >= min_points:
                curves.append(c)
            else:
                too_few.append(f"{region} @ {point}")
        if curves:
            results.append(RegionResult(region, curves))
    if no_baseline:
        warnings.warn(f"{len(no_baseline)} region/progress-point pair(s) have no "
                      f"speedup-0 experiment (no baseline) and were left out: {_listed(no_baseline)}",
                      ProfileWarning, stacklevel=2)
    if too_few:
        warnings.warn(f"{len(too_few)} region/progress-point pair(s) have fewer than "
                      f"{min_points} usable distinct speedups (--min-points) and were "
                      f"left out: {_listed(too_few)}", ProfileWarning, stacklevel=2)
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
# Predictions per region: the stable interface for coact-profile validate
# --------------------------------------------------------------------------

DEFINITION = ("program speedup = (baseline - value) / baseline, value = time per "
              "progress visit (throughput point) or latency by Little's law "
              "(latency point), as in Coz; the equivalent rate gain is "
              "1 / (1 - program speedup) - 1")


def predictions(results: Sequence[RegionResult],
                at: Sequence[float] = ()) -> List[dict]:
    """One dict per (region, progress point): the fitted program speedup at
    every measured non-zero virtual speedup s, and at each extra s in `at`
    (fractions), with the bootstrap 95% CI and the number of experiments
    measured at that s. JSON-ready (NaN -> None)."""
    def clean(x):
        return None if isinstance(x, float) and not math.isfinite(x) else x
    out = []
    for r in results:
        for c in r.curves:
            levels = sorted({m.speedup for m in c.measurements if m.speedup > 0}
                            | {round(float(s), _SPEEDUP_KEY_DIGITS) for s in at})
            base = c.measurement_at(0.0)
            rows = []
            for s in levels:
                v, lo, hi = c.predict(s)
                m = c.measurement_at(s)
                rows.append({
                    "s": s,
                    "program_speedup": clean(v),
                    "ci": [clean(lo), clean(hi)],
                    "rate_gain": clean(1 / (1 - v) - 1) if v < 1 else None,
                    "experiments": m.experiments if m else 0,
                    "measured": clean(m.program_speedup) if m else None,
                    "extrapolated": c.extrapolated(s),
                })
            out.append({
                "region": c.region, "point": c.point, "kind": c.kind,
                "degree": c.degree, "knee": c.knee, "baseline_ns": clean(c.baseline),
                "baseline_experiments": base.experiments if base else 0,
                "experiments": c.experiments,
                "slope": clean(c.slope),
                "slope_ci": [clean(c.slope_ci[0]), clean(c.slope_ci[1])],
                "predictions": rows,
            })
    return out


def estimate_json(rows: List[dict], profile: Profile, args) -> str:
    import json
    return json.dumps({
        "tool": "coact-plot estimate", "version": 1, "files": profile.paths,
        "definition": DEFINITION,
        "estimator": {"fit": "duration-weighted least squares through the origin: polynomial"
                             + (", or a line bending once at a measured speedup when that "
                                "fits better (the curve's knee)" if args.fit == "auto" else ""),
                      "degree": args.degree,
                      "baseline": "pooled speedup-0 experiments of the same region "
                                  "and progress point",
                      "ci": "95% percentile bootstrap", "bootstrap": args.bootstrap,
                      "seed": args.seed, "min_points": args.min_points},
        "regions": rows}, indent=2)


def format_estimates(rows: List[dict]) -> str:
    def pc(x):
        return "n/a" if x is None else f"{x * 100:+.1f}%"
    head = ["region", "progress point", "s", "exps", "predicted", "95% CI", "measured"]
    table = [head]
    for r in rows:
        point = r["point"] + (" (latency)" if r["kind"] == "latency" else "")
        for p in r["predictions"]:
            ci = "n/a" if p["ci"][0] is None else f"[{pc(p['ci'][0])}, {pc(p['ci'][1])}]"
            table.append([r["region"], point, f"{p['s'] * 100:g}%", str(p["experiments"]),
                          pc(p["program_speedup"]) + ("*" if p["extrapolated"] else ""),
                          ci, pc(p["measured"])])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["  ".join(c.ljust(widths[i]) if i < 2 else c.rjust(widths[i])
                       for i, c in enumerate(row)).rstrip() for row in table]
    return ("\n".join(lines) + "\npredicted: the fitted curve at virtual speedup s; "
            "measured: the pooled experiments at s; * = extrapolated.\n"
            + DEFINITION + ".\n")


def add_arguments(p) -> None:
    """The options of `coact-plot estimate` / `python3 -m coact_reports.estimate`."""
    p.add_argument("profiles", nargs="+", metavar="PROFILE",
                   help="profile.coz or .jsonl file(s); several are pooled")
    p.add_argument("--json", action="store_true", help="print JSON (see reports/README.md)")
    p.add_argument("-p", "--progress-point", action="append", dest="points",
                   metavar="NAME", help="progress point to use (repeatable; default all)")
    p.add_argument("-r", "--region", action="append", dest="regions", metavar="NAME",
                   help="only this region (exact name; repeatable; default all)")
    p.add_argument("--at", action="append", type=float, default=[], metavar="S",
                   help="also predict at virtual speedup S (a fraction 0..1; repeatable)")
    p.add_argument("--min-points", type=int, default=3,
                   help="distinct speedups, baseline included, a curve needs (default 3)")
    p.add_argument("--degree", type=int, default=2, choices=(1, 2, 3),
                   help="degree of the polynomial through the origin (default 2)")
    p.add_argument("--fit", choices=("auto", "poly"), default="auto",
                   help="auto (default): the polynomial, or a line through the origin that bends once "
                        "at a measured speedup when that fits better (degree >= 2); poly: the polynomial only")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap replicates for the CI (0 = no CI; default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")


def run(a) -> int:
    import sys
    from .profile import load_profiles
    if a.min_points < 2 or a.bootstrap < 0:
        raise ValueError("--min-points must be >= 2, --bootstrap >= 0")
    bad = [s for s in a.at if not (math.isfinite(s) and 0 < s <= 1)]
    if bad:
        raise ValueError(f"--at {bad[0]:g}: want a virtual speedup in (0, 1], "
                         "a fraction (0.25 = 25%)")
    profile = load_profiles(a.profiles)
    results = analyze(profile, a.points, a.min_points, a.degree, "name",
                      a.bootstrap, a.seed, a.fit)
    if a.regions:
        known = [r.region for r in results]
        missing = [x for x in a.regions if x not in known]
        if missing:
            raise ProfileError(f"no curve for region {', '.join(map(repr, missing))}; "
                               f"regions with a curve: {', '.join(map(repr, known))}",
                               ", ".join(profile.paths))
        results = [r for r in results if r.region in a.regions]
    rows = predictions(results, a.at)
    sys.stdout.write(estimate_json(rows, profile, a) + "\n" if a.json
                     else format_estimates(rows))
    return 0


def main(argv: Optional[Sequence[str]] = None, prog: str = "coact_reports.estimate") -> int:
    import argparse
    from .util import guarded
    p = argparse.ArgumentParser(
        prog=prog, description="Predicted program speedup at each measured virtual "
        "speedup, per region (the estimator of the plots and of coact-profile validate).")
    add_arguments(p)
    return guarded(prog, run, p.parse_args(argv))


if __name__ == "__main__":
    import sys
    sys.exit(main())
