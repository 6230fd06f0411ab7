"""The ranking table (text and JSON) of analysed regions."""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import List, Optional, Sequence

from .estimate import DEFINITION, MIN_EXPERIMENTS, PREDICT_AT, RANK_AT, RegionResult, settlement
from .profile import Profile, TimeShares
from .util import clean as _clean, pct as _pct

LINE_QUALIFIER = " @ "


def short_region_name(name: str) -> str:
    """A handler's name without namespaces: "ns::Type::on(ns::Msg)" ->
    "Type::on(Msg)", also before a line qualifier ("... @ file:line");
    other names are returned as they are."""
    i = name.rfind(LINE_QUALIFIER)
    if i > 0:
        return short_region_name(name[:i]) + name[i:]
    head, paren, args = name.partition("(")
    parts = head.split("::")
    short = "::".join(parts[-2:])
    if paren:
        short += "(" + ", ".join(a.strip().split("::")[-1] for a in args.rstrip(")").split(",")) + ")"
    return short


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


def tie_ranks(rows: Sequence[dict]) -> dict:
    """Which ranked regions the data cannot order: walking the ranked
    regions by rank, a region whose interval reaches the lower bound of the
    first region of the current tie group (its upper bound >= that lower
    bound) joins that group; otherwise it starts the next. Returns {region:
    the rank of its group's first region}. Compared with that first region
    only, not chained through the group, so a group never spans two regions
    whose intervals are apart."""
    out, head = {}, None
    for row in sorted((r for r in rows if r["rank"] is not None and r["ci"][0] is not None),
                      key=lambda r: r["rank"]):
        if row["region"] in out:
            continue
        if head is not None and row["ci"][1] >= head["ci"][0]:
            out[row["region"]] = head["rank"]
        else:
            head = row
            out[row["region"]] = row["rank"]
    return out


def ranking_rows(results: Sequence[RegionResult]) -> List[dict]:
    """One dict per (region, progress point), in the given order, with its
    rank (ranked regions only, by the analysis's order; None for a region
    without enough evidence) and its group (the handler a "H @ file:line"
    line region belongs to, else the region itself), and its tie_rank (the
    rank it shares with the regions the data cannot order it against:
    tie_ranks; None when unranked). Speedups are fractions (0.125 = 12.5%).
    A progress point without a curve (estimate.Thin: a short sweep) gives a
    row with "curve": false, "ranked": false, its counts and why, and null
    for everything a curve would give."""
    rows = []
    for r in results:
        rank = r.rank
        for c in r.curves:
            v, lo, hi = c.key
            rows.append({
                "rank": rank,
                "region": c.region,
                "group": region_group(c.region),
                "point": c.point,
                "kind": c.kind,
                "curve": True,
                "ranked": c.ranked,
                "why_unranked": c.why_unranked or None,
                "experiments": c.experiments,
                "outliers": len(c.outliers),
                "baseline_experiments": c.baseline_experiments,
                "levels": c.levels,
                "model": c.model,
                "knee": c.knee,
                "baseline_ns": _clean(c.baseline),
                "rank_at": c.rank_at,
                "key": {"program_speedup": _clean(v), "ci": [_clean(lo), _clean(hi)]},
                "ci": [_clean(lo), _clean(hi)],
                "slope": _clean(c.slope),
                "slope_ci": [_clean(c.slope_ci[0]), _clean(c.slope_ci[1])],
                "runs": c.runs,
                "interval": c.interval,
                "systematic": c.systematic,
                "predicted": {
                    f"{s:g}": {"program_speedup": _clean(pv), "ci": [_clean(plo), _clean(phi)],
                               "extrapolated": c.extrapolated(s)}
                    for s, (pv, plo, phi) in c.predicted.items()},
                "measurements": [
                    {"speedup": m.speedup, "program_speedup": _clean(m.program_speedup),
                     "experiments": m.experiments} for m in c.measurements],
            })
        for t in r.thin:
            rows.append({
                "rank": None, "region": t.region, "group": region_group(t.region),
                "point": t.point, "kind": t.kind, "curve": False, "ranked": False,
                "why_unranked": t.why, "experiments": t.experiments, "outliers": 0,
                "baseline_experiments": t.baseline_experiments, "levels": t.levels,
                "model": None, "knee": None, "baseline_ns": None, "rank_at": None,
                "key": {"program_speedup": None, "ci": [None, None]}, "ci": [None, None],
                "slope": None, "slope_ci": [None, None], "runs": None, "interval": None,
                "systematic": None, "predicted": {},
                "measurements": [
                    {"speedup": m.speedup, "program_speedup": _clean(m.program_speedup),
                     "experiments": m.experiments} for m in t.measurements],
            })
    ties = tie_ranks(rows)
    for row in rows:
        row["tie_rank"] = ties.get(row["region"])
    return rows


def ranking_json(results: Sequence[RegionResult], profile: Profile, sort: str,
                 estimator: Optional[dict] = None, rank_at: float = RANK_AT) -> str:
    st = settlement(results, rank_at, profile.time_shares)
    doc = {"files": profile.paths, "sort": sort,
           "progress_points": sorted({c.point for r in results for c in r.curves}
                                     | {t.point for r in results for t in r.thin}),
           "estimator": estimator,
           "settled": st.settled, "leader": st.leader, "settlement": st.message,
           "time_share_floor": profile.time_shares.floor if profile.time_shares else None,
           "below_time_share_floor": st.below_floor,
           "regions": ranking_rows(results)}
    return json.dumps(doc, indent=2)


def _shown_name(row: dict) -> str:
    if row["group"] != row["region"]:
        # A line region under its handler: the line, with the handler's
        # short name so two callers' rows stay apart.
        return ("  @ " + row["region"][len(row["group"]) + len(LINE_QUALIFIER):]
                + f" (in {short_region_name(row['group'])})")
    return row["region"]


def format_ranking(results: Sequence[RegionResult], rank_at: float = RANK_AT,
                   shares: Optional[TimeShares] = None) -> str:
    rows = ranking_rows(results)
    at = f"@{rank_at * 100:g}%"
    levels = sorted(set(PREDICT_AT) | {rank_at})
    head = ["rank", "region", "progress point", "exps", "model"]
    for s in levels:
        head += [f"@{s * 100:g}%"] + ([f"{at} 95% CI"] if abs(s - rank_at) <= 1e-9 else [])
    head += [f"@{PREDICT_AT[-1] * 100:g}% as rate", "note"]
    table = [head]
    # Regions per tie group (a region with several progress points counts once).
    group_size = Counter({row["region"]: row["tie_rank"] for row in rows if row["tie_rank"] is not None}.values())
    for row in rows:
        key = row["key"]
        v, (lo, hi) = key["program_speedup"], key["ci"]
        top = max((m["speedup"] for m in row["measurements"]), default=0)
        preds = []
        for s in levels:
            p = row["predicted"].get(f"{s:g}")
            pv = p["program_speedup"] if p else v
            if not row["curve"]:                 # no curve: no prediction
                preds.append("n/a")
                if abs(s - rank_at) <= 1e-9:
                    preds.append("n/a")
                continue
            preds.append(_pct(pv if pv is not None else math.nan) + ("*" if s > top + 1e-9 else ""))
            if abs(s - rank_at) <= 1e-9:
                preds.append("n/a" if lo is None else f"[{_pct(lo)}, {_pct(hi)}]")
        notes = []
        if row["rank"] is None:
            notes.append("not enough evidence to rank: " + (row["why_unranked"] or "?"))
        if row["outliers"]:
            notes.append(f"{row['outliers']} outlier{'s' if row['outliers'] > 1 else ''} excluded")
        if not row["curve"]:
            model = "-"
        else:
            model = "line" if row["knee"] is None else f"bend@{row['knee'] * 100:g}%"
        point = row["point"] + (" (latency)" if row["kind"] == "latency" else "")
        # The last prediction as a rise in progress visits per second.
        last = row["predicted"].get(f"{PREDICT_AT[-1]:g}", {}).get("program_speedup")
        rate = _pct(1 / (1 - last) - 1) if last is not None and last < 1 else "n/a"
        if row["rank"] is None:
            shown_rank = "-"
        elif row["tie_rank"] is not None and group_size.get(row["tie_rank"], 0) > 1:
            shown_rank = f"{row['tie_rank']}="
        else:
            shown_rank = str(row["rank"])
        table.append([shown_rank, _shown_name(row),
                      point, str(row["experiments"]), model] + preds + [rate, "; ".join(notes)])
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    left = {1, 2, 4, len(head) - 1}
    out = []
    for r in table:
        out.append("  ".join(c.ljust(widths[i]) if i in left else c.rjust(widths[i])
                             for i, c in enumerate(r)).rstrip())
    st = settlement(results, rank_at, shares)
    ks = sorted({row["systematic"] for row in rows if row.get("systematic")})
    systematic = (f", and the profiler's own error ({', '.join(f'{k * 100:g}%' for k in ks)} of the value, "
                  "docs/profiling.md)" if ks else "")
    note = (f"program speedup predicted by each region's one model (a line through the origin, or "
            f"a bend at k when an F test prefers it) at 10/25/50% virtual speedup; ranked by {at}; "
            f"* = beyond the largest measured speedup (extrapolated); 'as rate': the "
            f"@{PREDICT_AT[-1] * 100:g}% prediction as a rise in progress visits per second; 95% CI: Student t on the "
            f"experiments, the baseline's error included{systematic}. A region is ranked with enough "
            f"experiments (--min-experiments, default {MIN_EXPERIMENTS}) at 3+ speedups; 'k=': tied, "
            f"the data cannot order these regions (each interval reaches the lower bound of the first "
            f"region ranked k)."
            + (" Model '-': no curve yet (fewer distinct speedups than --min-points, baseline "
               "included, or no baseline): a short sweep." if any(not r["curve"] for r in rows) else "")
            + "\n"
            + DEFINITION + " (33% less time per visit = 50% more visits per second)")
    return "\n".join(out) + "\n" + st.message + "\n" + note + "\n"
