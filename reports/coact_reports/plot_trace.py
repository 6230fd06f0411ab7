"""Span distributions of a coact per-mail trace (`coact-plot trace`).

Reads the Chrome trace-event JSON a runtime writes with COACT_TRACE=on
(COACT_TRACE_OUTPUT): every handler slice of a traced mail carries its spans
in args (construct_us, queued_us, drain_us, handler_us;
docs/traces.md). Plots one panel per span: a box per recipient handler
region (the N with most mails), log-scaled microseconds, whiskers at
p1/p99. Also returns the per-region percentiles (the numbers the plot shows).
"""

from __future__ import annotations

import json
from collections import defaultdict

from .plotting import _ellipsize, _figure, _save
from .profile import ProfileError

SPANS = ("construct_us", "queued_us", "drain_us", "handler_us")


def load_spans(path: str) -> dict:
    """{region: {span: [values]}} of the traced mails in the trace at `path`.
    ProfileError (a data error) if it is not a coact trace."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise ProfileError(f"cannot read: {e.strerror}", path) from None
    except ValueError as e:
        raise ProfileError(f"not JSON: {e}", path) from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise ProfileError("not a trace-event JSON object (expected {\"traceEvents\": [...]})", path)
    out: dict = defaultdict(lambda: {s: [] for s in SPANS})
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") == "handler":
            a = e.get("args", {})
            if "t_sent" in a:
                for s in SPANS:
                    out[e["name"]][s].append(float(a.get(s, 0.0)))
    if not out:
        raise ProfileError("no traced mail in the trace (COACT_TRACE was off, or every event was dropped)", path)
    return dict(out)


def percentile(v, q):
    s = sorted(v)
    k = max(1, min(len(s), int(-(-q * len(s) // 1))))
    return s[k - 1]


def plot_trace(spans: dict, output: str, top: int = 8, title: str | None = None) -> list:
    """Writes the span-distribution figure; returns the regions shown."""
    regions = sorted(spans, key=lambda r: (-len(spans[r][SPANS[0]]), r))[:top]
    fig = _figure(12, 1.2 + 0.45 * len(regions) * 2)
    axes = fig.subplots(1, len(SPANS), sharey=True)
    floor = 0.01  # us: log axis; a zero span is drawn at the floor
    for ax, span in zip(axes, SPANS):
        data = [[max(x, floor) for x in spans[r][span]] for r in regions]
        ax.boxplot(data, vert=False, whis=(1, 99), showfliers=False, widths=0.6)
        ax.set_xscale("log")
        ax.set_title(span.replace("_us", "") + " (µs)")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0].set_yticks(range(1, len(regions) + 1))
    axes[0].set_yticklabels([f"{_ellipsize(r, 44)} (n={len(spans[r][SPANS[0]])})" for r in regions], fontsize=7)
    axes[0].invert_yaxis()
    fig.suptitle(title or "per-mail spans by recipient handler (box: p25-p75, whiskers p1-p99)")
    fig.tight_layout()
    _save(fig, output)
    return regions
