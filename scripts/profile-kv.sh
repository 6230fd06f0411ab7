#!/usr/bin/env bash
# scripts/profile-kv.sh: a causal-profiling sweep of a running service. Builds
# (Release) coact-kv and coact-profile, starts coact-kv under coact-profile,
# loads it with redis-benchmark (GET and SET, 50 clients) for the whole
# sweep, then stops it (SIGTERM: it drains and exits 0) and prints which
# handlers to make faster for lower request latency, with the plot of the
# curves. The progress point is kv.replies (replies per second): the client
# is closed-loop (50 connections, each waiting for its reply), so its
# latency is 50 / that rate; kv.request, the time a request spends inside
# the server, leaves out the time on the client's side of the sockets.
#
# Usage: scripts/profile-kv.sh [--seconds S (sweep, default 120)] [--out OUTDIR]
#                              [--shard-cost-ns NS (default 200000)] [--pipeline D (default 1)]
# --shard-cost-ns plants work in the shards' GET and SET (coact-kv's option):
# the stage the sweep should name first; 0 profiles the server as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
COACT_SCRIPT=profile-kv.sh
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
SECS=120
OUT=$ROOT/build/profile-kv
COST=200000
PIPE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds|--out|--shard-cost-ns|--pipeline)
      [ $# -ge 2 ] || coact_die 2 "$1 needs a value (see --help)"
      case "$1" in
        --seconds) SECS=$2 ;; --out) OUT=$2 ;; --shard-cost-ns) COST=$2 ;; --pipeline) PIPE=$2 ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) coact_die 2 "unknown argument '$1' (expected --seconds S, --out OUTDIR, --shard-cost-ns NS, --pipeline D; see --help)" ;;
  esac
done
for v in "--seconds:$SECS" "--shard-cost-ns:$COST" "--pipeline:$PIPE"; do
  case "${v#*:}" in ''|*[!0-9]*) coact_die 2 "${v%%:*} '${v#*:}': expected a whole number" ;; esac
done
[ "$SECS" -ge 10 ] || coact_die 2 "--seconds $SECS: a sweep needs at least 10 s"
[ "$PIPE" -ge 1 ] || coact_die 2 "--pipeline must be at least 1"

bash scripts/bootstrap.sh
echo "== build (Release): coact-kv, coact-profile ==" >&2
JOBS=${JOBS:-$(nproc)} coact_build build/release Release coact-kv coact-profile

mkdir -p "$OUT"
rm -f "$OUT/profile.coz" "$OUT/profile.jsonl"
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "== causal sweep of coact-kv on port $PORT under redis-benchmark load (${SECS} s) ==" >&2
build/release/tools/coact-profile/coact-profile run -p kv.replies \
  -o "$OUT/profile.coz" --json-output "$OUT/profile.jsonl" \
  --duration-s "$SECS" --until-settled --stop-program --experiment-ms 1000 \
  -- build/release/examples/kv/coact-kv --port "$PORT" --shard-cost-ns "$COST" >"$OUT/server.log" 2>&1 &
PROFILER=$!
LOAD=
cleanup() {
  [ -n "$LOAD" ] && kill "$LOAD" 2>/dev/null || true
  kill "$PROFILER" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 100); do
  redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
  kill -0 "$PROFILER" 2>/dev/null || { cat "$OUT/server.log" >&2; coact_die 1 "coact-kv under coact-profile exited before answering"; }
  sleep 0.1
done
redis-cli -p "$PORT" ping >/dev/null 2>&1 || coact_die 1 "coact-kv did not answer PING on port $PORT within 10 s"
# The load: rounds of redis-benchmark until the sweep stops the server.
(
  while redis-cli -p "$PORT" ping >/dev/null 2>&1; do
    redis-benchmark -p "$PORT" -t set,get -n 200000 -c 50 -P "$PIPE" -r 100000 -q >/dev/null 2>&1 || true
  done
) &
LOAD=$!
STATUS=0
wait "$PROFILER" || STATUS=$?
kill "$LOAD" 2>/dev/null || true
wait "$LOAD" 2>/dev/null || true
LOAD=
trap - EXIT
cat "$OUT/server.log" >&2
[ "$STATUS" -eq 0 ] || coact_die "$STATUS" "coact-profile exited $STATUS (server log above)"

echo "== handlers ranked by the reply rate they would give (the clients' latency is 50 / rate) ==" >&2
/usr/bin/python3 reports/coact_plot.py profile "$OUT/profile.jsonl" -o "$OUT/curves.png" \
  -t "coact-kv under redis-benchmark: causal profile (replies per second)"
echo "profile: $OUT/profile.jsonl (+ profile.coz for Coz's viewer); plot: $OUT/curves.png" >&2
