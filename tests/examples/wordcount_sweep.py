#!/usr/bin/python3
"""A short causal sweep of examples/wordcount, the way the README's "Profile
your own program" runs it:

  coact-profile run -o OUT/profile.coz --duration-s 4 --experiment-ms 100 -- wordcount 6

Passes when the run exits 0, the program printed its result line, and
profile.coz holds at least three experiments, at least one of them on the
`tokenize` scope, with visits of the `batches` progress point, and
profile.jsonl's experiments name the handlers that ran beside each one
("handlers": runs and time per handler region). Exit 1 (with
the reason) otherwise, 2 on a usage error.

Usage: wordcount_sweep.py COACT_PROFILE WORDCOUNT OUTDIR
"""
import json
import os
import subprocess
import sys


def fail(msg):
    print(f"wordcount_sweep: {msg}", file=sys.stderr)
    return 1


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    profile_bin, wordcount, out = argv
    os.makedirs(out, exist_ok=True)
    coz = os.path.join(out, "profile.coz")
    for stale in (coz, os.path.join(out, "profile.jsonl")):
        if os.path.exists(stale):
            os.remove(stale)
    jsonl = os.path.join(out, "profile.jsonl")
    cmd = [profile_bin, "run", "-o", coz, "--json-output", jsonl, "--duration-s", "4", "--experiment-ms", "100",
           "--", wordcount, "6"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return fail(f"{' '.join(cmd)} exited {r.returncode}; stderr:\n{r.stderr}")
    if "12 distinct words" not in r.stdout:
        return fail(f"the program's result line is missing; stdout:\n{r.stdout}")
    try:
        with open(coz, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        return fail(f"no profile written: {e}")
    experiments = [l for l in lines if l.startswith("experiment\t")]
    on_tokenize = [l for l in experiments if "\tselected=tokenize\t" in l]
    batches = [l for l in lines if l.startswith("throughput-point\tname=batches\t")]
    if len(experiments) < 3:
        return fail(f"{len(experiments)} experiments in {coz}, expected at least 3")
    if not on_tokenize:
        return fail(f"no experiment selected the tokenize scope in {coz}")
    if not any(int(l.rsplit("delta=", 1)[1]) > 0 for l in batches):
        return fail(f"no experiment saw a visit of the 'batches' progress point in {coz}")
    with open(jsonl, encoding="utf-8") as f:
        records = [json.loads(l) for l in f if l.strip()]
    jexps = [r for r in records if r.get("type") == "experiment"]
    if len(jexps) != len(experiments):
        return fail(f"{len(jexps)} experiments in {jsonl}, {len(experiments)} in {coz}")
    # Every window of this pipeline runs the Counter's handlers.
    for e in jexps:
        ran = {n: h for n, h in e.get("handlers", {}).items() if "Counter::on(" in n}
        if not ran or any(h["visits"] <= 0 for h in ran.values()):
            return fail(f"experiment {e['index']} names no run of a Counter handler: {e.get('handlers')}")
    print(f"wordcount_sweep: {len(experiments)} experiments, {len(on_tokenize)} on tokenize")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
