# scripts/lib.sh: shared by scripts/run.sh, bench.sh and perf-compare.sh (source it).
# One configure-and-build function for the scripts, and the revision builds of
# perf-compare. Functions print diagnostics as "$COACT_SCRIPT: ..." on stderr
# and exit 1 on a build failure (2 on a bad revision).

COACT_ROOT=${COACT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
COACT_SCRIPT=${COACT_SCRIPT:-$(basename "${0:-lib.sh}")}

coact_log() { echo "$COACT_SCRIPT: $*" >&2; }
coact_die() { local rc=$1; shift; coact_log "$*"; exit "$rc"; }

# coact_configure BUILD_DIR BUILD_TYPE: configures BUILD_DIR from the source
# tree ($COACT_SOURCE_DIR, default the repository) as BUILD_TYPE if it has no
# CMakeCache.txt yet (with ccache when installed); refuses a build dir
# configured as another build type. cmake's output goes to stderr.
coact_configure() {
  local dir=$1 type=$2 src=${COACT_SOURCE_DIR:-$COACT_ROOT} bt
  command -v cmake >/dev/null || coact_die 1 "cmake not found (scripts/bootstrap.sh installs it)"
  if [[ ! -f $dir/CMakeCache.txt ]]; then
    local launcher=()
    command -v ccache >/dev/null &&
      launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    coact_log "configuring $dir ($type)"
    cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE="$type" "${launcher[@]}" >&2 ||
      coact_die 1 "cmake configure of $dir failed"
  fi
  bt=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$dir/CMakeCache.txt")
  [[ $bt == "$type" ]] ||
    coact_die 1 "$dir is configured with CMAKE_BUILD_TYPE='$bt'; this needs $type (use another build directory, or remove $dir)"
  return 0
}

# coact_build BUILD_DIR BUILD_TYPE [TARGET...]: coact_configure, then re-runs
# cmake if a TARGET is not known yet (targets appear when their sources exist
# at configure time), then builds the TARGETs (all if none) with -j${JOBS:-2}.
coact_build() {
  local dir=$1 type=$2 t
  shift 2
  coact_configure "$dir" "$type"
  for t in "$@"; do
    if ! coact_has_target "$dir" "$t"; then
      coact_log "no target $t in $dir; re-running cmake"
      cmake "$dir" >&2 || coact_die 1 "cmake re-configure of $dir failed"
      coact_has_target "$dir" "$t" ||
        coact_die 1 "$dir has no target $t (a dependency missing at configure time? see the cmake output)"
    fi
  done
  coact_log "building ${*:-all} in $dir"
  local targets=()
  (($#)) && targets=(--target "$@")
  cmake --build "$dir" -j"${JOBS:-2}" "${targets[@]}" >&2 ||
    coact_die 1 "building ${*:-all} in $dir failed (see the cmake output above)"
}

# coact_has_target BUILD_DIR TARGET: true if the generated build system has
# TARGET (every target gets a CMakeFiles/<target>.dir, whatever the generator).
coact_has_target() {
  [[ -n $(find "$1" -type d -name "$2.dir" -path '*/CMakeFiles/*' -print -quit 2>/dev/null) ]]
}

# coact_find_binary BUILD_DIR NAME GUESS: the path of executable NAME in the
# build tree (BUILD_DIR/GUESS if it is there), or nothing.
coact_find_binary() {
  if [[ -x $1/$3 ]]; then echo "$1/$3"; return 0; fi
  find "$1" -type f -name "$2" -perm -u+x -print -quit 2>/dev/null
}

# coact_rev_build ROOT REV TARGET...: builds REV (Release) in its own git
# worktree, build/perf-compare/revs/<commit>/{src,build} under ROOT, and prints
# the build directory. Cached by commit: a second call only re-checks the build.
coact_rev_build() {
  local root=$1 rev=$2 sha dir
  shift 2
  sha=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") ||
    coact_die 2 "'$rev' is not a commit of $root"
  dir=$root/build/perf-compare/revs/${sha:0:12}
  if [[ ! -e $dir/src/.git ]]; then
    mkdir -p "$dir"
    coact_log "checking out ${sha:0:12} in $dir/src"
    git -C "$root" worktree add --detach "$dir/src" "$sha" >&2 ||
      coact_die 1 "git worktree add $dir/src $sha failed"
  else
    coact_log "reusing $dir (cached build of ${sha:0:12})"
  fi
  COACT_SOURCE_DIR=$dir/src coact_build "$dir/build" Release "$@"
  echo "$dir/build"
}
