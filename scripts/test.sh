#!/usr/bin/env bash
# scripts/test.sh: the one test command (README, .ci/run). On a fresh Debian 12
# machine it installs what it needs, builds with warnings as errors, runs every
# test (unit + stress), checks find_package(coact) from a separate consumer
# project, then builds the stress tests under ThreadSanitizer and runs them.
# Usage: scripts/test.sh [--no-tsan]   (JOBS=N sets the build parallelism)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
TSAN=1
for arg in "$@"; do
  case $arg in
    --no-tsan) TSAN=0 ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument '$arg' (expected --no-tsan or --help)" >&2; exit 2 ;;
  esac
done

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
# `cmake --install` from a build where only some targets were built (as
# scripts/run.sh leaves build/release): the install builds what it installs.
cmake -S . -B build/install-check -DCMAKE_BUILD_TYPE=Release -DCOACT_BUILD_TESTS=OFF \
  -DCOACT_BUILD_BENCH=OFF -DCOACT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/install-check -j"$JOBS" --target coact-profile >/dev/null
rm -rf build/install-check/prefix
cmake --install build/install-check --prefix "$PWD/build/install-check/prefix" >/dev/null
test -x build/install-check/prefix/bin/coact-calibrate
test -x build/install-check/prefix/bin/coact-trace-view
# Man pages go under the prefix (share/man/man1), where MANPATH finds them.
if command -v help2man >/dev/null; then
  test -f build/install-check/prefix/share/man/man1/coact-profile.1 ||
    { echo "FAIL: coact-profile.1 not installed under the prefix's share/man/man1" >&2; exit 1; }
fi
cmake -S tests/consumer -B build/consumer -DCMAKE_PREFIX_PATH="$PWD/build/install-check/prefix" >/dev/null
cmake --build build/consumer -j"$JOBS" >/dev/null
./build/consumer/consumer
# The installed report tool plots from outside the source tree.
(cd build/consumer && "$OLDPWD/build/ci/install/bin/coact-plot" profile \
  "$OLDPWD/tests/reports/fixtures/toy.coz" -o installed-plot.png >/dev/null)

if [ "$TSAN" = 1 ]; then
  step "ThreadSanitizer: stress + unit tests (COACT_SANITIZE=thread)"
  cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOACT_SANITIZE=thread \
    -DCOACT_BUILD_BENCH=OFF -DCOACT_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build build/tsan -j"$JOBS" --target coact-tests-runtime coact-tests-causal coact-tests-calibrate
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir build/tsan --output-on-failure --timeout 1800 -R '^coact-tests-' -LE accuracy
fi
step "all tests passed"
