#!/usr/bin/env bash
# ctest reports-install: `cmake --install BUILD --component reports` into a
# fresh prefix, then the installed coact-plot plots and estimates a fixture
# profile from another directory, with no PYTHONPATH and no source tree, and
# the installed coact-perf-compare compares two commands there (its results
# under ./perf-compare/) and refuses what needs a source tree (exit 2).
# Usage: install_test.sh BUILD_DIR PREFIX FIXTURES_DIR
set -euo pipefail
build=$1 prefix=$2 fix=$3
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" --component reports >/dev/null
bin=$prefix/bin/coact-plot
[[ -x $bin ]] || { echo "FAIL: $bin not installed" >&2; exit 1; }
[[ -f $prefix/share/coact/python/coact_reports/estimate.py ]] ||
  { echo "FAIL: package not under $prefix/share/coact/python" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$fix/toy.coz" "$work/"
cd "$work"
env -u PYTHONPATH "$bin" profile toy.coz -o curves.png -t "installed coact-plot" >table.txt 2>err.txt ||
  { cat err.txt >&2; echo "FAIL: installed coact-plot profile failed" >&2; exit 1; }
[[ $(head -c 8 curves.png | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
  { echo "FAIL: curves.png is not a PNG" >&2; exit 1; }
grep -q 'toy.cpp:27' table.txt || { echo "FAIL: ranking table lacks toy.cpp:27" >&2; cat table.txt >&2; exit 1; }
env -u PYTHONPATH "$bin" estimate toy.coz --json >est.json 2>/dev/null
/usr/bin/python3 -c 'import json,sys; d=json.load(open("est.json")); assert d["regions"] and d["version"]==2' ||
  { echo "FAIL: installed coact-plot estimate --json" >&2; exit 1; }
# A moved prefix still works (bin/coact-plot is a relative link to the script beside the package).
mv "$prefix" "$work/moved"
env -u PYTHONPATH "$work/moved/bin/coact-plot" estimate toy.coz >/dev/null 2>&1 ||
  { echo "FAIL: coact-plot in a moved prefix" >&2; exit 1; }
mv "$work/moved" "$prefix"
pc=$prefix/bin/coact-perf-compare
[[ -x $pc ]] || { echo "FAIL: $pc not installed" >&2; exit 1; }
printf '#!/bin/sh\necho "{\\"rate\\": ${RATE:-100}}"\n' >app.sh && chmod +x app.sh
env -u PYTHONPATH PERF_BASE_ENV=RATE=100 PERF_CAND_ENV=RATE=150 "$pc" --trials 5 --metric rate -- ./app.sh \
  >pc.jsonl 2>pc.err || { cat pc.err >&2; echo "FAIL: installed coact-perf-compare" >&2; exit 1; }
/usr/bin/python3 -c 'import json; r=json.loads(open("pc.jsonl").readline()); assert r["verdict"]=="faster", r' ||
  { cat pc.jsonl pc.err >&2; echo "FAIL: installed coact-perf-compare verdict" >&2; exit 1; }
ls perf-compare/*/trials.jsonl >/dev/null || { echo "FAIL: no ./perf-compare/*/trials.jsonl" >&2; exit 1; }
for refused in "--base-rev HEAD --cand-rev HEAD -- x" "--trials 5"; do
  rc=0; env -u PYTHONPATH "$pc" $refused >/dev/null 2>pc.err || rc=$?
  [[ $rc == 2 ]] && grep -q 'source tree' pc.err ||
    { cat pc.err >&2; echo "FAIL: installed coact-perf-compare $refused: exit $rc, want 2 naming the source tree" >&2; exit 1; }
done
echo "installed coact-plot: plot $(stat -c %s curves.png) bytes, estimate ok"
