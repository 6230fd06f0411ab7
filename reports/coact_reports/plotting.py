"""Shared matplotlib helpers (object-oriented API: no pyplot, no global backend)."""

from __future__ import annotations

import os

from .util import UsageError

_PLOT_FORMATS = ("png", "svg")


def _check_output(path: str) -> str:
    """Checks a plot path before any work: a .png/.svg name in a directory that
    exists and is writable (UsageError, a ValueError, naming the path otherwise)."""
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in _PLOT_FORMATS:
        raise UsageError(f"output {path!r}: extension must be .png or .svg")
    d = os.path.dirname(path) or "."
    if not os.path.isdir(d):
        raise UsageError(f"output {path!r}: directory {d!r} does not exist (create it first)")
    if not os.access(d, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"output {path!r}: not writable")
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
