#!/usr/bin/env bash
# ctest man-pages: the generated pages (cmake/CoactManPages.cmake) exist, are
# roff man pages, and hold what only the subcommands' and the Python tools'
# own --help say (so the include step and the launchers worked).
# Usage: man_pages_test.sh MAN_DIR
set -euo pipefail
cd "$1"
for p in coact-profile coact-trace coact-calibrate coact-plot coact-perf-compare; do
  grep -q '^\.TH' "$p.1" || { echo "FAIL: $1/$p.1 is missing or not a man page" >&2; exit 1; }
done
grep -q '^\.SS validate' coact-profile.1 || { echo "FAIL: coact-profile.1 has no validate section" >&2; exit 1; }
grep -q 'fixed.*speedup' coact-profile.1 || { echo "FAIL: coact-profile.1 lacks run's --fixed-speedup" >&2; exit 1; }
grep -q 'warmup' coact-perf-compare.1 || { echo "FAIL: coact-perf-compare.1 lacks --warmup" >&2; exit 1; }
grep -q '^\.SS estimate' coact-plot.1 || { echo "FAIL: coact-plot.1 has no estimate section" >&2; exit 1; }
grep -q 'min.*experiments' coact-plot.1 || { echo "FAIL: coact-plot.1 lacks profile's --min-experiments" >&2; exit 1; }
! grep -q 'coact_plot' coact-plot.1 || { echo "FAIL: coact-plot.1 names the source-tree script" >&2; exit 1; }
echo "man pages: 5, with the subcommands' options"
