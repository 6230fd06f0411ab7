//! tokio-timers: the timer scenarios of bench/timers/timers_common.hpp on tokio,
//! for the coact / CAF / tokio columns of `scripts/bench.sh timers`.
//!
//! Usage: tokio-timers --scenario lateness|idle_cpu|cancel_rate [options] [--workers W]
//! (the options, defaults and JSON members of timers_common.hpp: --load
//! idle|self|pairs, --timers, --chains, --period-us, --grace-ms, --busy-actors,
//! --busy-us, --period-ms, --duration-ms, --delay-ms, --watchdog-s), plus
//! --max-run-s S: a lateness run still going after S seconds ends there, and the
//! timers not fired by then count as unfired (stalled chains).
//!
//! tokio specifics, chosen so that the work matches the actor programs:
//!  - the pool is tokio's multi-thread scheduler with --workers threads; timers
//!    are tokio's own (`tokio::time`, a hashed wheel with 1 ms resolution: a
//!    deadline is rounded up to the next millisecond tick, which is part of what
//!    the lateness scenario measures);
//!  - a chain is one task that awaits `sleep_until(arm + period)` and records the
//!    lateness when it resumes (the idiomatic tokio form of "a handler arms a
//!    timer to itself");
//!  - busy load: --load self: a task spins --busy-us and yields
//!    (`yield_now`, the re-send to itself); --load pairs: two tasks hand a
//!    token back and forth over mpsc channels, spinning --busy-us per receipt;
//!  - idle_cpu: one task re-arms `sleep(period)` after each tick (as the actor
//!    re-arms its timer from its handler);
//!  - cancel_rate: tokio has no cancellable delayed send; a timer is a spawned
//!    task that sleeps --delay-ms and then sends, and cancel is `abort()` on its
//!    JoinHandle; "cancelled" is pairs minus the deliveries seen after the
//!    delay (an abort's success is not observable when it is called).
//! Exit status: 0 ok, 1 inconsistent result, 2 bad usage, 3 watchdog fired.

use std::process::exit;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

const CANCEL_BATCH: u64 = 256;

/// Nanoseconds since the program's first call (a monotonic clock, like the C++
/// programs' steady_clock now_ns()).
fn now_ns() -> i64 {
    static T0: OnceLock<Instant> = OnceLock::new();
    T0.get_or_init(Instant::now).elapsed().as_nanos() as i64
}

fn spin_for_ns(ns: i64) {
    let end = now_ns() + ns;
    while now_ns() < end {
        std::hint::spin_loop();
    }
}

/// Process CPU time (user + system, all threads) in seconds.
fn process_cpu_s() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) as f64 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) as f64 * 1e-6
}

#[derive(Clone)]
struct Args {
    scenario: String,
    load: String,
    timers: u64,
    chains: u64,
    period_us: u64,
    grace_ms: u64,
    busy_actors: u64,
    busy_us: u64,
    period_ms: u64,
    duration_ms: u64,
    delay_ms: u64,
    workers: u64,
    watchdog_s: u64,
    max_run_s: u64,
}

fn usage(msg: &str) -> ! {
    eprintln!("tokio-timers: {msg}");
    eprintln!("usage: tokio-timers --scenario lateness|idle_cpu|cancel_rate [options] (see bench/timers/timers_common.hpp)");
    exit(2);
}

fn parse_args() -> Args {
    let mut a = Args {
        scenario: String::new(),
        load: "idle".into(),
        timers: 10000,
        chains: 10,
        period_us: 1000,
        grace_ms: 2000,
        busy_actors: 4,
        busy_us: 100,
        period_ms: 5,
        duration_ms: 0,
        delay_ms: 10,
        workers: 2,
        watchdog_s: 0,
        max_run_s: 0,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let (key, inline) = match argv[i].split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (argv[i].clone(), None),
        };
        if key == "--help" || key == "-h" {
            println!("tokio-timers --scenario lateness|idle_cpu|cancel_rate [options]: runs one timer scenario once on tokio and prints one JSON line (options: bench/timers/timers_common.hpp)");
            exit(0);
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                argv.get(i).cloned().unwrap_or_else(|| usage(&format!("{key} needs a value")))
            }
        };
        let num = |lo: u64, hi: u64| -> u64 {
            match value.parse::<u64>() {
                Ok(v) if v >= lo && v <= hi => v,
                _ => usage(&format!("{key} {value}: expected an integer in {lo}..{hi}")),
            }
        };
        match key.as_str() {
            "--scenario" => a.scenario = value.clone(),
            "--load" => a.load = value.clone(),
            "--timers" => a.timers = num(1, 100_000_000),
            "--chains" => a.chains = num(1, 10000),
            "--period-us" => a.period_us = num(1, 10_000_000),
            "--grace-ms" => a.grace_ms = num(1, 3_600_000),
            "--busy-actors" => a.busy_actors = num(1, 1024),
            "--busy-us" => a.busy_us = num(1, 1_000_000),
            "--period-ms" => a.period_ms = num(1, 100_000),
            "--duration-ms" => a.duration_ms = num(1, 3_600_000),
            "--delay-ms" => a.delay_ms = num(1, 3_600_000),
            "--workers" => a.workers = num(1, 1024),
            "--watchdog-s" => a.watchdog_s = num(0, 86400),
            "--max-run-s" => a.max_run_s = num(0, 86400),
            "--timer-slack-ns" => {
                num(0, 1_000_000_000);
            }
            _ => usage(&format!("unknown option {key}")),
        }
        i += 1;
    }
    if !["lateness", "idle_cpu", "cancel_rate"].contains(&a.scenario.as_str()) {
        usage(&format!("--scenario '{}': expected lateness, idle_cpu or cancel_rate", a.scenario));
    }
    if !["idle", "self", "pairs"].contains(&a.load.as_str()) {
        usage(&format!("--load '{}': expected idle, self or pairs", a.load));
    }
    if a.scenario == "lateness" && a.timers % a.chains != 0 {
        usage("--timers must be a multiple of --chains");
    }
    if a.load == "pairs" && a.busy_actors % 2 != 0 {
        usage("--load pairs needs an even --busy-actors");
    }
    if a.duration_ms == 0 {
        a.duration_ms = if a.scenario == "idle_cpu" { 3000 } else { 1000 };
    }
    a
}

fn fail_check(a: &Args, what: String) -> ! {
    eprintln!("tokio/{}: inconsistent result: {what}", a.scenario);
    exit(1);
}

fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

// ---- lateness -----------------------------------------------------------------

struct Chain {
    due_ns: AtomicI64,
    done: AtomicBool,
}

struct Lateness {
    period_ns: i64,
    grace_ns: i64,
    busy_ns: i64,
    depth: u64,
    late_ns: Vec<AtomicI64>,
    fired: AtomicU64,
    overdue: AtomicU64,
    chains: Vec<Chain>,
    stop_busy: AtomicBool,
    busy_handlers: AtomicU64,
}

impl Lateness {
    /// As lateness_state::on_fire: records the lateness; false ends the chain.
    fn on_fire(&self, chain: usize, arm_ns: i64, fired_in_chain: &mut u64) -> bool {
        let late = now_ns() - (arm_ns + self.period_ns);
        let c = &self.chains[chain];
        if late > self.grace_ns {
            self.overdue.fetch_add(1, Ordering::Relaxed);
            c.done.store(true, Ordering::Release);
            return false;
        }
        let slot = self.fired.fetch_add(1, Ordering::Relaxed) as usize;
        self.late_ns[slot].store(late, Ordering::Relaxed);
        *fired_in_chain += 1;
        if *fired_in_chain == self.depth {
            c.done.store(true, Ordering::Release);
            return false;
        }
        true
    }
    fn before_arm(&self, chain: usize) -> i64 {
        let t = now_ns();
        self.chains[chain].due_ns.store(t + self.period_ns, Ordering::Release);
        t
    }
    fn all_armed(&self) -> bool {
        self.chains.iter().all(|c| c.due_ns.load(Ordering::Acquire) != 0)
    }
    /// As lateness_state::wait_done_or_stalled, plus --max-run-s: once the run
    /// is that old (0 = no limit), every chain not done counts as stalled.
    fn wait_done_or_stalled(&self, deadline_ns: Option<i64>) -> u64 {
        loop {
            std::thread::sleep(Duration::from_millis(5));
            let now = now_ns();
            let (mut open, mut stalled) = (0u64, 0u64);
            for c in &self.chains {
                if c.done.load(Ordering::Acquire) {
                    continue;
                }
                let due = c.due_ns.load(Ordering::Acquire);
                if due != 0 && now > due + self.grace_ns {
                    stalled += 1;
                } else {
                    open += 1;
                }
            }
            if open == 0 {
                return stalled;
            }
            if deadline_ns.map_or(false, |d| now > d) {
                return open + stalled;
            }
        }
    }
}

fn percentile_us(v: &[i64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0 * v.len() as f64) + 0.999999999) as usize;
    let rank = rank.clamp(1, v.len());
    v[rank - 1] as f64 / 1000.0
}

/// One busy task of --load pairs: spins --busy-us per token received, then hands
/// the token to its partner.
async fn pair_side(s: Arc<Lateness>, mut rx: mpsc::UnboundedReceiver<()>, tx: mpsc::UnboundedSender<()>) {
    let mut handled = 0u64;
    while let Some(()) = rx.recv().await {
        if s.stop_busy.load(Ordering::Relaxed) {
            break;
        }
        spin_for_ns(s.busy_ns);
        handled += 1;
        let _ = tx.send(());
    }
    s.busy_handlers.fetch_add(handled, Ordering::Relaxed);
}

fn run_lateness(rt: &tokio::runtime::Runtime, a: &Args) {
    let s = Arc::new(Lateness {
        period_ns: a.period_us as i64 * 1000,
        grace_ns: a.grace_ms as i64 * 1_000_000,
        busy_ns: a.busy_us as i64 * 1000,
        depth: a.timers / a.chains,
        late_ns: (0..a.timers).map(|_| AtomicI64::new(0)).collect(),
        fired: AtomicU64::new(0),
        overdue: AtomicU64::new(0),
        chains: (0..a.chains).map(|_| Chain { due_ns: AtomicI64::new(0), done: AtomicBool::new(false) }).collect(),
        stop_busy: AtomicBool::new(false),
        busy_handlers: AtomicU64::new(0),
    });
    let start = now_ns();
    let t0 = Instant::now();
    let base_ns = now_ns();
    let mut chains = Vec::new();
    for c in 0..a.chains as usize {
        let s = s.clone();
        chains.push(rt.spawn(async move {
            let mut fired = 0u64;
            loop {
                let arm = s.before_arm(c);
                let due = t0 + Duration::from_nanos((arm - base_ns + s.period_ns) as u64);
                tokio::time::sleep_until(due.into()).await;
                if !s.on_fire(c, arm, &mut fired) {
                    break;
                }
            }
        }));
    }
    while !s.all_armed() {
        std::thread::sleep(Duration::from_micros(50));
    }
    let load_start = now_ns();
    let mut busy = Vec::new();
    if a.load == "self" {
        for _ in 0..a.busy_actors {
            let s = s.clone();
            busy.push(rt.spawn(async move {
                let mut handled = 0u64;
                while !s.stop_busy.load(Ordering::Relaxed) {
                    spin_for_ns(s.busy_ns);
                    handled += 1;
                    tokio::task::yield_now().await;
                }
                s.busy_handlers.fetch_add(handled, Ordering::Relaxed);
            }));
        }
    } else if a.load == "pairs" {
        for _ in 0..a.busy_actors / 2 {
            let (tx_a, rx_a) = mpsc::unbounded_channel::<()>();
            let (tx_b, rx_b) = mpsc::unbounded_channel::<()>();
            // Each side is seeded with one message: 2 runnable per pair, as the actors.
            let _ = tx_a.send(());
            let _ = tx_b.send(());
            busy.push(rt.spawn(pair_side(s.clone(), rx_a, tx_b)));
            busy.push(rt.spawn(pair_side(s.clone(), rx_b, tx_a)));
        }
    }
    let deadline = if a.max_run_s > 0 { Some(start + a.max_run_s as i64 * 1_000_000_000) } else { None };
    let stalled = s.wait_done_or_stalled(deadline);
    let end = now_ns();
    s.stop_busy.store(true, Ordering::Relaxed);
    rt.block_on(async {
        for b in busy {
            let _ = b.await;
        }
        for c in chains {
            c.abort();
        }
    });

    let fired = s.fired.load(Ordering::Acquire);
    if fired > a.timers || (stalled == 0 && s.overdue.load(Ordering::Acquire) == 0 && fired != a.timers) {
        fail_check(a, format!("fired={fired} of {} with no stalled chain and no overdue fire", a.timers));
    }
    let mut v: Vec<i64> = s.late_ns[..fired as usize].iter().map(|x| x.load(Ordering::Relaxed)).collect();
    v.sort_unstable();
    let seconds = (end - start) as f64 * 1e-9;
    let load_s = (end - load_start) as f64 * 1e-9;
    let busy_n = s.busy_handlers.load(Ordering::Acquire);
    let busy_util =
        if load_s > 0.0 { busy_n as f64 * s.busy_ns as f64 * 1e-9 / (load_s * a.workers as f64) } else { 0.0 };
    let early = v.iter().filter(|&&x| x < 0).count();
    let mean = if fired > 0 { v.iter().map(|&x| x as f64).sum::<f64>() / fired as f64 / 1000.0 } else { 0.0 };
    let us = |x: f64| if fired > 0 { format!("{:.1}", r1(x)) } else { "null".to_string() };
    println!(
        "{{\"runtime\":\"tokio\",\"scenario\":\"lateness\",\"load\":\"{}\",\"timers\":{},\"chains\":{},\
         \"period_us\":{},\"grace_ms\":{},\"workers\":{},\"busy_actors\":{},\"busy_us\":{},\"fired\":{},\
         \"expected\":{},\"stalled_chains\":{},\"overdue\":{},\"early\":{},\"p50_us\":{},\"p90_us\":{},\
         \"p99_us\":{},\"max_us\":{},\"min_us\":{},\"mean_us\":{},\"seconds\":{:.3},\"busy_handlers\":{},\
         \"busy_util\":{:.3}}}",
        a.load,
        a.timers,
        a.chains,
        a.period_us,
        a.grace_ms,
        a.workers,
        if a.load == "idle" { 0 } else { a.busy_actors },
        a.busy_us,
        fired,
        a.timers,
        stalled,
        s.overdue.load(Ordering::Acquire),
        early,
        us(percentile_us(&v, 50.0)),
        us(percentile_us(&v, 90.0)),
        us(percentile_us(&v, 99.0)),
        us(v.last().map_or(0.0, |&x| x as f64 / 1000.0)),
        us(v.first().map_or(0.0, |&x| x as f64 / 1000.0)),
        us(mean),
        seconds,
        busy_n,
        busy_util
    );
}

// ---- idle_cpu -----------------------------------------------------------------

fn run_idle_cpu(rt: &tokio::runtime::Runtime, a: &Args) {
    let ticks = Arc::new(AtomicU64::new(0));
    let period = Duration::from_millis(a.period_ms);
    let t = ticks.clone();
    let task = rt.spawn(async move {
        loop {
            tokio::time::sleep(period).await;
            t.fetch_add(1, Ordering::Release);
        }
    });
    let boot_limit = Instant::now() + Duration::from_secs(10);
    while ticks.load(Ordering::Acquire) < 2 {
        if Instant::now() > boot_limit {
            fail_check(a, "the periodic timer did not tick twice within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let t0 = ticks.load(Ordering::Acquire);
    let cpu0 = process_cpu_s();
    let w0 = Instant::now();
    std::thread::sleep(Duration::from_millis(a.duration_ms));
    let cpu1 = process_cpu_s();
    let wall = w0.elapsed().as_secs_f64();
    let n = ticks.load(Ordering::Acquire) - t0;
    task.abort();
    let expected = wall * 1000.0 / a.period_ms as f64;
    if (n as f64) < 0.5 * expected {
        fail_check(a, format!("the periodic timer ticked {n} times in {wall} s (period {} ms)", a.period_ms));
    }
    println!(
        "{{\"runtime\":\"tokio\",\"scenario\":\"idle_cpu\",\"period_ms\":{},\"workers\":{},\"seconds\":{:.3},\
         \"cpu_s\":{:.4},\"cpu_pct\":{:.3},\"ticks\":{},\"expected_ticks\":{}}}",
        a.period_ms,
        a.workers,
        wall,
        cpu1 - cpu0,
        100.0 * (cpu1 - cpu0) / wall,
        n,
        expected.round() as i64
    );
}

// ---- cancel_rate --------------------------------------------------------------

fn run_cancel_rate(rt: &tokio::runtime::Runtime, a: &Args) {
    let delay = Duration::from_millis(a.delay_ms);
    let duration_ns = a.duration_ms as i64 * 1_000_000;
    let (tx, mut rx) = mpsc::unbounded_channel::<u64>();
    let delivered = Arc::new(AtomicU64::new(0));
    let d = delivered.clone();
    let sink = rt.spawn(async move {
        while let Some(_id) = rx.recv().await {
            d.fetch_add(1, Ordering::Relaxed);
        }
    });
    let (pairs, start, end) = rt.block_on(async move {
        let start = now_ns();
        let (mut pairs, mut seq) = (0u64, 0u64);
        loop {
            for _ in 0..CANCEL_BATCH {
                seq += 1;
                let (t, id) = (tx.clone(), seq);
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let _ = t.send(id);
                })
                .abort();
            }
            pairs += CANCEL_BATCH;
            let now = now_ns();
            if now - start >= duration_ns {
                break (pairs, start, now);
            }
            tokio::task::yield_now().await;
        }
    });
    // Let any timer that beat its cancel deliver, then close the channel.
    std::thread::sleep(delay + Duration::from_millis(20));
    rt.block_on(async {
        sink.abort();
        let _ = sink.await;
    });
    // An abort's success is not observable at the call: a cancel won iff its
    // timer never delivered (all deliveries are in after delay + 20 ms).
    let delivered = delivered.load(Ordering::Acquire);
    let cancelled = pairs - delivered;
    let seconds = (end - start) as f64 * 1e-9;
    println!(
        "{{\"runtime\":\"tokio\",\"scenario\":\"cancel_rate\",\"delay_ms\":{},\"workers\":{},\"seconds\":{:.3},\
         \"pairs\":{},\"pairs_per_s\":{:.1},\"cancelled\":{},\"delivered\":{},\"discarded\":0,\
         \"cancel\":\"JoinHandle::abort\"}}",
        a.delay_ms,
        a.workers,
        seconds,
        pairs,
        if seconds > 0.0 { pairs as f64 / seconds } else { 0.0 },
        cancelled,
        delivered
    );
}

fn main() {
    let a = parse_args();
    now_ns();
    if a.watchdog_s > 0 {
        let (secs, sc, load) = (a.watchdog_s, a.scenario.clone(), a.load.clone());
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(secs));
            eprintln!("tokio/{sc} load={load}: HUNG after {secs}s");
            exit(3);
        });
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(a.workers as usize)
        .enable_time()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("tokio-timers: cannot start the runtime: {e}");
            exit(1)
        });
    match a.scenario.as_str() {
        "lateness" => run_lateness(&rt, &a),
        "idle_cpu" => run_idle_cpu(&rt, &a),
        _ => run_cancel_rate(&rt, &a),
    }
    rt.shutdown_timeout(Duration::from_millis(100));
}
