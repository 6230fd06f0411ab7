#!/usr/bin/env bash
# ctest tools-usage-errors: coact-trace's and coact-calibrate's usage errors
# are one line naming the tool and exit 2 (a misspelled command or option, a
# missing argument, a value out of range); --help and --version exit 0.
# Usage: usage_errors_test.sh COACT_TRACE COACT_CALIBRATE
set -uo pipefail
trace=$1 calibrate=$2
fails=0
expect() {  # expect STATUS PREFIX NEEDLE COMMAND...
  local want=$1 prefix=$2 needle=$3
  shift 3
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL: $* exited $rc, want $want: $err" >&2
    fails=1
  elif [[ $want -eq 2 && ( $err != "$prefix"* || $err != *"$needle"* || $(printf '%s\n' "$err" | wc -l) -ne 1 ) ]]; then
    echo "FAIL: $*: want one line starting '$prefix' and naming '$needle', got: $err" >&2
    fails=1
  fi
}
expect 2 "coact-trace: " "unknown command 'sumary'" "$trace" sumary trace.json
expect 2 "coact-trace: " "FILE is required" "$trace" summary
expect 2 "coact-trace: " "--topp" "$trace" summary trace.json --topp 3
expect 2 "coact-trace: " "subcommand" "$trace"
expect 0 "" "" "$trace" --help
expect 0 "" "" "$trace" --version
expect 2 "coact-calibrate: " "--workrs" "$calibrate" --workrs 2
expect 2 "coact-calibrate: " "--workers" "$calibrate" --workers 0 --no-write
expect 0 "" "" "$calibrate" --help
expect 0 "" "" "$calibrate" --version
[[ $fails -eq 0 ]] && echo "usage errors: one line, exit 2, in both tools"
exit $fails
