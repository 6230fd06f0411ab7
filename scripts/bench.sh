#!/usr/bin/env bash
# scripts/bench.sh: run a named benchmark group; print one JSON object per
# workload on stdout (JSON lines only; progress and diagnostics go to stderr).
# The README's performance table is made from this output.
#
#   scripts/bench.sh NAME [--quick] [-- ARGS...]
#
# Groups:
#   runtime  Google Benchmark micro-benchmarks (build/release/bench/coact-bench-runtime),
#            run with JSON output; one object per benchmark:
#            {"group":"runtime","workload":NAME,"parameters":{...},"figures":{...}}.
#            ARGS after `--` go to the benchmark binary (e.g. --benchmark_filter=BM_spawn).
#            --quick: --benchmark_min_time=0.01.
#   peers    whole programs, coact vs CAF 0.17 (bench/peers/) vs tokio 1.24 (bench/tokio/):
#            ping_pong, fan_out, thread_ring, skynet. Trials alternate coact, caf and
#            each tokio variant (at least 3 trials each): actor_bounded and
#            actor_unbounded (an actor emulation: a mailbox channel per task),
#            idiomatic (arguments moved in at spawn, one channel where the workload
#            needs one; fan_out and skynet: idiomatic_join, JoinHandles awaited) and,
#            at 1 worker, idiomatic_current_thread (tokio's one-thread scheduler).
#            Medians are compared; tokio's figure is its fastest variant by median,
#            named in tokio_variant:
#            {"group":"peers","workload":W,"parameters":{...},"workers":2,"unit":...,
#             "coact_msgs_per_s":M,"caf_msgs_per_s":M,"ratio":coact/caf,
#             "tokio_msgs_per_s":M,"tokio_variant":V,"tokio_channel":"bounded"|"unbounded",
#             "coact_over_tokio":coact/tokio,"tokio_msgs_per_s_by_variant":{V:M,...},
#             "coact_over_tokio_by_variant":{V:R,...},
#             "coact":{"median","min","max","slow_share","slow_trials","trials"},"caf":{...},
#             "tokio_variants":{V:{the same},...},
#             "slow_mode":{"definition","fraction":0.8,"share":{"coact":S,"caf":S,"tokio_V":S}},
#             "trials":{"coact":[...],"caf":[...],"tokio_V":[...]},
#             "coact_over_tokio_paired":{"variant":V,"ratios":[...],"median":R,
#              "median_ci95":[lo,hi],"geomean":R,"geomean_ci95":[lo,hi]} (only with
#              tokio run and a trial per round on both sides),"wrap":CMD (if set)}
#            The slow mode: a trial below 0.8 x the best trial of the same runtime
#            (and tokio variant) in the run; slow_share is its share of the trials.
#            coact_over_tokio_paired: coact's trial over tokio's fastest variant's
#            trial of the same round, per round (a slow stretch of the host falls on
#            both), with 95 % intervals (bootstrap of the median, t of the log mean).
#            --quick: small n (CI smoke); the numbers then mean little.
#   scaling  coact with burst dispatch on and off, and tokio's idiomatic variant, at
#            each worker count of COACT_BENCH_SCALING_WORKERS (default: those of
#            1,2,4,8,16 at most twice the cores): the four peers workloads and the
#            fan-out of width 512 (bench/burst's fan_out row, 0 us handlers), run as the
#            burst group runs its rows: COACT_BENCH_TRIALS pairs (on / off, ABBA) per
#            row, one coact-burst-bench process per run; at each worker count
#            tokio's COACT_BENCH_TRIALS trials per workload run after coact's rows
#            (multi-thread scheduler at every count; same n as coact's peers rows).
#            One object per workload and worker count:
#            {"group":"scaling","workload":W,"width":N (fan_out_512 only),"workers":K,
#             "on_msgs_per_s":M,"off_msgs_per_s":M,"ratio":on/off (median of pairs),
#             "tokio_msgs_per_s":M (peers workloads),"tokio_variant":V,
#             "coact_over_tokio":best coact side/tokio,"trials":{"on":[...],"off":[...],
#             "tokio":[...]},...}
#            and a last {"group":"scaling","workload":"summary","workers":[...],
#            "speedup":{W:{"on":[rate(K)/rate(first K)...],"off":[...]}}}.
#            --quick: small n.
#   timers   timer programs, coact vs CAF 0.17 vs tokio 1.24 (bench/timers/, bench/tokio/;
#            scenarios in timers_common.hpp). Trials alternate coact, caf, tokio (at
#            least 3 each; tokio runs end after 60 s, unfired timers counted as such);
#            medians of the per-trial figures are reported. One object per run
#            configuration:
#              lateness (load idle|self|pairs: 10^4 one-shot 1 ms timers in 10
#                chains; saturating load = 4 actors x 100 us handlers on the workers):
#                {"group":"timers","workload":"lateness","parameters":{"load":L,...},
#                 "workers":2,"coact":{"p50_us","p99_us","max_us","fired","expected",
#                 "all_fired_trials","busy_util"},"caf":{...},"tokio":{...},"target":{...},
#                 "trials":{...}}
#                percentiles: medians over trials of each trial's percentile (over the
#                timers that fired); fired: the fewest of any trial; a timer not fired
#                2 s after its due time stalls its chain and counts as unfired.
#                load idle, coact only: "coact_breakdown" (medians): the kernel's floor
#                at the same period (floor_late_p5/p50/p99_us, floor_cpu_pct: a bare
#                thread's timed futex wait, 1000 wakes after coact's run), the runtime's
#                timed_parks, futex_wakes, early_spin_us_per_park; "target" adds
#                floor_late_p99_us and needs_spin (the floor's p99 is above the limit:
#                only spinning can meet it).
#              idle_cpu (period_ms 5|20|100: one periodic timer, otherwise idle, 5 s, CPU by getrusage):
#                {...,"coact_cpu_pct":P,"caf_cpu_pct":P,"tokio_cpu_pct":P,"ratio":coact/caf,
#                 "coact_over_tokio":coact/tokio,...}
#                (process CPU time / wall, % of one core)
#                coact only, "coact_breakdown" (medians): early_spin_us_per_park (the
#                timekeeper's spin after its early wake), wake_late_us_per_park, and the
#                kernel's floor: a bare thread in the same timed futex wait, measured after
#                coact's window in the same process (floor_cpu_pct, floor_us_per_wake,
#                floor_late_p5/p50/p99_us: its wake latency distribution)
#                "us_per_tick" {coact,caf,tokio} (medians of cpu_s / ticks, µs) and
#                coact_over_tokio_per_tick: a runtime whose timer fires late ticks less
#                often (tokio: ~6.1 ms per 5 ms sleep), so its share of a core is lower
#                without a cheaper wake
#                "target": the issue's absolute goal (coact_cpu_pct_at_most, met), whether
#                it lies below the floor (below_floor), the floor-relative goal
#                (floor_relative: floor_cpu_pct + 0.1, met) and at_most_tokio (met,
#                per_tick_met)
#              cancel_rate (send_after + cancel pairs from a handler for 1 s):
#                {...,"coact_pairs_per_s":R,"caf_pairs_per_s":R,"tokio_pairs_per_s":R,"ratio":...,
#                 "caf_cancel":...,"tokio_cancel":...}
#                CAF 0.17 cannot cancel a delayed_send: its figure is an emulation
#                (delayed_send + a cancelled-set flag; the message still arrives); tokio's
#                is a spawned sleeping task aborted by its JoinHandle.
#            "target" holds the issue's goals for coact and whether this run met them.
#            --quick: 10^3 timers, shorter windows (CI smoke); the numbers then mean little.
#   burst    burst dispatch on vs off (bench/burst/burst_bench.cpp): fan-out widths 1, 8,
#            64, 512 with 0 and 20 us handlers, a 64-actor chain (0 / 20 us), and the four
#            peers workloads (coact-peers with COACT_BURST=on / off). COACT_BENCH_TRIALS
#            pairs per row (on and off, which first alternating in ABBA blocks: on off,
#            off on, off on, on off, ...), each run one coact-burst-bench process
#            (`--side on|off --row ...`) through the trial runner
#            (reports/coact_reports/bench_burst.py; COACT_BENCH_TIMEOUT_S: the limit on
#            one run); medians (of an even count, the higher middle trial), ratio = the
#            median of the pairs' on/off. One object per row:
#            {"group":"burst","workload":W,"width":N,"handler_us":U,"workers":K,
#             "on_msgs_per_s":M,"off_msgs_per_s":M,"ratio":R,"ratio_of_medians":R,
#             "syncs_on":S,"syncs_off":S,"sync_ratio":off/on,"trials":T}
#            syncs: scheduling synchronizations (wakes + injector pushes + deque pushes)
#            of the run; width 0 marks the peers rows. Each row adds every trial
#            ("on_trials","off_trials","pair_ratios") and the 95 % intervals of its
#            ratio: "ratio_geomean","ratio_ci95" (t interval of the mean log pair
#            ratio), "ratio_median_ci95" (bootstrap of the median pair ratio),
#            "loss_over_3pct_excluded" (both intervals above 0.97) and "verdict"
#            (faster / slower / no difference shown). A last row,
#            {"group":"burst","workload":"summary",...,"burst_default_supported":B,
#             "rows_not_excluding_loss":[...],"worst_row":{...}}, is the decision for
#            burst as the default: B when every row excludes a loss over 3 %.
#            --quick: small sizes.
#   slowmode the peers trials (coact only unless COACT_BENCH_RUNTIMES says otherwise)
#            under each condition of COACT_BENCH_SLOWMODE_WRAPS, ';'-separated commands
#            each trial runs under ("none" = plain; the words FIRST and LAST stand
#            for the first and the last CPU this process may use; a blank or
#            repeated condition is refused), default
#              none;setarch -R;taskset -c FIRST;taskset -c LAST;
#              env GLIBC_TUNABLES=glibc.malloc.hugetlb=1
#            (address-space randomization off; every thread on the first, then on
#            the last CPU, the latter left out with one CPU; malloc'd memory in
#            transparent huge pages, process-local, with THP in madvise mode). The conditions
#            alternate: each round runs every condition once, starting one later
#            than the round before. Before each trial coact-host-probe (a multiply
#            chain and a 1 MiB pointer chase, bench/peers/host_probe.cpp) measures
#            under the same condition the CPUs the trial may run on, each in turn,
#            and reports the slowest. Prints the peers rows (each with "wrap", but
#            the plain condition's; "coact" with "probe", the probe's rate before
#            each of its trials) and one summary per run:
#            {"group":"slowmode","workload":"summary","workers":K,"fraction":0.8,
#             "host_slow_fraction":0.9,"conditions":[...],"share":{COND:{W:S}},
#             "slow_trials":{COND:{W:[k,n]}},"median":{COND:{W:M}},"min":{...},
#             "max":{...},"host":{COND:{W:{"median","min","max","corr",
#             "slow_trials_after_slow_probe","slow_probes"}}}}
#            (S: the share of coact trials below 0.8 x the best trial of the same
#            condition; corr: Pearson's r of trial rate and probe rate; a slow probe:
#            below 0.9 x the condition's best probe).
#   instructions  load-independent costs per message of coact-peers (the four peers
#            workloads, 1 worker, COACT_BURST off and on): instructions (valgrind
#            --tool=callgrind, the difference between a run of n and one of 3n, or 10n
#            for skynet, over the difference in messages, so start-up cancels) and
#            syscalls (strace -f -c, the same difference, at COACT_BENCH_WORKERS workers,
#            default 2: futex wakes and parks need a sibling; this one depends on timing).
#            One object per row:
#            {"group":"instructions","workload":W,"workers":1,"burst":"off"|"on",
#             "n":[n1,n2],"msgs":[m1,m2],"instr_per_msg":X,"syscalls_per_msg":Y,
#             "syscall_workers":K,
#             "base_instr_per_msg":X0,"base_syscalls_per_msg":Y0,
#             "sweep_instr_per_msg":X1}
#            sweep_instr_per_msg (burst off rows): the same count during a causal sweep
#            at speedup 0 (COACT_CAUSAL=1 COACT_CAUSAL_FIXED_SPEEDUP=0, the workload's
#            reply handler as progress point): the profiler's cost per message is
#            sweep_instr_per_msg - instr_per_msg.
#            base_* only with COACT_BENCH_BASE_PEERS=PATH: another coact-peers binary
#            (e.g. built from an older commit), run the same way with burst off (no
#            COACT_BURST in its environment). Needs valgrind and strace. 1 worker
#            because callgrind serializes threads: an idle sibling's spinning would
#            be counted as work. --quick: small n.
#   sampling the sampled-line profiler's cost: the archiver (examples/dedup,
#            `coact-dedup archive /usr/share/doc --passes 6`, archive in /dev/shm)
#            on three sides per trial, rotating: plain (no profiler), sweep0
#            (COACT_CAUSAL=1, fixed speedup 0: the sweep injects no delay) and
#            sampling (sweep0 + COACT_CAUSAL_SAMPLING=1), profile_only
#            (COACT_CAUSAL=1 COACT_CAUSAL_PROFILE_ONLY=1: no experiment, the
#            regions' counters only) and sampling_no_sweep (profile_only +
#            COACT_CAUSAL_SAMPLING=1: sampling with no sweep, so no line
#            experiment and the POSIX CPU-clock timer throughout): wall time of the run,
#            the mean time of its passes after the first (the steady state; the
#            first pays the start-up; five 0.3 s passes instead of the one last
#            pass of a 3-pass run, whose trials spread +-5 %), the last pass,
#            and the process's CPU time (user + sys, /usr/bin/time: less sensitive
#            to other processes than wall time, start-up included);
#            COACT_BENCH_TRIALS trials. Then coact-sample-cost --samples 2000
#            (wall-clock cost of one sample: handler and drain; and the live cost of
#            timer-driven samples on the sampled thread, kernel included). Two objects:
#            {"group":"sampling","workload":"archiver","median_wall_s":{...},
#             "median_later_pass_s":{...},"median_last_pass_s":{...},"sampling_over_sweep0_pct":P,
#             "sampling_over_plain_pct":P,"sweep0_over_plain_pct":P,
#             "sampling_no_sweep_over_plain_pct":P (sampling's overhead with no sweep),
#             "sampling_no_sweep_over_profile_only_pct":P,"profile_only_over_plain_pct":P
#             (passes after the first),
#             "wall":{the same three for whole runs},"cpu":{the same for CPU time},
#             "trials":{...},...}
#            (overheads: medians of the per-trial ratios) and
#            {"group":"sampling","workload":"sample_cost","figures":{...}}.
#            --quick: 1 pass, 200 samples. Built in its own directory,
#            COACT_BENCH_SAMPLING_BUILD_DIR (default build/relwithdebinfo,
#            RelWithDebInfo: line sampling needs the program's line table).
#   kv       coact-kv (examples/kv) vs redis-server 7 under redis-benchmark (Debian's
#            redis-server and redis-tools), reports/coact_reports/kvbench.py: each server
#            started once on a free port (coact-kv --coact-workers=COACT_BENCH_WORKERS,
#            --shards the same; redis-server --save "" --appendonly no) and pinged, one
#            unrecorded warm-up each, then at each pipeline depth (-P 1 and 16) trials
#            alternating the servers in ABBA order (COACT_BENCH_TRIALS if set, else 5),
#            a trial being one `redis-benchmark -t TEST -n 10^6 -c 50 -P D --csv` per
#            test (set, get); the servers' CPU time (user + sys, /proc/PID/stat) and
#            run-queue wait (/proc/PID/task/*/schedstat) around each, and redis-benchmark's
#            own CPU time per second of its run. Both get SIGTERM at the end (coact-kv must exit 0 within 10 s; on
#            every exit path). One object per test and depth:
#            {"group":"kv","workload":"set"|"get","pipeline":D,"clients":50,"requests":N,
#             "workers":K,"shards":S,"trials":T,"quick":B,
#             "coact":{"rps":{"median","min","max","trials":[...]},"p50_ms":{...},
#                      "p99_ms":{...},"cpu_s_per_100k":{...},"runq_s_per_100k":{...} (null
#                      without schedstat),"client_cpu_share":{...}},"redis":{the same},
#             "coact_over_redis_rps":R,"p99_coact_over_redis":R (ratios of the medians),
#             "pairs":[coact/redis rps of each trial pair],
#             "client_bound":B (both client CPU medians >= 0.9: neither server kept it waiting),
#             "target":{"rps_at_least_redis":B,"p99_no_worse":B,"rps_ahead":B,"met":B}}
#            (met: at -P 1 the first two, pipelined rps_ahead) and a last
#            {"group":"kv","workload":"summary","command":...,"versions":{"redis_server",
#             "redis_benchmark"},"loadavg":[1,5,15 min],"loadavg_warning":B (above 0.3),
#             "exit_status":{"coact":0,"redis":0},"pids":{...},...}.
#            ARGS after `--` go to kvbench (e.g. --pipelines 1,4,16 --requests 200000
#            --tests set; --help lists them). COACT_BENCH_TIMEOUT_S: the limit on one
#            redis-benchmark run. --quick: 20000 requests, 2 trials (unless
#            COACT_BENCH_TRIALS is set).
#
# Steps:
#   1. Check the group name and the knobs (bad: exit 2 before building anything;
#      the groups' own knobs by `bench_groups GROUP --check`).
#   2. Configure build/release (CMAKE_BUILD_TYPE=Release) if it has no cache;
#      refuse a build dir configured as another build type.
#   3. Build only the group's targets (cmake --build -j2 --target ...); cmake's
#      output goes to stderr.
#   4. Run the trials: peers, timers, burst, scaling, slowmode, instructions and
#      sampling in reports/coact_reports/bench_groups.py, bench_burst.py and
#      bench_costs.py, every trial through the one trial runner
#      (reports/coact_reports/trials.py, which perf-compare uses too); runtime
#      runs its one program here, kv is reports/coact_reports/kvbench.py. Any failing trial (non-zero exit,
#      timeout, no JSON line) fails the script with a message naming the group,
#      workload and runtime.
#   5. Aggregate with /usr/bin/python3 (Debian's; reports/coact_reports/bench.py)
#      and print JSON lines.
#
# Environment knobs (read here, and the groups' own in bench_groups.py's KNOBS;
# removed from the environment of the benchmark programs so coact's tuning
# resolver does not warn about them):
#   COACT_BENCH_BUILD_DIR  build directory (default: <repo>/build/release)
#   COACT_BENCH_NO_BUILD=1 use the build directory as it is (no configure/build)
#   COACT_BENCH_TRIALS     trials per runtime for `peers` and `timers` (default 3, minimum 3)
#   COACT_BENCH_WORKERS    worker threads for both runtimes in `peers` and `timers` (default 2)
#   COACT_BENCH_WORKLOADS  comma-separated subset of the peers workloads (or of the
#                          timers scenarios: lateness, idle_cpu, cancel_rate)
#   COACT_BENCH_WRAP       peers: a command every trial runs under, split at blanks
#                          (e.g. "setarch -R", "taskset -c 1"), recorded as "wrap"
#   COACT_BENCH_RUNTIMES   peers: comma-separated subset of coact,caf,tokio (default all;
#                          coact required; a missing runtime's fields are null)
#   COACT_BENCH_SLOWMODE_WRAPS  slowmode: ';'-separated conditions (see the group)
#   COACT_BENCH_SCALING_WORKERS  scaling: comma-separated worker counts (default: those
#                          of 1,2,4,8,16 at most twice the cores)
#   COACT_BENCH_TIMEOUT_S  seconds before one peers/timers trial counts as hung (default 300;
#                          the program's watchdog then prints the runtime's counters
#                          and exits 3); for group runtime, the limit on the whole
#                          Google Benchmark run (default 3600)
# Exit status: 0 ok; 1 a build or trial failed; 2 usage (unknown group, bad knob).
set -euo pipefail

readonly PY=/usr/bin/python3
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT
COACT_SCRIPT=bench.sh
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"
# The groups. To add one: its name in BENCH_GROUPS, a line in usage's list, and a function
# run_NAME_group (it may use configure_build_dir, build_targets, find_binary,
# bench_py, group_py and the knobs below; arguments after -- are in "${extra[@]}", for
# the groups in BENCH_GROUPS_TAKING_ARGS). A group whose trials run in
# bench_groups.py (or a module it calls: bench_burst, bench_costs) is also in
# BENCH_GROUPS_IN_PY (its own knobs are checked there).
readonly BENCH_GROUPS=(runtime peers timers burst scaling slowmode instructions sampling kv)
readonly BENCH_GROUPS_TAKING_ARGS=(runtime kv)
readonly BENCH_GROUPS_IN_PY=(peers timers burst scaling slowmode instructions sampling)
readonly PEER_WORKLOADS=(ping_pong fan_out thread_ring skynet)
readonly TIMER_SCENARIOS=(lateness idle_cpu cancel_rate)

log() { coact_log "$@"; }
die() { coact_die "$@"; }

usage() {
  cat <<EOF
usage: scripts/bench.sh NAME [--quick] [-- ARGS...]
  NAME     benchmark group: ${BENCH_GROUPS[*]}
             runtime  Google Benchmark micro-benchmarks (ARGS go to the binary)
             peers    coact vs CAF, whole programs (${PEER_WORKLOADS[*]})
             timers   coact vs CAF timers (${TIMER_SCENARIOS[*]})
             burst    coact with burst dispatch on vs off (COACT_BURST), side by side
             scaling  coact burst on / off and tokio by worker count (COACT_BENCH_SCALING_WORKERS)
             slowmode coact-peers under each layout/placement condition, alternating, with a host probe
             instructions  coact-peers instructions and syscalls per message (callgrind, strace)
             sampling the archiver with and without CPU-time sampling, and one sample's cost
             kv       coact-kv vs redis-server 7 under redis-benchmark (ARGS go to kvbench)
  --quick  small sizes for a CI smoke run
Knobs (environment): COACT_BENCH_BUILD_DIR, COACT_BENCH_NO_BUILD=1, COACT_BENCH_TRIALS,
  COACT_BENCH_WORKERS, COACT_BENCH_WORKLOADS, COACT_BENCH_TIMEOUT_S, COACT_BENCH_WRAP,
  COACT_BENCH_RUNTIMES, COACT_BENCH_SCALING_WORKERS, COACT_BENCH_SLOWMODE_WRAPS,
  COACT_BENCH_BASE_PEERS, COACT_BENCH_SAMPLING_BUILD_DIR (the script's header says
  what each does).
stdout: one JSON object per workload; stderr: progress.
EOF
}

# ---- 1. arguments and knobs ----------------------------------------------------
in_list() { local x=$1 y; shift; for y in "$@"; do [[ $x == "$y" ]] && return 0; done; return 1; }
group=""
quick=0
extra=()
while (($#)); do
  case $1 in
    --quick) quick=1 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -*)
      hint="see --help"
      [[ $1 == --q* || $1 == -q ]] && hint="did you mean --quick?"
      die 2 "unknown option '$1' ($hint; arguments for the benchmark binary go after --)" ;;
    *)
      [[ -z $group ]] || die 2 "more than one group given ('$group', '$1'); run one group at a time"
      group=$1 ;;
  esac
  shift
done
[[ -n $group ]] || { usage >&2; die 2 "no group given (want one of: ${BENCH_GROUPS[*]})"; }
in_list "$group" "${BENCH_GROUPS[@]}" || die 2 "unknown group '$group' (known: ${BENCH_GROUPS[*]})"
if ((${#extra[@]})) && ! in_list "$group" "${BENCH_GROUPS_TAKING_ARGS[@]}"; then
  die 2 "arguments after -- are only for group(s) ${BENCH_GROUPS_TAKING_ARGS[*]}; drop them for $group"
fi

[[ -x $PY ]] || die 1 "$PY not found (Debian's python3 is required for JSON aggregation)"

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
BUILD_DIR=${COACT_BENCH_BUILD_DIR:-$ROOT/build/release}
TRIALS=${COACT_BENCH_TRIALS:-3}
WORKERS=${COACT_BENCH_WORKERS:-2}
TIMEOUT_S=${COACT_BENCH_TIMEOUT_S:-300}
if ! is_uint "$TRIALS" || ((10#$TRIALS < 3)); then
  die 2 "COACT_BENCH_TRIALS='$TRIALS': want an integer >= 3"
fi
if ! is_uint "$WORKERS" || ((10#$WORKERS < 1 || 10#$WORKERS > 1024)); then
  die 2 "COACT_BENCH_WORKERS='$WORKERS': want an integer in 1..1024"
fi
if ! is_uint "$TIMEOUT_S" || ((10#$TIMEOUT_S < 1)); then
  die 2 "COACT_BENCH_TIMEOUT_S='$TIMEOUT_S': want an integer >= 1"
fi
TRIALS=$((10#$TRIALS)) WORKERS=$((10#$WORKERS)) TIMEOUT_S=$((10#$TIMEOUT_S))
# COACT_BENCH_WRAP: a command every peers trial runs under (split at blanks).
read -r -a WRAP <<<"${COACT_BENCH_WRAP:-}"
if ((${#WRAP[@]})) && ! command -v "${WRAP[0]}" >/dev/null; then
  die 2 "COACT_BENCH_WRAP='${COACT_BENCH_WRAP}': '${WRAP[0]}' is not a command"
fi

# group_py ARGS...: reports/coact_reports/bench_groups.py for this group: its
# trials through the one trial runner, then the aggregation; fails as it does.
# With --check it only checks the group's knobs and returns; otherwise it is
# the script's last step and replaces it (exec), so a signal sent to the
# script's pid (kill, a CI timeout) reaches the runner, which ends its trial.
group_py() {
  local q=() run=(exec)
  ((quick)) && q=(--quick)
  [[ ${1:-} == --check ]] && run=()
  if ((${#run[@]})); then
    rm -rf "$tmp"
    trap - EXIT
  fi
  "${run[@]}" "$PY" -B "$ROOT/reports/coact_run.py" --prog bench.sh bench_groups "$group" "${q[@]}" \
    --trials "$TRIALS" --workers "$WORKERS" --timeout-s "$TIMEOUT_S" --wrap "${WRAP[*]}" "$@"
}
# The group's own knobs (COACT_BENCH_WORKLOADS, _RUNTIMES, ...), before building.
if in_list "$group" "${BENCH_GROUPS_IN_PY[@]}"; then
  group_py --check
fi

# The benchmark programs run without our COACT_BENCH_* knobs in their environment.
child_env=(env)
while IFS= read -r var; do
  if [[ $var == COACT_BENCH_* ]]; then child_env+=(-u "$var"); fi
done < <(compgen -e)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/coact-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# ---- 2-3. configure and build (scripts/lib.sh) -----------------------------------
# configure_build_dir: BUILD_DIR is (or becomes) a Release build directory.
configure_build_dir() {
  if [[ ${COACT_BENCH_NO_BUILD:-0} == 1 ]]; then
    [[ -f $BUILD_DIR/CMakeCache.txt ]] || die 1 "COACT_BENCH_NO_BUILD=1 but $BUILD_DIR is not a build directory"
    return 0
  fi
  coact_configure "$BUILD_DIR" Release
}
# build_targets TARGET...: builds them (re-running cmake for a target not known yet).
build_targets() {
  [[ ${COACT_BENCH_NO_BUILD:-0} == 1 ]] && return 0
  coact_build "$BUILD_DIR" Release "$@"
}
find_binary() { coact_find_binary "$BUILD_DIR" "$1" "$2"; }
# bench_py SUBCOMMAND ARGS...: the aggregation, reports/coact_reports/bench.py.
bench_py() {
  "$PY" -B "$ROOT/reports/coact_run.py" bench "$@"
}
# need_caf GROUP: fails when BUILD_DIR was configured without CAF (checked
# before building, so the message says why rather than a missing target).
need_caf() {
  [[ ${COACT_BENCH_NO_BUILD:-0} == 1 ]] && return 0
  if grep -q '^CAF_CORE_LIBRARY:FILEPATH=.*NOTFOUND' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null ||
     grep -q '^CAF_INCLUDE_DIR:PATH=.*NOTFOUND' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
    die 1 "group $1: CAF not found when $BUILD_DIR was configured (install libcaf-dev, then reconfigure)"
  fi
}
readonly NO_TOKIO="(cargo or librust-tokio-dev missing at configure time? run scripts/bootstrap.sh, then reconfigure)"

# ---- group runtime --------------------------------------------------------------
run_runtime_group() {
  configure_build_dir
  build_targets coact-bench-runtime   # needs Google Benchmark at configure time
  local bin
  bin=$(find_binary coact-bench-runtime bench/coact-bench-runtime)
  [[ -n $bin ]] || die 1 "group runtime: coact-bench-runtime not found in $BUILD_DIR"
  local args=(--benchmark_out="$tmp/runtime.json" --benchmark_out_format=json)
  ((quick)) && args+=(--benchmark_min_time=0.01)
  log "runtime: $bin ${args[*]} ${extra[*]}"
  local rc=0
  # Console table to stderr (progress); the JSON file is what we read.
  local limit=${COACT_BENCH_TIMEOUT_S:+$TIMEOUT_S}
  limit=${limit:-3600}
  timeout "$limit" "${child_env[@]}" "$bin" "${args[@]}" "${extra[@]}" >&2 || rc=$?
  ((rc != 124)) || die 1 "group runtime: coact-bench-runtime timed out after ${limit}s"
  ((rc == 0)) || die 1 "group runtime: coact-bench-runtime failed (exit $rc)"
  bench_py runtime "$tmp/runtime.json"
}

# ---- groups peers and slowmode (bench_groups.py) ---------------------------------
# peers_bins: builds and finds the programs of the runtimes the group runs
# (COACT_BENCH_RUNTIMES, checked by group_py --check; default all for peers,
# coact for slowmode) into bins: coact-peers, and caf-peers and tokio-peers
# only where CAF and tokio run.
peers_bins() {
  local default=coact,caf,tokio
  [[ $group == slowmode ]] && default=coact
  local want=",${COACT_BENCH_RUNTIMES:-$default}," targets=(coact-peers)
  configure_build_dir
  if [[ $want == *,caf,* ]]; then
    need_caf "$group"
    targets+=(caf-peers)
  fi
  [[ $want == *,tokio,* ]] && targets+=(tokio-bench)
  [[ $group == slowmode ]] && targets+=(coact-host-probe)
  build_targets "${targets[@]}"
  local coact caf tokio probe
  coact=$(find_binary coact-peers bench/peers/coact-peers)
  [[ -n $coact ]] || die 1 "group $group: coact-peers not found in $BUILD_DIR"
  bins=(--bin coact-peers="$coact")
  if [[ $group == slowmode ]]; then
    probe=$(find_binary coact-host-probe bench/peers/coact-host-probe)
    [[ -n $probe ]] || die 1 "group slowmode: coact-host-probe not found in $BUILD_DIR"
    bins+=(--bin coact-host-probe="$probe")
  fi
  if [[ $want == *,caf,* ]]; then
    caf=$(find_binary caf-peers bench/peers/caf-peers)
    [[ -n $caf ]] || die 1 "group $group: caf-peers not found in $BUILD_DIR (CAF missing at configure time?)"
    bins+=(--bin caf-peers="$caf")
  fi
  if [[ $want == *,tokio,* ]]; then
    tokio=$(find_binary tokio-peers bench/tokio/tokio-peers)
    [[ -n $tokio ]] || die 1 "group $group: tokio-peers not found in $BUILD_DIR $NO_TOKIO"
    bins+=(--bin tokio-peers="$tokio")
  fi
}
run_peers_group() { local bins; peers_bins; group_py "${bins[@]}"; }
run_slowmode_group() { local bins; peers_bins; group_py "${bins[@]}"; }

# ---- group timers (bench_groups.py) ----------------------------------------------
run_timers_group() {
  configure_build_dir
  need_caf timers
  build_targets coact-timers caf-timers tokio-bench
  local coact caf tokio
  tokio=$(find_binary tokio-timers bench/tokio/tokio-timers)
  [[ -n $tokio ]] || die 1 "group timers: tokio-timers not found in $BUILD_DIR $NO_TOKIO"
  coact=$(find_binary coact-timers bench/timers/coact-timers)
  caf=$(find_binary caf-timers bench/timers/caf-timers)
  [[ -n $coact ]] || die 1 "group timers: coact-timers not found in $BUILD_DIR"
  [[ -n $caf ]] || die 1 "group timers: caf-timers not found in $BUILD_DIR (CAF missing at configure time?)"
  group_py --bin coact-timers="$coact" --bin caf-timers="$caf" --bin tokio-timers="$tokio"
}

# ---- group burst (bench_burst.py) ------------------------------------------------
run_burst_group() {
  configure_build_dir
  build_targets coact-burst-bench coact-peers
  local bin peers
  bin=$(find_binary coact-burst-bench bench/burst/coact-burst-bench)
  peers=$(find_binary coact-peers bench/peers/coact-peers)
  [[ -n $bin && -n $peers ]] || die 1 "group burst: coact-burst-bench or coact-peers not found in $BUILD_DIR"
  group_py --bin coact-burst-bench="$bin" --bin coact-peers="$peers"
}

# ---- group scaling (bench_groups.py) ---------------------------------------------
run_scaling_group() {
  configure_build_dir
  build_targets coact-burst-bench coact-peers tokio-bench
  local bin peers tokio
  bin=$(find_binary coact-burst-bench bench/burst/coact-burst-bench)
  peers=$(find_binary coact-peers bench/peers/coact-peers)
  tokio=$(find_binary tokio-peers bench/tokio/tokio-peers)   # optional: no tokio rows without it
  [[ -n $bin && -n $peers ]] || die 1 "group scaling: coact-burst-bench or coact-peers not found in $BUILD_DIR"
  group_py --bin coact-burst-bench="$bin" --bin coact-peers="$peers" --bin tokio-peers="$tokio"
}

# ---- group instructions (bench_costs.py) -----------------------------------------
run_instructions_group() {
  configure_build_dir
  build_targets coact-peers
  local peers
  peers=$(find_binary coact-peers bench/peers/coact-peers)
  [[ -n $peers ]] || die 1 "group instructions: coact-peers not found in $BUILD_DIR"
  group_py --bin coact-peers="$peers"
}

# ---- group sampling (bench_costs.py) ---------------------------------------------
run_sampling_group() {
  # Its own build with debug information (RelWithDebInfo): line sampling needs
  # the program's line table. A Release build has none: its drainer attributed
  # nothing and unwound every frame of every sample, so that is not the cost a
  # user of line regions pays.
  local BUILD_DIR=${COACT_BENCH_SAMPLING_BUILD_DIR:-$ROOT/build/relwithdebinfo}
  if [[ ${COACT_BENCH_NO_BUILD:-0} == 1 ]]; then
    [[ -f $BUILD_DIR/CMakeCache.txt ]] || die 1 "COACT_BENCH_NO_BUILD=1 but $BUILD_DIR is not a build directory"
  else
    coact_build "$BUILD_DIR" RelWithDebInfo coact-dedup coact-sample-cost
  fi
  local dedup cost
  dedup=$(find_binary coact-dedup examples/dedup/coact-dedup)
  cost=$(find_binary coact-sample-cost bench/causal/coact-sample-cost)
  [[ -n $dedup && -n $cost ]] || die 1 "group sampling: coact-dedup or coact-sample-cost not found in $BUILD_DIR"
  group_py --bin coact-dedup="$dedup" --bin coact-sample-cost="$cost"
}

# ---- group kv ---------------------------------------------------------------------
run_kv_group() {
  local tool
  for tool in /usr/bin/redis-server /usr/bin/redis-benchmark /usr/bin/redis-cli; do
    [[ -x $tool ]] || die 1 "group kv: $tool not found (apt-get install redis-server redis-tools; scripts/bootstrap.sh installs them)"
  done
  configure_build_dir
  build_targets coact-kv
  local bin
  bin=$(find_binary coact-kv examples/kv/coact-kv)
  [[ -n $bin ]] || die 1 "group kv: coact-kv not found in $BUILD_DIR (build it: cmake --build $BUILD_DIR --target coact-kv)"
  local args=(--coact-kv "$bin" --workers "$WORKERS" --timeout-s "$TIMEOUT_S")
  [[ -n ${COACT_BENCH_TRIALS:-} ]] && args+=(--trials "$TRIALS")
  ((quick)) && args+=(--quick)
  log "kv: kvbench ${args[*]} ${extra[*]}"
  # The servers it starts inherit child_env's environment (no COACT_BENCH_*).
  # The last step, so exec (group_py says why); kvbench names its own failures.
  rm -rf "$tmp"
  trap - EXIT
  exec "${child_env[@]}" "$PY" -B "$ROOT/reports/coact_run.py" kvbench "${args[@]}" "${extra[@]}"
}

"run_${group}_group"
