#!/usr/bin/env bash
# scripts/test.sh: the one test command (README, .ci/run). On a fresh Debian 12
# machine it installs what it needs, builds with warnings as errors, runs every
# test (unit + stress), checks find_package(coact) from a separate consumer
# project, then builds the stress tests under ThreadSanitizer and runs them.
# Usage: scripts/test.sh [--no-tsan]
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
TSAN=1
[ "${1:-}" = "--no-tsan" ] && TSAN=0

step() { printf '\n== %s ==\n' "$*" >&2; }

step "bootstrap (Debian packages)"
bash scripts/bootstrap.sh

step "build (RelWithDebInfo, -Werror)"
cmake -S . -B build/ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOACT_WERROR=ON \
  -DCMAKE_INSTALL_PREFIX="$PWD/build/ci/install" >/dev/null
cmake --build build/ci -j"$JOBS"

step "tests (unit + stress)"
ctest --test-dir build/ci --output-on-failure --timeout 1200

step "install + find_package(coact) consumer"
cmake --install build/ci >/dev/null
cmake -S tests/consumer -B build/consumer -DCMAKE_PREFIX_PATH="$PWD/build/ci/install" >/dev/null
cmake --build build/consumer -j"$JOBS" >/dev/null
./build/consumer/consumer

if [ "$TSAN" = 1 ]; then
  step "ThreadSanitizer: stress + unit tests (COACT_SANITIZE=thread)"
  cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOACT_SANITIZE=thread \
    -DCOACT_BUILD_BENCH=OFF -DCOACT_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build build/tsan -j"$JOBS" --target coact-tests-runtime coact-tests-causal coact-tests-calibrate
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir build/tsan --output-on-failure --timeout 1800 -E '^reports$' -LE accuracy
fi
step "all tests passed"
