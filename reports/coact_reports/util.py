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


class UsageError(ValueError):
    """A bad option value or a bad input a command was given: the command
    exits 2 with one line naming it. Raised on purpose only; any other
    ValueError is a bug (see guarded)."""


INTERNAL_ERROR_EXIT = 3  # a bug in the tool: apart from 1 (data error), which callers read as "no curve"


def guarded(prog: str, fn, *args) -> int:
    """Runs fn(*args) as a command; returns its exit status. ProfileWarning
    lines go to stderr as "PROG: warning: ..."; errors are one line each:

    * UsageError (bad option value) and NotAProfileError (the input is not a
      profile at all): "PROG: error: ...", exit 2 (usage: bad input);
    * ProfileError (a data error, TrialsError included) and OSError (a file
      that cannot be read or written): "PROG: error: ...", exit 1;
    * anything else is a bug in the tool, not in its input: its traceback,
      then "PROG: internal error: ...", exit 3 (INTERNAL_ERROR_EXIT: kept
      apart from 1, which coact-profile validate reads as "no curve")."""
    import sys
    import traceback
    import warnings
    from .profile import NotAProfileError, ProfileError, ProfileWarning

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"{prog}: warning: {message}", file=sys.stderr)

    def one_line(e) -> str:
        return " ".join(str(e).split())

    with warnings.catch_warnings():             # restores showwarning on exit
        warnings.simplefilter("always", ProfileWarning)
        warnings.showwarning = show
        try:
            return fn(*args)
        except (NotAProfileError, UsageError) as e:
            print(f"{prog}: error: {one_line(e)}", file=sys.stderr)
            return 2
        except (ProfileError, OSError) as e:    # ProfileError includes TrialsError
            print(f"{prog}: error: {one_line(e)}", file=sys.stderr)
            return 1
        except Exception as e:                  # a bug: not the input's fault
            traceback.print_exc(file=sys.stderr)
            print(f"{prog}: internal error (a bug in {prog}, not a problem with its input): "
                  f"{type(e).__name__}: {one_line(e)}", file=sys.stderr)
            return INTERNAL_ERROR_EXIT
