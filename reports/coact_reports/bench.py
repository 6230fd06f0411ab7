"""Aggregation for scripts/bench.sh: turns the benchmark programs' output into
the JSON lines bench.sh prints (one object per workload). Called as

  python3 -m coact_reports.bench runtime BENCHMARK_JSON
  python3 -m coact_reports.bench peers WORKLOAD N WORKERS QUICK COACT_ROWS CAF_ROWS TOKIO_ROWS [WRAP]
  python3 -m coact_reports.bench timers SCENARIO KEY PARAMS_JSON WORKERS QUICK COACT_ROWS CAF_ROWS TOKIO_ROWS
  python3 -m coact_reports.bench sampling PARAMS_JSON TRIALS_ROWS COST_JSON
  python3 -m coact_reports.bench burst BURST_ROWS
  python3 -m coact_reports.bench scaling BURST_ROWS TOKIO_ROWS QUICK
  python3 -m coact_reports.bench slowmode PEERS_ROWS WORKERS

(QUICK is 0 or 1; *_ROWS are files of the programs' JSON lines, one per
trial, except BURST_ROWS: burst_row's objects, one per row; TOKIO_ROWS of peers holds every tokio variant, told apart by their
"variant" member (or, in older rows, "channel"); CAF_ROWS of peers may be empty). An error exits non-zero with one line naming the group and workload.
bench.sh calls runtime; bench_groups, bench_burst and bench_costs, which
run the other groups' trials, call these functions directly (an exit raises
SystemExit there). The output formats are documented in scripts/bench.sh's
header.
"""

import json
import os
import re
import statistics
import sys


def runtime(argv):
    path = argv[0]
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"bench.sh: group runtime: cannot read benchmark JSON {path}: {e}")

    # Keys Google Benchmark writes for every run that are not figures.
    META = {"name", "run_name", "run_type", "family_index", "per_family_instance_index",
            "repetitions", "repetition_index", "threads", "aggregate_name", "aggregate_unit",
            "label", "error_occurred", "error_message", "time_unit"}
    failed = []
    for b in doc.get("benchmarks", []):
        name = b.get("name", "?")
        run_name = b.get("run_name", name)
        params = {}
        segs = run_name.split("/")
        for i, seg in enumerate(segs[1:]):
            if ":" in seg:
                k, v = seg.split(":", 1)
                try:
                    params[k] = int(v)
                except ValueError:
                    try:
                        params[k] = float(v)
                    except ValueError:
                        params[k] = v
            elif re.fullmatch(r"-?\d+", seg):
                params[f"arg{i}"] = int(seg)
            else:
                params.setdefault("modifiers", []).append(seg)
        params["threads"] = b.get("threads", 1)
        figures = {"time_unit": b.get("time_unit", "ns")}
        for k, v in b.items():
            if k not in META and isinstance(v, (int, float)) and not isinstance(v, bool):
                figures[k] = v
        out = {"group": "runtime", "workload": name, "benchmark": segs[0], "parameters": params,
               "figures": figures}
        if b.get("run_type") == "aggregate":
            out["aggregate"] = b.get("aggregate_name")
        elif b.get("repetitions", 1) > 1:
            out["repetition"] = b.get("repetition_index", 0)
        if b.get("label"):
            out["label"] = b["label"]
        if b.get("error_occurred"):
            out["error"] = b.get("error_message", "error")
            failed.append(name)
        print(json.dumps(out, separators=(",", ":")))
    if not doc.get("benchmarks"):
        sys.exit("bench.sh: group runtime: the benchmark binary reported no benchmarks")
    if failed:
        sys.exit("bench.sh: group runtime: benchmarks reported errors: " + ", ".join(failed))


def json_lines(path, bad_json):
    """Each non-blank line of `path` parsed as JSON, with its text. Exits with
    `bad_json` and the line on one that is not JSON."""
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except ValueError:
                sys.exit(f"{bad_json}: {line!r}")
            yield row, line


def load_rows(path, runtime, label, expect):
    """The JSON lines of one runtime's trials; each must have "runtime" ==
    runtime and the fields in `expect`. Exits naming `label` otherwise, or
    if there are none."""
    rows = []
    for row, line in json_lines(path, f"bench.sh: {label}: {runtime} printed bad JSON"):
        if row.get("runtime") != runtime or any(row.get(k) != v for k, v in expect.items()):
            sys.exit(f"bench.sh: {label}: {runtime} printed an unexpected row: {line}")
        rows.append(row)
    if not rows:
        sys.exit(f"bench.sh: {label}: no {runtime} trials")
    return rows


# The slow mode: a trial below SLOW_FRACTION of the best trial of the same
# runtime (and tokio variant) in the same run. Shares of slow trials are
# reported per runtime/variant next to every trial.
SLOW_FRACTION = 0.8


def spread(xs):
    """median, min, max, the share of slow-mode trials and every trial of one
    runtime's (or variant's) rates, higher is better."""
    best = max(xs)
    slow = [x for x in xs if x < SLOW_FRACTION * best]
    return {"median": round(statistics.median(xs), 1), "min": round(min(xs), 1), "max": round(best, 1),
            "slow_share": round(len(slow) / len(xs), 4), "slow_trials": len(slow), "trials": xs}


def tokio_variant_name(row):
    """The row's tokio variant; rows from before --style carry only "channel"."""
    return row.get("variant") or f"actor_{row.get('channel', '?')}"


def peers(argv):
    wl, n, workers, quick, coact_path, caf_path, tokio_path, *rest = argv
    n, workers, quick = int(n), int(workers), quick == "1"
    wrap = rest[0] if rest else ""
    label = f"peers/{wl}"

    def load(path, runtime, optional=False):
        if optional and os.path.getsize(path) == 0:
            return []
        return load_rows(path, runtime, label, {"workload": wl, "n": n})

    coact = load(coact_path, "coact")
    caf, tokio = load(caf_path, "caf", True), load(tokio_path, "tokio", True)
    unit = coact[0]["unit"]
    msgs = coact[0]["msgs"]
    if any(r["msgs"] != msgs for r in coact + caf + tokio):
        sys.exit(f"bench.sh: {label}: coact, caf and tokio disagree on the message count")
    # tokio: every variant (actor-style bounded / unbounded, idiomatic, ...); the
    # comparison is against the fastest by median, named in "tokio_variant".
    tokio_by = {}
    for r in tokio:
        tokio_by.setdefault(tokio_variant_name(r), []).append(r["msgs_per_s"])
    idiomatic = sorted(v for v in tokio_by if v.startswith("idiomatic"))
    if tokio and (not {"actor_bounded", "actor_unbounded"} <= set(tokio_by) or not idiomatic):
        sys.exit(f"bench.sh: {label}: tokio trials need the actor_bounded, actor_unbounded and an idiomatic "
                 f"variant, got {sorted(tokio_by)}")
    tokio_stats = {v: spread(xs) for v, xs in sorted(tokio_by.items())}
    tokio_best = max(tokio_stats, key=lambda v: tokio_stats[v]["median"]) if tokio else None
    tm = tokio_stats[tokio_best]["median"] if tokio else None

    # What one unit of the figure is, per workload (see bench/peers/peers_common.hpp).
    if wl == "ping_pong":
        params = {"actors": 2, "round_trips": n}
        figure = "messages per second; 2 per round trip (ping + pong)"
    elif wl == "fan_out":
        params = {"masters": 1, "worker_actors": 64, "requests": n, "round_size": 64}
        figure = "messages per second; 2 per request (request + reply)"
    elif wl == "thread_ring":
        params = {"actors": 503, "hops": n}
        figure = "messages per second; 1 per hop"
    else:
        params = {"branching": 10, "leaves": n, "actors": msgs}
        figure = "actors spawned per second (each also gets 1 start message and sends 1 reply)"
    params["msgs"] = msgs
    params["quick"] = quick

    c = [r["msgs_per_s"] for r in coact]
    k = [r["msgs_per_s"] for r in caf]
    cs = spread(c)
    if coact and all(r.get("probe_msteps_per_s") is not None for r in coact):
        # slowmode: the host probe run just before each coact trial, in trial order
        cs["probe"] = [r["probe_msteps_per_s"] for r in coact]
    ks = spread(k) if k else None
    cm = cs["median"]
    km = ks["median"] if ks else None
    trials = {"coact": c, "caf": k}
    trials.update({f"tokio_{v}": xs for v, xs in sorted(tokio_by.items())})
    out = {
        "group": "peers",
        "workload": wl,
        "parameters": params,
        "workers": workers,
        "unit": "actors_per_s" if unit == "actors" else "msgs_per_s",
        "figure": figure,
        "coact_msgs_per_s": cm,
        "caf_msgs_per_s": km,
        "ratio": round(cm / km, 4) if km else None,
        "tokio_msgs_per_s": tm,
        "tokio_variant": tokio_best,
        "tokio_channel": None if not tokio else "bounded" if tokio_best == "actor_bounded" else "unbounded",
        "coact_over_tokio": round(cm / tm, 4) if tm else None,
        "tokio_msgs_per_s_by_variant": {v: st["median"] for v, st in tokio_stats.items()},
        "coact_over_tokio_by_variant": {v: round(cm / st["median"], 4) if st["median"] > 0 else None
                                        for v, st in tokio_stats.items()},
        "coact": cs,
        "caf": ks,
        "tokio_variants": tokio_stats,
        "slow_mode": {
            "definition": f"a trial below {SLOW_FRACTION} x the best trial of the same runtime (and tokio "
                          "variant) in this run",
            "fraction": SLOW_FRACTION,
            "share": {"coact": cs["slow_share"], **({"caf": ks["slow_share"]} if ks else {}),
                      **{f"tokio_{v}": st["slow_share"] for v, st in tokio_stats.items()}},
        },
        "trials": trials,
        "seconds": {"coact": [r["seconds"] for r in coact], "caf": [r["seconds"] for r in caf]},
        "order": "alternating coact, caf, then each tokio variant, per trial",
    }
    paired = paired_ratio(c, tokio_by.get(tokio_best, []))
    if paired is not None:
        out["coact_over_tokio_paired"] = dict(variant=tokio_best, **paired)
    if wrap:
        out["wrap"] = wrap  # the command every trial ran under (COACT_BENCH_WRAP)
    print(json.dumps(out, separators=(",", ":")), flush=True)


def paired_ratio(coact, other):
    """coact's trial over the other side's trial of the same round, per round
    (the trials alternate within a round, so a slow stretch of the host falls
    on both sides of a pair): the ratios, their median with its 95 %
    interval (percentile bootstrap) and their geometric mean with its t
    interval (ratio_intervals). None without a trial per round on each
    side, with fewer than 3 rounds, or with a rate that is not positive."""
    if len(coact) != len(other) or len(coact) < 3 or min(other) <= 0 or min(coact) <= 0:
        return None
    pairs = [a / b for a, b in zip(coact, other)]
    gmean, t_ci, boot = ratio_intervals(pairs)
    return {"ratios": [round(x, 4) for x in pairs], "median": round(statistics.median(pairs), 4),
            "median_ci95": boot, "geomean": round(gmean, 4), "geomean_ci95": t_ci}


# ---- burst on vs off: the interval of each row's ratio ----------------------------
# A loss this large or larger must be excluded by a row's interval before burst
# dispatch may be the default (issue: "a CI that excludes a >3% loss").
BURST_LOSS_LIMIT = 0.03


def ratio_intervals(pairs, seed=1):
    """95 % intervals of the on/off ratio from the per-pair ratios: a t interval
    of the mean log ratio (the geometric mean; pairs share the machine's drift,
    so they are the unit) and a percentile bootstrap of the median (10^4
    resamples, fixed seed: the same rows give the same interval;
    perfstats.bootstrap_median_ci)."""
    import numpy as np
    from scipy import stats

    from .perfstats import bootstrap_median_ci
    x = np.log(np.asarray(pairs, dtype=float))
    n = len(x)
    gmean = float(np.exp(x.mean()))
    if n < 2:
        return gmean, None, None
    half = float(stats.t.ppf(0.975, n - 1) * x.std(ddof=1) / np.sqrt(n))
    t_ci = [round(float(np.exp(x.mean() - half)), 4), round(float(np.exp(x.mean() + half)), 4)]
    lo, hi = bootstrap_median_ci(np.asarray(pairs, dtype=float), 10000, np.random.default_rng(seed))
    boot = [round(lo, 4), round(hi, 4)]
    return gmean, t_ci, boot


def rounded(x, places):
    """x printed with `places` decimals and read back (as the benchmark
    programs' rounded(): bench/common/bench_support.hpp)."""
    return float(f"{x:.{places}f}")


def median_high(xs):
    """The middle value of xs sorted, the higher of the two middle ones for an
    even count (an observed value: the medians coact-burst-bench reported)."""
    return sorted(xs)[len(xs) // 2]


def burst_row(workload, width, handler_us, workers, on, off):
    """One burst row from its pairs: on[i] and off[i] are pair i's runs as
    (msgs_per_s, syncs), pairs in run order. The medians are median_high;
    ratio is the median of the pairs' on/off (the pairs share the machine's
    drift), ratio_of_medians the medians' quotient; every run is kept
    (on_trials, off_trials, pair_ratios) for the intervals burst() adds.
    The row scripts/bench.sh's header documents for the burst group."""
    if not on or len(on) != len(off):
        raise ValueError(f"burst row {workload}/w{width}/{handler_us}us: want the same number (>= 1) of on "
                         f"and off runs, got {len(on)} and {len(off)}")
    on_r, off_r = [r for r, _ in on], [r for r, _ in off]
    pairs = [a / b for a, b in zip(on_r, off_r)]
    m_on, m_off = median_high(on_r), median_high(off_r)
    s_on, s_off = median_high([s for _, s in on]), median_high([s for _, s in off])
    return {"group": "burst", "workload": workload, "width": width, "handler_us": handler_us, "workers": workers,
            "on_msgs_per_s": rounded(m_on, 1), "off_msgs_per_s": rounded(m_off, 1),
            "ratio": rounded(median_high(pairs), 3), "ratio_of_medians": rounded(m_on / m_off, 3),
            "syncs_on": s_on, "syncs_off": s_off, "sync_ratio": rounded(s_off / max(s_on, 1), 2),
            "trials": len(on), "on_trials": [rounded(x, 1) for x in on_r],
            "off_trials": [rounded(x, 1) for x in off_r], "pair_ratios": [rounded(x, 5) for x in pairs]}


def burst(argv):
    """Reads the burst group's rows (ROWS file: burst_row's objects, one a
    line), prints each with its ratio's
    intervals and verdict, then one summary row."""
    path, = argv
    rows = load_jsonl(path, "burst")
    verdicts = []
    for r in rows:
        pairs = r.get("pair_ratios")
        if pairs:
            gmean, t_ci, boot = ratio_intervals(pairs)
            r["ratio_geomean"] = round(gmean, 4)
            r["ratio_ci95"] = t_ci
            r["ratio_median_ci95"] = boot
            if t_ci:
                # Both intervals must clear the limit: the t interval assumes
                # log-normal pairs, the bootstrap of the median does not.
                lo = min(t_ci[0], boot[0])
                r["loss_over_3pct_excluded"] = lo >= 1 - BURST_LOSS_LIMIT
                r["verdict"] = ("slower" if max(t_ci[1], boot[1]) < 1 else
                                "faster" if lo > 1 else "no difference shown")
                verdicts.append(r)
        print(json.dumps(r, separators=(",", ":")), flush=True)
    if verdicts:
        label = lambda r: f"{r['workload']}/w{r.get('width')}/{r.get('handler_us')}us"  # noqa: E731
        blocking = [label(r) for r in verdicts if not r["loss_over_3pct_excluded"]]
        worst = min(verdicts, key=lambda r: min(r["ratio_ci95"][0], r["ratio_median_ci95"][0]))
        print(json.dumps({
            "group": "burst", "workload": "summary", "workers": verdicts[0].get("workers"),
            "pairs_per_row": min(len(r["pair_ratios"]) for r in verdicts),
            "loss_limit": BURST_LOSS_LIMIT,
            "rows": len(verdicts),
            "rows_excluding_loss": len(verdicts) - len(blocking),
            "rows_not_excluding_loss": blocking,
            "rows_slower": [label(r) for r in verdicts if r["verdict"] == "slower"],
            "worst_row": {"row": label(worst), "ratio_ci95": worst["ratio_ci95"],
                          "ratio_median_ci95": worst["ratio_median_ci95"]},
            "burst_default_supported": not blocking,
            "rule": "burst may be the default when every row's 95 % intervals (t of the mean log ratio and "
                    "bootstrap of the median) lie above 1 - loss_limit",
        }, separators=(",", ":")), flush=True)


def load_jsonl(path, label):
    """Every JSON line of `path`; exits naming `label` on a bad line or none."""
    rows = [row for row, _ in json_lines(path, f"bench.sh: {label}: bad JSON line")]
    if not rows:
        sys.exit(f"bench.sh: {label}: no rows")
    return rows


# ---- scaling: coact burst on / off and tokio's idiomatic variant by worker count ----
def scaling(argv):
    """BURST_ROWS: the burst rows (burst_row) at every worker count (fan_out
    width 512 and the peers rows); TOKIO_ROWS: tokio-peers' rows (any worker counts).
    Prints one row per (workload, workers) and a summary of the speedups."""
    burst_path, tokio_path, quick = argv
    rows = load_jsonl(burst_path, "scaling")
    tokio = load_jsonl(tokio_path, "scaling") if os.path.getsize(tokio_path) else []
    tok = {}
    for t in tokio:
        tok.setdefault((t["workload"], t["workers"]), []).append(t)
    by_wl = {}
    for r in rows:
        wl = r["workload"] if r.get("width", 0) == 0 else f"{r['workload']}_{r['width']}"
        k = r["workers"]
        out = {"group": "scaling", "workload": wl, "workers": k, "quick": quick == "1"}
        if r.get("width"):
            out["width"] = r["width"]
            out["handler_us"] = r.get("handler_us")
        for key in ("on_msgs_per_s", "off_msgs_per_s", "ratio", "syncs_on", "syncs_off"):
            out[key] = r.get(key)
        if r.get("pair_ratios"):
            _, t_ci, boot = ratio_intervals(r["pair_ratios"])
            out["ratio_ci95"], out["ratio_median_ci95"] = t_ci, boot
        out["trials"] = {"on": r.get("on_trials"), "off": r.get("off_trials")}
        trs = tok.get((r["workload"], k)) if not r.get("width") else None
        if trs:
            xs = [t["msgs_per_s"] for t in trs]
            st = spread(xs)
            best_coact = max(x for x in (r.get("on_msgs_per_s"), r.get("off_msgs_per_s")) if x is not None)
            out["tokio_msgs_per_s"] = st["median"]
            out["tokio_variant"] = tokio_variant_name(trs[0])
            out["coact_over_tokio"] = round(best_coact / st["median"], 4) if st["median"] else None
            out["tokio"] = st
            out["trials"]["tokio"] = xs
        by_wl.setdefault(wl, []).append(out)
        print(json.dumps(out, separators=(",", ":")), flush=True)
    summary = {"group": "scaling", "workload": "summary",
               "workers": sorted({o["workers"] for v in by_wl.values() for o in v}), "speedup": {}}
    for wl, outs in by_wl.items():
        outs.sort(key=lambda o: o["workers"])
        sp = {}
        for side in ("on", "off", "tokio"):
            key = "tokio_msgs_per_s" if side == "tokio" else f"{side}_msgs_per_s"
            base = outs[0].get(key)
            if base:
                sp[side] = [round(o[key] / base, 3) if o.get(key) else None for o in outs]
        summary["speedup"][wl] = sp
    summary["speedup_is"] = "rate at each worker count over the rate at the first (same order as workers)"
    print(json.dumps(summary, separators=(",", ":")), flush=True)


# ---- slowmode: the peers rows of each layout/placement condition, side by side ----
# A probe below HOST_SLOW_FRACTION of the best probe of the same workload
# and condition marks its trial as run on a slow host CPU.
HOST_SLOW_FRACTION = 0.9


def host_effect(trials, probe):
    """What the host probe says of one condition's coact trials: the probe's
    median/min/max, the Pearson correlation of trial rate and probe (None
    with fewer than 3 trials or a constant side), and how many slow trials
    ran right after a slow probe."""
    best_t, best_p = max(trials), max(probe)
    slow = [i for i, x in enumerate(trials) if x < SLOW_FRACTION * best_t]
    corr = None
    if len(trials) >= 3 and len(set(trials)) > 1 and len(set(probe)) > 1:
        corr = round(statistics.correlation(trials, probe), 3)
    slow_probe = [p < HOST_SLOW_FRACTION * best_p for p in probe]
    return {"median": round(statistics.median(probe), 1), "min": round(min(probe), 1), "max": round(best_p, 1),
            "corr": corr, "slow_trials_after_slow_probe": sum(1 for i in slow if slow_probe[i]),
            "slow_probes": sum(slow_probe)}


def slowmode(argv):
    """ROWS: the peers rows of `bench.sh slowmode` (per workload one row per
    condition, each with "wrap", none for the plain condition; coact's
    trials with the host probe run before each, "probe"). Prints one summary
    row."""
    path, workers = argv
    rows = [r for r in load_jsonl(path, "slowmode") if r.get("group") == "peers"]
    conds = []
    out = {"group": "slowmode", "workload": "summary", "workers": int(workers), "fraction": SLOW_FRACTION,
           "host_slow_fraction": HOST_SLOW_FRACTION, "conditions": conds, "share": {}, "slow_trials": {},
           "median": {}, "min": {}, "max": {}, "host": {}}
    for r in rows:
        cond = r.get("wrap") or "none"
        if cond not in conds:
            conds.append(cond)
        c = r["coact"]
        out["share"].setdefault(cond, {})[r["workload"]] = c["slow_share"]
        out["slow_trials"].setdefault(cond, {})[r["workload"]] = [c["slow_trials"], len(c["trials"])]
        for k in ("median", "min", "max"):
            out[k].setdefault(cond, {})[r["workload"]] = c[k]
        if c.get("probe"):
            out["host"].setdefault(cond, {})[r["workload"]] = host_effect(c["trials"], c["probe"])
    print(json.dumps(out, separators=(",", ":")), flush=True)


def timers(argv):
    scenario, key, params, workers, quick, coact_path, caf_path, tokio_path = argv
    params, workers, quick = json.loads(params), int(workers), quick == "1"
    params["quick"] = quick
    label = f"timers/{scenario}({key})"

    def load(path, runtime):
        return load_rows(path, runtime, label, {"scenario": scenario})

    coact, caf, tokio = load(coact_path, "coact"), load(caf_path, "caf"), load(tokio_path, "tokio")

    def med(rows, k, nd=1):
        xs = [r[k] for r in rows if r.get(k) is not None]
        return round(statistics.median(xs), nd) if xs else None

    out = {"group": "timers", "workload": scenario, "parameters": params, "workers": workers}
    if scenario == "lateness":
        def summary(rows):
            expected = rows[0]["expected"]
            return {
                "p50_us": med(rows, "p50_us"),
                "p99_us": med(rows, "p99_us"),
                "max_us": med(rows, "max_us"),
                "fired": min(r["fired"] for r in rows),
                "expected": expected,
                "all_fired_trials": sum(1 for r in rows if r["fired"] == expected),
                "trials": len(rows),
                "busy_util": med(rows, "busy_util", 3),
            }
        c, k, t = summary(coact), summary(caf), summary(tokio)
        out["coact"], out["caf"], out["tokio"] = c, k, t
        limit = 50 if params["load"] == "idle" else 100
        met = c["p99_us"] is not None and c["p99_us"] <= limit and c["all_fired_trials"] == c["trials"]
        out["target"] = {"coact_p99_us_at_most": limit, "every_timer_fired": True, "met": met}
        if params["load"] == "idle":
            # The kernel's floor at the same period (coact's rows only: a bare thread's
            # timed futex wait, no early wake): the lateness a runtime gets without
            # spinning. Where its p99 is above the limit, only spinning meets it.
            floor = {k: med(coact, k) for k in ("floor_late_p5_us", "floor_late_p50_us", "floor_late_p99_us")}
            floor["floor_cpu_pct"] = med(coact, "floor_cpu_pct", 3)
            for k in ("timed_parks", "futex_wakes", "early_spin_us_per_park"):
                floor[k] = med(coact, k, 2)
            out["coact_breakdown"] = floor
            if floor["floor_late_p99_us"] is not None:
                out["target"]["floor_late_p99_us"] = floor["floor_late_p99_us"]
                out["target"]["needs_spin"] = floor["floor_late_p99_us"] > limit
        out["figure"] = ("lateness = handler start - (arm time + period), steady_clock; percentiles: "
                         "median over trials, over the timers that fired; fired: fewest of any trial")
        keep = ("p50_us", "p99_us", "max_us", "fired", "busy_util")
        out["trials"] = {"coact": [{x: r[x] for x in keep} for r in coact],
                         "caf": [{x: r[x] for x in keep} for r in caf],
                         "tokio": [{x: r[x] for x in keep} for r in tokio]}
    elif scenario == "idle_cpu":
        cm, km, tm = med(coact, "cpu_pct", 3), med(caf, "cpu_pct", 3), med(tokio, "cpu_pct", 3)
        out["coact_cpu_pct"], out["caf_cpu_pct"], out["tokio_cpu_pct"] = cm, km, tm
        out["ratio"] = round(cm / km, 4) if km else None
        out["coact_over_tokio"] = round(cm / tm, 4) if tm else None
        out["figure"] = "process CPU time (user + system, all threads) / wall over the window, % of one core"
        # The same CPU per tick (µs): a runtime whose timer fires late ticks less
        # often (tokio's sleep rounds up to its 1 ms wheel: ~6.1 ms per 5 ms tick),
        # which lowers its share of a core without making a wake cheaper.
        def per_tick(rows):
            xs = [r["cpu_s"] * 1e6 / r["ticks"] for r in rows if r.get("cpu_s") is not None and r.get("ticks")]
            return round(statistics.median(xs), 2) if xs else None
        out["us_per_tick"] = {"coact": per_tick(coact), "caf": per_tick(caf), "tokio": per_tick(tokio)}
        ct, tt = out["us_per_tick"]["coact"], out["us_per_tick"]["tokio"]
        out["coact_over_tokio_per_tick"] = round(ct / tt, 4) if ct is not None and tt else None
        # coact only: where its CPU goes (medians over trials). floor: a bare thread in the
        # same timed futex wait, measured after coact's window in the same process.
        out["coact_breakdown"] = {
            k: med(coact, k, 3) for k in ("early_spin_us_per_park", "wake_late_us_per_park", "floor_cpu_pct",
                                          "floor_us_per_wake", "floor_late_p5_us", "floor_late_p50_us",
                                          "floor_late_p99_us")}
        # The idle-efficiency targets: one periodic timer costs at most this share of a core.
        goal = {5: 0.5, 20: 0.15, 100: 0.05}.get(params["period_ms"])
        if goal is not None:
            out["target"] = {"coact_cpu_pct_at_most": goal, "met": cm <= goal}
            floor = out["coact_breakdown"]["floor_cpu_pct"]
            if floor is not None:
                # The absolute goal can be below what one bare timed wake per period
                # costs on this machine (the floor); then no runtime that wakes once per
                # period meets it. The floor-relative goal: within 0.1 point of a core
                # of the floor, and at most tokio's figure.
                out["target"]["below_floor"] = goal < floor
                rel = round(floor + 0.1, 3)
                out["target"]["floor_relative"] = {
                    "coact_cpu_pct_at_most": rel, "met": cm <= rel,
                    "rule": "floor_cpu_pct + 0.1 (a bare thread's timed wake once per period, same process)"}
                if tm:
                    out["target"]["at_most_tokio"] = {"tokio_cpu_pct": tm, "met": cm <= tm}
                    if out["coact_over_tokio_per_tick"] is not None:
                        out["target"]["at_most_tokio"]["per_tick_met"] = out["coact_over_tokio_per_tick"] <= 1
        out["trials"] = {"coact": [r["cpu_pct"] for r in coact], "caf": [r["cpu_pct"] for r in caf],
                         "tokio": [r["cpu_pct"] for r in tokio]}
        out["ticks"] = {"coact": [r["ticks"] for r in coact], "caf": [r["ticks"] for r in caf],
                        "tokio": [r["ticks"] for r in tokio]}
    else:
        cm, km, tm = med(coact, "pairs_per_s"), med(caf, "pairs_per_s"), med(tokio, "pairs_per_s")
        out["coact_pairs_per_s"], out["caf_pairs_per_s"], out["tokio_pairs_per_s"] = cm, km, tm
        out["ratio"] = round(cm / km, 4) if km else None
        out["coact_over_tokio"] = round(cm / tm, 4) if tm else None
        out["caf_cancel"] = caf[0]["cancel"]
        out["tokio_cancel"] = tokio[0]["cancel"]
        out["figure"] = ("send_after + cancel pairs per second from one handler (256 per handler); "
                         "CAF: delayed_send + insert into a cancelled set, message discarded on arrival")
        out["coact_lost_races"] = [r["pairs"] - r["cancelled"] for r in coact]
        out["trials"] = {"coact": [r["pairs_per_s"] for r in coact], "caf": [r["pairs_per_s"] for r in caf],
                         "tokio": [r["pairs_per_s"] for r in tokio]}
    out["order"] = "alternating coact, caf, tokio"
    print(json.dumps(out, separators=(",", ":")), flush=True)


def sampling(argv):
    """The sampler's cost: the archiver's times per trial on three sides,
    five when the rows have the two without a sweep (TRIALS_ROWS: {"side":
    "plain"|"sweep0"|"sampling"|"profile_only"|"sampling_no_sweep", "trial": t,
    "wall_s": w, "last_pass_s": l, "later_pass_s": m, "cpu_s": c} per run, m
    the mean of the passes after the first, absent for a 1-pass run; sides rotate within a
    trial) and coact-sample-cost's JSON line (COST_JSON). Prints two objects:
    the archiver (medians; the medians of the per-trial ratios sampling/sweep0,
    sampling/plain and sweep0/plain as overheads in %, and with the sides
    without a sweep sampling_no_sweep/plain (sampling's overhead with no
    sweep: no experiment, so the POSIX CPU-clock timer throughout),
    sampling_no_sweep/profile_only (the sampling alone) and profile_only/plain;
    on the passes after the first when the rows have them (else the last pass),
    under "last_pass" on the last pass, under "wall" on whole runs and
    under "cpu" on the process's CPU time) and the per-sample cost."""
    if len(argv) != 3:
        sys.exit("bench sampling: usage: sampling PARAMS_JSON TRIALS_ROWS COST_JSON")
    params = json.loads(argv[0])
    rows = []
    with open(argv[1]) as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    sides = ("plain", "sweep0", "sampling")
    if any(r["side"] in ("profile_only", "sampling_no_sweep") for r in rows):
        sides += ("profile_only", "sampling_no_sweep")

    def per_side(key):
        by = {}
        for r in rows:
            if key in r:
                by.setdefault(r["side"], {})[r["trial"]] = float(r[key])
        for side in sides:
            if not by.get(side):
                sys.exit(f"bench sampling/archiver: no trial of side '{side}' with {key} in {argv[1]}")
        return by

    def overheads(by):
        def overhead(cand, base):
            pairs = [by[cand][t] / by[base][t] for t in by[cand] if t in by[base] and by[base][t] > 0]
            return (statistics.median(pairs) - 1) * 100 if pairs else None
        out = {"sampling_over_sweep0_pct": overhead("sampling", "sweep0"),
               "sampling_over_plain_pct": overhead("sampling", "plain"),
               "sweep0_over_plain_pct": overhead("sweep0", "plain")}
        if "sampling_no_sweep" in sides:
            out.update({"sampling_no_sweep_over_plain_pct": overhead("sampling_no_sweep", "plain"),
                        "sampling_no_sweep_over_profile_only_pct": overhead("sampling_no_sweep", "profile_only"),
                        "profile_only_over_plain_pct": overhead("profile_only", "plain")})
        return out

    wall = per_side("wall_s")
    cpu = per_side("cpu_s") if any("cpu_s" in r for r in rows) else None
    last = per_side("last_pass_s") if any("last_pass_s" in r for r in rows) else None
    later = per_side("later_pass_s") if all("later_pass_s" in r for r in rows) else None
    main_by = later if later is not None else last if last is not None else wall
    out = {"group": "sampling", "workload": "archiver", "parameters": params,
           "metric": "later_pass_s" if later is not None else "last_pass_s" if last is not None else "wall_s",
           "median_later_pass_s": {s: statistics.median(later[s].values()) for s in sides} if later else None,
           "median_last_pass_s": {s: statistics.median(last[s].values()) for s in sides} if last else None,
           **overheads(main_by),
           "last_pass": overheads(last) if last is not None else None,
           "wall": {"median_wall_s": {s: statistics.median(wall[s].values()) for s in sides}, **overheads(wall)},
           "cpu": ({"median_cpu_s": {s: statistics.median(cpu[s].values()) for s in sides}, **overheads(cpu)}
                   if cpu is not None else None),
           "trials": {s: [main_by[s][t] for t in sorted(main_by[s])] for s in sides},
           "sides": {s: d for s, d in {
               "plain": "no profiler", "sweep0": "COACT_CAUSAL=1, fixed speedup 0 (no delay injected)",
               "sampling": "sweep0 + COACT_CAUSAL_SAMPLING=1 (1 ms CPU period; the perf event at 125 us during "
                           "experiments on lines)",
               "profile_only": "COACT_CAUSAL=1 COACT_CAUSAL_PROFILE_ONLY=1 (no experiment: regions' counters only)",
               "sampling_no_sweep": "profile_only + COACT_CAUSAL_SAMPLING=1 (1 ms CPU period, POSIX CPU-clock "
                                    "timer)"}.items() if s in sides},
           "order": "sides rotate within each trial; overheads are medians of per-trial ratios"}
    print(json.dumps(out, separators=(",", ":")), flush=True)
    with open(argv[2]) as f:
        lines = [ln for ln in f.read().splitlines() if ln.startswith("{")]
    if not lines:
        sys.exit(f"bench sampling/sample_cost: coact-sample-cost printed no JSON line ({argv[2]})")
    cost = json.loads(lines[-1])
    print(json.dumps({"group": "sampling", "workload": "sample_cost", "figures": cost}, separators=(",", ":")),
          flush=True)


COMMANDS = {"runtime": runtime, "peers": peers, "timers": timers, "sampling": sampling, "burst": burst,
            "scaling": scaling, "slowmode": slowmode}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in COMMANDS:
        sys.exit(f"usage: python3 -m coact_reports.bench {{{'|'.join(COMMANDS)}}} ARGS...")
    COMMANDS[argv[0]](argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
