#!/usr/bin/env bash
# scripts/run.sh: the main job on its default input. Builds (Release) the
# dedup archiver and coact-profile, runs a causal-profiling sweep of the
# archiver over /usr/share/doc (or DIR) until its ranking settles (at most
# --seconds), writes the profile (profile.coz + profile.jsonl) and a plot of
# the speedup curves, and prints the regions ranked by the program speedup
# they would give, with their 95% intervals and whether the ranking settled.
#
# Usage: scripts/run.sh [DIR] [--seconds S (longest sweep, default 180)] [--out OUTDIR]
# The peer comparison (coact vs CAF) is `scripts/bench.sh peers`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
COACT_SCRIPT=run.sh
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
DIR=/usr/share/doc
SECS=180
OUT=$ROOT/build/profile
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds|--out) [ $# -ge 2 ] || coact_die 2 "$1 needs a value (see --help)"
      if [ "$1" = --seconds ]; then SECS=$2; else OUT=$2; fi; shift 2 ;;
    --seconds=*) SECS=${1#*=}; shift ;;
    --out=*) OUT=${1#*=}; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --sec*|--dur*|-s) coact_die 2 "unknown option '$1' (did you mean --seconds S?)" ;;
    -*) coact_die 2 "unknown option '$1' (expected DIR, --seconds S, --out OUTDIR; see --help)" ;;
    *) DIR=$1; shift ;;
  esac
done
case "$SECS" in ''|*[!0-9]*) echo "run.sh: --seconds '$SECS': expected a whole number of seconds" >&2; exit 2 ;; esac
[ -d "$DIR" ] || { echo "run.sh: input '$DIR' is not a directory" >&2; exit 2; }

bash scripts/bootstrap.sh
echo "== build (Release): coact-dedup, coact-profile ==" >&2
JOBS=${JOBS:-$(nproc)} coact_build build/release Release coact-dedup coact-profile

mkdir -p "$OUT"
rm -f "$OUT/profile.coz" "$OUT/profile.jsonl"
echo "== causal sweep of coact-dedup over '$DIR' until the ranking settles (at most ${SECS} s) ==" >&2
# The archiver repeats passes longer than the sweep can last, so every
# experiment window sees a running program; --stop-program ends it (SIGTERM:
# it finishes its pass and exits 0) as soon as the sweep has settled.
build/release/tools/coact-profile/coact-profile run \
  -o "$OUT/profile.coz" --json-output "$OUT/profile.jsonl" \
  --duration-s "$SECS" --until-settled --stop-program --experiment-ms 1000 \
  -- build/release/examples/dedup/coact-dedup archive "$DIR" --seconds $((SECS + 30)) -o "$OUT/archive.cdar"

echo "== regions ranked by the program speedup they would give ==" >&2
/usr/bin/python3 reports/coact_plot.py profile "$OUT/profile.jsonl" -o "$OUT/curves.png" \
  -t "coact-dedup over $DIR: causal profile"
echo "profile: $OUT/profile.jsonl (+ profile.coz for Coz's viewer); plot: $OUT/curves.png" >&2
