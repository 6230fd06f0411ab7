#!/usr/bin/env bash
# tests/solib/accuracy_by_hand.sh [OUT]: the dlopen()ed library line's
# accuracy, by validate's protocol, on a quiet machine (about 2 minutes; not
# a ctest: too long and load-sensitive). Four rounds, each a 10 s sweep
# chunk restricted to solib_plugin.cpp:12 (uniform draw, appended to one
# profile) and 3 s real runs of coact-solib-lines: baseline, --speed 0.25,
# --speed 0.5, baseline. Prints the estimator's prediction at s = 0.25 and
# 0.5 beside the measured speedup (1 - period / the round's mean baseline
# period; ideal min(s, 1/2)). OUT (default: a new temp dir) must not exist.
# The build is $COACT_BUILD (default build/relwithdebinfo).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=$(realpath "${COACT_BUILD:-build/relwithdebinfo}")
OUT=${1:-$(mktemp -u /tmp/solib-accuracy.XXXXXX)}
[[ -e $OUT ]] && { echo "accuracy_by_hand.sh: '$OUT' exists; give a new directory" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
P=$B/tests/solib/coact-solib-lines
M=$B/tests/solib/libcoact_solib_plugin_module.so
for round in 1 2 3 4; do
  "$B/tools/coact-profile/coact-profile" run --append -o "$OUT/p.coz" --json-output "$OUT/p.jsonl" --sampling \
    --source-scope '%solib_plugin%' --region-filter solib_plugin.cpp:12 --region-weight uniform --duration-s 10 \
    -- "$P" --plugin "$M" --seconds 11 >>"$OUT/sweep.log" 2>&1
  for v in base 0.25 0.5 base; do
    if [[ $v == base ]]; then a=(); else a=(--speed "$v"); fi
    echo "{\"round\":$round,\"variant\":\"$v\",\"run\":$("$P" --plugin "$M" --seconds 3 "${a[@]}" 2>>"$OUT/real.err")}" \
      >>"$OUT/real.jsonl"
  done
done
(cd reports && /usr/bin/python3 -m coact_reports.estimate "$OUT/p.jsonl" --json --at 0.25 --at 0.5 \
  -r solib_plugin.cpp:12 >"$OUT/est.json")
/usr/bin/python3 - "$OUT" <<'EOF'
import json, statistics, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/real.jsonl")]
region = json.load(open(f"{out}/est.json"))["regions"][0]
pred = {p["s"]: p for p in region["predictions"]}
for s in (0.25, 0.5):
    measured = []
    for rd in sorted({r["round"] for r in rows}):
        rr = [r for r in rows if r["round"] == rd]
        base = statistics.mean(r["run"]["period_us"] for r in rr if r["variant"] == "base")
        measured += [1 - r["run"]["period_us"] / base for r in rr if r["variant"] == str(s)]
    p, m = pred[s], statistics.mean(measured)
    print(f"s={s}: predicted {100 * p['program_speedup']:.1f}% [{100 * p['ci'][0]:.1f}, {100 * p['ci'][1]:.1f}], "
          f"measured {100 * m:.1f}% (rounds {', '.join(f'{100 * x:.1f}' for x in measured)}), "
          f"error {100 * (p['program_speedup'] - m):+.1f} points, ideal {100 * min(s, 0.5):.0f}%")
print(f"profile and runs: {out}")
EOF
