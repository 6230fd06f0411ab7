#!/usr/bin/env bash
# scripts/perf-compare.sh: A/B-compare a tuning knob (or two builds) on the peers
# workloads, with paired, interleaved trials and a verdict that refuses to call
# noise a change.
#
#   PERF_BASE_ENV="COACT_SPIN_WINDOW_USEC=50" PERF_CAND_ENV="COACT_SPIN_WINDOW_USEC=5" \
#     scripts/perf-compare.sh [--trials N] [--workloads W1,W2,...] [--n N] [--workers W]
#                             [--base-bin PATH] [--cand-bin PATH] [--out DIR] [--plot]
#                             [--aa] [--noise-floor PCT] [--aa-from DIR|FILE]
#                             [--seed S] [--timeout-s S]
#
# Options:
#   --trials N        paired trials per workload (default 10, minimum 5)
#   --workloads LIST  comma-separated subset of ping_pong,fan_out,thread_ring,skynet
#                     (default: all four)
#   --n N             workload size passed as --n (default 1000000, as scripts/bench.sh;
#                     skynet needs a power of 10)
#   --workers W       worker threads, passed as --workers (default 2)
#   --base-bin PATH   benchmark program for base; --cand-bin PATH for cand. Either
#                     defaults to build/release/bench/peers/coact-peers, which is
#                     configured (Release) and built with cmake if it is missing.
#                     A program must take --workload W --n N --workers W --watchdog-s S
#                     and print one JSON line with "msgs_per_s" as its last stdout line.
#   --out DIR         where trials.jsonl etc. go (default build/perf-compare/<time>-<pid>);
#                     refuses a DIR that already holds a non-empty trials.jsonl
#   --plot            also write OUT/compare.png with `reports/coact_plot.py compare`
#   --aa              A/A run: cand is run exactly as base (base env, base binary) to
#                     measure the noise floor; PERF_CAND_ENV and --cand-bin are ignored
#   --noise-floor PCT fixed part of the noise floor, in percent (default 2)
#   --aa-from PATH    an earlier --aa run's OUT dir (or its summary.jsonl): per workload,
#                     its A/A spread raises the noise floor (see "Verdict rule")
#   --seed S          seed for the pair order (default: from the clock; recorded)
#   --timeout-s S     seconds before one trial counts as hung (default 300; passed to
#                     the program as --watchdog-s, with `timeout` S+30 as the backstop)
#
# PERF_BASE_ENV / PERF_CAND_ENV: space-separated KEY=VALUE entries; every KEY must
# start with COACT_ and VALUE must be non-empty. A bad entry is an error (exit 2)
# naming the variable and the entry. Each trial is a fresh process that gets the
# current environment plus its variant's entries (not `env -i`): a COACT_* key that
# is already exported applies to both variants unless a variant sets it; a key that
# only one variant sets takes the ambient value (or the built-in default) in the
# other. Both are logged at the start. The program's own warnings (e.g. coact's
# "unknown environment key", which means the knob is misspelt and the run is
# really an A/A) are repeated on stderr.
#
# Trials: per workload, N pairs. Each pair runs base and cand back to back as two
# processes; the order inside a pair is balanced-random: pairs come in blocks of
# two, one AB and one BA, which one first drawn from --seed. This cancels linear
# drift (thermal, a neighbour's load ramping) and first-in-pair effects exactly
# over each block, and randomizing stops a periodic disturbance from aliasing with
# a fixed ABBA pattern. Every trial is appended to OUT/trials.jsonl as soon as it
# ends (one write per line, so an interrupted run keeps its finished trials):
#   {"type":"trial","variant":"base"|"cand","trial":i,"metric":"<workload>.msgs_per_s",
#    "value":X,"workload":...,"n":...,"workers":...,"pos":0|1 (place in its pair),
#    "env":"...","bin":"...","wall_s":...,"load1":...,"unit":...,"run":"<id>"}
# which is the format `reports/coact_plot.py compare` reads. The programs' stderr
# goes to OUT/stderr.log.
#
# Statistics (reports/coact_plot.py's compare_trials, so the plot and the verdict
# agree): per workload, pair base and cand by trial; the relative paired delta is
# d_i = cand_i / base_i - 1 (msgs_per_s: higher is better, so d > 0 = cand faster);
# report the medians, the median of d_i, and a percentile-bootstrap 95% CI of that
# median (10000 resamples of the pairs, fixed seed 0).
#
# Verdict rule: "faster" / "slower" only if BOTH
#   (1) the 95% CI of the median paired delta excludes 0, and
#   (2) |median paired delta| > noise floor,
#       floor = max(--noise-floor (2%), the workload's A/A spread from --aa-from),
#       A/A spread = max(|CI low|, |CI high|) of that A/A run's median delta;
# otherwise "no change (within noise)", with the reason in the JSON summary.
# Why both: (1) alone is not enough. Pairing removes the noise that is shared by
# a pair, not biases that are systematic across a whole run (binary/heap layout,
# ASLR, which variant warms the caches of the other, a neighbour's periodic job),
# and a bootstrap CI of a median from 5-10 pairs is optimistic; such effects give
# consistent deltas of ~1-2% on this shared 2-core box that reproduce within a run
# and not across runs, so a CI that excludes 0 by a hair is not a real change.
# (2) alone would call one lucky outlier a change. The 2% default is the size of
# those effects here; measure your box with --aa (same settings) and pass that
# run to --aa-from to use its measured spread when it is larger. With 5 pairs,
# (1) needs all 5 deltas on one side of 0 (a sign test at ~3%). An --aa run that
# still calls a change is flagged on stderr: the box is too noisy for the setup.
#
# Output: stdout has only JSON lines, one per workload, when its trials are done:
#   {"tool":"perf-compare","workload":...,"metric":...,"verdict":"faster"|"slower"|
#    "no change (within noise)","base_median":...,"cand_median":...,
#    "median_delta_pct":...,"ci95_pct":[lo,hi],"noise_floor_pct":...,...}
# (also appended to OUT/summary.jsonl). The human-readable table (base median,
# cand median, median paired delta %, 95% CI, floor, verdict) goes to stderr and
# to OUT/summary.txt, with progress and diagnostics.
#
# Exit status: 0 done; 1 a trial failed (the message names workload, variant and
# trial; trials.jsonl keeps the finished ones), a build failed, or the plot failed;
# 2 usage (bad option, bad PERF_*_ENV entry); 130 interrupted.
set -euo pipefail

readonly PY=/usr/bin/python3
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT
readonly KNOWN_WORKLOADS=(ping_pong fan_out thread_ring skynet)
readonly BUILD_DIR=$ROOT/build/release
readonly DEFAULT_BIN=$BUILD_DIR/bench/peers/coact-peers

log() { echo "perf-compare.sh: $*" >&2; }
die() { local rc=$1; shift; log "$*"; exit "$rc"; }

usage() {
  cat >&2 <<'EOF'
usage: PERF_BASE_ENV="COACT_K=V ..." PERF_CAND_ENV="COACT_K=V ..." scripts/perf-compare.sh
         [--trials N (>=5, default 10)] [--workloads ping_pong,fan_out,thread_ring,skynet]
         [--n N] [--workers W] [--base-bin PATH] [--cand-bin PATH] [--out DIR] [--plot]
         [--aa] [--noise-floor PCT (default 2)] [--aa-from DIR|FILE] [--seed S] [--timeout-s S]
stdout: one JSON summary line per workload; stderr: table, progress, diagnostics.
See the header of scripts/perf-compare.sh for the verdict rule.
EOF
}

# ---- arguments -------------------------------------------------------------------
trials=10 workloads_arg="" n="" workers=2 base_bin="" cand_bin="" out="" plot=0 aa=0
noise_floor=2 aa_from="" seed="" timeout_s=300
need_val() { (($# >= 2)) || { usage; die 2 "option $1 needs a value"; }; }
while (($#)); do
  opt=$1 val=""
  if [[ $opt == --*=* ]]; then val=${opt#*=}; opt=${opt%%=*}; set -- "$opt" "$val" "${@:2}"; fi
  case $opt in
    -h|--help) usage; exit 0 ;;
    --plot) plot=1; shift; continue ;;
    --aa) aa=1; shift; continue ;;
    --trials|--workloads|--n|--workers|--base-bin|--cand-bin|--out|--noise-floor|--aa-from|--seed|--timeout-s)
      need_val "$@"; val=$2 ;;
    *) usage; die 2 "unknown argument '$opt'" ;;
  esac
  case $opt in
    --trials) trials=$val ;;
    --workloads) workloads_arg=$val ;;
    --n) n=$val ;;
    --workers) workers=$val ;;
    --base-bin) base_bin=$val ;;
    --cand-bin) cand_bin=$val ;;
    --out) out=$val ;;
    --noise-floor) noise_floor=$val ;;
    --aa-from) aa_from=$val ;;
    --seed) seed=$val ;;
    --timeout-s) timeout_s=$val ;;
  esac
  shift 2
done

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
is_uint "$trials" && ((10#$trials >= 5 && 10#$trials <= 100000)) ||
  die 2 "--trials '$trials': want an integer >= 5 (fewer pairs cannot give a usable CI)"
is_uint "$workers" && ((10#$workers >= 1 && 10#$workers <= 1024)) ||
  die 2 "--workers '$workers': want an integer in 1..1024"
is_uint "$timeout_s" && ((10#$timeout_s >= 1 && 10#$timeout_s <= 86400)) ||
  die 2 "--timeout-s '$timeout_s': want an integer in 1..86400"
if [[ -n $n ]]; then
  is_uint "$n" && ((10#$n >= 1)) || die 2 "--n '$n': want a positive integer"
  n=$((10#$n))
else
  n=1000000
fi
[[ $noise_floor =~ ^[0-9]+(\.[0-9]+)?$ ]] || die 2 "--noise-floor '$noise_floor': want a number of percent >= 0 (e.g. 2 or 1.5)"
if [[ -n $seed ]]; then
  is_uint "$seed" && ((10#$seed <= 2147483647)) || die 2 "--seed '$seed': want an integer in 0..2147483647"
  seed=$((10#$seed))
else
  seed=$(( (${EPOCHREALTIME/./} ^ $$) % 2147483647 ))
fi
trials=$((10#$trials)) workers=$((10#$workers)) timeout_s=$((10#$timeout_s))

workloads=("${KNOWN_WORKLOADS[@]}")
if [[ -n $workloads_arg ]]; then
  IFS=, read -r -a workloads <<<"$workloads_arg"
  ((${#workloads[@]})) || die 2 "--workloads: empty list"
  declare -A seen_wl=()
  for w in "${workloads[@]}"; do
    ok=0
    for k in "${KNOWN_WORKLOADS[@]}"; do [[ $w == "$k" ]] && ok=1; done
    ((ok)) || die 2 "--workloads: unknown workload '$w' (known: ${KNOWN_WORKLOADS[*]})"
    [[ -z ${seen_wl[$w]:-} ]] || die 2 "--workloads: '$w' given twice"
    seen_wl[$w]=1
  done
fi
for w in "${workloads[@]}"; do
  if [[ $w == skynet ]] && ! [[ $n =~ ^10*$ ]]; then
    die 2 "--n $n: skynet needs a power of 10 (the number of leaves)"
  fi
done

[[ -x $PY ]] || die 1 "$PY not found (Debian's python3, with numpy, is required)"
[[ -f $ROOT/reports/coact_plot.py ]] || die 1 "$ROOT/reports/coact_plot.py not found (it computes the statistics)"

# ---- PERF_BASE_ENV / PERF_CAND_ENV -------------------------------------------------
# parse_env NAME ARRAY: split $NAME on whitespace into ARRAY, checking every entry.
parse_env() {
  local name=$1 e key
  local -n dest=$2
  local -A keys=()
  dest=()
  local raw=${!name:-}
  local entries=()
  read -r -a entries <<<"$raw" || true
  for e in "${entries[@]}"; do
    if ! [[ $e == *=* ]]; then
      die 2 "$name: bad entry '$e': not KEY=VALUE (want space-separated COACT_KEY=VALUE entries, e.g. COACT_SPIN_WINDOW_USEC=50)"
    fi
    key=${e%%=*}
    if ! [[ $key == COACT_* ]]; then
      die 2 "$name: bad entry '$e': key '$key' does not start with COACT_ (only coact's own knobs can be compared)"
    fi
    if ! [[ $key =~ ^COACT_[A-Z0-9_]+$ ]]; then
      die 2 "$name: bad entry '$e': key '$key' is not of the form COACT_[A-Z0-9_]+"
    fi
    if [[ -z ${e#*=} ]]; then
      die 2 "$name: bad entry '$e': empty value for $key"
    fi
    [[ -z ${keys[$key]:-} ]] || die 2 "$name: bad entry '$e': $key is set twice"
    keys[$key]=1
    dest+=("$e")
  done
}
base_env=() cand_env=()
parse_env PERF_BASE_ENV base_env
parse_env PERF_CAND_ENV cand_env

if ((aa)); then
  [[ -z ${PERF_CAND_ENV:-} ]] || log "--aa: ignoring PERF_CAND_ENV ('$PERF_CAND_ENV'); both variants use PERF_BASE_ENV"
  [[ -z $cand_bin ]] || log "--aa: ignoring --cand-bin; both variants use the base binary"
  cand_env=("${base_env[@]}")
  cand_bin=$base_bin
fi

# ---- binaries ------------------------------------------------------------------------
build_default_bin() {
  log "$DEFAULT_BIN is missing; building it"
  command -v cmake >/dev/null || die 1 "cmake not found (needed to build $DEFAULT_BIN)"
  if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
    log "configuring $BUILD_DIR (Release)"
    cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >&2 ||
      die 1 "cmake configure of $BUILD_DIR failed"
  fi
  local bt
  bt=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
  [[ $bt == Release ]] ||
    die 1 "$BUILD_DIR is configured with CMAKE_BUILD_TYPE='$bt'; benchmarks need Release"
  cmake --build "$BUILD_DIR" -j2 --target coact-peers >&2 ||
    die 1 "building coact-peers in $BUILD_DIR failed (see the cmake output above)"
  [[ -x $DEFAULT_BIN ]] || die 1 "built coact-peers, but $DEFAULT_BIN is still missing"
}
resolve_bin() {  # resolve_bin OPTION PATH -> absolute path on stdout
  local opt=$1 p=$2
  [[ -n $p ]] || { echo "$DEFAULT_BIN"; return 0; }
  [[ -f $p && -x $p ]] || die 2 "$opt '$p': not an executable file"
  echo "$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"
}
base_bin=$(resolve_bin --base-bin "$base_bin")
cand_bin=$(resolve_bin --cand-bin "$cand_bin")
if [[ $base_bin == "$DEFAULT_BIN" || $cand_bin == "$DEFAULT_BIN" ]] && [[ ! -x $DEFAULT_BIN ]]; then
  build_default_bin
fi

# ---- output directory ------------------------------------------------------------------
if [[ -z $out ]]; then
  out=$ROOT/build/perf-compare/$(date +%Y%m%d-%H%M%S)-$$
fi
mkdir -p "$out" || die 2 "--out '$out': cannot create the directory"
out=$(cd "$out" && pwd)
TRIALS_FILE=$out/trials.jsonl
SUMMARY_FILE=$out/summary.jsonl
STDERR_LOG=$out/stderr.log
if [[ -s $TRIALS_FILE ]]; then
  die 2 "--out '$out' already holds trials.jsonl (from an earlier run); choose another --out or remove it"
fi
: >"$TRIALS_FILE"
: >"$SUMMARY_FILE"
: >"$STDERR_LOG"
run_id="$(date +%Y%m%dT%H%M%S)-$$"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/perf-compare.XXXXXX")
child=""
trials_done=0
on_exit() { rm -rf "$tmp"; }
on_signal() {
  local sig=$1
  if [[ -n $child ]]; then kill -TERM "$child" 2>/dev/null || true; wait "$child" 2>/dev/null || true; fi
  log "interrupted ($sig) after $trials_done trial(s); they are kept in $TRIALS_FILE" \
      "(reports/coact_plot.py compare $TRIALS_FILE analyses them)"
  exit 130
}
trap on_exit EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM

# ---- environment of the trials --------------------------------------------------------
# Removed from every trial: our own inputs, and bench.sh's knobs (coact warns about
# unknown COACT_* keys).
child_unset=(-u PERF_BASE_ENV -u PERF_CAND_ENV)
ambient_coact=()
while IFS= read -r var; do
  if [[ $var == COACT_BENCH_* ]]; then child_unset+=(-u "$var")
  elif [[ $var == COACT_* ]]; then ambient_coact+=("$var=${!var}")
  fi
done < <(compgen -e)

json_str() {
  local s=$1
  s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\t'/\\t}; s=${s//$'\n'/\\n}; s=${s//$'\r'/\\r}
  printf '"%s"' "$s"
}
base_env_str="${base_env[*]}"
cand_env_str="${cand_env[*]}"

log "run $run_id: out=$out"
log "base: env '${base_env_str}' bin $base_bin"
log "cand: env '${cand_env_str}' bin $cand_bin$( ((aa)) && echo ' (A/A: same as base)')"
if ((${#ambient_coact[@]})); then
  log "ambient COACT_* (applies to both variants unless a variant sets the key): ${ambient_coact[*]}"
fi
# Keys that only one variant sets.
declare -A bkeys=() ckeys=()
for e in "${base_env[@]}"; do bkeys[${e%%=*}]=${e#*=}; done
for e in "${cand_env[@]}"; do ckeys[${e%%=*}]=${e#*=}; done
other_value() { if [[ -n ${!1+x} ]]; then echo "the ambient value '${!1}'"; else echo "coact's default"; fi; }
for k in "${!bkeys[@]}"; do
  [[ -n ${ckeys[$k]+x} ]] || log "note: $k is set only for base; cand gets $(other_value "$k")"
done
for k in "${!ckeys[@]}"; do
  [[ -n ${bkeys[$k]+x} ]] || log "note: $k is set only for cand; base gets $(other_value "$k")"
done
if [[ -n ${bkeys[COACT_WORKERS]+x} || -n ${ckeys[COACT_WORKERS]+x} ]]; then
  log "warning: coact-peers forces the worker count to --workers ($workers); COACT_WORKERS has no effect there"
fi
if ((!aa)) && [[ $base_env_str == "$cand_env_str" && $base_bin == "$cand_bin" ]]; then
  log "warning: base and cand are identical (same env, same binary): this is an A/A run; use --aa to say so"
fi
log "pair order seed $seed (balanced: one AB and one BA per block of two pairs)"
{
  printf '{"run":%s,"root":%s,"git":%s,"base_env":%s,"cand_env":%s,"base_bin":%s,"cand_bin":%s,' \
    "$(json_str "$run_id")" "$(json_str "$ROOT")" \
    "$(json_str "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)")" \
    "$(json_str "$base_env_str")" "$(json_str "$cand_env_str")" "$(json_str "$base_bin")" "$(json_str "$cand_bin")"
  printf '"aa":%s,"trials":%d,"n":%d,"workers":%d,"seed":%d,"noise_floor_pct":%s,"nproc":%d,"ambient":%s}\n' \
    "$( ((aa)) && echo true || echo false)" "$trials" "$n" "$workers" "$seed" "$noise_floor" "$(nproc)" \
    "$(json_str "${ambient_coact[*]}")"
} >"$out/meta.json"

# ---- one trial ----------------------------------------------------------------------------
seen_warnings=""
# run_trial VARIANT WORKLOAD TRIAL POS: runs one process, appends its record to trials.jsonl.
run_trial() {
  local variant=$1 wl=$2 t=$3 pos=$4 bin envs_str rc=0 line value unit="" load1 t0 t1 wall
  local -a envs
  if [[ $variant == base ]]; then bin=$base_bin envs=("${base_env[@]}") envs_str=$base_env_str
  else bin=$cand_bin envs=("${cand_env[@]}") envs_str=$cand_env_str; fi
  local what="$wl: $variant trial $t/$trials"
  read -r load1 _ </proc/loadavg
  t0=$EPOCHREALTIME
  env "${child_unset[@]}" "${envs[@]}" \
    timeout -k 10 $((timeout_s + 30)) "$bin" --workload "$wl" --n "$n" --workers "$workers" \
    --watchdog-s "$timeout_s" >"$tmp/out" 2>"$tmp/err" &
  child=$!
  wait "$child" || rc=$?
  child=""
  t1=$EPOCHREALTIME
  wall=$(( ${t1/./} - ${t0/./} ))  # microseconds
  { echo "=== $what (pos $pos, env '$envs_str', exit $rc) ==="; cat "$tmp/err"; } >>"$STDERR_LOG"
  # Repeat each distinct warning from the programs once (e.g. an unknown COACT_* key).
  local w
  while IFS= read -r w; do
    [[ -n $w ]] || continue
    if [[ $seen_warnings != *"|$variant:$w|"* ]]; then
      seen_warnings+="|$variant:$w|"
      log "$variant: program warning: $w"
    fi
  done < <(grep -i 'warning' "$tmp/err" | head -n 5 || true)

  fail() {
    log "FAILED: $what: $1 (n=$n, workers=$workers, env '$envs_str', bin $bin)"
    if [[ -s $tmp/err ]]; then
      log "its stderr (last lines; all of it in $STDERR_LOG):"
      tail -n 8 "$tmp/err" | sed 's/^/    /' >&2
    fi
    log "$trials_done finished trial(s) are kept in $TRIALS_FILE"
    exit 1
  }
  if ((rc == 124 || rc == 137)); then fail "timed out after $((timeout_s + 30))s"
  elif ((rc == 3)); then fail "hung: not done after ${timeout_s}s (the program's watchdog fired)"
  elif ((rc != 0)); then fail "exit status $rc"
  fi
  line=$(grep -v '^[[:space:]]*$' "$tmp/out" | tail -n 1 || true)
  [[ $line =~ ^[[:space:]]*\{.*\}[[:space:]]*$ ]] || fail "printed no JSON line (last stdout line: '${line:0:200}')"
  [[ $line =~ \"msgs_per_s\"[[:space:]]*:[[:space:]]*(-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?) ]] ||
    fail "its JSON line has no numeric msgs_per_s: ${line:0:200}"
  value=${BASH_REMATCH[1]}
  if [[ $value == -* ]] || [[ $value =~ ^0*(\.0*)?([eE].*)?$ ]]; then
    fail "msgs_per_s is not positive ($value)"
  fi
  if [[ $line =~ \"workload\"[[:space:]]*:[[:space:]]*\"([^\"]*)\" ]] && [[ ${BASH_REMATCH[1]} != "$wl" ]]; then
    fail "it ran workload '${BASH_REMATCH[1]}', not '$wl'"
  fi
  [[ $line =~ \"unit\"[[:space:]]*:[[:space:]]*\"([a-z_]*)\" ]] && unit=${BASH_REMATCH[1]}
  printf '{"type":"trial","variant":"%s","trial":%d,"metric":%s,"value":%s,"workload":%s,"n":%d,"workers":%d,"pos":%d,"env":%s,"bin":%s,"wall_s":%d.%06d,"load1":%s,"unit":%s,"run":%s}\n' \
    "$variant" "$t" "$(json_str "$wl.msgs_per_s")" "$value" "$(json_str "$wl")" "$n" "$workers" "$pos" \
    "$(json_str "$envs_str")" "$(json_str "$bin")" $((wall / 1000000)) $((wall % 1000000)) \
    "$load1" "$(if [[ -n $unit ]]; then json_str "$unit"; else echo null; fi)" "$(json_str "$run_id")" >>"$TRIALS_FILE"
  trials_done=$((trials_done + 1))
  log "$what: $value msgs/s ($(printf '%d.%02d' $((wall / 1000000)) $((wall % 1000000 / 10000)))s, load $load1)"
}

# ---- analysis (Python: reports/coact_plot.py's statistics) -----------------------------------
read -r -d '' ANALYZE <<'PYEOF' || true
import json, math, os, sys, warnings
root = sys.argv[1]
sys.path.insert(0, os.path.join(root, "reports"))
import coact_plot as cp
import numpy as np

def fmt_rate(x):
    return f"{x:,.0f}"

def pct(x):
    return "n/a" if x is None else f"{x:+.2f}%"

mode = sys.argv[2]
if mode == "workload":
    (trials_path, metric, workload, floor_s, aa_from, aa, meta_s) = sys.argv[3:10]
    meta = json.loads(meta_s)
    aa = aa == "1"
    floor_fixed = float(floor_s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cp.ProfileWarning)
        trials = [t for t in cp.load_trials(trials_path) if t.metric == metric]
        if not trials:
            sys.exit(f"perf-compare.sh: {workload}: no trials recorded for {metric}")
        (m,) = cp.compare_trials(trials, n_boot=10000, seed=0, source=trials_path)
    if not math.isfinite(m.rel_median):
        sys.exit(f"perf-compare.sh: {workload}: a base trial has msgs_per_s 0; no relative delta")
    med = m.rel_median * 100
    lo, hi = (m.rel_ci[0] * 100, m.rel_ci[1] * 100)
    floor, floor_src = floor_fixed, "--noise-floor"
    aa_spread = None
    if aa_from:
        path = os.path.join(aa_from, "summary.jsonl") if os.path.isdir(aa_from) else aa_from
        rows = []
        try:
            with open(path) as f:
                for line in f:
                    line = line.strip()
                    if line:
                        rows.append(json.loads(line))
        except (OSError, ValueError) as e:
            sys.exit(f"perf-compare.sh: --aa-from {aa_from}: cannot read {path}: {e}")
        hits = [r for r in rows if r.get("workload") == workload and r.get("aa") is True]
        if not hits:
            print(f"perf-compare.sh: warning: --aa-from {path} has no A/A result for {workload}; "
                  f"the floor is --noise-floor alone", file=sys.stderr)
        else:
            r = hits[-1]
            aa_spread = float(r["aa_spread_pct"])
            if (r.get("n"), r.get("workers")) != (meta["n"], meta["workers"]):
                print(f"perf-compare.sh: warning: the A/A run for {workload} used n={r.get('n')} "
                      f"workers={r.get('workers')}, this run n={meta['n']} workers={meta['workers']}",
                      file=sys.stderr)
            if aa_spread > floor:
                floor, floor_src = aa_spread, f"A/A spread ({path})"
    excl = lo > 0 or hi < 0   # the CI of the relative delta, as reported
    if excl and abs(med) > floor:
        verdict = "faster" if med > 0 else "slower"
        reason = (f"95% CI [{lo:+.2f}%, {hi:+.2f}%] excludes 0 and |median delta| "
                  f"{abs(med):.2f}% > noise floor {floor:.2f}%")
    elif excl:
        verdict = "no change (within noise)"
        reason = (f"95% CI excludes 0 but |median delta| {abs(med):.2f}% <= noise floor "
                  f"{floor:.2f}%: consistent but too small to tell from run-level bias")
    else:
        verdict = "no change (within noise)"
        reason = f"95% CI [{lo:+.2f}%, {hi:+.2f}%] includes 0"
        if abs(med) > floor:
            reason += f" (|median delta| {abs(med):.2f}% is above the floor: inconclusive, more trials may settle it)"
    base_med = float(np.median(m.base))
    cand_med = float(np.median(m.cand))
    units = {t.metric for t in trials}
    out = {
        "tool": "perf-compare", "run": meta["run"], "workload": workload, "metric": metric,
        "verdict": verdict,
        "base_median": round(base_med, 1), "cand_median": round(cand_med, 1),
        "median_delta_pct": round(med, 3), "ci95_pct": [round(lo, 3), round(hi, 3)],
        "ci_excludes_zero": excl,
        "noise_floor_pct": round(floor, 3), "noise_floor_source": floor_src,
        "reason": reason,
        "pairs": len(m.trials), "n": meta["n"], "workers": meta["workers"], "aa": aa,
        "base_env": meta["base_env"], "cand_env": meta["cand_env"],
        "base_bin": meta["base_bin"], "cand_bin": meta["cand_bin"],
        "base_trials": [float(x) for x in m.base], "cand_trials": [float(x) for x in m.cand],
        "deltas_pct": [round(float(c / b - 1) * 100, 3) for b, c in zip(m.base, m.cand)],
        "order_seed": meta["seed"],
        "higher_is_better": True,
    }
    if aa_spread is not None:
        out["aa_from_spread_pct"] = aa_spread
    if aa:
        out["aa_spread_pct"] = round(max(abs(lo), abs(hi)), 3)
    line = json.dumps(out, separators=(",", ":"))
    print(line, flush=True)
    with open(meta["summary"], "a") as f:
        f.write(line + "\n")
    print(f"perf-compare.sh: {workload}: base {fmt_rate(base_med)}  cand {fmt_rate(cand_med)}  "
          f"delta {pct(med)}  CI [{pct(lo)}, {pct(hi)}]  floor {floor:.2f}%  => {verdict.upper()}",
          file=sys.stderr)
    if aa and verdict != "no change (within noise)":
        print(f"perf-compare.sh: WARNING: the A/A run of {workload} called a change ({verdict}): "
              f"this box/setup is noisier than the rule assumes; use more trials or a larger --noise-floor",
              file=sys.stderr)
elif mode == "table":
    summary_path, meta_s = sys.argv[3:5]
    meta = json.loads(meta_s)
    rows = [json.loads(l) for l in open(summary_path) if l.strip()]
    head = ["workload", "pairs", "base median", "cand median", "median delta", "95% CI of delta",
            "floor", "verdict"]
    table = [head]
    for r in rows:
        lo, hi = r["ci95_pct"]
        v = r["verdict"] + (f" (A/A spread {r['aa_spread_pct']:.2f}%)" if r.get("aa") else "")
        table.append([r["workload"], str(r["pairs"]), fmt_rate(r["base_median"]),
                      fmt_rate(r["cand_median"]), pct(r["median_delta_pct"]),
                      f"[{pct(lo)}, {pct(hi)}]", f"{r['noise_floor_pct']:.2f}%", v])
    w = [max(len(r[i]) for r in table) for i in range(len(head))]
    lines = [f"perf-compare {meta['run']}: base env '{meta['base_env']}' vs cand env "
             f"'{meta['cand_env']}'" + (" (A/A)" if meta["aa"] else ""),
             f"  n={meta['n']} workers={meta['workers']}; base bin {meta['base_bin']}; "
             f"cand bin {meta['cand_bin']}"]
    lines += ["  ".join(c.ljust(w[i]) if i in (0, 7) else c.rjust(w[i]) for i, c in enumerate(r)).rstrip()
              for r in table]
    lines.append("msgs/s, higher is better; delta = median of cand/base - 1 over pairs; "
                 "CI: bootstrap 95% of that median.")
    lines.append("verdict: faster/slower only if the CI excludes 0 AND |median delta| > floor.")
    text = "\n".join(lines) + "\n"
    sys.stderr.write(text)
    with open(meta["summary_txt"], "w") as f:
        f.write(text)
PYEOF

meta_json() {
  printf '{"run":%s,"n":%d,"workers":%d,"seed":%d,"base_env":%s,"cand_env":%s,"base_bin":%s,"cand_bin":%s,"aa":%s,"summary":%s,"summary_txt":%s}' \
    "$(json_str "$run_id")" "$n" "$workers" "$seed" "$(json_str "$base_env_str")" "$(json_str "$cand_env_str")" \
    "$(json_str "$base_bin")" "$(json_str "$cand_bin")" "$( ((aa)) && echo true || echo false)" \
    "$(json_str "$SUMMARY_FILE")" "$(json_str "$out/summary.txt")"
}
analyze() { PYTHONDONTWRITEBYTECODE=1 "$PY" -c "$ANALYZE" "$ROOT" "$@"; }

# ---- main loop ------------------------------------------------------------------------------
RANDOM=$seed
META=$(meta_json)
for wl in "${workloads[@]}"; do
  log "$wl: n=$n, workers=$workers, $trials pairs, balanced-random order"
  first=""
  for ((t = 1; t <= trials; t++)); do
    if (((t - 1) % 2 == 0)); then
      if ((RANDOM % 2)); then first=cand; else first=base; fi
    else
      if [[ $first == base ]]; then first=cand; else first=base; fi
    fi
    if [[ $first == base ]]; then second=cand; else second=base; fi
    run_trial "$first" "$wl" "$t" 0
    run_trial "$second" "$wl" "$t" 1
  done
  analyze workload "$TRIALS_FILE" "$wl.msgs_per_s" "$wl" "$noise_floor" "$aa_from" "$aa" "$META" ||
    die 1 "$wl: analysing the trials failed"
done

analyze table "$SUMMARY_FILE" "$META" || die 1 "printing the summary table failed"

if ((plot)); then
  title="perf-compare: base '${base_env_str}' vs cand '${cand_env_str}'"
  ((aa)) && title="perf-compare A/A: '${base_env_str}'"
  PYTHONDONTWRITEBYTECODE=1 "$PY" "$ROOT/reports/coact_plot.py" compare "$TRIALS_FILE" \
    -o "$out/compare.png" -t "$title" >"$out/compare.txt" ||
    die 1 "plotting failed: reports/coact_plot.py compare $TRIALS_FILE -o $out/compare.png"
fi
log "trials: $TRIALS_FILE; summary: $SUMMARY_FILE, $out/summary.txt"
