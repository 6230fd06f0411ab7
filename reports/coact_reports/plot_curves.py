"""Speedup-curve panels of analysed regions."""

from __future__ import annotations

import math
from typing import Optional, Sequence

from .estimate import RegionResult
from .plotting import _check_output, _ellipsize, _figure, _save
from .ranking import short_region_name

def plottable(results: Sequence[RegionResult]) -> list:
    """The regions plot_profile draws a panel for: those with a curve, or
    with a measured program speedup above speedup 0 (a short sweep's
    regions without a curve yet: points only)."""
    return [r for r in results if r.curves or any(t.drawable() for t in r.thin)]


def plot_profile(results: Sequence[RegionResult], output: str,
                 title: Optional[str] = None, columns: int = 3) -> None:
    """One panel per region (in the given order): pooled points (size grows
    with the number of experiments), faint per-experiment points, the fitted
    curve (dashed where extrapolated) and its 95% band; one colour per
    progress point. All panels share the y scale, as in Coz's viewer. A
    region without a curve (estimate.Thin) shows its measured points only;
    a region with nothing measured above speedup 0 gets no panel."""
    from matplotlib.ticker import PercentFormatter
    results = plottable(results)
    if not results:
        raise ValueError("nothing to plot")
    _check_output(output)
    n = len(results)
    ncols = max(1, min(columns, n))
    nrows = math.ceil(n / ncols)
    fig = _figure(4.3 * ncols, 3.2 * nrows + 1.1)
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    all_points = sorted({c.point for r in results for c in r.curves}
                        | {t.point for r in results for t in r.thin})
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
            if c.outliers:
                ox, oy = zip(*c.outliers)
                ax.scatter([x * 100 for x in ox], [min(max(y, -1.0), 2.0) * 100 for y in oy],
                           s=18, marker="x", color=col, alpha=0.7, lw=0.9)
            ms = c.measurements
            ax.scatter([m.speedup * 100 for m in ms],
                       [m.program_speedup * 100 for m in ms],
                       s=[14 + 10 * math.sqrt(m.experiments) for m in ms],
                       color=col, edgecolor="black", lw=0.5, zorder=3, clip_on=False)
            handles.setdefault(c.point + (" (latency)" if c.kind == "latency" else ""), line)
            vals = [m.program_speedup for m in ms] + list(c.fit[inside])
            if c.band is not None and c.ranked:
                vals += list(c.band[0][inside]) + list(c.band[1][inside])
            finite = [v for v in vals if math.isfinite(v)]
            ylo, yhi = min([ylo] + finite), max([yhi] + finite)
        for t in r.thin:                       # no curve (a short sweep): the points only
            if not t.drawable():
                continue
            col = colours[t.point]
            if len(t.exp_speedup):
                ax.scatter(t.exp_speedup * 100, t.exp_program_speedup * 100, s=6,
                           color=col, alpha=0.3, lw=0)
            ms = [m for m in t.measurements if math.isfinite(m.program_speedup)]
            dots = ax.scatter([m.speedup * 100 for m in ms], [m.program_speedup * 100 for m in ms],
                              s=[14 + 10 * math.sqrt(m.experiments) for m in ms],
                              color=col, edgecolor="black", lw=0.5, zorder=3, clip_on=False)
            handles.setdefault(t.point + (" (latency)" if t.kind == "latency" else ""), dots)
            finite = [m.program_speedup for m in ms]
            ylo, yhi = min([ylo] + finite), max([yhi] + finite)
        if not r.curves:
            t = max((t for t in r.thin if t.drawable()), key=lambda t: t.experiments)
            sub = (f"no curve yet: {t.experiments} experiment{'s' if t.experiments != 1 else ''} "
                   f"at {t.levels} speedup{'s' if t.levels != 1 else ''}")
            head = "- "
        elif r.rank is not None:
            best = r.best()
            v, lo, hi = best.key
            at = f"@{best.rank_at * 100:g}%"
            sub = f"{best.describe_model()}, {at} {v * 100:+.1f}% [{lo * 100:+.1f}, {hi * 100:+.1f}]"
            head = f"{r.rank}. "
        else:
            sub = f"not ranked: {r.best().why_unranked}"
            head = "- "
        ax.set_title(f"{head}{_ellipsize(short_region_name(r.region))}\n{_ellipsize(sub, 60)}", fontsize=9)
        ax.grid(True, color="0.92")
        ax.set_xlim(0, 100)
        ax.xaxis.set_major_formatter(PercentFormatter(decimals=0))
        ax.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    # The y range follows the points, the fits and the ranked regions' bands
    # (an unranked region's band can be wide), from -100 % up to 95 %: no
    # program takes less than no time per visit, and the right-hand axis (the
    # same change as a rate, below) is infinite at 100 %; a band reaching
    # above 95 % is cut there.
    ylo, yhi = max(ylo, -1.0), min(yhi, 2.0)
    pad = max(0.02, 0.05 * (yhi - ylo))
    axes[0][0].set_ylim((ylo - pad) * 100, min(yhi + pad, 0.95) * 100)
    for j in range(n, nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    # The same change as a rise in progress rate (visits per second): a program
    # speedup x (less time per visit, Coz's definition) is a rate gain of
    # 1/(1-x) - 1. Right-hand axis of the last panel of each row.
    def to_rate(x):
        import numpy as np
        x = np.asarray(x, dtype=float) / 100
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x < 0.99, (1 / (1 - np.minimum(x, 0.99)) - 1) * 100, np.inf)

    def from_rate(g):
        import numpy as np
        g = np.asarray(g, dtype=float) / 100
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(g > -0.99, (1 - 1 / (1 + np.maximum(g, -0.99))) * 100, -np.inf)
    for row in axes:
        row[0].set_ylabel("program speedup\n(less time per visit)")
        last = [ax for ax in row if ax.get_visible()][-1]
        sec = last.secondary_yaxis("right", functions=(to_rate, from_rate))
        sec.yaxis.set_major_formatter(PercentFormatter(decimals=0))
        sec.set_ylabel("= more visits per second", fontsize=8)
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
    fig.text(0.5, 0.06 / height, "dots: mean of the experiments at each speedup (size ~ count), "
             "faint: single experiments, x: outliers excluded (Hampel, 3.5 MAD); line: the region's "
             "model (dashed: extrapolated); band: 95% Student t.\nProgram speedup x as in Coz: less time per progress "
             "visit; right axis: the same change as more visits per second, 1/(1-x) - 1",
             ha="center", va="bottom", fontsize=7, color="0.35", wrap=True)
    fig.tight_layout(rect=(0, 0.4 / height, 1, 1 - 0.6 / height))
    _save(fig, output)
