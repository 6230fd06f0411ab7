"""scripts/bench.sh's burst group, and the coact rows of its scaling group
(bench_groups.run_scaling): burst dispatch on vs off, side by side.

A row is one configuration of coact-burst-bench (bench/burst/burst_bench.cpp:
a fan-out of a width, a chain, or a peers workload as coact-peers, at some
handler time and worker count). run_row runs its TRIALS pairs of one-run
processes, `coact-burst-bench --side on|off --row ...`, each through the
one trial runner (trials.Runner), in the fixed balanced order trials.abba
gives (on off, off on, off on, on off, ...: which side runs first would
otherwise gain or lose the same in every pair), and returns the row
bench.burst_row aggregates (medians, the pairs' ratios). run_burst runs
every row of the group, then bench.burst adds each row's intervals and the
summary. The JSON is documented in scripts/bench.sh's header.

Called from bench_groups (`coact_run.py bench_groups burst ...`), which
resolves the knobs and turns a failed trial (GroupFailed) into exit 1.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import List

from . import bench, trials
from .bench_groups import PEER_WORKLOADS, Group, GroupFailed, aggregate, log, write_rows

# The burst group's rows, in run order: fan_out at each handler time (outer)
# and width (inner), the chain at each handler time, the peers workloads.
FAN_OUT_WIDTHS = (1, 8, 64, 512)
HANDLER_US = (0, 20)


@dataclass(frozen=True)
class Row:
    """One row: kind is coact-burst-bench's --row (fan_out, chain or peers);
    workload the row's name in the output (the peers workload for peers);
    width 1 for chain and 0 for the peers rows, as the output has them."""
    kind: str
    workload: str
    width: int
    handler_us: int

    def label(self) -> str:
        """The row's name in messages, as bench.burst's summary names it."""
        return f"{self.workload}/w{self.width}/{self.handler_us}us"

    def args(self) -> List[str]:
        """coact-burst-bench's arguments selecting this row."""
        if self.kind == "fan_out":
            return ["--row", "fan_out", "--width", str(self.width), "--handler-us", str(self.handler_us)]
        if self.kind == "chain":
            return ["--row", "chain", "--handler-us", str(self.handler_us)]
        return ["--row", "peers", "--workload", self.workload]


def fan_out(width: int, handler_us: int) -> Row:
    return Row("fan_out", "fan_out", width, handler_us)


def peers_rows() -> List[Row]:
    return [Row("peers", wl, 0, 0) for wl in PEER_WORKLOADS]


def burst_rows() -> List[Row]:
    """Every row of the burst group, in run order."""
    return ([fan_out(w, us) for us in HANDLER_US for w in FAN_OUT_WIDTHS] +
            [Row("chain", "chain", 1, us) for us in HANDLER_US] + peers_rows())


def run_row(g: Group, row: Row, workers: int, prefix: str) -> dict:
    """The row's g.trials on/off pairs at `workers` workers (trials.abba's
    order), one coact-burst-bench process per run, each limited to
    g.timeout_s seconds; returns bench.burst_row's object. Raises
    GroupFailed naming the run ("PREFIX/ROW: on run 2/3 ...") when one
    fails or prints a row that is not the one asked for."""
    argv = [g.bin("coact-burst-bench"), "--workers", str(workers), *row.args()]
    if row.kind == "peers":
        argv += ["--peers", g.bin("coact-peers")]
    if g.quick:
        argv.append("--quick")
    runs = {"on": [], "off": []}
    for t, pair in enumerate(trials.abba(g.trials, "on", "off"), 1):
        for side in pair:
            what = f"{prefix}/{row.label()}: {side} run {t}/{g.trials}"
            doc, _ = g.trial([*argv, "--side", side], what, g.timeout_s)
            expect = {"group": "burst", "workload": row.workload, "width": row.width,
                      "handler_us": row.handler_us, "workers": workers, "side": side}
            rate, syncs = doc.get("msgs_per_s"), doc.get("syncs")
            if any(doc.get(k) != v for k, v in expect.items()) or not isinstance(rate, (int, float)) \
                    or rate <= 0 or not isinstance(syncs, int):
                raise GroupFailed(f"{what} printed an unexpected row: {json.dumps(doc)}")
            runs[side].append((float(rate), syncs))
    out = bench.burst_row(row.workload, row.width, row.handler_us, workers, runs["on"], runs["off"])
    log(f"{prefix}/{row.label()}: on {out['on_msgs_per_s']:.0f}, off {out['off_msgs_per_s']:.0f} msgs/s, "
        f"ratio {out['ratio']:g} ({g.trials} pairs at {workers} workers)")
    return out


def run_burst(g: Group) -> None:
    """The burst group: every row's pairs (run_row at g.workers workers),
    then bench.burst on the rows."""
    log(f"burst: {g.bin('coact-burst-bench')} --workers {g.workers} --peers {g.bin('coact-peers')}"
        f"{' --quick' if g.quick else ''}: {g.trials} on/off pairs per row (ABBA), one process per run")
    rows = [json.dumps(run_row(g, row, g.workers, "burst"), separators=(",", ":")) for row in burst_rows()]
    aggregate(bench.burst, [write_rows(g.path("burst.jsonl"), rows)], "group burst: aggregating the rows failed")
