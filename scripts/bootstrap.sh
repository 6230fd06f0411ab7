#!/usr/bin/env bash
# scripts/bootstrap.sh: install the Debian packages coact needs (idempotent).
# Quiet when everything is present; a clear error when apt fails.
# Usage: scripts/bootstrap.sh            everything: tests, benchmarks and their peers, examples, validation
#        scripts/bootstrap.sh --library  only what building and installing the library and tools needs
# (needs root or sudo when something is missing)
set -euo pipefail

LIBRARY=(
  build-essential cmake pkg-config
  libunwind-dev          # fail-fast backtraces; sampled-line regions (unwinding in the signal handler)
  libdw-dev              # sampled-line regions: symbolization to file:line (elfutils libdw)
  libtomlplusplus-dev    # config file (toml++)
  libcli11-dev           # command lines (CLI11)
  nlohmann-json3-dev     # JSON
  libfmt-dev             # formatting
  python3-matplotlib python3-numpy python3-scipy  # coact-plot (run as /usr/bin/python3)
  help2man               # the tools' man pages, generated from their --help
)
PACKAGES=(
  "${LIBRARY[@]}"
  git
  time                   # /usr/bin/time: max RSS of each perf-compare trial
  catch2                 # tests (Catch2 v2)
  libbenchmark-dev       # micro-benchmarks (Google Benchmark)
  libzstd-dev            # the dedup archiver's compression
  libssl-dev             # the dedup archiver's SHA-256 fingerprints (libcrypto)
  libcaf-dev             # peer runtime for the benchmarks (CAF 0.17)
  coz-profiler           # the reference causal profiler, for side-by-side validation
  cargo librust-tokio-dev  # peer runtime for the benchmarks (tokio 1.24, built offline by Debian's cargo)
  slurmctld slurmd slurm-client munge  # sharded sweeps: the test starts a one-node Slurm (scripts/slurm-sweep.sh)
  redis-server redis-tools  # examples/kv: the anchor server (redis-server 7) and the client (redis-benchmark, redis-cli)
)

case "${1:-}" in
  "") ;;
  --library) PACKAGES=("${LIBRARY[@]}") ;;
  -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "bootstrap: unknown argument '$1' (expected --library or nothing)" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "bootstrap: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
echo "bootstrap: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! $SUDO apt-get update -q >"$log" 2>&1; then
  echo "bootstrap: 'apt-get update' failed; last lines:" >&2; tail -n 20 "$log" >&2; exit 1
fi
if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  echo "bootstrap: 'apt-get install ${missing[*]}' failed; last lines:" >&2; tail -n 20 "$log" >&2; exit 1
fi
rm -f "$log"
echo "bootstrap: done" >&2
