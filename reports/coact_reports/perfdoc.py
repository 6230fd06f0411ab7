"""docs/perf/README.md from the outputs of scripts/readme-run.sh: the tables
are generated, never transcribed. Usage:

  python3 -m coact_reports.perfdoc RUN_DIR > docs/perf/README.md
  python3 -m coact_reports.perfdoc --validate FILE > docs/perf/README.md
  python3 -m coact_reports.perfdoc RUN_DIR [--validate FILE] [--kv FILE] > docs/perf/README.md
  python3 -m coact_reports.perfdoc --glance RUN_DIR [--validate FILE] [--readme README.md]
  scripts/perfdoc.sh ...            (the same, from the source tree)

RUN_DIR is a directory scripts/readme-run.sh wrote: start.txt and end.txt
(date, uptime, commit), command.txt (how the run was started), commands.txt
(one "STEP<TAB>COMMAND" line per step) and one STEP.json per step (the JSON
lines of scripts/bench.sh and scripts/perf-compare.sh, validate's JSON).
Each step's table is printed if its file is there and empty or missing steps
are named as such; an optional step (OPTIONAL_STEPS: kv.json and
scaling.json, the JSON lines of `scripts/bench.sh kv` and `scaling`)
appears only when its file is there. --validate FILE takes the accuracy
table from FILE (validate's --json output) instead of
RUN_DIR/validate.json, and alone it makes a page with the accuracy table only.
--kv FILE takes the key-value table from FILE (the JSON lines of
`scripts/bench.sh kv` or `python3 -m coact_reports.kvbench`, run on its
own) instead of RUN_DIR/kv.json; its heading shows the command recorded
in FILE's summary row.

--slowmode LABEL=FILE [LABEL=FILE ...] prints a table of slow-mode shares
instead: each FILE holds the JSON lines of `scripts/bench.sh slowmode` (its
summary row and peers rows), LABEL names it in the columns (e.g. before=...,
after=...); one row per workload, worker count and condition present. A
file whose summary has the host probe's block ("host") also gets its
columns: the probe's range, its correlation with the trials, and how many
slow trials ran right after a slow probe.

--glance prints the README's "Performance at a glance" table instead (one
row per figure, from the same files), between two marker lines whose first
names the command; with --readme FILE it replaces the block between those
markers in FILE (which must hold exactly one) and prints nothing.

The page is a function of its inputs and of the command line only (no clock,
no host name), so the same command on the same files regenerates it byte for
byte. Exit status: 0 done; 2 bad input (a missing directory or file, JSON
that does not parse), with one line naming it.
"""

import json
import math
import os
import statistics
import sys

# The steps of scripts/readme-run.sh, in its order: (file stem, heading, the
# command readme-run.sh runs, used when the run has no commands.txt).
STEPS = [
    ("peers", "Peers, 2 workers", "COACT_BENCH_TRIALS=10 scripts/bench.sh peers"),
    ("peers-burst-on", "Peers, 2 workers, burst dispatch on",
     "COACT_BURST=on COACT_BENCH_TRIALS=5 scripts/bench.sh peers"),
    ("peers-1-worker", "Peers, 1 worker", "COACT_BENCH_TRIALS=10 COACT_BENCH_WORKERS=1 scripts/bench.sh peers"),
    ("timers", "Timers", "scripts/bench.sh timers"),
    ("burst", "Burst dispatch, on vs off", "COACT_BENCH_TRIALS=8 scripts/bench.sh burst"),
    ("sampling", "The sampled-line profiler's cost", "COACT_BENCH_TRIALS=10 scripts/bench.sh sampling"),
    ("sweep-cost", "A sweep at speedup 0, zero-work peers",
     "PERF_BASE_ENV=COACT_CAUSAL=0 PERF_CAND_ENV=\"COACT_CAUSAL=1 COACT_CAUSAL_FIXED_SPEEDUP=0 ...\" "
     "scripts/perf-compare.sh --workloads ping_pong,fan_out --n 3000000 --trials 10"),
    ("validate", "Causal accuracy", "coact-profile validate --with-coz --json"),
]
PEERS_NAMES = {"ping_pong": "ping-pong", "fan_out": "fan-out", "thread_ring": "thread ring", "skynet": "skynet"}


class InputError(Exception):
    pass


def die(msg):
    print(f"perfdoc: {msg}", file=sys.stderr)
    return 2


def read_text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None


def read_json_lines(path):
    """The JSON objects of a file: one document, or one per line."""
    text = read_text(path)
    if not text.strip():
        return []
    try:
        doc = json.loads(text)
        return doc if isinstance(doc, list) else [doc]
    except ValueError:
        pass
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise InputError(f"{path}:{n}: not JSON: {e}") from None
    return out


# --- formatting ------------------------------------------------------------

def num(x, nd=2):
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    return f"{x:.{nd}f}".replace("-", "−")


def signed(x, nd=1, unit=""):
    if x is None:
        return "—"
    return (f"{x:+.{nd}f}" + unit).replace("-", "−")


def rate(x):
    if x is None:
        return "—"
    return f"{x / 1e6:.2f} M"


def figure(x):
    """A metric of any scale: millions as M, else three significant places."""
    if x is None:
        return "—"
    if abs(x) >= 1e6:
        return rate(x)
    return f"{x:.4g}".replace("-", "−")


def met(x):
    if x is None:
        return "—"
    return "met" if x else "**not met**"


def table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


# --- sections ----------------------------------------------------------------

def peers_section(rows):
    rows = [r for r in rows if r.get("group") == "peers"]
    if not rows:
        return None
    # Rows with trials carry each side's distribution (min, median, max over
    # the trials and the share of slow trials); older rows only medians.
    spread = any(isinstance(r.get("coact"), dict) for r in rows)
    # Rows with the per-round ratio (coact_over_tokio_paired) get its column.
    paired = any(r.get("coact_over_tokio_paired") for r in rows)

    def dist(d):
        if not isinstance(d, dict) or d.get("min") is None:
            return "—"
        n = len(d.get("trials") or [])
        slow = d.get("slow_trials")
        return (f"{rate(d.get('min'))} – {rate(d.get('max'))}" + (f", {n} trials" if n else "")
                + (f", {slow} slow" if slow else ""))

    body = []
    for r in rows:
        unit = "actors/s" if r.get("unit") == "actors_per_s" else "msgs/s"
        line = [PEERS_NAMES.get(r.get("workload"), r.get("workload")), unit, rate(r.get("coact_msgs_per_s")),
                rate(r.get("caf_msgs_per_s")),
                f"{rate(r.get('tokio_msgs_per_s'))} ({r.get('tokio_variant') or r.get('tokio_channel', '?')})",
                f"**{num(r.get('ratio'), 1)}**", f"**{num(r.get('coact_over_tokio'), 2)}**"]
        if paired:
            pr = r.get("coact_over_tokio_paired")
            line += ["—" if not pr or not pr.get("median_ci95") else
                     f"{num(pr['median'], 2)} [{num(pr['median_ci95'][0], 2)}, {num(pr['median_ci95'][1], 2)}]"]
        if spread:
            best = (r.get("tokio_variants") or {}).get(r.get("tokio_variant"))
            line += [dist(r.get("coact")), dist(best)]
        body.append(line)
    workers = sorted({r.get("workers") for r in rows if r.get("workers") is not None})
    if any(r.get("tokio_variant") for r in rows):
        best = ("its fastest variant by median (named: actor_bounded / actor_unbounded, an actor emulation; "
                "idiomatic, arguments moved in at spawn; idiomatic_join, JoinHandles awaited (fan-out, skynet); "
                "_current_thread, tokio's one-thread scheduler)")
    else:  # rows from before the idiomatic variants
        best = "the faster of its bounded and unbounded channels"
    note = f"Medians of alternating trials, {', '.join(map(str, workers))} worker(s); tokio's figure is {best}."
    head = ["workload", "unit", "coact", "CAF 0.17", "tokio 1.24", "coact/CAF", "coact/tokio"]
    if paired:
        note += (" Per round: the median of coact's trial over tokio's (that variant) in the same round, with "
                 "its 95 % interval (bootstrap); the host's slow stretches fall on both sides of a round.")
        head += ["coact/tokio per round"]
    if spread:
        note += (" The last two columns are the spread of the trials (min – max; a slow trial is one below 0.8 × "
                 "the run's best) of coact and of tokio's fastest variant.")
        head += ["coact trials", "tokio trials"]
    return note + "\n\n" + table(head, body)


def timers_section(rows):
    rows = [r for r in rows if r.get("group") == "timers"]
    if not rows:
        return None
    parts = []
    late = [r for r in rows if r.get("workload") == "lateness"]
    if late:
        body = []
        for r in late:
            def pp(side):
                s = r.get(side) or {}
                fired = s.get("fired")
                exp = s.get("expected")
                tail = "" if fired is None or fired == exp else f", {fired} of {exp} fired"
                return f"{num(s.get('p50_us'), 1)} / {num(s.get('p99_us'), 1)} µs{tail}"
            t = r.get("target") or {}
            body.append([(r.get("parameters") or {}).get("load", "?"), pp("coact"), pp("caf"), pp("tokio"),
                         f"p99 ≤ {t.get('coact_p99_us_at_most', '?')} µs: {met(t.get('met'))}"])
        parts.append("Lateness of 1 ms timers (handler start − deadline), p50 / p99:\n\n" +
                     table(["load", "coact", "CAF 0.17", "tokio 1.24", "target (coact)"], body))
    idle = [r for r in rows if r.get("workload") == "idle_cpu"]
    if idle:
        body = []
        for r in idle:
            t = r.get("target") or {}
            fr = t.get("floor_relative") or {}
            floor = (r.get("coact_breakdown") or {}).get("floor_cpu_pct")
            body.append([f"{(r.get('parameters') or {}).get('period_ms', '?')} ms",
                         f"{num(r.get('coact_cpu_pct'), 3)} %", f"{num(r.get('caf_cpu_pct'), 3)} %",
                         f"{num(r.get('tokio_cpu_pct'), 3)} %", f"{num(floor, 3)} %",
                         f"≤ {num(t.get('coact_cpu_pct_at_most'), 2)} %: {met(t.get('met'))}"
                         + (" (below the floor)" if t.get("below_floor") else ""),
                         met(fr.get("met")), met((t.get("at_most_tokio") or {}).get("met"))])
        parts.append("Idle CPU with one periodic timer (% of one core; the floor is a bare thread's timed "
                     "wait at the same period, measured in the same process):\n\n" +
                     table(["period", "coact", "CAF 0.17", "tokio 1.24", "floor", "absolute target",
                            "floor + 0.1", "≤ tokio"], body))
    cancel = [r for r in rows if r.get("workload") == "cancel_rate"]
    for r in cancel:
        parts.append(f"`send_after` + `cancel` pairs per second: coact {rate(r.get('coact_pairs_per_s'))}, "
                     f"CAF {rate(r.get('caf_pairs_per_s'))} (emulated), tokio {rate(r.get('tokio_pairs_per_s'))}.")
    return "\n\n".join(parts)


def burst_section(rows):
    summary = [r for r in rows if r.get("group") == "burst" and r.get("workload") == "summary"]
    rows = [r for r in rows if r.get("group") == "burst" and r.get("workload") != "summary"]
    if not rows:
        return None
    with_ci = any(r.get("ratio_ci95") for r in rows)  # runs from before the intervals have none
    body = []
    for r in rows:
        width = r.get("width")
        line = [r.get("workload", "?"), "—" if width in (None, 0) else width,
                f"{r.get('handler_us', '?')} µs", num(r.get("ratio"), 3)]
        if with_ci:
            ci = r.get("ratio_ci95")
            line.append(f"[{num(ci[0], 3)}, {num(ci[1], 3)}]" if ci else "—")
        line += [f"{rate(r.get('on_msgs_per_s'))} / {rate(r.get('off_msgs_per_s'))}", num(r.get("sync_ratio"), 1)]
        body.append(line)
    head = ["workload", "width", "handler", "on/off throughput"] + (["95 % interval"] if with_ci else []) + \
        ["msgs/s on / off", "syncs off/on"]
    note = "On/off is the median of the pairs' ratios; syncs are wakes + injector and deque pushes."
    if with_ci:
        note += " The interval: Student-t of the pairs' mean log ratio."
    if summary:
        s = summary[0]
        note += (f" Burst as the default: {'supported' if s.get('burst_default_supported') else 'not supported'} "
                 f"({s.get('rows_excluding_loss')} of {s.get('rows')} rows exclude a loss over "
                 f"{round(100 * s.get('loss_limit', 0))} %"
                 + (f"; not: {', '.join(s['rows_not_excluding_loss'])}" if s.get("rows_not_excluding_loss") else "")
                 + ").")
    return note + "\n\n" + table(head, body)


def sampling_section(rows):
    arch = [r for r in rows if r.get("group") == "sampling" and r.get("workload") == "archiver"]
    if not arch:
        return None
    r = arch[0]
    metric = r.get("metric", "?")
    medians = r.get("median_later_pass_s") or r.get("median_last_pass_s") or \
        (r.get("wall") or {}).get("median_wall_s") or {}
    over = {"plain": None, "profile_only": r.get("profile_only_over_plain_pct"),
            "sampling_no_sweep": r.get("sampling_no_sweep_over_plain_pct"),
            "sweep0": r.get("sweep0_over_plain_pct"), "sampling": r.get("sampling_over_plain_pct")}
    sides = r.get("sides") or {}
    body = []
    for side in ("plain", "profile_only", "sampling_no_sweep", "sweep0", "sampling"):
        if side in medians:
            body.append([f"`{side}`", sides.get(side, ""), f"{num(medians[side], 3)} s",
                         "—" if side == "plain" else signed(over[side], 1, " %")])
    return (f"The archiver (metric `{metric}`, medians; overheads are medians of the per-trial ratios "
            "to `plain`):\n\n" + table(["side", "what", "median", "over plain"], body))


def kilo(x):
    if x is None:
        return "—"
    return f"{x / 1e3:.1f} k"


def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def kv_section(rows):
    """scripts/bench.sh kv: coact-kv vs redis-server, one row per test and pipeline depth."""
    summary = [r for r in rows if r.get("group") == "kv" and r.get("workload") == "summary"]
    rows = [r for r in rows if r.get("group") == "kv" and r.get("workload") != "summary"]
    if not rows:
        return None

    def median(side, fig):
        return ((side or {}).get(fig) or {}).get("median")

    def med(side, fig, nd):
        return num(median(side, fig), nd)

    def ms(side, fig):  # seconds as milliseconds
        x = median(side, fig)
        return num(None if x is None else x * 1e3, 1)

    def rps(side):
        d = (side or {}).get("rps") or {}
        return f"{kilo(d.get('median'))} [{kilo(d.get('min'))} – {kilo(d.get('max'))}]"

    body = []
    for r in rows:
        c, s = r.get("coact"), r.get("redis")
        body.append([str(r.get("workload", "?")).upper(), r.get("pipeline", "?"), rps(c), rps(s),
                     f"**{num(r.get('coact_over_redis_rps'), 2)}**",
                     f"{med(c, 'p50_ms', 2)} / {med(s, 'p50_ms', 2)}", f"{med(c, 'p99_ms', 2)} / {med(s, 'p99_ms', 2)}",
                     f"{med(c, 'cpu_s_per_100k', 2)} / {med(s, 'cpu_s_per_100k', 2)}",
                     f"{ms(c, 'runq_s_per_100k')} / {ms(s, 'runq_s_per_100k')}",
                     f"{med(c, 'client_cpu_share', 2)} / {med(s, 'client_cpu_share', 2)}",
                     met((r.get("target") or {}).get("met"))])
    first = rows[0]
    note = (f"`redis-benchmark -n {first.get('requests', '?')} -c {first.get('clients', '?')} -P D`, "
            f"{first.get('trials', '?')} trials per server alternating in ABBA order, coact-kv at "
            f"{plural(first.get('workers', '?'), 'worker')} and {plural(first.get('shards', '?'), 'shard')}; "
            "requests/s: median "
            "[min – max] over the trials; latencies and CPU time (the server's user + sys): medians; "
            "coact/redis: the ratio of the medians; run-queue wait: the time the server's threads were "
            "runnable but waiting for a CPU; client CPU: redis-benchmark's CPU time per second of its run "
            "(1.00: its one thread never waited for a reply; then requests/s differ by what a request "
            "costs the client under each server, not by how fast the server answers). Target: at -P 1 "
            "at least redis-server's requests/s and no worse p99; ahead when pipelined.")
    if summary:
        v = (summary[0].get("versions") or {}).get("redis_server")
        load = summary[0].get("loadavg") or []
        note += (f" redis-server {v or '?'}" +
                 (f"; load average at the start {num(load[0], 2)}" if load else "") + ".")
    return note + "\n\n" + table(["test", "-P", "coact-kv req/s", "redis-server req/s", "coact/redis",
                                   "p50 ms coact / redis", "p99 ms coact / redis", "CPU s per 100k coact / redis",
                                   "run-queue wait ms per 100k coact / redis", "client CPU coact / redis",
                                   "target"], body)


def perf_compare_section(rows):
    rows = [r for r in rows if r.get("tool") == "perf-compare"]
    if not rows:
        return None
    body = []
    for r in rows:
        ci = r.get("ci95_pct") or [None, None]
        body.append([f"`{r.get('metric', '?')}`", figure(r.get("base_median")), figure(r.get("cand_median")),
                     signed(r.get("median_delta_pct"), 1, " %"), f"{signed(ci[0], 1)} … {signed(ci[1], 1)}",
                     r.get("verdict", "—")])
    return table(["metric", "base median", "cand median", "median delta", "95% CI of delta", "verdict"], body)


def _ci(pair):
    """A [lo, hi] pair of numbers, or None."""
    if isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, (int, float)) for x in pair):
        return pair
    return None


def _statistical(r, ci):
    """The row's interval without the profiler's own error term
    (predicted_systematic: a fraction of the prediction added in
    quadrature), or ci itself for a row without one."""
    k, v = r.get("predicted_systematic") or 0, r.get("predicted")
    if not k or v is None:
        return ci
    half = (ci[1] - ci[0]) / 2
    stat = math.sqrt(max(half * half - (k * v) ** 2, 0.0))
    return [v - stat, v + stat]


def coverage_sentence(rows):
    """How often the printed interval holds the actual, per kind of program
    (rows without an interval or an actual are not counted), and without the
    profiler's own error term where the rows carry one; then the known-answer
    rows' median relative error (the bias that term stands for). None when
    no row has an interval (runs before validate printed one)."""
    parts, stat_parts = [], []
    ks = sorted({r.get("predicted_systematic") for r in rows if r.get("predicted_systematic")})
    for program, label in (("known_answer", "known-answer"), ("real", "real-program")):
        held = stat_held = total = 0
        for r in rows:
            ci = _ci(r.get("predicted_ci"))
            if r.get("program", "known_answer") != program or ci is None or r.get("actual") is None:
                continue
            total += 1
            held += ci[0] <= r["actual"] <= ci[1]
            st = _statistical(r, ci)
            stat_held += st[0] <= r["actual"] <= st[1]
        if total:
            parts.append(f"{held} of {total} {label} rows")
            stat_parts.append(f"{stat_held}")
    if not parts:
        return None
    out = "The prediction's 95 % interval holds the actual in " + " and ".join(parts)
    if ks:
        term = ", ".join(f"{k * 100:g} %" for k in ks)
        out += f" (without the profiler's own error term, {term} of the prediction: {' and '.join(stat_parts)})"
    out += "."
    rel = [(r["predicted"] - r["actual"]) / r["actual"] for r in rows
           if r.get("program", "known_answer") == "known_answer" and r.get("predicted") is not None
           and r.get("actual") is not None and r["actual"] > 0.05]
    if rel:
        out += (f" The known-answer rows whose actual is over 5 % have a median relative error of "
                f"{signed(statistics.median(rel) * 100)} % ({len(rel)} rows).")
    return out


def validate_section(doc):
    rows = doc.get("rows") or []
    with_ci = any(_ci(r.get("predicted_ci")) for r in rows)
    body = []
    for r in rows:
        coz = ""
        if r.get("coz_predicted") is not None:
            coz = f" (Coz {num(r['coz_predicted'], 3)}, {signed(r.get('coz_error_pts'))})"
        region = r.get("region", "?")
        ci = _ci(r.get("predicted_ci"))
        interval = [f"[{num(ci[0], 3)}, {num(ci[1], 3)}]" if ci else "—"] if with_ci else []
        body.append([f"{r.get('workload', '?')} {r.get('stage', '')}".strip(), f"`{region}`",
                     num(r.get("s"), 2), num(r.get("predicted"), 3), *interval, num(r.get("actual"), 3),
                     signed(r.get("error_pts")) + coz])
    summary = (f"{doc.get('rows_compared', len(rows))} rows: mean absolute error "
               f"**{num(doc.get('mean_abs_error_pts'), 2)} points**, max {num(doc.get('max_abs_error_pts'), 1)}.")
    if doc.get("coz_rows_compared"):
        summary += (f" On the {doc['coz_rows_compared']} rows Coz also measured: coact mean "
                    f"{num(doc.get('coact_mean_abs_error_pts_on_coz_rows'), 2)} (max "
                    f"{num(doc.get('coact_max_abs_error_pts_on_coz_rows'), 1)}), Coz mean "
                    f"{num(doc.get('coz_mean_abs_error_pts'), 2)} (max {num(doc.get('coz_max_abs_error_pts'), 1)}).")
    params = (f"Each workload: a {num(doc.get('sweep_s'), 0)} s sweep in {doc.get('chunks', '?')} chunks "
              "interleaved with the really-faster programs; actual = the median over the chunks.")
    cover = coverage_sentence(rows)
    if cover:
        summary += " " + cover
    head = ["workload, stage", "region", "s", "predicted", *(["95 % interval"] if with_ci else []), "actual",
            "error (points)"]
    return params + " " + summary + "\n\n" + table(head, body)


def scaling_section(rows):
    summary = next((r for r in rows if r.get("group") == "scaling" and r.get("workload") == "summary"), None)
    rows = [r for r in rows if r.get("group") == "scaling" and r.get("workload") != "summary"]
    if not rows:
        return None
    speedups = (summary or {}).get("speedup", {})
    order = (summary or {}).get("workers", [])

    def speedup(r, side):
        xs = speedups.get(r["workload"], {}).get(side)
        i = order.index(r["workers"]) if r["workers"] in order else len(xs or [])
        return num(xs[i], 2) if xs and i < len(xs) else "—"

    body = []
    for r in sorted(rows, key=lambda r: (list(PEERS_NAMES).index(r["workload"]) if r["workload"] in PEERS_NAMES
                                         else -1, r["workers"])):
        ci = r.get("ratio_ci95")
        name = PEERS_NAMES.get(r["workload"], r["workload"].replace("fan_out_", "fan-out, width "))
        tokio = "—" if r.get("tokio_msgs_per_s") is None else \
            f"{rate(r['tokio_msgs_per_s'])} ({r.get('tokio_variant', '?')})"
        body.append([name, r["workers"], rate(r.get("on_msgs_per_s")), rate(r.get("off_msgs_per_s")),
                     num(r.get("ratio"), 3) + (f" [{num(ci[0], 3)}, {num(ci[1], 3)}]" if ci else ""),
                     tokio, num(r.get("coact_over_tokio"), 2),
                     f"{speedup(r, 'on')} / {speedup(r, 'off')} / {speedup(r, 'tokio')}"])
    head = ["workload", "workers", "burst on", "burst off", "on/off [95 % interval]", "tokio 1.24",
            "coact/tokio", "speedup on / off / tokio"]
    note = ("Rates per second (messages; skynet: actors). On/off is the median of the pairs' ratios, its interval "
            "Student-t of their mean log ratio; coact/tokio takes coact's faster side over tokio's median; the "
            f"speedup is the rate over the rate at the first worker count ({order[0] if order else '?'}). "
            "tokio's trials run after coact's at each worker count, not alternating with them.")
    return note + "\n\n" + table(head, body)


SECTIONS = {"peers": peers_section, "peers-burst-on": peers_section, "peers-1-worker": peers_section,
            "timers": timers_section, "burst": burst_section, "sampling": sampling_section,
            "sweep-cost": perf_compare_section, "kv": kv_section, "scaling": scaling_section}
# Steps a run has only when its directory holds their file (so pages of runs
# without them are unchanged): (file stem, heading, default command), placed
# before the accuracy table.
OPTIONAL_STEPS = [("kv", "Key-value server: coact-kv vs redis-server 7", "scripts/bench.sh kv"),
                  ("scaling", "Scaling by worker count",
                   "COACT_BENCH_TRIALS=6 COACT_BENCH_SCALING_WORKERS=1,2 scripts/bench.sh scaling")]


# --- the page ------------------------------------------------------------------

def lines_of(path):
    """The lines of a text file of the run, or None where the run has none."""
    if not os.path.exists(path):
        return None
    return read_text(path).splitlines()


def run_header(run_dir):
    out = []
    start = lines_of(os.path.join(run_dir, "start.txt"))
    end = lines_of(os.path.join(run_dir, "end.txt"))
    cmd = lines_of(os.path.join(run_dir, "command.txt"))
    if start:
        out.append(f"- started: {start[0]}")
        if len(start) > 2:
            out.append(f"- commit: `{start[2]}`")
        if len(start) > 1 and "load average" in start[1]:
            out.append(f"- load average at the start: {start[1].split('load average:')[1].strip()}")
    if end:
        out.append(f"- ended: {end[0]}")
    out.append(f"- command: `{cmd[0] if cmd else 'scripts/readme-run.sh'}`")
    return out


def step_commands(run_dir):
    path = os.path.join(run_dir, "commands.txt")
    cmds = {}
    if run_dir and os.path.exists(path):
        for line in read_text(path).splitlines():
            if "\t" in line:
                name, cmd = line.split("\t", 1)
                cmds[name] = cmd
    return cmds


def render(run_dir, validate_path, command, kv_path=None):
    lines = ["# coact performance: generated tables", "",
             "<!-- Generated; do not edit. Regenerate with the command below. -->", "",
             f"Generated by `{command} > docs/perf/README.md`.", ""]
    if run_dir:
        lines += ["Its source is one run of `scripts/readme-run.sh` (every table's command, one after",
                  "another, on a quiet machine). The numbers that matter are ratios measured side by side",
                  "within that run; absolute figures move between runs and machines.", "",
                  f"The run (`{run_dir}`):", ""] + run_header(run_dir) + [""]
        if kv_path:
            lines += [f"The key-value table is from a run of its own, `{kv_path}` (its command is under its",
                      "heading).", ""]
    else:
        lines += ["This page has no `scripts/readme-run.sh` run yet. Its only source is",
                  f"`{validate_path}`, the output of one",
                  "`coact-profile validate` (its command is under its heading); validate's JSON records neither its date",
                  "nor its commit, which are in the file's name. The other tables appear once the page",
                  "is generated from a run's directory (`scripts/perfdoc.sh RUN_DIR`).", ""]
    lines += ["Earlier runs and their analyses: [history/](history/2026-12-01-tables.md).", ""]
    cmds = step_commands(run_dir) if run_dir else {}
    if run_dir:
        extra = sorted(f for f in os.listdir(run_dir)
                       if f.startswith("perf-compare-vs-") and f.endswith(".json"))
    else:
        extra = []
    steps = list(STEPS)
    sections = dict(SECTIONS)
    for f in extra:
        stem = f[:-len(".json")]
        steps.insert(3, (stem, f"coact-peers at 1 worker against {stem[len('perf-compare-vs-'):]}",
                         "scripts/perf-compare.sh --base-bin REV's coact-peers --cand-bin build/release/... "
                         "--workloads ping_pong,thread_ring --n 1000000 --workers 1 --trials 15"))
        sections[stem] = perf_compare_section
    for step in OPTIONAL_STEPS:
        if (run_dir and os.path.exists(os.path.join(run_dir, step[0] + ".json"))) or (step[0] == "kv" and kv_path):
            steps.insert(next(i for i, s in enumerate(steps) if s[0] == "validate"), step)
    for stem, heading, default_cmd in steps:
        if stem == "validate":
            path = validate_path or (os.path.join(run_dir, "validate.json") if run_dir else None)
        elif stem == "kv" and kv_path:
            path = kv_path
            recorded = [r.get("command") for r in read_json_lines(path)
                        if r.get("group") == "kv" and r.get("workload") == "summary"]
            cmds = {**cmds, "kv": recorded[0] if recorded and recorded[0] else default_cmd}
        else:
            path = os.path.join(run_dir, stem + ".json") if run_dir else None
        if path is None:
            continue
        if not os.path.exists(path):
            lines += [f"## {heading}", "", f"`{cmds.get(stem, default_cmd)}`", "", "Not in this run.", ""]
            continue
        if stem == "validate":
            docs = read_json_lines(path)
            if len(docs) != 1 or not isinstance(docs[0], dict) or "rows" not in docs[0]:
                raise InputError(f"{path}: not the JSON of coact-profile validate --json (no \"rows\")")
            if "coz_s" not in docs[0]:          # a run without Coz is named as such
                default_cmd = "coact-profile validate --json"
            text = validate_section(docs[0])
        else:
            text = sections[stem](read_json_lines(path))
        lines += [f"## {heading}", "", f"`{cmds.get(stem, default_cmd)}`", "",
                  text if text else "The step wrote no rows (see its .err file in the run).", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def slowmode_page(inputs, command):
    """The slow-mode table of `--slowmode LABEL=FILE ...` (module docstring)."""
    summaries = []  # (label, summary row)
    for label, path in inputs:
        rows = [r for r in read_json_lines(path) if r.get("group") == "slowmode" and r.get("workload") == "summary"]
        if not rows:
            raise InputError(f"{path}: no slowmode summary row (want the JSON lines of `scripts/bench.sh slowmode`)")
        summaries += [(label, r) for r in rows]
    keys = []  # (workers, condition, workload), in first-seen order
    for _, r in summaries:
        for cond in r.get("conditions", []):
            for wl in r["share"].get(cond, {}):
                k = (r["workers"], cond, wl)
                if k not in keys:
                    keys.append(k)
    labels = list(dict.fromkeys(label for label, _ in summaries))
    fraction = summaries[0][1].get("fraction", 0.8)
    # Files from a slowmode group with the host probe ("host") get its columns.
    probed = {label for label, r in summaries if r.get("host")}
    host_fraction = next((r.get("host_slow_fraction", 0.9) for _, r in summaries if r.get("host")), 0.9)
    head = ["workload", "workers", "condition"]
    for label in labels:
        head += [f"{label}: slow trials", f"{label}: min / median / max"]
        if label in probed:
            head += [f"{label}: probe min / median / max", f"{label}: r", f"{label}: slow after a slow probe"]
    body = []
    for workers, cond, wl in keys:
        row = [PEERS_NAMES.get(wl, wl), str(workers), cond]
        for label in labels:
            found = next((r for lab, r in summaries if lab == label and r["workers"] == workers
                          and wl in r["share"].get(cond, {})), None)
            width = 5 if label in probed else 2
            if found is None:
                row += ["—"] * width
                continue
            k, n = found["slow_trials"][cond][wl]
            row += [f"{k} of {n}", " / ".join(rate(found[m][cond][wl]) for m in ("min", "median", "max"))]
            if label in probed:
                h = found.get("host", {}).get(cond, {}).get(wl)
                if h is None:
                    row += ["—"] * 3
                    continue
                row += [" / ".join(f"{h[m]:.0f}" for m in ("min", "median", "max")),
                        "—" if h["corr"] is None else f"{h['corr']:+.2f}",
                        f"{h['slow_trials_after_slow_probe']} of {k}"]
        body.append(row)
    lines = ["<!-- Generated; do not edit. -->", "", f"Generated by `{command}`.", "",
             f"coact-peers trials per workload; a slow trial is one below {fraction} x the best trial of the same "
             "workload, worker count and condition in that file. Rates in messages (skynet: actors) per second."]
    if probed:
        lines[-1] += (" Probe: coact-host-probe's rate (million steps per second) under the same condition just "
                      "before each trial, on the slowest CPU the trial could run on; r: Pearson's correlation of "
                      "trial and probe rates; a slow probe is one "
                      f"below {host_fraction} x the best probe of the same workload and condition.")
    lines += ["", table(head, body)]
    return "\n".join(lines).rstrip("\n") + "\n"


GLANCE_BEGIN = "<!-- glance: generated by `"
GLANCE_END = "<!-- /glance -->"


def glance(run_dir, validate_path, command):
    """The README's small table: the headline figure of each step present."""
    def rows_of(stem):
        path = os.path.join(run_dir, stem + ".json") if run_dir else None
        return read_json_lines(path) if path and os.path.exists(path) else []

    body = []
    for stem, label in (("peers", "2 workers"), ("peers-1-worker", "1 worker")):
        rows = [r for r in rows_of(stem) if r.get("group") == "peers"]
        if not rows:
            continue
        names = " / ".join(PEERS_NAMES.get(r.get("workload"), r.get("workload")) for r in rows)
        tokio = " / ".join(num(r.get("coact_over_tokio"), 2) for r in rows)
        caf = [r.get("ratio") for r in rows if r.get("ratio") is not None]
        which = ("its fastest variant by median" if any(r.get("tokio_variant") for r in rows)
                 else "its faster channel")
        body.append([f"peers, {label}: {names}, coact ÷ tokio 1.24 ({which})", f"{tokio} ×",
                     f"coact ÷ CAF 0.17: {num(min(caf), 1)}–{num(max(caf), 1)} ×" if caf else "—"])
    burst = [r for r in rows_of("burst") if r.get("group") == "burst"]
    summary = next((r for r in burst if r.get("workload") == "summary"), None)
    if summary and summary.get("worst_row"):
        worst = summary["worst_row"]
        row = next((r for r in burst if r.get("workload") != "summary" and
                    f"{r.get('workload')}/w{r.get('width')}/{r.get('handler_us')}us" == worst.get("row")), {})
        ci = worst.get("ratio_ci95") or [None, None]
        supported = summary.get("burst_default_supported")
        body.append([f"burst dispatch on ÷ off, the lowest of {summary.get('rows')} rows ({worst.get('row')})",
                     f"{num(row.get('ratio'), 3)} [{num(ci[0], 3)}, {num(ci[1], 3)}] ×",
                     f"{'on' if supported else 'off'} by default: on only if every row's 95 % interval "
                     f"excludes a loss over {round(100 * summary.get('loss_limit', 0))} % "
                     f"({summary.get('rows_excluding_loss')} of {summary.get('rows')} do)"])
    timers = rows_of("timers")
    for r in timers:
        if r.get("workload") == "lateness" and (r.get("parameters") or {}).get("load") == "idle":
            body.append(["timers: 1 ms timers on an idle pool, lateness p99",
                         f"{num((r.get('coact') or {}).get('p99_us'), 0)} µs",
                         f"CAF {num((r.get('caf') or {}).get('p99_us'), 0)} µs, "
                         f"tokio {num((r.get('tokio') or {}).get('p99_us'), 0)} µs"])
    for r in timers:
        if r.get("workload") == "idle_cpu":
            period = (r.get("parameters") or {}).get("period_ms", "?")
            body.append([f"idle CPU, one {period} ms periodic timer", f"{num(r.get('coact_cpu_pct'), 2)} % of a core",
                         f"tokio {num(r.get('tokio_cpu_pct'), 2)} %, CAF {num(r.get('caf_cpu_pct'), 1)} %"])
    cost = [r for r in rows_of("sweep-cost") if r.get("tool") == "perf-compare"]
    if cost:
        deltas = [r.get("median_delta_pct") for r in cost]
        met_cost = all(d is not None and d >= -10 for d in deltas)
        body.append([f"a sweep at speedup 0, zero-work "
                     f"{' / '.join(str(r.get('metric', '?')).split('.')[0] for r in cost)}",
                     " / ".join(signed(d, 1, " %") for d in deltas),
                     "target ≥ −10 %" + ("" if met_cost else ": not met")])
    for r in rows_of("sampling"):
        over = r.get("sampling_no_sweep_over_plain_pct")
        if r.get("group") == "sampling" and r.get("workload") == "archiver" and over is not None:
            body.append(["sampling with no sweep, the archiver", signed(over, 1, " %"),
                         "target ≤ 2 %" + ("" if over <= 2 else ": not met")])
    vpath = validate_path or (os.path.join(run_dir, "validate.json") if run_dir else None)
    if vpath and os.path.exists(vpath):
        docs = read_json_lines(vpath)
        if len(docs) != 1 or not isinstance(docs[0], dict) or "rows" not in docs[0]:
            raise InputError(f"{vpath}: not the JSON of coact-profile validate --json (no \"rows\")")
        d = docs[0]
        n_coz = d.get("coz_rows_compared")
        coz = (f"Coz on the {n_coz} row{'s' if n_coz != 1 else ''} it measures: mean "
               f"{num(d.get('coz_mean_abs_error_pts'), 1)} points" if n_coz else "—")
        body.append([f"accuracy: {d.get('rows_compared', len(d['rows']))} rows, predicted vs really faster",
                     f"mean {num(d.get('mean_abs_error_pts'), 1)}, max {num(d.get('max_abs_error_pts'), 1)} points",
                     coz])
    if not body:
        raise InputError("no step of the run has a figure for the table (peers, burst, timers, sweep-cost, "
                         "sampling, validate)")
    return "\n".join([f"{GLANCE_BEGIN}{command}`; do not edit -->",
                      table(["what", "coact", "for comparison"], body), GLANCE_END]) + "\n"


def splice_readme(path, block):
    """Replaces the one glance block of the file at `path` by `block`."""
    text = read_text(path)
    begin = text.find(GLANCE_BEGIN)
    end = text.find(GLANCE_END)
    if begin < 0 or end < begin or text.find(GLANCE_BEGIN, begin + 1) >= 0:
        raise InputError(f"{path}: expected exactly one block from a line starting '{GLANCE_BEGIN}' to "
                         f"'{GLANCE_END}'")
    end += len(GLANCE_END) + (1 if text[end + len(GLANCE_END):].startswith("\n") else 0)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:begin] + block + text[end:])


def main(argv=None, prog="python3 -m coact_reports.perfdoc"):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    run_dir = validate_path = readme = kv_path = None
    want_glance = False
    args = list(argv)
    if args and args[0] == "--slowmode":
        inputs = []
        for a in args[1:]:
            label, eq, path = a.partition("=")
            if not eq or not label or not path:
                return die(f"--slowmode: '{a}' is not LABEL=FILE")
            if not os.path.isfile(path):
                return die(f"--slowmode: '{path}' is not a file")
            inputs.append((label, path))
        if not inputs:
            return die("--slowmode needs LABEL=FILE arguments (the JSON lines of scripts/bench.sh slowmode)")
        try:
            sys.stdout.write(slowmode_page(inputs, " ".join([prog] + argv)))
        except InputError as e:
            return die(str(e))
        return 0
    while args:
        a = args.pop(0)
        if a == "--glance":
            want_glance = True
        elif a == "--readme":
            if not args:
                return die("--readme needs a value (the README holding the glance block)")
            readme = args.pop(0)
        elif a == "--validate":
            if not args:
                return die("--validate needs a value (validate's JSON file)")
            validate_path = args.pop(0)
        elif a == "--kv":
            if not args:
                return die("--kv needs a value (the JSON lines of scripts/bench.sh kv)")
            kv_path = args.pop(0)
        elif a.startswith("-"):
            return die(f"unknown option '{a}' (expected RUN_DIR, --validate FILE, --kv FILE, --glance, "
                       "--readme FILE; see --help)")
        elif run_dir is None:
            run_dir = a
        else:
            return die(f"unexpected argument '{a}': one RUN_DIR at most")
    if run_dir is None and validate_path is None:
        return die("no input: give RUN_DIR (scripts/readme-run.sh's output) or --validate FILE")
    if run_dir is not None and not os.path.isdir(run_dir):
        return die(f"RUN_DIR '{run_dir}' is not a directory")
    if validate_path is not None and not os.path.isfile(validate_path):
        return die(f"--validate '{validate_path}' is not a file")
    if kv_path is not None and not os.path.isfile(kv_path):
        return die(f"--kv '{kv_path}' is not a file")
    if kv_path is not None and (want_glance or run_dir is None):
        return die("--kv is for a page from RUN_DIR (it replaces RUN_DIR/kv.json)")
    if readme is not None and not want_glance:
        return die("--readme is for --glance (it splices the glance table into the file)")
    if readme is not None and not os.path.isfile(readme):
        return die(f"--readme '{readme}' is not a file")
    try:
        if want_glance:
            cmd = " ".join([prog] + [x for i, x in enumerate(argv)
                                     if x != "--readme" and (i == 0 or argv[i - 1] != "--readme")])
            block = glance(run_dir, validate_path, cmd)
            if readme is not None:
                splice_readme(readme, block)
                return 0
            sys.stdout.write(block)
            return 0
        page = render(run_dir, validate_path, " ".join([prog] + argv), kv_path)
    except InputError as e:
        return die(str(e))
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
