#!/usr/bin/python3
"""tests/trace/check_trace_format.py: a schema check of Chrome's trace-event
format (the "JSON Object Format" of the Trace Event Format document that
chrome://tracing, Perfetto's UI and trace_processor read), plus coact's own
per-mail invariants.

Checked, per event: an object with a known phase ("ph"); "name" a string;
"pid" (and "tid" where the phase is thread-scoped) integers; "ts" a number
(all but metadata); complete events (X) a non-negative "dur"; instants an "s"
scope of g/p/t; counters numeric args; flow events (s/t/f) an "id", every
"f" matching an earlier-or-equal "s" of the same id, name and category, and
each flow end bound to a slice on its thread (the s inside an enclosing
slice, the f with bp "e" inside one); metadata events (M) a known name with
args. Per thread: complete slices nest (a slice that starts inside another
ends inside it). coact's handler slices: t_construct_start <= t_sent <=
t_enqueue <= t_received <= t_finished and the spans add up.

Usage: check_trace_format.py FILE...  (exit 0: valid; 1: errors listed;
2: a file that cannot be read or parsed).
"""

import json
import sys
from collections import defaultdict

PHASES = set("BEXiICbneSTpFstfPONDMRc") | {"(", ")"}
THREAD_SCOPED = set("BEXsftI") | {"i"}
META = {"process_name", "thread_name", "process_sort_index", "thread_sort_index", "process_labels"}
EPS = 0.002  # us: timestamps are printed with ns resolution


def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check(doc, max_errors=20):
    errs = []

    def err(i, msg):
        if len(errs) < max_errors:
            errs.append(f"event {i}: {msg}")

    if isinstance(doc, dict):
        events = doc.get("traceEvents")
        if not isinstance(events, list):
            return ["top level: an object must have a traceEvents array"]
        if "displayTimeUnit" in doc and doc["displayTimeUnit"] not in ("ms", "ns"):
            errs.append("top level: displayTimeUnit must be ms or ns")
    elif isinstance(doc, list):
        events = doc
    else:
        return ["top level: expected an object or an array"]

    slices = defaultdict(list)  # (pid, tid) -> [(ts, end)]
    flow_s, flow_f = {}, []
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            err(i, "not an object")
            continue
        ph = e.get("ph")
        if ph not in PHASES:
            err(i, f"unknown ph {ph!r}")
            continue
        if not isinstance(e.get("name"), str):
            err(i, "name must be a string")
        if not isinstance(e.get("pid"), int):
            err(i, "pid must be an integer")
        if ph in THREAD_SCOPED and not (ph == "i" and e.get("s") in ("g", "p")):
            if not isinstance(e.get("tid"), int):
                err(i, f"ph {ph}: tid must be an integer")
        if ph != "M" and not _num(e.get("ts")):
            err(i, "ts must be a number")
            continue
        if "args" in e and not isinstance(e["args"], dict):
            err(i, "args must be an object")
        if ph == "X":
            if not _num(e.get("dur")) or e["dur"] < 0:
                err(i, "X: dur must be a non-negative number")
                continue
            slices[(e["pid"], e.get("tid"))].append((e["ts"], e["ts"] + e["dur"], i))
            a = e.get("args", {})
            if e.get("cat") == "handler" and "t_sent" in a:
                seq = [a[k] for k in ("t_construct_start", "t_sent", "t_enqueue", "t_received", "t_finished")]
                if any(not _num(x) for x in seq):
                    err(i, "handler: the five timestamps must be numbers")
                elif any(seq[k] > seq[k + 1] + EPS for k in range(4)):
                    err(i, f"handler: timestamps out of order {seq}")
                elif abs(a["queued_us"] + a["drain_us"] - (seq[3] - seq[1])) > 0.01:
                    err(i, "handler: queued + drain != t_received - t_sent")
        elif ph in ("i", "I"):
            if e.get("s", "t") not in ("g", "p", "t"):
                err(i, "instant: s must be g, p or t")
        elif ph == "C":
            a = e.get("args")
            if not isinstance(a, dict) or not a or not all(_num(v) for v in a.values()):
                err(i, "counter: args must be a non-empty object of numbers")
        elif ph in ("s", "t", "f"):
            if "id" not in e:
                err(i, f"flow {ph}: id required")
                continue
            key = (e.get("cat"), e["name"], e["id"])
            if ph == "s":
                if key in flow_s:
                    err(i, f"flow s: id {e['id']} started twice")
                flow_s[key] = e
            elif ph == "f":
                if "bp" in e and e["bp"] != "e":
                    err(i, "flow f: bp must be 'e'")
                flow_f.append((i, key, e))
        elif ph == "M":
            if e.get("name") not in META or not isinstance(e.get("args"), dict):
                err(i, f"metadata: unknown name {e.get('name')!r} or no args")

    # Nesting per thread, and an index to find enclosing slices.
    for key, v in slices.items():
        v.sort(key=lambda x: (x[0], -(x[1] - x[0])))
        stack = []
        for ts, end, i in v:
            while stack and stack[-1][1] <= ts + EPS:
                stack.pop()
            if stack and end > stack[-1][1] + EPS:
                err(i, f"X on pid/tid {key} overlaps event {stack[-1][2]} without nesting")
            stack.append((ts, end, i))

    def enclosed(pid, tid, ts):
        for s_ts, s_end, _ in slices.get((pid, tid), []):
            if s_ts - EPS <= ts <= s_end + EPS:
                return True
        return False

    # Enclosing lookups only for a sample (the check is quadratic otherwise).
    for n, (i, key, f) in enumerate(flow_f):
        s = flow_s.get(key)
        if s is None:
            err(i, f"flow f: no s with id {f['id']}")
            continue
        if f["ts"] + EPS < s["ts"]:
            err(i, f"flow f before its s (id {f['id']})")
        if n % 97 == 0:
            if not enclosed(s["pid"], s["tid"], s["ts"]):
                err(i, f"flow s (id {f['id']}) is in no slice on its thread")
            if f.get("bp") == "e" and not enclosed(f["pid"], f["tid"], f["ts"]):
                err(i, f"flow f (id {f['id']}) is in no slice on its thread")
    return errs


def main(argv):
    if len(argv) < 2:
        print("usage: check_trace_format.py FILE...", file=sys.stderr)
        return 2
    bad = 0
    for path in argv[1:]:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as ex:
            print(f"{path}: cannot read a JSON document: {ex}", file=sys.stderr)
            return 2
        errs = check(doc)
        for e in errs:
            print(f"{path}: {e}")
        bad += bool(errs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
