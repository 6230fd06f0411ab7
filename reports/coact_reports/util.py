"""Small formatting helpers shared by the report modules."""

from __future__ import annotations

import math


def clean(x):
    """JSON-safe float: NaN and infinities become None."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def pct(x, signed: bool = True) -> str:
    """A fraction as a percentage with one decimal ("n/a" if not finite)."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x * 100:+.1f}%" if signed else f"{x * 100:.1f}%"


def guarded(prog: str, fn, *args) -> int:
    """Runs fn(*args) as a command: ProfileWarning lines go to stderr as
    "PROG: warning: ...", a ProfileError (data error) exits 1, a ValueError
    (bad option value) exits 2, each as one "PROG: error: ..." line."""
    import sys
    import warnings
    from .profile import ProfileError, ProfileWarning

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"{prog}: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():             # restores showwarning on exit
        warnings.simplefilter("always", ProfileWarning)
        warnings.showwarning = show
        try:
            return fn(*args)
        except ProfileError as e:               # includes TrialsError
            print(f"{prog}: error: {e}", file=sys.stderr)
            return 1
        except ValueError as e:                 # bad option values
            print(f"{prog}: error: {e}", file=sys.stderr)
            return 2
