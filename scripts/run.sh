#!/usr/bin/env bash
# scripts/run.sh: the main job on its default input. Until the causal
# profiler's sweep lands as the main job, this is the runtime demo: it builds
# the release tree and prints the side-by-side peer comparison (coact vs CAF
# 0.17, 2 workers, alternating trials, medians) as a table.
# Usage: scripts/run.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bash scripts/bench.sh peers "$@" | tee "$out" >/dev/null
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'workload':<12} {'unit':<14} {'coact/s':>12} {'CAF/s':>12} {'coact/CAF':>9}")
for r in rows:
    print(f"{r['workload']:<12} {r.get('unit','msgs_per_s'):<14} {r['coact_msgs_per_s']:>12,.0f} "
          f"{r['caf_msgs_per_s']:>12,.0f} {r['ratio']:>9.2f}")
PY
