#!/usr/bin/env bash
# scripts/bootstrap.sh: install every Debian package coact needs (idempotent).
# Quiet when everything is present; a clear error when apt fails.
# Usage: scripts/bootstrap.sh            (needs root or sudo when something is missing)
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  time                   # /usr/bin/time: max RSS of each perf-compare trial
  catch2                 # tests (Catch2 v2)
  libbenchmark-dev       # micro-benchmarks (Google Benchmark)
  libunwind-dev          # fail-fast backtraces; sampled-line regions (unwinding in the signal handler)
  libdw-dev              # sampled-line regions: symbolization to file:line (elfutils libdw)
  libtomlplusplus-dev    # config file (toml++)
  libcli11-dev           # command lines (CLI11)
  nlohmann-json3-dev     # JSON
  libfmt-dev             # formatting
  libzstd-dev            # the dedup archiver's compression
  libssl-dev             # the dedup archiver's SHA-256 fingerprints (libcrypto)
  libcaf-dev             # peer runtime for the benchmarks (CAF 0.17)
  python3-matplotlib python3-numpy python3-scipy  # reports/ (run as /usr/bin/python3)
  coz-profiler           # the reference causal profiler, for side-by-side validation
  cargo librust-tokio-dev  # peer runtime for the benchmarks (tokio 1.24, built offline by Debian's cargo)
)

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
