#!/usr/bin/env bash
# ctest reports-install: `cmake --install BUILD --component reports` into a
# fresh prefix, then the installed coact-plot plots and estimates a fixture
# profile from another directory, with no PYTHONPATH and no source tree.
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
# A moved prefix still works (the launcher finds the package relative to itself).
mv "$prefix" "$work/moved"
env -u PYTHONPATH "$work/moved/bin/coact-plot" estimate toy.coz >/dev/null 2>&1 ||
  { echo "FAIL: coact-plot in a moved prefix" >&2; exit 1; }
mv "$work/moved" "$prefix"
echo "installed coact-plot: plot $(stat -c %s curves.png) bytes, estimate ok"
