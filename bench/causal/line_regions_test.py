#!/usr/bin/python3
"""The line workloads' stages name regions that a sampled sweep really
produces: runs coact-known-answer with COACT_CAUSAL_SAMPLING=1 (speedup 0
only) and checks that every line stage of --list appears in the profile's
names record with samples, and that the sampler record lists the workers.

Usage: line_regions_test.py PATH/TO/coact-known-answer
"""
import json
import os
import subprocess
import sys
import tempfile


def main() -> int:
    ka = sys.argv[1]
    listing = json.loads(subprocess.run([ka, "--list"], check=True, capture_output=True, text=True).stdout)
    failures = []
    for w in listing["workloads"]:
        if not w.get("sampling"):
            continue
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "p.coz")
            env = dict(os.environ, COACT_CAUSAL="1", COACT_CAUSAL_SAMPLING="1", COACT_CAUSAL_FIXED_SPEEDUP="0",
                       COACT_CAUSAL_EXPERIMENT_MS="200", COACT_CAUSAL_OUTPUT=out,
                       COACT_CAUSAL_PROGRESS=listing["progress"])
            subprocess.run([ka, "--workload", w["name"], "--seconds", "2.5", "--warmup-s", "0.1"], check=True,
                           env=env, capture_output=True, text=True, timeout=120)
            recs = [json.loads(line) for line in open(os.path.join(d, "p.jsonl")) if line.strip()]
            names = {r["name"]: r for rec in recs if rec["type"] == "names" for r in rec["regions"]}
            sampler = [r for r in recs if r["type"] == "sampler"]
            if not sampler or sampler[-1]["attributed"] == 0 or sampler[-1]["threads_sampled"] < 2:
                failures.append(f"{w['name']}: sampler record {sampler}")
            for st in w["stages"]:
                r = names.get(st["region"])
                if r is None or r["visits"] == 0:
                    lines = sorted(n for n, x in names.items() if x["kind"] == "line")
                    failures.append(f"{w['name']} stage {st['stage']}: region {st['region']!r} "
                                    f"{'has no samples' if r else 'not found'}; line regions: {lines}")
                elif r["kind"] != st["region_kind"]:
                    failures.append(f"{w['name']} stage {st['stage']}: kind {r['kind']} != {st['region_kind']}")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
