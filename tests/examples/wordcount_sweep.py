#!/usr/bin/python3
"""A short causal sweep of examples/wordcount, the way the README's "Profile
your own program" runs it:

  coact-profile run -o OUT/profile.coz --duration-s 4 --experiment-ms 100 -- wordcount 6

Passes when the run exits 0, the program printed its result line, and
profile.coz holds at least three experiments, at least one of them on the
`tokenize` scope, with visits of the `batches` progress point. Exit 1 (with
the reason) otherwise, 2 on a usage error.

Usage: wordcount_sweep.py COACT_PROFILE WORDCOUNT OUTDIR
"""
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
    cmd = [profile_bin, "run", "-o", coz, "--duration-s", "4", "--experiment-ms", "100", "--",
           wordcount, "6"]
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
    print(f"wordcount_sweep: {len(experiments)} experiments, {len(on_tokenize)} on tokenize")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
