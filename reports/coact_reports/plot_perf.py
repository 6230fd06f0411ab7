"""perf-compare plots: base and cand distributions with the paired deltas."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from .perfstats import MetricComparison
from .plotting import _check_output, _figure, _save
from .util import pct as _pct

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
