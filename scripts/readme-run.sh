#!/usr/bin/env bash
# scripts/readme-run.sh: the performance tables (docs/perf/README.md) in one run: every
# table's command, one after another, on a quiet machine, each group's JSON
# lines and stderr kept in one directory, so that the tables can be
# regenerated from one run (scripts/perfdoc.sh) and the next run compared.
#
# Usage: scripts/readme-run.sh [--out DIR] [--base-rev REV] [--max-load L] [--no-validate]
#
#   --out DIR       where the outputs go (default build/readme-run/<UTC time>-<commit>)
#   --base-rev REV  also compare coact-peers at 1 worker with REV's (perf-compare,
#                   ping-pong and ring, 15 pairs; REV built Release in its own
#                   worktree, scripts/lib.sh coact_rev_build); default: skipped
#   --max-load L    wait (up to 30 min) until the 1-minute load average is below L
#                   before the first measurement (default 0.3; a "quiet
#                   machine", CONTRIBUTING.md)
#   --no-validate   skip the accuracy validation (coact-profile validate --with-coz,
#                   ~25 min)
#
# Steps: 1. build build/release (Release, all targets) and build/relwithdebinfo
# (the sampling group's programs) first, so no build runs between measurements;
# 2. wait for the load; 3. in this order: peers (10 trials), peers with
# COACT_BURST=on (5 trials), peers at 1 worker (10 trials), [perf-compare vs
# REV], timers, burst, scaling (1 and 2 workers, 6 pairs), sampling (10
# trials), kv (coact-kv vs redis-server), the sweep's cost at speedup 0
# (perf-compare with COACT_CAUSAL on one side), validate --with-coz --json.
# Writes start.txt and end.txt (date, uptime, commit), command.txt (this
# script's command line), steps.txt (each step's start time), commands.txt
# (STEP<TAB>its command) and one NAME.json / NAME.err per step; a failing
# step is logged in steps.txt and the run goes on. docs/perf/README.md is
# generated from the directory: scripts/perfdoc.sh DIR > docs/perf/README.md.
# Exit status: 0 every step ran; 1 a build or a step failed, or the load never
# fell below L; 2 usage.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COACT_SCRIPT=readme-run.sh
invocation="scripts/readme-run.sh${*:+ $*}"
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"

usage() { sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

out="" base_rev="" max_load=0.3 validate=1
while (($#)); do
  case $1 in
    --out) (($# >= 2)) || coact_die 2 "--out needs a value (a directory)"; out=$2; shift ;;
    --base-rev) (($# >= 2)) || coact_die 2 "--base-rev needs a value (a commit)"; base_rev=$2; shift ;;
    --max-load) (($# >= 2)) || coact_die 2 "--max-load needs a value (e.g. 0.3)"; max_load=$2; shift ;;
    --no-validate) validate=0 ;;
    -h|--help) usage; exit 0 ;;
    --base*|--rev*) coact_die 2 "unknown option '$1' (did you mean --base-rev REV?)" ;;
    --load*|--max*) coact_die 2 "unknown option '$1' (did you mean --max-load L?)" ;;
    *) coact_die 2 "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
[[ $max_load =~ ^[0-9]+(\.[0-9]+)?$ ]] || coact_die 2 "--max-load '$max_load': want a number such as 0.3"
if [[ -n $base_rev ]]; then
  git -C "$ROOT" rev-parse --verify --quiet "$base_rev^{commit}" >/dev/null ||
    coact_die 2 "--base-rev '$base_rev' is not a commit of $ROOT"
fi
commit=$(git -C "$ROOT" rev-parse --short=7 HEAD)
[[ -n $out ]] || out=$ROOT/build/readme-run/$(date -u +%Y%m%dT%H%M%SZ)-$commit
mkdir -p "$out"
cd "$ROOT"

# 1. Builds first.
coact_build "$ROOT/build/release" Release
coact_build "$ROOT/build/relwithdebinfo" RelWithDebInfo coact-dedup coact-sample-cost
base_bin=""
if [[ -n $base_rev ]]; then
  base_bin=$(coact_rev_build "$ROOT" "$base_rev" coact-peers)/bench/peers/coact-peers
fi

# 2. The quiet machine.
waited=0
until awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v m="$max_load" 'BEGIN { exit !(l < m) }'; do
  ((waited % 60 == 0)) && coact_log "waiting for the 1-minute load average ($(cut -d' ' -f1 /proc/loadavg)) to fall below $max_load"
  ((waited >= 1800)) && coact_die 1 "the load average stayed at or above $max_load for 30 min; nothing measured"
  sleep 10
  waited=$((waited + 10))
done
{ date -u; uptime; git rev-parse HEAD; } >"$out/start.txt"
echo "$invocation" >"$out/command.txt"

# 3. The steps.
failed=0
step() {  # step NAME ENV... -- COMMAND...: stdout to NAME.json, stderr to NAME.err
  local name=$1 envs=()
  shift
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  echo "$(date -u +%T) $name" >>"$out/steps.txt"
  printf '%s\t%s\n' "$name" "${envs[*]}${envs[*]:+ }$*" >>"$out/commands.txt"
  coact_log "$name"
  if ! env "${envs[@]}" "$@" >"$out/$name.json" 2>"$out/$name.err"; then
    echo "$(date -u +%T) $name FAILED (see $name.err)" >>"$out/steps.txt"
    coact_log "$name failed: $(tail -n 1 "$out/$name.err")"
    failed=1
  fi
}
nb=COACT_BENCH_NO_BUILD=1
sweep_env="COACT_CAUSAL=1 COACT_CAUSAL_FIXED_SPEEDUP=0 COACT_CAUSAL_PROGRESS_HANDLER=pong_msg COACT_CAUSAL_OUTPUT=$out/sweep-profile.coz"
step peers COACT_BENCH_TRIALS=10 $nb -- scripts/bench.sh peers
step peers-burst-on COACT_BURST=on COACT_BENCH_TRIALS=5 $nb -- scripts/bench.sh peers
step peers-1-worker COACT_BENCH_TRIALS=10 COACT_BENCH_WORKERS=1 $nb -- scripts/bench.sh peers
if [[ -n $base_bin ]]; then
  step "perf-compare-vs-$base_rev" -- scripts/perf-compare.sh --base-bin "$base_bin" \
    --cand-bin build/release/bench/peers/coact-peers --workloads ping_pong,thread_ring --n 1000000 \
    --workers 1 --trials 15
fi
step timers $nb -- scripts/bench.sh timers
step burst COACT_BENCH_TRIALS=8 $nb -- scripts/bench.sh burst
step scaling COACT_BENCH_TRIALS=6 COACT_BENCH_SCALING_WORKERS=1,2 $nb -- scripts/bench.sh scaling
step sampling COACT_BENCH_TRIALS=10 $nb COACT_BENCH_SAMPLING_BUILD_DIR="$ROOT/build/relwithdebinfo" -- scripts/bench.sh sampling
step kv $nb -- scripts/bench.sh kv
step sweep-cost PERF_BASE_ENV=COACT_CAUSAL=0 "PERF_CAND_ENV=$sweep_env" -- scripts/perf-compare.sh \
  --cand-bin build/release/bench/peers/coact-peers --base-bin build/release/bench/peers/coact-peers \
  --workloads ping_pong,fan_out --n 3000000 --trials 10
if ((validate)); then
  step validate -- build/release/tools/coact-profile/coact-profile validate --with-coz --json
fi
{ date -u; uptime; } >"$out/end.txt"
coact_log "done: $out (the tables: scripts/perfdoc.sh $out > docs/perf/README.md)"
exit "$failed"
