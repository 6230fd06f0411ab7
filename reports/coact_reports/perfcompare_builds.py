"""perf-compare: the programs the two sides run, building what is missing:
the default coact-peers in build/release, or each --base-rev/--cand-rev in
its own cached git worktree. Builds themselves are scripts/lib.sh's
functions (coact_build, coact_rev_build), called after the arguments are
checked; this module sets a.base_program / a.cand_program or raises Usage
(a program that is not there) or Failure (a build that did not produce it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
from typing import Optional

from .perfcompare_common import Failure, Usage, log

DEFAULT_PEERS_BIN = "build/release/bench/peers/coact-peers"


def _lib(root: str, *args: str) -> str:
    """Runs a scripts/lib.sh function; its stderr (cmake's output) passes
    through, the last stdout line is returned."""
    r = subprocess.run(["bash", "-c", 'source "$1"; shift; "$@"', "lib",
                        os.path.join(root, "scripts", "lib.sh"), *args],
                       stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise Failure(f"{args[0]} {' '.join(args[1:])} failed (see the output above)")
    return r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""


def resolve_programs(a: argparse.Namespace, root: str) -> None:
    """Sets a.base_program / a.cand_program (absolute paths), building what
    is needed: the default coact-peers, or each --*-rev in its worktree."""
    if a.mode == "peers":
        rel = "bench/peers/coact-peers"
    elif a.mode == "gbench":
        rel = a.gbench
    else:
        rel = a.command[0]
    if a.base_rev is not None:
        if os.path.isabs(rel):
            raise Usage(f"with --base-rev/--cand-rev the program '{rel}' must be a path "
                        "relative to the build directory (e.g. examples/dedup/coact-dedup)")
        target = a.target or os.path.basename(rel)
        for side in ("base", "cand"):
            sha = getattr(a, side + "_rev_sha")
            log(f"{side}: revision {getattr(a, side + '_rev')} = {sha[:12]}; building {target}")
            bdir = _lib(root, "coact_rev_build", root, sha, target)
            prog = os.path.join(bdir, rel)
            if not os.access(prog, os.X_OK):
                raise Failure(f"{side}: built {target} at {sha[:12]}, but {prog} is missing "
                              "(is the program path relative to the build directory?)")
            setattr(a, side + "_program", prog)
        return
    if a.mode == "peers":
        default = os.path.join(root, DEFAULT_PEERS_BIN)
        if (a.base_bin is None or a.cand_bin is None) and not os.access(default, os.X_OK):
            log(f"{default} is missing; building it")
            _lib(root, "coact_build", os.path.join(root, "build", "release"), "Release",
                 "coact-peers")
            if not os.access(default, os.X_OK):
                raise Failure(f"built coact-peers, but {default} is still missing")
    else:
        default = rel if os.sep in rel else (_which(rel) or rel)
        if os.sep in rel and not os.access(rel, os.X_OK) and \
                (a.base_bin is None or a.cand_bin is None):
            what = "--gbench" if a.mode == "gbench" else "the command"
            raise Usage(f"{what} '{rel}': not an executable file")
        if os.sep not in rel and not _which(rel) and (a.base_bin is None or a.cand_bin is None):
            raise Usage(f"the command '{rel}' is not found on PATH (give a path)")
        default = os.path.abspath(default) if os.sep in default else default
    a.base_program = a.base_bin or default
    a.cand_program = a.cand_bin or default


def _which(name: str) -> Optional[str]:
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None
