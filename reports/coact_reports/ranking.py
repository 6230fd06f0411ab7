"""The ranking table (text and JSON) of analysed regions."""

from __future__ import annotations

import json
import math
from typing import List, Sequence

from .estimate import DEFINITION, PREDICT_AT, RegionResult
from .profile import Profile
from .util import clean as _clean, pct as _pct

LINE_QUALIFIER = " @ "


def region_group(region: str) -> str:
    """The handler (or scope) a sampled-line region is qualified by:
    "Compressor::on(NewChunk) @ zstd_wrap.cpp:41" -> "Compressor::on(NewChunk)";
    any other region is its own group."""
    i = region.rfind(LINE_QUALIFIER)
    return region[:i] if i > 0 else region


def group_by_handler(results: Sequence[RegionResult]) -> List[RegionResult]:
    """Rank order, except that each line region qualified by a handler
    ("H @ file:line") follows H right away (in its own rank order among H's
    lines); qualified lines whose handler is not in `results` keep their
    place, grouped under the first of them."""
    tops = [r for r in results if region_group(r.region) == r.region]
    top_names = {r.region for r in tops}
    children = {}
    order = []
    for r in results:
        g = region_group(r.region)
        if g == r.region:
            order.append(r.region)
            continue
        if g not in top_names and g not in children:
            order.append(g)
        children.setdefault(g, []).append(r)
    by_name = {r.region: r for r in tops}
    out = []
    for name in order:
        if name in by_name:
            out.append(by_name[name])
        out.extend(children.get(name, []))
    return out


def ranking_rows(results: Sequence[RegionResult]) -> List[dict]:
    """One dict per (region, progress point), in the given order, with its
    rank by the analysis's sort among `results` and its group (the handler a
    "H @ file:line" line region belongs to, else the region itself). Speedups
    are fractions (0.125 = 12.5%)."""
    rows = []
    for rank, r in enumerate(results, start=1):
        for c in r.curves:
            rows.append({
                "rank": rank,
                "region": c.region,
                "group": region_group(c.region),
                "point": c.point,
                "kind": c.kind,
                "experiments": c.experiments,
                "points": c.points,
                "degree": c.degree,
                "baseline_ns": _clean(c.baseline),
                "slope": _clean(c.slope),
                "slope_ci": [_clean(c.slope_ci[0]), _clean(c.slope_ci[1])],
                "predicted": {
                    f"{s:g}": {"program_speedup": _clean(v), "ci": [_clean(lo), _clean(hi)],
                               "extrapolated": c.extrapolated(s)}
                    for s, (v, lo, hi) in c.predicted.items()},
                "measurements": [
                    {"speedup": m.speedup, "program_speedup": _clean(m.program_speedup),
                     "experiments": m.experiments} for m in c.measurements],
            })
    return rows


def ranking_json(results: Sequence[RegionResult], profile: Profile, sort: str) -> str:
    doc = {"files": profile.paths, "sort": sort,
           "progress_points": sorted({c.point for r in results for c in r.curves}),
           "regions": ranking_rows(results)}
    return json.dumps(doc, indent=2)



def format_ranking(results: Sequence[RegionResult]) -> str:
    rows = ranking_rows(results)
    head = ["rank", "region", "progress point", "exps", "pts", "slope", "slope 95% CI"] + \
        [f"@{int(s * 100)}%" for s in PREDICT_AT] + [f"@{int(PREDICT_AT[-1] * 100)}% as rate"]
    table = [head]
    for row in rows:
        ci = row["slope_ci"]
        ci_s = "n/a" if ci[0] is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
        preds = []
        for s in PREDICT_AT:
            p = row["predicted"][f"{s:g}"]
            v = p["program_speedup"]
            preds.append(_pct(v if v is not None else math.nan) +
                         ("*" if p["extrapolated"] else ""))
        # The last prediction as a rise in progress visits per second.
        last = row["predicted"][f"{PREDICT_AT[-1]:g}"]["program_speedup"]
        rate = _pct(1 / (1 - last) - 1) if last is not None and last < 1 else "n/a"
        point = row["point"] + (" (latency)" if row["kind"] == "latency" else "")
        shown = row["region"]
        if row["group"] != row["region"]:
            shown = "  @ " + row["region"][len(row["group"]) + len(LINE_QUALIFIER):]
        table.append([str(row["rank"]), shown, point, str(row["experiments"]),
                      str(row["points"]),
                      "n/a" if row["slope"] is None else f"{row['slope']:+.3f}", ci_s]
                     + preds + [rate])
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    right = {0, 3, 4, 5, 7, 8, 9, 10}
    out = []
    for r in table:
        out.append("  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                             for i, c in enumerate(r)).rstrip())
    note = ("program speedup predicted by the fitted curve at 10/25/50% virtual "
            "speedup; * = beyond the largest measured speedup (extrapolated); "
            "'as rate': the @50% prediction as a rise in progress visits per second\n"
            + DEFINITION + " (33% less time per visit = 50% more visits per second)")
    return "\n".join(out) + "\n" + note + "\n"
