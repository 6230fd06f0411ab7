"""The one estimator of "predicted program speedup at virtual speedup s" for a
region: the plots, the ranking table, ``coact-plot estimate`` and
``coact-profile validate`` all use :func:`analyze` / :func:`predict`.

Data points (as Coz's viewer, ``viewer/ts/profile.ts``)
=======================================================
1. Each experiment gives one value per progress point, a quantity where lower
   is better: throughput period = duration / delta (time per visit); latency,
   by Little's law, difference / (arrivals / duration). Both are num / den with
   num = duration, den = delta (throughput) and num = difference * duration,
   den = arrivals (latency); ``duration`` is the experiment's effective time
   (wall time minus the delay injected during it).
2. The baseline is the speedup-0 experiments pooled, sum(num) / sum(den).
   By default (``baseline="pooled"``) they are pooled over *every* region: at
   speedup 0 nothing is delayed, so which region the controller named does
   not change what is measured, and a region's curve then rests on all ~29%
   of the sweep's experiments that are baselines instead of its own handful.
   ``baseline="region"`` is Coz's rule (the region's own speedup-0
   experiments). Speedup-0 experiments whose value is an outlier (below) are
   left out of the baseline.
   Merged profiles (several shards or hosts: each experiment's *group*,
   profile.py): machines and runs differ in speed, so each group has its own
   baseline (the same rule within the group) and each experiment is
   normalised by its own group's baseline in step 3; the program speedups
   are then pooled into one fit. A group without a usable baseline
   contributes no points. With one group this is exactly the rule above.
3. program speedup y = (baseline - value) / baseline per experiment; values
   outside [-1, 2] are dropped, as the viewer does. A latency reduction is a
   positive program speedup (the viewer shows it negated: coz issue #104).

One model per region (the rule)
===============================
A program's time per visit is the longest of its paths, each linear in the
region's virtual speedup s, so a speedup curve is concave and piecewise
linear through the origin. Two models are fitted to the per-experiment points
(duration-weighted least squares, weights normalised to mean 1):

* ``line``: y = b * s;
* ``bend``: y = a * min(s, k) + c * max(s - k, 0) with a >= c (concave), the
  knee k with the least residual from a grid of 20 steps across each span
  between two adjacent measured speedups that has at least two measured
  levels on each side (the paths of a program cross where they cross, not
  at a speedup the sweep measured).

The bend is kept only when it is significantly better than the line: the
F statistic of its residual reduction, with 1 and n - 2 degrees of freedom,
has a p-value below 0.01 divided by the number of spans tried (Bonferroni:
the knee is chosen from the data), and there are at least 8 experiments.
Otherwise the curve is the line. Everything printed for a region (the
prediction at each s, the ranking key, the band in the plot) comes from that
one model. A prediction beyond the largest measured speedup is marked as
extrapolated.

Outliers: with at least 10 experiments, a point whose residual from the
model chosen on all points is more than 3.5 robust standard deviations (1.4826 x the median absolute
deviation) from the median residual is excluded and the models are refitted
(Hampel's rule), the most extreme first and at most a tenth of the points;
the same rule on log values picks out outlying baselines.
Excluded points are kept in ``Curve.outliers`` and drawn as crosses.

95% interval (honest at small n)
================================
Student's t on the fit's residuals: the model's coefficient covariance is
s^2 (X'WX)^-1 with s^2 the weighted residual variance on n - p degrees of
freedom; the baseline's own uncertainty (the ratio estimator's relative
standard error over its m experiments) is propagated through the fit
(every y moves by (1 - y) times a relative baseline error) and added in
quadrature; the t quantile uses min(n - p, m - 1) degrees of freedom. With
too few points for degrees of freedom (n <= p, or m < 2) there is no
interval, never a zero-width one. Merged groups: each group's baseline error
moves only its own points, the groups' errors are independent and their
terms add; the t quantile uses min(n - p, sum over groups of (m_g - 1))
degrees of freedom, and every group used needs m_g >= 2 for an interval.

Several runs (processes)
------------------------
The fit's interval treats experiments as independent. Experiments of one
process are not: a process's layout, its placement on cores and the machine's
state while it ran move all of its experiments together, and a sweep of
several runs (validate's chunks, shards, profiles appended over days) then
varies from run to run more than its residuals say. With ``MIN_RUNS`` (3)
or more runs in a profile (profile.py: a run is one process), each curve's
interval is also computed by the delete-one-run jackknife: the whole
estimate (baseline, outliers, model choice) is redone without each run in
turn, the variance is (G - 1) / G times the sum of squared deviations of the
G replicates' predictions from their mean, and the t quantile has G - 1
degrees of freedom. The printed interval is the wider of the two at each
s, so it is never narrower than the fit's. A curve that some replicate
cannot draw (the run left out held all of a speedup, or the baseline)
keeps the fit's interval, and says so (``Curve.interval``). A profile of
one or two runs (a sweep of one program run, as ``coact-profile run``
writes) has the fit's interval only: how far another run of the same
program would move cannot be measured from one run.

The profiler's own error
------------------------
Both intervals above measure the noise of this profile; neither can see an
error the mechanism makes the same way in every run. validate's known-answer
programs measure one: their predictions run low by about a percent of the
effect, in every validate run on record (docs/profiling.md, "The profiler's
own error"). So every interval
also holds ``systematic`` (default ``SYSTEMATIC``, 2 %) of the predicted
value, added in quadrature to the statistical half-width (the GUM's
combination of a type A and a type B uncertainty): half-width =
sqrt(statistical^2 + (systematic x |value|)^2), the same for the slope.
``--systematic 0`` gives the statistical interval alone. A curve without a
statistical interval gets none from this term either.

Ranked or not
=============
A region is *ranked* when its curve has at least ``min_experiments``
non-zero-speedup experiments (default 6) at 3 or more distinct speedups, a
baseline of at least 3 experiments and a finite interval. Ranked regions are
ordered by the prediction at ``rank_at`` (default 25%: a handler made a
quarter faster); the others are listed after them as "not enough evidence".
A region without a curve at all (fewer than ``min_points`` distinct speedups,
baseline included, or no baseline: a short sweep) is left out with a warning,
or, with ``analyze(..., keep_thin=True)`` (``coact-plot profile``), listed
last as a :class:`Thin` entry with its experiment counts, never ranked.
The ranking is *settled* when every region is ranked and the leader's lower
bound at ``rank_at`` is above every other ranked region's upper bound
(:func:`settlement`). As in the sweep's own rule, a region the sweep's
records put under its time-share floor need not be ranked (profile.py,
"The sweep's time shares"); a Coz-format profile has no such records."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .profile import Experiment, Profile, ProfileError, ProfileWarning, Throughput, TimeShares

PREDICT_AT = (0.10, 0.25, 0.50)
RANK_AT = 0.25                     # default ranking speedup
MIN_EXPERIMENTS = 6                # non-zero-speedup experiments a ranked region needs
MIN_LEVELS = 3                     # ... at this many distinct speedups
MIN_BASELINE = 3                   # speedup-0 experiments a ranked region's baseline needs
SPEEDUP_RANGE = (-1.0, 2.0)        # viewer: keep -1 <= progress_speedup <= 2
OUTLIER_MADS = 3.5                 # Hampel's rule
OUTLIER_MIN_N = 10                 # fewer points: no outlier rule (the MAD is too unstable)
OUTLIER_MAX_SHARE = 0.10           # at most this share of the points (the most extreme) is excluded
BEND_ALPHA = 0.01                  # family-wise level of the line-vs-bend F test
BEND_MIN_N = 8
MIN_RUNS = 3                       # runs (processes) a profile needs for the jackknife interval
INTERVALS = ("auto", "fit")        # auto: the jackknife as well, given MIN_RUNS runs; fit: residuals only
SYSTEMATIC = 0.02                  # the mechanism's own error, a fraction of the value (module doc)
MIN_SE = 1e-9                      # a coefficient's standard error below this is no interval (exact data)
_SPEEDUP_KEY_DIGITS = 6            # speedups equal to 1e-6 share one pool
_Z = 0.975                         # two-sided 95%


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
    baseline_experiments: int
    measurements: List[Measurement]    # sorted by speedup, baseline included
    exp_speedup: np.ndarray            # per-experiment points used by the fit
    exp_program_speedup: np.ndarray
    model: str                         # "line" | "bend"
    coef: np.ndarray                   # line: (b,); bend: (a, c)
    cov: Optional[np.ndarray]          # coefficient covariance incl. the baseline's; None: no interval
    df: int                            # degrees of freedom of the t quantile (0: no interval)
    grid: np.ndarray
    fit: np.ndarray
    band: Optional[Tuple[np.ndarray, np.ndarray]]
    predicted: Dict[float, Tuple[float, float, float]]  # s -> (value, lo, hi)
    max_speedup: float                 # largest observed speedup
    knee: Optional[float] = None       # the bend's k; None for the line
    outliers: List[Tuple[float, float]] = field(default_factory=list)  # excluded (s, y)
    baseline_outliers: int = 0
    levels: int = 0                    # distinct non-zero speedups behind the fit
    rank_at: float = RANK_AT
    ranked: bool = False
    why_unranked: str = ""
    runs: int = 1                      # runs (processes) in the profile it was drawn from
    replicates: List["Curve"] = field(default_factory=list)  # delete-one-run curves (module doc)
    interval: str = "fit"              # "fit", "fit and runs", or why the runs' could not be had
    systematic: float = 0.0            # the profiler's own error in the interval, a fraction of the value

    def _x(self, s: float) -> np.ndarray:
        return _basis(np.array([float(s)]), self.knee)[0]

    def value(self, s: float) -> float:
        """The model's program speedup at s, without an interval."""
        return float(self._x(s) @ self.coef)

    def _jackknife_half(self, of) -> float:
        """Half-width of the delete-one-run jackknife's 95% interval for the
        quantity of(curve); 0 without replicates."""
        g = len(self.replicates)
        if g < 2:
            return 0.0
        v = np.array([of(r) for r in self.replicates], dtype=float)
        var = (g - 1) / g * float(np.sum((v - v.mean()) ** 2))
        return _t(g - 1) * math.sqrt(var)

    def predict(self, s: float) -> Tuple[float, float, float]:
        """The model's program speedup at virtual speedup s (a fraction,
        0..1), with its 95% interval (NaN, NaN when there is none): the
        fit's, or the run jackknife's where that is wider, with the
        profiler's own error added (module doc).
        Beyond max_speedup it is an extrapolation (see extrapolated())."""
        x = self._x(s)
        value = self.value(s)
        if self.cov is None or self.df < 1:
            return value, math.nan, math.nan
        half = _t(self.df) * math.sqrt(max(float(x @ self.cov @ x), 0.0))
        half = max(half, self._jackknife_half(lambda r: r.value(s)))
        half = math.hypot(half, self.systematic * value)
        return value, value - half, value + half

    def refresh(self) -> None:
        """Recompute the band and the predictions at PREDICT_AT (after the
        interval's inputs changed)."""
        if self.cov is not None:
            band = np.array([self.predict(s) for s in self.grid])
            self.band = (band[:, 1], band[:, 2])
        self.predicted = {float(s): self.predict(s) for s in PREDICT_AT}

    @property
    def key(self) -> Tuple[float, float, float]:
        """The ranking key: the prediction at rank_at with its interval."""
        return self.predict(self.rank_at)

    @property
    def slope(self) -> float:
        """Program speedup per unit of virtual speedup near 0 (the line's b,
        the bend's slope below its knee)."""
        return float(self.coef[0])

    @property
    def slope_ci(self) -> Tuple[float, float]:
        if self.cov is None or self.df < 1:
            return math.nan, math.nan
        half = _t(self.df) * math.sqrt(max(float(self.cov[0, 0]), 0.0))
        half = max(half, self._jackknife_half(lambda r: r.slope))
        half = math.hypot(half, self.systematic * self.slope)
        return self.slope - half, self.slope + half

    @property
    def degree(self) -> int:
        return len(self.coef)

    def measurement_at(self, s: float) -> Optional["Measurement"]:
        for m in self.measurements:
            if abs(m.speedup - s) < 10 ** -_SPEEDUP_KEY_DIGITS:
                return m
        return None

    @property
    def experiments(self) -> int:
        """Non-zero-speedup experiments behind the fit (outliers excluded)."""
        return int(len(self.exp_speedup))

    @property
    def points(self) -> int:
        return len(self.measurements)

    def extrapolated(self, s: float) -> bool:
        return s > self.max_speedup + 1e-9

    def describe_model(self) -> str:
        return "line" if self.knee is None else f"bend@{self.knee * 100:g}%"

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


@dataclass
class Thin:
    """A region at a progress point that has no curve: fewer than min_points
    distinct speedups (baseline included), or no usable baseline or point.
    Listed with its counts; never ranked."""
    region: str
    point: str
    kind: str                          # "throughput" | "latency"
    experiments: int                   # non-zero-speedup experiments measured
    levels: int                        # distinct non-zero speedups among them
    baseline_experiments: int
    why: str                           # why it is not ranked (and has no curve)
    measurements: List[Measurement]    # per speedup; program_speedup NaN without a baseline
    exp_speedup: np.ndarray = field(default_factory=lambda: np.zeros(0))
    exp_program_speedup: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def drawable(self) -> bool:
        """Whether it has a measured program speedup above speedup 0."""
        return any(m.speedup > 0 and math.isfinite(m.program_speedup) for m in self.measurements)


@dataclass
class RegionResult:
    region: str
    curves: List[Curve]
    score: float = 0.0
    rank: Optional[int] = None   # 1.. among ranked regions by the key; None: not ranked
    thin: List[Thin] = field(default_factory=list)   # its progress points without a curve

    @property
    def ranked(self) -> bool:
        return any(c.ranked for c in self.curves)

    def best(self) -> "Curve":
        """The curve that ranks the region: its best ranked curve by the
        ranking key (else its best curve)."""
        pool = [c for c in self.curves if c.ranked] or self.curves
        return max(pool, key=lambda c: c.key[0] if math.isfinite(c.key[0]) else -math.inf)


_T_CACHE: Dict[int, float] = {}


def _t(df: int) -> float:
    """Two-sided 95% quantile of Student's t with df degrees of freedom."""
    if df not in _T_CACHE:
        from scipy.stats import t
        _T_CACHE[df] = float(t.ppf(_Z, df))
    return _T_CACHE[df]


def _num_den(kind: str, p, duration: float) -> Tuple[float, float]:
    if kind == "throughput":
        return duration, p.delta                      # period = duration / delta
    return p.difference * duration, p.arrivals        # Little: diff / (arr / dur)


def _basis(s: np.ndarray, knee: Optional[float] = None) -> np.ndarray:
    s = np.asarray(s, dtype=float)
    if knee is not None:  # a line through the origin that bends at s = knee
        return np.stack([np.minimum(s, knee), np.maximum(s - knee, 0.0)], axis=-1)
    return s[..., None]


def _wls(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> Tuple[np.ndarray, float]:
    """Weighted least squares: coefficients and the weighted residual sum."""
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    r = y - X @ coef
    return coef, float(np.sum(w * r * r))


def _hampel(values: np.ndarray) -> np.ndarray:
    """True where a value is an outlier by Hampel's rule, at most the
    OUTLIER_MAX_SHARE most extreme of them (needs OUTLIER_MIN_N values; a
    zero MAD flags nothing)."""
    out = np.zeros(len(values), dtype=bool)
    if len(values) < OUTLIER_MIN_N:
        return out
    med = np.median(values)
    dev = np.abs(values - med)
    mad = 1.4826 * np.median(dev)
    if not (mad > 0):
        return out
    most = int(len(values) * OUTLIER_MAX_SHARE)
    for i in np.argsort(-dev, kind="stable")[:most]:
        if dev[i] > OUTLIER_MADS * mad:
            out[i] = True
    return out


def _baseline(arr: np.ndarray) -> Tuple[float, float, int, int]:
    """(pooled value, its relative standard error, experiments used,
    outliers left out) of speedup-0 rows (num, den, duration)."""
    arr = arr[arr[:, 1] > 0]
    if len(arr) == 0:
        return math.nan, math.nan, 0, 0
    with np.errstate(divide="ignore", invalid="ignore"):
        logv = np.log(arr[:, 0] / arr[:, 1])
    ok = np.isfinite(logv)
    out = _hampel(logv[ok])
    keep = np.flatnonzero(ok)[~out]
    arr = arr[keep]
    m = len(arr)
    value = arr[:, 0].sum() / arr[:, 1].sum()
    if m < 2 or not (value > 0):
        return float(value), math.nan, m, int(out.sum())
    # Ratio estimator: Var(R) ~ sum((num - R den)^2) / (m (m - 1) mean(den)^2).
    resid = arr[:, 0] - value * arr[:, 1]
    var = float(np.sum(resid ** 2)) / (m * (m - 1) * float(np.mean(arr[:, 1])) ** 2)
    return float(value), math.sqrt(var) / value, m, int(out.sum())


KNEE_STEPS = 20                    # knees tried between two adjacent measured speedups


def _fit(xs, ys, ws, allow_bend: bool):
    """The model by the rule above: (knee or None, coef, weighted RSS)."""
    coef, rss = _wls(_basis(xs), ys, ws)
    n = len(xs)
    distinct = np.unique(xs)
    if not allow_bend or n < BEND_MIN_N:
        return None, coef, rss
    # A knee k needs two measured speedups at or below it and two above. The
    # experiments fall on the same sides for every k from one measured speedup
    # up to the next, so each such span is one choice for the F test's
    # multiplicity, and within it the knee is searched on a fine grid: a
    # program's bend is where its paths cross, which need not be a speedup the
    # sweep happened to measure.
    spans = [(float(lo), float(hi)) for lo, hi in zip(distinct[:-1], distinct[1:])
             if np.count_nonzero(distinct <= lo) >= 2 and np.count_nonzero(distinct > lo) >= 2]
    best = None
    for lo, hi in spans:
        for k in np.linspace(lo, hi, KNEE_STEPS, endpoint=False):
            k = float(round(k, _SPEEDUP_KEY_DIGITS))
            ck, rk = _wls(_basis(xs, k), ys, ws)
            if ck[0] >= ck[1] and (best is None or rk < best[2]):
                best = (k, ck, rk)
    if best is None or n <= 2:
        return None, coef, rss
    from scipy.stats import f
    if best[2] <= 0:
        p = 0.0 if rss > 0 else 1.0
    else:
        F = (rss - best[2]) / (best[2] / (n - 2))
        p = float(f.sf(F, 1, n - 2)) if F > 0 else 1.0
    if p * len(spans) < BEND_ALPHA:
        return best
    return None, coef, rss


def _curve(region: str, point: str, kind: str, exps: List[Experiment],
           base_rows, grid: np.ndarray, model: str = "auto",
           min_experiments: int = MIN_EXPERIMENTS, rank_at: float = RANK_AT) -> Optional[Curve]:
    """The curve of one region at one progress point. base_rows: the
    baseline's speedup-0 rows (num, den, duration), or for a profile of
    several groups (merged shards or hosts) a dict group -> such rows, each
    experiment then normalised by its own group's baseline (see analyze).
    None without a usable baseline or any usable non-zero-speedup
    experiment."""
    key = lambda s: round(s, _SPEEDUP_KEY_DIGITS)
    grouped = isinstance(base_rows, dict)
    bases: Dict[str, Tuple[float, float, int, int]] = {}
    for g, rows in (base_rows.items() if grouped else [("", base_rows)]):
        b = _baseline(rows)
        if math.isfinite(b[0]) and b[0] > 0:
            bases[g] = b
    if not bases:
        return None
    if grouped:
        base_rows = np.concatenate([r for r in base_rows.values()]).reshape(-1, 3)
        m = sum(b[2] for b in bases.values())
        base_out = sum(b[3] for b in bases.values())
        # Reported only (each point uses its own group's): the groups'
        # baselines averaged, weighted by their experiments.
        baseline = float(sum(b[0] * b[2] for b in bases.values()) / m)
        base_rse = math.nan
    else:
        baseline, base_rse, m, base_out = bases[""]
    lo_y, hi_y = SPEEDUP_RANGE
    pools: Dict[float, List[Tuple[float, float, float, str]]] = {}
    for e in exps:
        s = key(e.speedup)
        if s == 0.0:
            continue
        num, den = _num_den(kind, e.points[point], e.duration_ns)
        pools.setdefault(s, []).append((num, den, e.duration_ns, e.group if grouped else ""))

    xs, ys, ws, gs = [], [], [], []
    for s in sorted(pools):
        for num, den, dur, g in pools[s]:
            if den <= 0 or g not in bases:
                continue
            b = bases[g][0]
            y = (b - num / den) / b
            if math.isfinite(y) and lo_y <= y <= hi_y:
                xs.append(s), ys.append(y), ws.append(dur), gs.append(g)
    xs, ys, ws = (np.array(a, dtype=float) for a in (xs, ys, ws))
    gs = np.array(gs, dtype=object)
    if len(xs) == 0:
        return None
    ws = ws / ws.mean() if ws.sum() > 0 else np.ones_like(ws)

    # Outliers: residuals from the model chosen on every point (Hampel),
    # then the model is chosen again without them.
    k0, c0, _ = _fit(xs, ys, ws, model == "auto")
    out = _hampel(ys - _basis(xs, k0) @ c0)
    outliers = list(zip(xs[out].tolist(), ys[out].tolist()))
    xs, ys, ws, gs = xs[~out], ys[~out], ws[~out], gs[~out]
    ws = ws / ws.mean()

    knee, coef, rss = _fit(xs, ys, ws, model == "auto")
    X = _basis(xs, knee)
    n, p = X.shape
    cov, df = None, 0
    used = [g for g in bases if np.any(gs == g)] if grouped else [""]
    base_ok = all(math.isfinite(bases[g][1]) and bases[g][2] >= 2 for g in used)
    if n > p and base_ok:
        XtWX_inv = np.linalg.pinv(X.T @ (X * ws[:, None]))
        s2 = rss / (n - p)
        if not grouped:
            # The baseline's relative error e moves every y by (1 - y) e.
            g = XtWX_inv @ (X.T @ (ws * (1 - ys)))
            cov = s2 * XtWX_inv + np.outer(g, g) * base_rse ** 2
            df = min(n - p, m - 1)
        else:
            # Each group's baseline error moves its own points only; the
            # groups' baselines are independent, so their terms add.
            cov = s2 * XtWX_inv
            for grp in used:
                sel = gs == grp
                g = XtWX_inv @ (X[sel].T @ (ws[sel] * (1 - ys[sel])))
                cov = cov + np.outer(g, g) * bases[grp][1] ** 2
            df = min(n - p, sum(bases[grp][2] - 1 for grp in used))
        if not np.all(np.isfinite(cov)) or not np.all(np.sqrt(np.maximum(np.diag(cov), 0)) > MIN_SE):
            cov, df = None, 0   # never a zero-width interval: no residual, no baseline spread

    # Pooled points per speedup, for the table and the plot (outliers out).
    measurements = [Measurement(0.0, 0.0, m, float(base_rows[:, 2].sum()))]
    for s in np.unique(xs):
        sel = xs == s
        measurements.append(Measurement(float(s), float(np.average(ys[sel], weights=ws[sel])),
                                        int(sel.sum()), 0.0))
    curve = Curve(region, point, kind, float(baseline), m, measurements, xs, ys,
                  "line" if knee is None else "bend", coef, cov, df, grid,
                  _basis(grid, knee) @ coef, None, {}, float(xs.max()), knee,
                  outliers, base_out, int(len(np.unique(xs))), rank_at)
    curve.refresh()
    reasons = _evidence_reasons(n, curve.levels, m, min_experiments)
    if not reasons and cov is None:
        reasons.append("no interval")
    curve.ranked = not reasons
    curve.why_unranked = "; ".join(reasons)
    return curve


def _evidence_reasons(n: int, levels: int, m: int, min_experiments: int) -> List[str]:
    """Why a region with n non-zero-speedup experiments at `levels` speedups
    and m baseline experiments is not ranked (empty: enough evidence)."""
    reasons = []
    if n < min_experiments:
        reasons.append(f"{n} experiment{'s' if n != 1 else ''} (needs {min_experiments})")
    if levels < MIN_LEVELS:
        reasons.append(f"{levels} speedup level{'s' if levels != 1 else ''} (needs {MIN_LEVELS})")
    if m == 0:
        reasons.append("no baseline yet (no speedup-0 experiment)")
    elif m < MIN_BASELINE:
        reasons.append(f"{m} baseline experiment{'s' if m != 1 else ''} (needs {MIN_BASELINE})")
    return reasons


def _thin(region: str, point: str, kind: str, exps: List[Experiment], c: Optional[Curve],
          base_count: int, min_points: int, min_experiments: int) -> Thin:
    """The Thin entry of a region at a point: from its curve c when it has
    one below min_points, else from counting its experiments."""
    if c is not None:
        reasons = _evidence_reasons(c.experiments, c.levels, c.baseline_experiments, min_experiments)
        reasons.append(f"no curve: {c.points} distinct speedup{'s' if c.points != 1 else ''} with "
                       f"the baseline (--min-points {min_points})")
        return Thin(region, point, kind, c.experiments, c.levels, c.baseline_experiments,
                    "; ".join(reasons), list(c.measurements), c.exp_speedup, c.exp_program_speedup)
    pools: Dict[float, List[float]] = {}
    for e in exps:
        s = round(e.speedup, _SPEEDUP_KEY_DIGITS)
        if s != 0.0:
            pools.setdefault(s, []).append(e.duration_ns)
    n = sum(len(v) for v in pools.values())
    reasons = _evidence_reasons(n, len(pools), base_count, min_experiments)
    if n and base_count:
        reasons.append("no usable experiment (no usable baseline, or program speedups "
                       "outside -100%..+200%)")
    ms = ([Measurement(0.0, 0.0, base_count, 0.0)] if base_count else []) + \
        [Measurement(float(s), math.nan, len(d), float(sum(d))) for s, d in sorted(pools.items())]
    return Thin(region, point, kind, n, len(pools), base_count, "; ".join(reasons), ms)


SORT_KEYS = ("rank", "area", "name")
BASELINES = ("pooled", "region")
FITS = ("auto", "line")


def _listed(names: List[str], most: int = 5) -> str:
    """The first `most` names, then how many more."""
    shown = "; ".join(names[:most])
    return shown + (f"; and {len(names) - most} more" if len(names) > most else "")


def analyze(profile: Profile, points: Optional[Sequence[str]] = None,
            min_points: int = 3, sort: str = "rank", model: str = "auto",
            baseline: str = "pooled", min_experiments: int = MIN_EXPERIMENTS,
            rank_at: float = RANK_AT, keep_thin: bool = False,
            interval: str = "auto", systematic: float = SYSTEMATIC) -> List[RegionResult]:
    """Compute one curve per (region, progress point) and order the regions.
    interval "auto": with MIN_RUNS or more runs in the profile, every
    curve's interval is also the run jackknife's where that is wider
    (module doc, "Several runs"); "fit": the fit's only. systematic: the
    profiler's own error every interval holds, a fraction of the value
    (module doc, "The profiler's own error"); 0 for none. Other arguments:
    see _analyze."""
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(INTERVALS)}")
    if not (math.isfinite(systematic) and 0 <= systematic < 1):
        raise ValueError(f"systematic {systematic!r}: want a fraction in [0, 1)")
    args = (points, min_points, sort, model, baseline, min_experiments, rank_at)
    results = _analyze(profile, *args, keep_thin=keep_thin)
    runs = sorted({e.run for e in profile.experiments})
    for r in results:
        for c in r.curves:
            c.runs, c.systematic = len(runs), systematic
            c.refresh()
    if interval == "fit" or len(runs) < MIN_RUNS:
        return results
    reps: List[Dict[Tuple[str, str], Curve]] = []
    for left_out in runs:
        kept = Profile([e for e in profile.experiments if e.run != left_out], profile.paths)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                rep = _analyze(kept, *args)
            except ProfileError:            # nothing left to draw without that run
                rep = []
        reps.append({(c.region, c.point): c for r in rep for c in r.curves})
    for r in results:
        for c in r.curves:
            got = [d.get((c.region, c.point)) for d in reps]
            if all(x is not None for x in got):
                c.replicates, c.interval = got, "fit and runs"
            else:
                c.interval = (f"fit only: leaving out {sum(x is None for x in got)} of {len(runs)} "
                              "runs leaves no curve")
            c.refresh()
    return results


def _analyze(profile: Profile, points: Optional[Sequence[str]] = None,
             min_points: int = 3, sort: str = "rank", model: str = "auto",
             baseline: str = "pooled", min_experiments: int = MIN_EXPERIMENTS,
             rank_at: float = RANK_AT, keep_thin: bool = False) -> List[RegionResult]:
    """Compute one curve per (region, progress point) and order the regions,
    with the fit's intervals.

    points: progress-point names to use (default: all). min_points: a curve
    is shown at all when it has this many distinct speedups including the
    baseline. sort "rank" (default): ranked regions first, by the prediction
    at rank_at, best first, then the regions without enough evidence by the
    same key; "area": Coz's impact; "name". model: "auto" (the rule in the
    module comment) or "line". baseline: "pooled" or "region".

    A region/point without a curve (module doc, "Ranked or not") is left out
    with a ProfileWarning; with keep_thin it is kept instead, as a Thin
    entry of its RegionResult (regions without any curve come last, with no
    curves), without the warning and without the error below. Raises
    ProfileError if a named point does not exist or (without keep_thin) no
    region has a curve; ValueError on a bad argument."""
    if min_points < 2:
        raise ValueError("min_points must be >= 2 (the baseline plus one speedup)")
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}")
    if model not in FITS:
        raise ValueError(f"fit must be one of {', '.join(FITS)}")
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {', '.join(BASELINES)}")
    if min_experiments < 2:
        raise ValueError("min_experiments must be >= 2")
    if not (math.isfinite(rank_at) and 0 < rank_at <= 1):
        raise ValueError(f"rank_at {rank_at:g}: want a virtual speedup in (0, 1]")
    where = ", ".join(profile.paths)
    available = profile.progress_points()
    if points:
        missing = [p for p in points if p not in available]
        if missing:
            import difflib
            close = [c for m in missing for c in difflib.get_close_matches(m, available, n=1)]
            raise ProfileError(f"no progress point named {', '.join(map(repr, missing))}"
                               + (f" (did you mean {', '.join(map(repr, close))}?)" if close else "")
                               + f"; available: {', '.join(map(repr, available))}", where)
        chosen = list(points)
    else:
        chosen = available
    grid = np.linspace(0.0, 1.0, 101)
    by_region: Dict[str, List[Experiment]] = {}
    for e in profile.experiments:
        by_region.setdefault(e.region, []).append(e)
    # Several groups (shards, hosts: profile.py): every baseline is per group.
    groups = sorted({e.group for e in profile.experiments})
    grouped = len(groups) > 1

    def base_of(point: str, exps: List[Experiment]):
        rows = lambda sel: np.array([(*_num_den(kinds[point], e.points[point], e.duration_ns), e.duration_ns)
                                     for e in sel if round(e.speedup, _SPEEDUP_KEY_DIGITS) == 0],
                                    dtype=float).reshape(-1, 3)
        if not grouped:
            return rows(exps)
        return {g: rows([e for e in exps if e.group == g]) for g in groups}

    kinds: Dict[str, str] = {}
    pooled_base: Dict[str, object] = {}
    for point in chosen:
        types = {type(e.points[point]) for e in profile.experiments if point in e.points}
        if len(types) > 1:
            raise ProfileError(f"progress point {point!r} is both a throughput "
                               "and a latency point", where)
        kinds[point] = "throughput" if types == {Throughput} else "latency"
        if grouped:
            pooled_base[point] = base_of(point, [e for e in profile.experiments if point in e.points])
        else:
            rows = [(*_num_den(kinds[point], e.points[point], e.duration_ns), e.duration_ns)
                    for e in profile.experiments
                    if point in e.points and round(e.speedup, _SPEEDUP_KEY_DIGITS) == 0]
            pooled_base[point] = np.array(rows, dtype=float).reshape(-1, 3)
    no_baseline: List[str] = []  # "region @ point" left out for want of a speedup-0 experiment
    too_few: List[str] = []      # ... for want of --min-points distinct speedups
    results = []
    thin_only = []               # keep_thin: regions with no curve at any point
    for region in sorted(by_region):
        curves = []
        thin = []
        for point in chosen:
            exps = [e for e in by_region[region] if point in e.points]
            if not exps:
                continue
            if baseline == "pooled":
                base = pooled_base[point]
            elif grouped:
                base = base_of(point, exps)
            else:
                base = np.array([(*_num_den(kinds[point], e.points[point], e.duration_ns), e.duration_ns)
                                 for e in exps if round(e.speedup, _SPEEDUP_KEY_DIGITS) == 0],
                                dtype=float).reshape(-1, 3)
            base_count = sum(len(b) for b in base.values()) if grouped else len(base)
            if base_count == 0:
                no_baseline.append(f"{region} @ {point}")
                thin.append(_thin(region, point, kinds[point], exps, None, 0, min_points,
                                  min_experiments))
                continue
            c = _curve(region, point, kinds[point], exps, base, grid, model,
                       min_experiments, rank_at)
            if c is not None and c.points >= min_points:
                curves.append(c)
            else:
                too_few.append(f"{region} @ {point}")
                thin.append(_thin(region, point, kinds[point], exps, c, base_count, min_points,
                                  min_experiments))
        if curves:
            results.append(RegionResult(region, curves, thin=thin if keep_thin else []))
        elif thin and keep_thin:
            thin_only.append(RegionResult(region, [], thin=thin))
    if grouped and baseline == "pooled":
        # A group (shard, host) without a speedup-0 experiment has no baseline
        # of its own: its experiments are left out of every curve.
        bare = sorted({f"{g} @ {point}" for point in chosen for g in groups
                       if len(pooled_base[point][g]) == 0
                       and any(e.group == g and point in e.points for e in profile.experiments)})
        if bare:
            warnings.warn(f"{len(bare)} shard/host group(s) have no speedup-0 experiment of their own "
                          f"(no baseline), so their experiments were left out: {_listed(bare)}",
                          ProfileWarning, stacklevel=2)
    if no_baseline and not keep_thin:
        warnings.warn(f"{len(no_baseline)} region/progress-point pair(s) have no "
                      f"speedup-0 experiment (no baseline) and were left out: {_listed(no_baseline)}",
                      ProfileWarning, stacklevel=2)
    if too_few and not keep_thin:
        warnings.warn(f"{len(too_few)} region/progress-point pair(s) have fewer than "
                      f"{min_points} usable distinct speedups (--min-points) and were "
                      f"left out: {_listed(too_few)}", ProfileWarning, stacklevel=2)
    if not results and not (keep_thin and thin_only):
        raise ProfileError(f"no region has a baseline and at least {min_points} "
                           f"distinct speedups for progress point(s) "
                           f"{', '.join(map(repr, chosen))}; nothing to plot "
                           "(lower --min-points, or run the sweep longer)", where)
    for r in results:
        if sort == "area":
            r.score = max(c.max_normalized_area() for c in r.curves)
        else:
            v = r.best().key[0]
            r.score = v if math.isfinite(v) else -math.inf
    keyed = lambda r: r.best().key[0] if math.isfinite(r.best().key[0]) else -math.inf
    for i, r in enumerate(sorted((r for r in results if r.ranked), key=lambda r: (-keyed(r), r.region))):
        r.rank = i + 1
    if sort == "name":
        results.sort(key=lambda r: r.region)
    elif sort == "rank":
        results.sort(key=lambda r: (not r.ranked, -r.score, r.region))
    else:
        results.sort(key=lambda r: (-r.score, r.region))
    if sort == "name":
        return sorted(results + thin_only, key=lambda r: r.region)
    # Regions without a curve last, those with more experiments first.
    thin_only.sort(key=lambda r: (-max(t.experiments for t in r.thin), r.region))
    return results + thin_only


@dataclass
class Settlement:
    """Whether a ranking has settled (see settlement())."""
    settled: bool
    leader: Optional[str]
    rank_at: float
    message: str
    overlapping: List[str] = field(default_factory=list)   # ranked regions the leader is not above
    unranked: List[str] = field(default_factory=list)      # regions without enough evidence that count
    below_floor: List[str] = field(default_factory=list)   # unranked, under the sweep's time-share floor


def settlement(results: Sequence[RegionResult], rank_at: float = RANK_AT,
               shares: Optional[TimeShares] = None) -> Settlement:
    """Settled: every region listed that counts is ranked, and the best
    ranked region's lower bound at rank_at is above every other ranked
    region's upper bound. A region without enough evidence keeps the
    ranking from settling (it may lead once measured), and the message says
    how the ranked ones stand, unless `shares` (Profile.time_shares: the
    sweep's own records) puts it under the sweep's time-share floor: the
    sweep's rule (causal/src/sweep/draw.cpp) does not wait for such a
    region, so neither does this one, and the message names it. Without
    `shares` (a Coz-format profile) every region counts."""
    ranked = [r for r in results if r.ranked]
    exempt = [r.region for r in results if not r.ranked and shares is not None and shares.below_floor(r.region)]
    unranked = [r.region for r in results if not r.ranked and r.region not in exempt]
    floor_note = ""
    if exempt:
        listed = [f"{name} ({shares.shares[name] * 100:.3g}%)" for name in exempt]
        floor_note = (f"; {len(exempt)} region(s) under the sweep's time-share floor "
                      f"({shares.floor * 100:g}% of the running time) not ranked: {_listed(listed, 3)}")
    if not ranked:
        return Settlement(False, None, rank_at,
                          f"not settled: no region has enough evidence to rank "
                          f"({len(unranked) + len(exempt)} listed without a rank)", [], unranked, exempt)
    keyed = sorted(ranked, key=lambda r: -r.best().key[0])
    leader = keyed[0]
    _, lo, _ = leader.best().key
    overlapping = [r.region for r in keyed[1:] if not (r.best().key[2] < lo)]
    at = f"{rank_at * 100:g}%"
    if overlapping:
        msg = (f"not settled: the leader {leader.region} (@{at} lower bound {lo * 100:+.1f}%) "
               f"is not above {_listed(overlapping, 3)}; run the sweep longer "
               f"(coact-profile run --until-settled)")
    elif unranked:
        among = (f"{leader.region} is the only ranked region" if len(keyed) == 1 else
                 f"among the ranked regions {leader.region} leads (@{at} lower bound {lo * 100:+.1f}%)")
        msg = (f"not settled: {len(unranked)} region(s) without enough evidence to rank "
               f"({_listed(unranked, 3)}); {among}; run the sweep longer (coact-profile run --until-settled)")
    else:
        msg = (f"settled: {leader.region} leads; its @{at} lower bound ({lo * 100:+.1f}%) is above "
               f"every other ranked region's upper bound")
        if len(keyed) == 1:
            msg = f"settled: {leader.region} is the only ranked region"
    if overlapping and unranked:
        msg += f"; {len(unranked)} region(s) without enough evidence to rank were not compared"
    msg += floor_note
    return Settlement(not overlapping and not unranked, leader.region, rank_at, msg, overlapping, unranked,
                      exempt)


# --------------------------------------------------------------------------
# Predictions per region: the stable interface for coact-profile validate
# --------------------------------------------------------------------------

DEFINITION = ("program speedup = (baseline - value) / baseline, value = time per "
              "progress visit (throughput point) or latency by Little's law "
              "(latency point), as in Coz; the equivalent rate gain is "
              "1 / (1 - program speedup) - 1")


def predictions(results: Sequence[RegionResult],
                at: Sequence[float] = ()) -> List[dict]:
    """One dict per (region, progress point): the model's program speedup at
    every measured non-zero virtual speedup s, and at each extra s in `at`
    (fractions), with its 95% interval and the number of experiments
    measured at that s. JSON-ready (NaN -> None)."""
    def clean(x):
        return None if isinstance(x, float) and not math.isfinite(x) else x
    out = []
    for r in results:
        for c in r.curves:
            levels = sorted({m.speedup for m in c.measurements if m.speedup > 0}
                            | {round(float(s), _SPEEDUP_KEY_DIGITS) for s in at})
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
                "model": c.model, "knee": c.knee, "baseline_ns": clean(c.baseline),
                "baseline_experiments": c.baseline_experiments,
                "experiments": c.experiments,
                "outliers": len(c.outliers),
                "ranked": c.ranked,
                "why_unranked": c.why_unranked or None,
                "slope": clean(c.slope),
                "slope_ci": [clean(c.slope_ci[0]), clean(c.slope_ci[1])],
                "runs": c.runs,
                "interval": c.interval,
                "predictions": rows,
            })
    return out


def estimator_json(args) -> dict:
    """What the estimator did, for the JSON outputs."""
    return {"baseline": ("speedup-0 experiments of every region pooled" if args.baseline == "pooled"
                         else "speedup-0 experiments of the same region pooled (Coz)"),
            "model": ("line through the origin, or a concave bend at a knee between measured speedups when an "
                      f"F test prefers it (p < {BEND_ALPHA:g} / knees tried, n >= {BEND_MIN_N})"
                      if args.fit == "auto" else "line through the origin"),
            "weights": "effective duration",
            "outliers": (f"Hampel: |residual - median| > {OUTLIER_MADS:g} x 1.4826 MAD (n >= {OUTLIER_MIN_N}, "
                         f"at most {OUTLIER_MAX_SHARE:.0%} of the points)"),
            "ci": ("95% Student t on the fit's residuals, the baseline's error propagated; with "
                   f"{MIN_RUNS} or more runs, the delete-one-run jackknife's (t, runs - 1 df) where "
                   "wider" if args.interval == "auto" else
                   "95% Student t on the fit's residuals, the baseline's error propagated")
                  + (f"; the profiler's own error, {args.systematic:.1%} of the value, added in quadrature"
                     if args.systematic > 0 else ""),
            "fit": args.fit, "interval": args.interval, "systematic": args.systematic,
            "min_points": args.min_points,
            "min_experiments": args.min_experiments, "rank_at": args.rank_at}


def estimate_json(rows: List[dict], profile: Profile, args) -> str:
    import json
    return json.dumps({
        "tool": "coact-plot estimate", "version": 2, "files": profile.paths,
        "definition": DEFINITION, "estimator": estimator_json(args),
        "regions": rows}, indent=2)


def format_estimates(rows: List[dict]) -> str:
    def pc(x):
        return "n/a" if x is None else f"{x * 100:+.1f}%"
    head = ["region", "progress point", "model", "s", "exps", "predicted", "95% CI", "measured"]
    table = [head]
    for r in rows:
        point = r["point"] + (" (latency)" if r["kind"] == "latency" else "")
        model = "line" if r["knee"] is None else f"bend@{r['knee'] * 100:g}%"
        for p in r["predictions"]:
            ci = "n/a" if p["ci"][0] is None else f"[{pc(p['ci'][0])}, {pc(p['ci'][1])}]"
            table.append([r["region"], point, model, f"{p['s'] * 100:g}%", str(p["experiments"]),
                          pc(p["program_speedup"]) + ("*" if p["extrapolated"] else ""),
                          ci, pc(p["measured"])])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["  ".join(c.ljust(widths[i]) if i < 3 else c.rjust(widths[i])
                       for i, c in enumerate(row)).rstrip() for row in table]
    return ("\n".join(lines) + "\npredicted: the region's one model (line, or a bend at k) at "
            "virtual speedup s; measured: the mean of the experiments at s; * = extrapolated.\n"
            + DEFINITION + ".\n")


def add_common_arguments(p) -> None:
    """The estimator's options, shared by `coact-plot profile` and `estimate`."""
    p.add_argument("-p", "--progress-point", action="append", dest="points",
                   metavar="NAME", help="progress point to use (repeatable; default all)")
    p.add_argument("--min-points", type=int, default=3,
                   help="distinct speedups, baseline included, a curve needs to be shown (default 3)")
    p.add_argument("--min-experiments", type=int, default=MIN_EXPERIMENTS, metavar="N",
                   help=f"non-zero-speedup experiments a region needs to be ranked (default {MIN_EXPERIMENTS})")
    p.add_argument("--rank-at", type=float, default=RANK_AT, metavar="S",
                   help=f"virtual speedup the ranking compares at (a fraction; default {RANK_AT:g})")
    p.add_argument("--fit", choices=FITS, default="auto",
                   help="auto (default): a line through the origin, or a concave bend when an F test "
                        "prefers it; line: the line only")
    p.add_argument("--baseline", choices=BASELINES, default="pooled",
                   help="pooled (default): every region's speedup-0 experiments; region: the region's own (Coz)")
    p.add_argument("--interval", choices=INTERVALS, default="auto",
                   help=f"auto (default): with {MIN_RUNS} or more runs (processes) in the profile, the "
                        "interval is the wider of the fit's and the delete-one-run jackknife's; "
                        "fit: the fit's only")
    p.add_argument("--systematic", type=float, default=SYSTEMATIC, metavar="FRACTION",
                   help=f"the profiler's own error every interval also holds, a fraction of the "
                        f"predicted value added in quadrature (default {SYSTEMATIC:g}; 0: the "
                        "statistical interval alone)")


def check_systematic(x: float) -> None:
    """--systematic's usage check (estimate and coact-plot profile)."""
    from .util import UsageError
    if not (math.isfinite(x) and 0 <= x < 1):
        raise UsageError(f"--systematic {x:g}: want a fraction in [0, 1) (0.02 = 2% of the value)")


def add_arguments(p) -> None:
    """The options of `coact-plot estimate` / `python3 -m coact_reports.estimate`."""
    p.add_argument("profiles", nargs="+", metavar="PROFILE",
                   help="profile.coz or .jsonl file(s), or a directory (its *.jsonl files, "
                        "else its *.coz files: a sharded sweep's output); several are pooled")
    p.add_argument("--json", action="store_true", help="print JSON (see reports/README.md)")
    p.add_argument("-r", "--region", action="append", dest="regions", metavar="NAME",
                   help="only this region (exact name; repeatable; default all)")
    p.add_argument("--at", action="append", type=float, default=[], metavar="S",
                   help="also predict at virtual speedup S (a fraction 0..1; repeatable)")
    add_common_arguments(p)


def run(a) -> int:
    import sys
    from .profile import load_profiles
    from .util import UsageError
    if a.min_points < 2 or a.min_experiments < 2:
        raise UsageError("--min-points and --min-experiments must be >= 2")
    bad = [s for s in a.at + [a.rank_at] if not (math.isfinite(s) and 0 < s <= 1)]
    if bad:
        raise UsageError(f"--at/--rank-at {bad[0]:g}: want a virtual speedup in (0, 1], "
                         "a fraction (0.25 = 25%)")
    check_systematic(a.systematic)
    profile = load_profiles(a.profiles)
    results = analyze(profile, a.points, a.min_points, "name", a.fit, a.baseline,
                      a.min_experiments, a.rank_at, interval=a.interval, systematic=a.systematic)
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
