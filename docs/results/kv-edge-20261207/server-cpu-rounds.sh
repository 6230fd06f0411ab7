#!/usr/bin/env bash
# The server's CPU time per request, two coact-kv builds side by side:
#   server-cpu-rounds.sh BASE_BIN CAND_BIN PIPELINE REQUESTS ROUNDS
# Each round runs BASE then CAND (2 workers, 2 shards, port 6394): a 20k-GET
# warm-up, then `redis-benchmark -t get -n REQUESTS -c 50 -P PIPELINE` with
# `perf stat -e task-clock,context-switches` attached to the server. Prints one
# line per run: round, base|cand, requests/s, the server's task-clock (ms) and
# context switches. perf counts no syscall tracepoints here: they cost time per
# call and would bias against the build that makes more calls.
set -euo pipefail
base=$1 cand=$2 pipe=$3 n=$4 rounds=$5
for r in $(seq 1 "$rounds"); do
  for side in base cand; do
    bin=$base; [[ $side == cand ]] && bin=$cand
    COACT_WORKERS=2 "$bin" --port 6394 --shards 2 >/dev/null 2>&1 &
    srv=$!
    sleep 0.4
    redis-benchmark -p 6394 -t get -n 20000 -c 50 -P "$pipe" -q >/dev/null
    perf stat -x, -e task-clock,context-switches -p "$srv" -o /tmp/server-cpu-rounds.perf &
    pst=$!
    rps=$(redis-benchmark -p 6394 -t get -n "$n" -c 50 -P "$pipe" -q 2>&1 | tr '\r' '\n' |
      awk '/requests per second/ {v=$2} END {print v}')
    kill -INT "$pst"; wait "$pst" 2>/dev/null || true
    kill -TERM "$srv"; wait "$srv" 2>/dev/null || true
    echo "$r $side rps=$rps $(awk -F, '!/^#/ && NF > 2 {printf "%s=%s ", $3, $1}' /tmp/server-cpu-rounds.perf)"
  done
done
