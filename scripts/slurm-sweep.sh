#!/usr/bin/env bash
# scripts/slurm-sweep.sh: a causal-profiling sweep split into N shards, placed
# by Slurm as one job array, then merged into one profile and plotted.
#
# Steps:
#  1. Write OUT/shard.sbatch: `cd OUT && coact-profile run --quiet
#     --stop-program --duration-s S [--profile-arg ...] -- PROGRAM ARGS...`
#     (the program is told to stop when its shard's sweep ends). coact-profile
#     reads the array task's SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT, so
#     each task is one shard: its own seed, shard and host in its records, and
#     its own profile, OUT/profile-shard-K-of-N.{coz,jsonl}.
#  2. Submit it: `sbatch --parsable --array=0-(N-1)` (one whole node per shard
#     unless --no-exclusive: a shard that shares a machine measures the other).
#  3. Wait: poll `scontrol -o show job ID` (each call under `timeout`: a
#     client facing a dead controller hangs) until every task has ended, or
#     --wait-s has passed (then the job is cancelled: exit 1).
#  4. Merge and plot: coact-plot profile OUT (every shard's profile, each
#     normalised by its own shard's baseline, then pooled) -> OUT/ranking.txt,
#     OUT/curves.png; coact-plot estimate OUT --json -> OUT/estimates.json.
# Exit status: 0 when every shard succeeded and the merge worked; 1 when a
# shard failed (the others are still merged when possible), the wait timed
# out, or the merge failed; 2 on a usage error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prog=$(basename "$0")

usage() {
  cat <<EOF
Usage: $prog [options] -- PROGRAM ARGS...

Runs PROGRAM under coact-profile as a Slurm job array of --shards tasks, each
sweeping for --duration-s seconds, then merges the shards' profiles and plots.

Options:
  -n, --shards N          shards (array tasks), 1..1000 (default 4)
  -t, --duration-s S      each shard's sweep length, seconds (default 60)
  -p, --partition NAME    Slurm partition (default: the cluster's default)
  -o, --out DIR           output directory (default: ./slurm-sweep-YYYYmmdd-HHMMSS)
      --profile-tool PATH coact-profile (default: on PATH)
      --plot CMD          the coact-plot command (default: coact-plot on PATH, else
                          /usr/bin/python3 $here/../reports/coact_plot.py)
      --profile-arg ARG   one more coact-profile run option (repeatable), e.g.
                          --profile-arg=--progress=requests
      --at S              virtual speedup the estimates also predict at (default 0.25)
      --sbatch-arg ARG    one more sbatch option (repeatable), e.g. --sbatch-arg=--account=x
      --no-exclusive      let shards share a node (default: one node per shard)
      --time-limit MIN    each task's Slurm time limit, minutes (default: 2 x the sweep + 5)
      --wait-s S          give up waiting after S seconds (default: shards x (sweep + 60) + 300)
  -h, --help              this text

Example:
  $prog --shards 8 --duration-s 300 --partition batch -- ./server --port 8080
EOF
}

die_usage() { echo "$prog: $* (see $prog --help)" >&2; exit 2; }
options="--shards --duration-s --partition --out --profile-tool --plot --profile-arg --at --sbatch-arg --no-exclusive --time-limit --wait-s --help"
# The options `$1` is a prefix of, or that are a prefix of it ("" if none).
did_you_mean() {
  local o found=""
  for o in $options; do
    if [[ ${#1} -ge 4 && ( $o == "$1"* || $1 == "$o"* ) ]]; then found+="${found:+ or }$o"; fi
  done
  [ -z "$found" ] || echo ": did you mean $found?"
}
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

shards=4
duration=60
partition=""
out=""
tool=""
plot=""
at=0.25
exclusive=1
time_limit=""
wait_s=""
profile_args=()
sbatch_args=()
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -n|--shards|-t|--duration-s|-p|--partition|-o|--out|--profile-tool|--plot|--profile-arg|--at|--sbatch-arg|--time-limit|--wait-s)
      [ $# -ge 2 ] || die_usage "$1 needs a value"
      opt=$1 val=$2; shift 2 ;;
    --no-exclusive) exclusive=0; shift; continue ;;
    --*=*) opt=${1%%=*} val=${1#*=}; shift ;;
    -*) die_usage "unknown option '${1%%=*}'$(did_you_mean "${1%%=*}")" ;;
    *) die_usage "'$1' is not an option: the program and its arguments come after --: $prog [options] -- $1 ..." ;;
  esac
  case $opt in
    -n|--shards) shards=$val ;;
    -t|--duration-s) duration=$val ;;
    -p|--partition) partition=$val ;;
    -o|--out) out=$val ;;
    --profile-tool) tool=$val ;;
    --plot) plot=$val ;;
    --profile-arg) profile_args+=("$val") ;;
    --at) at=$val ;;
    --sbatch-arg) sbatch_args+=("$val") ;;
    --time-limit) time_limit=$val ;;
    --wait-s) wait_s=$val ;;
    *) die_usage "unknown option '$opt'$(did_you_mean "$opt")" ;;
  esac
done
[ $# -gt 0 ] || die_usage "no program given; it comes after --: $prog [options] -- PROGRAM ARGS..."
is_uint "$shards" && [ "$shards" -ge 1 ] && [ "$shards" -le 1000 ] || die_usage "--shards '$shards': expected an integer in 1..1000"
is_uint "$duration" && [ "$duration" -ge 1 ] || die_usage "--duration-s '$duration': expected a whole number of seconds >= 1"
[ -z "$time_limit" ] || { is_uint "$time_limit" && [ "$time_limit" -ge 1 ]; } || die_usage "--time-limit '$time_limit': expected minutes >= 1"
[ -z "$wait_s" ] || { is_uint "$wait_s" && [ "$wait_s" -ge 1 ]; } || die_usage "--wait-s '$wait_s': expected seconds >= 1"
[[ $at =~ ^(0(\.[0-9]+)?|1(\.0*)?|\.[0-9]+)$ ]] && [ "$at" != 0 ] || die_usage "--at '$at': expected a virtual speedup in (0, 1]"
[ -n "$time_limit" ] || time_limit=$(( (2 * duration + 59) / 60 + 5 ))
[ -n "$wait_s" ] || wait_s=$(( shards * (duration + 60) + 300 ))

if [ -z "$tool" ]; then
  tool=$(command -v coact-profile || true)
  [ -n "$tool" ] || die_usage "coact-profile is not on PATH: pass --profile-tool PATH"
fi
[ -x "$tool" ] || die_usage "--profile-tool '$tool': not an executable file"
tool=$(cd "$(dirname "$tool")" && pwd)/$(basename "$tool")
if [ -n "$plot" ]; then
  read -r -a plot_cmd <<<"$plot"
elif command -v coact-plot >/dev/null 2>&1; then
  plot_cmd=(coact-plot)
else
  plot_cmd=(/usr/bin/python3 "$here/../reports/coact_plot.py")
fi
for c in sbatch scontrol scancel; do
  command -v "$c" >/dev/null 2>&1 || die_usage "'$c' is not on PATH: is this a Slurm submit host? (Debian: slurm-client)"
done

# The program as the job will see it (it runs in OUT): a relative path made absolute.
program=$1; shift
if [[ $program == */* ]]; then
  [ -x "$program" ] || die_usage "program '$program': not an executable file"
  program=$(cd "$(dirname "$program")" && pwd)/$(basename "$program")
fi

[ -n "$out" ] || out=./slurm-sweep-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out" || die_usage "--out '$out': cannot create the directory"
out=$(cd "$out" && pwd)
if compgen -G "$out/profile-shard-*" >/dev/null; then
  die_usage "--out '$out' already holds shard profiles: choose a new directory (merging two sweeps would pool them)"
fi

# Step 1.
{
  echo "#!/bin/bash"
  echo "# Written by $prog: one shard of a sharded coact-profile sweep (SLURM_ARRAY_TASK_ID = the shard)."
  printf 'cd %q || exit 1\n' "$out"
  printf 'exec %q run --quiet --stop-program --duration-s %q' "$tool" "$duration"
  for a in "${profile_args[@]}"; do printf ' %q' "$a"; done
  printf ' -- %q' "$program"
  for a in "$@"; do printf ' %q' "$a"; done
  echo
} >"$out/shard.sbatch"
chmod +x "$out/shard.sbatch"

# Step 2.
submit=(sbatch --parsable --array="0-$((shards - 1))" --job-name=coact-sweep --time="$time_limit"
        --output="$out/shard-%a.log" --chdir="$out")
[ -z "$partition" ] || submit+=(--partition="$partition")
[ "$exclusive" = 0 ] || submit+=(--exclusive)
submit+=("${sbatch_args[@]}" "$out/shard.sbatch")
if ! jobid=$(timeout 60 "${submit[@]}" 2>"$out/sbatch.err"); then
  echo "$prog: sbatch failed: $(cat "$out/sbatch.err")" >&2
  exit 1
fi
jobid=${jobid%%;*}
echo "$prog: submitted job array $jobid ($shards shards x ${duration} s) from $out" >&2

# Step 3. One line per task (a pending range is one line: ArrayTaskId=1-3).
terminal=" COMPLETED FAILED CANCELLED TIMEOUT NODE_FAIL OUT_OF_MEMORY PREEMPTED BOOT_FAIL DEADLINE "
deadline=$(( $(date +%s) + wait_s ))
declare -A state=() exitcode=()
gone=0
while :; do
  if lines=$(timeout 15 scontrol -o show job "$jobid" 2>"$out/scontrol.err"); then
    gone=0
    state=() exitcode=()
    while read -r line; do
      [ -n "$line" ] || continue
      task="" st="" ec=""
      read -r -a kvs <<<"$line"
      for kv in "${kvs[@]}"; do
        case $kv in
          ArrayTaskId=*) task=${kv#*=} ;;
          JobState=*) st=${kv#*=} ;;
          ExitCode=*) ec=${kv#*=} ;;
        esac
      done
      if [[ $task =~ ^[0-9]+$ ]]; then state[$task]=$st; exitcode[$task]=$ec; fi
    done <<<"$lines"
    done_n=0
    for t in "${!state[@]}"; do
      [[ $terminal == *" ${state[$t]} "* ]] && done_n=$((done_n + 1))
    done
    [ "$done_n" -lt "$shards" ] || break
  elif grep -q "Invalid job id" "$out/scontrol.err"; then
    # The controller has already forgotten the job (MinJobAge): judge by the logs.
    gone=$((gone + 1))
    [ "$gone" -lt 3 ] || break
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "$prog: the job array $jobid did not end within --wait-s $wait_s s; cancelling it" >&2
    timeout 15 scancel "$jobid" || true
    exit 1
  fi
  sleep 1
done

rc=0
for ((k = 0; k < shards; k++)); do
  st=${state[$k]:-unknown} ec=${exitcode[$k]:-?}
  if [ "$st" != COMPLETED ] && { [ "$st" != unknown ] || [ ! -s "$out/profile-shard-$k-of-$shards.jsonl" ]; }; then
    echo "$prog: shard $k ended $st (exit code $ec); its log, $out/shard-$k.log, ends:" >&2
    tail -n 5 "$out/shard-$k.log" 2>/dev/null | sed 's/^/  /' >&2 || true
    rc=1
  fi
done

# Step 4.
if ! compgen -G "$out/profile-shard-*-of-$shards.jsonl" >/dev/null; then
  echo "$prog: no shard wrote a profile in $out: nothing to merge" >&2
  exit 1
fi
if ! "${plot_cmd[@]}" profile "$out" -o "$out/curves.png" >"$out/ranking.txt" ||
   ! "${plot_cmd[@]}" estimate "$out" --json --at "$at" >"$out/estimates.json"; then
  echo "$prog: merging the shards' profiles in $out failed (above)" >&2
  exit 1
fi
cat "$out/ranking.txt"
echo "$prog: merged $(ls "$out"/profile-shard-*-of-"$shards".jsonl | wc -l) shard profile(s): $out/ranking.txt, $out/curves.png, $out/estimates.json" >&2
exit "$rc"
