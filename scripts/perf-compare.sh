#!/usr/bin/env bash
# scripts/perf-compare.sh: A/B-compare a knob or a build on any command, a Google
# Benchmark suite or the peers benchmark, with paired, interleaved trials and a
# verdict that refuses to call noise a change. `scripts/perf-compare.sh --help`
# lists the options; reports/README.md ("perf-compare") describes the method.
#
#   PERF_BASE_ENV="K=V ..." PERF_CAND_ENV="K=V ..." scripts/perf-compare.sh [options] -- CMD ARGS...
#   scripts/perf-compare.sh --gbench build/release/bench/coact-bench-runtime [-- --benchmark_filter=RE]
#   scripts/perf-compare.sh --base-rev main --cand-rev HEAD -- examples/dedup/coact-dedup archive DIR
#   PERF_BASE_ENV=... PERF_CAND_ENV=... scripts/perf-compare.sh --workloads ping_pong   (coact-peers)
#
# Trials: N pairs of fresh processes, base and cand back to back, in
# balanced-random order (blocks of two pairs, one AB and one BA, which first
# drawn from --seed): linear drift and first-in-pair effects cancel over each
# block, and a periodic disturbance cannot alias with a fixed pattern. Each trial
# is appended to OUT/trials.jsonl as soon as it ends (an interrupted run keeps
# its finished trials): {"type":"trial","variant":"base"|"cand","trial":i,
# "metric":...,"value":x,"pos":0|1,"env":...,"bin":...,"wall_s":...,"max_rss_kb":...,
# "load1":...,"load1_after":...,"run":...}, the format `coact-plot compare` reads.
#
# Verdict per metric (reports/coact_reports/perfstats.py, shared with the plot):
# relative paired deltas d_i = cand_i / base_i - 1; "faster" / "slower" (better /
# worse in the metric's direction) only if BOTH (1) the percentile-bootstrap 95%
# CI of the median d excludes 0 and (2) |median d| > the noise floor
# (max(--noise-floor, 2% by default, and the metric's A/A spread from --aa-from));
# else "no change (within noise)"; "no verdict: environment differs" when the two
# sides ran under visibly different conditions, "no verdict: a base trial is 0"
# when no relative delta exists. Why both: pairing removes the noise a pair
# shares, not run-level biases (binary/heap layout, ASLR, which variant warms the
# caches of the other, a neighbour's periodic job), which give consistent deltas
# of ~1-2% on a shared 2-core box that reproduce within a run and not across
# runs; and (2) alone would call one lucky outlier a change. With 5 pairs, (1)
# needs all 5 deltas on one side of 0 (a sign test at ~3%). Outliers (a trial
# more than --outlier-k robust SDs from its side's median) are listed, not
# removed: the medians they cannot drag decide.
#
# Output: stdout has only JSON lines, one per metric (also in OUT/summary.jsonl):
#   {"tool":"perf-compare","metric":...,"direction":"higher_is_better"|"lower_is_better",
#    "verdict":...,"base_median":...,"cand_median":...,"median_delta_pct":...,
#    "ci95_pct":[lo,hi],"noise_floor_pct":...,"outliers":[{"variant","trial","value","mads"}],
#    "environment":{"base":{...},"cand":{...}},"reason":...,...}
# The table goes to stderr and OUT/summary.txt, with progress and diagnostics.
# Exit status: 0 done; 1 a trial, build or plot failed; 2 usage; 130 interrupted.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly PY=/usr/bin/python3
[[ -x $PY ]] || { echo "perf-compare.sh: $PY not found (Debian's python3 with numpy is required)" >&2; exit 1; }
# The runner, the statistics and the builds' orchestration are in the reports
# package (builds themselves: scripts/lib.sh), run through its launcher
# (reports/coact_run.py: no PYTHONPATH, which would leak into the compared
# programs' environment). The source tree is the package's own (its root).
exec "$PY" -B "$ROOT/reports/coact_run.py" perfcompare "$@"
