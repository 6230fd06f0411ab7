//! tokio-peers: the four peer workloads of bench/peers/peers_common.hpp on
//! tokio, for the coact / CAF / tokio comparison of `scripts/bench.sh peers`.
//!
//! Usage: tokio-peers --workload ping_pong|fan_out|thread_ring|skynet --n N
//!                    [--workers W] [--style actor|idiomatic|join]
//!                    [--channel bounded|unbounded] [--flavor multi_thread|current_thread]
//!                    [--watchdog-s S]
//!
//! Same workloads, constants, checks and JSON line as the C++ programs
//! (peers_common.hpp). Two ways of writing each workload (--style):
//!   actor      an actor emulation: every task owns the receiving half of its own
//!              channel (its mailbox) and gets its arguments as a message;
//!              `--channel bounded` uses `mpsc::channel(1024)` (a send awaits
//!              capacity), `unbounded` (default) `unbounded_channel()`.
//!   idiomatic  what a tokio user writes: a task's arguments are moved in at
//!              `tokio::spawn`, one unbounded mpsc channel where the workload
//!              needs one, no per-task mailbox where the workload has none:
//!                ping_pong    two tasks, one channel each way (the workload's two
//!                             mailboxes);
//!                fan_out      per round, one spawned task per request (its index
//!                             moved in), the replies over one channel to the master;
//!                thread_ring  503 tasks, each holding its receiver and the next
//!                             one's sender (the ring is the workload's mailboxes);
//!                             the ring shuts down by dropping senders;
//!                skynet       each node spawned with its range; its children's
//!                             results over one channel per parent.
//!   join       fan_out and skynet: as idiomatic, but the master (a parent)
//!              awaits its requests' (children's) JoinHandles instead of a channel.
//! `--channel` applies to --style actor only. The JSON line names the variant:
//! "style", "channel", "flavor" and "variant" (actor_bounded, actor_unbounded,
//! idiomatic (skynet: idiomatic_channel), idiomatic_join (fan_out, skynet); "_current_thread"
//! appended for that flavor). `scripts/bench.sh peers` runs idiomatic_join for
//! fan_out and skynet, the faster of their two idiomatic shapes on the machine
//! it was written on.
//! The pool (--flavor): tokio's multi-thread scheduler with `--workers` worker
//! threads (default; also for 1, so that one worker means the same scheduler as
//! two), or the current-thread scheduler (`--workers` must be 1), the idiom for
//! a one-thread tokio program, whose one thread is the one in block_on. In the
//! multi-thread flavor every workload's task is spawned and the thread in
//! block_on only starts the run and waits for its end, so the work runs on
//! `--workers` threads as coact's does.
//!
//! Timing: from just before the start message is sent (all fixed tasks already
//! spawned) to the moment the task that observes completion reads the clock.
//! Exit status: 0 ok, 1 wrong result, 2 bad usage, 3 watchdog fired.

use std::future::Future;
use std::pin::Pin;
use std::process::exit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

const FAN_OUT_WORKERS: u64 = 64;
const RING_SIZE: u64 = 503;
const SKYNET_BRANCHING: u64 = 10;
/// Capacity of a bounded channel: larger than any workload's messages in
/// flight to one receiver (64 fan-out replies, 10 skynet replies), so a
/// bounded send never waits for capacity in these workloads' patterns.
const BOUNDED_CAPACITY: usize = 1024;

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Actor,
    Idiomatic,
    Join,
}

#[derive(Clone, Copy, PartialEq)]
enum Channel {
    Bounded,
    Unbounded,
}

/// The sending half of either channel kind.
enum Tx<T> {
    B(mpsc::Sender<T>),
    U(mpsc::UnboundedSender<T>),
}

impl<T> Clone for Tx<T> {
    fn clone(&self) -> Self {
        match self {
            Tx::B(s) => Tx::B(s.clone()),
            Tx::U(s) => Tx::U(s.clone()),
        }
    }
}

impl<T: Send> Tx<T> {
    async fn send(&self, v: T) {
        let ok = match self {
            Tx::B(s) => s.send(v).await.is_ok(),
            Tx::U(s) => s.send(v).is_ok(),
        };
        if !ok {
            eprintln!("tokio-peers: a receiver was dropped early (a bug in the workload)");
            exit(1);
        }
    }
}

/// The receiving half of either channel kind.
enum Rx<T> {
    B(mpsc::Receiver<T>),
    U(mpsc::UnboundedReceiver<T>),
}

impl<T> Rx<T> {
    async fn recv(&mut self) -> Option<T> {
        match self {
            Rx::B(r) => r.recv().await,
            Rx::U(r) => r.recv().await,
        }
    }
}

fn channel<T>(kind: Channel) -> (Tx<T>, Rx<T>) {
    match kind {
        Channel::Bounded => {
            let (t, r) = mpsc::channel(BOUNDED_CAPACITY);
            (Tx::B(t), Rx::B(r))
        }
        Channel::Unbounded => {
            let (t, r) = mpsc::unbounded_channel();
            (Tx::U(t), Rx::U(r))
        }
    }
}

struct Args {
    workload: String,
    n: u64,
    workers: usize,
    channel: Channel,
    style: Style,
    current_thread: bool,
    watchdog_s: u64,
}

fn usage(msg: &str) -> ! {
    eprintln!("tokio-peers: {msg}");
    eprintln!(
        "usage: tokio-peers --workload ping_pong|fan_out|thread_ring|skynet --n N [--workers W] \
         [--style actor|idiomatic|join] [--channel bounded|unbounded] \
         [--flavor multi_thread|current_thread] [--watchdog-s S]"
    );
    exit(2);
}

/// 1 + b + ... + leaves, or 0 if leaves is not a power of b.
fn skynet_actor_count(leaves: u64) -> u64 {
    let (mut total, mut level) = (0u64, 1u64);
    while level < leaves {
        total += level;
        level *= SKYNET_BRANCHING;
    }
    if level == leaves {
        total + leaves
    } else {
        0
    }
}

fn parse_args() -> Args {
    let mut a = Args {
        workload: String::new(),
        n: 0,
        workers: 2,
        channel: Channel::Unbounded,
        style: Style::Actor,
        current_thread: false,
        watchdog_s: 0,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let (key, inline) = match argv[i].split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (argv[i].clone(), None),
        };
        if key == "--help" || key == "-h" {
            println!(
                "tokio-peers --workload ping_pong|fan_out|thread_ring|skynet --n N [--workers W] \
                 [--style actor|idiomatic|join] [--channel bounded|unbounded] \
                 [--flavor multi_thread|current_thread] [--watchdog-s S]\n\
                 Runs one peer workload once on tokio and prints one JSON line."
            );
            exit(0);
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                match argv.get(i) {
                    Some(v) => v.clone(),
                    None => usage(&format!("{key} needs a value")),
                }
            }
        };
        let number = |what: &str| -> u64 {
            value.parse::<u64>().unwrap_or_else(|_| usage(&format!("{key} {value}: expected {what}")))
        };
        match key.as_str() {
            "--workload" => a.workload = value.clone(),
            "--n" => a.n = number("a positive integer"),
            "--workers" => a.workers = number("a worker count 1..1024") as usize,
            "--watchdog-s" => a.watchdog_s = number("seconds (0 = none)"),
            "--style" => {
                a.style = match value.as_str() {
                    "actor" => Style::Actor,
                    "idiomatic" => Style::Idiomatic,
                    "join" => Style::Join,
                    _ => usage(&format!("--style {value}: expected actor, idiomatic or join")),
                }
            }
            "--flavor" => {
                a.current_thread = match value.as_str() {
                    "multi_thread" => false,
                    "current_thread" => true,
                    _ => usage(&format!("--flavor {value}: expected multi_thread or current_thread")),
                }
            }
            "--channel" => {
                a.channel = match value.as_str() {
                    "bounded" => Channel::Bounded,
                    "unbounded" => Channel::Unbounded,
                    _ => usage(&format!("--channel {value}: expected bounded or unbounded")),
                }
            }
            _ => usage(&format!("unknown option {key}")),
        }
        i += 1;
    }
    if !["ping_pong", "fan_out", "thread_ring", "skynet"].contains(&a.workload.as_str()) {
        usage(&format!("--workload '{}': expected ping_pong, fan_out, thread_ring or skynet", a.workload));
    }
    if a.n == 0 {
        usage("--n: expected a positive integer");
    }
    if a.workers == 0 || a.workers > 1024 {
        usage(&format!("--workers {}: expected 1..1024", a.workers));
    }
    if a.style == Style::Join && a.workload != "skynet" && a.workload != "fan_out" {
        usage("--style join is a fan_out and skynet variant only");
    }
    if a.current_thread && a.workers != 1 {
        usage(&format!("--flavor current_thread runs on one thread: it needs --workers 1, got {}", a.workers));
    }
    if a.workload == "skynet" && (skynet_actor_count(a.n) == 0 || a.n > 100_000_000) {
        usage("skynet needs --n a power of 10, at most 10^8 (the number of leaves)");
    }
    a
}

fn fail_check(a: &Args, what: String) -> ! {
    eprintln!("tokio/{} n={}: wrong result: {what}", a.workload, a.n);
    exit(1);
}

fn triangle(n: u64) -> u64 {
    if n % 2 == 0 {
        (n / 2) * (n - 1)
    } else {
        n * ((n - 1) / 2)
    }
}

fn print_result(a: &Args, seconds: f64, msgs: u64, unit: &str) {
    let seconds = if seconds > 0.0 { seconds } else { 1e-9 };
    // The idiomatic styles always use unbounded channels.
    let channel = if a.style == Style::Actor && a.channel == Channel::Bounded { "bounded" } else { "unbounded" };
    let style = match a.style {
        Style::Actor => "actor",
        Style::Idiomatic => "idiomatic",
        Style::Join => "join",
    };
    let flavor = if a.current_thread { "current_thread" } else { "multi_thread" };
    let mut variant = match a.style {
        Style::Actor => format!("actor_{channel}"),
        Style::Idiomatic if a.workload == "skynet" => "idiomatic_channel".to_string(),
        Style::Idiomatic => "idiomatic".to_string(),
        Style::Join => "idiomatic_join".to_string(),
    };
    if a.current_thread {
        variant.push_str("_current_thread");
    }
    println!(
        "{{\"runtime\":\"tokio\",\"workload\":\"{}\",\"n\":{},\"workers\":{},\"seconds\":{:.9},\"msgs\":{},\
         \"msgs_per_s\":{:.1},\"unit\":\"{}\",\"channel\":\"{}\",\"style\":\"{}\",\"flavor\":\"{}\",\
         \"variant\":\"{}\"}}",
        a.workload,
        a.n,
        a.workers,
        seconds,
        msgs,
        msgs as f64 / seconds,
        unit,
        channel,
        style,
        flavor,
        variant
    );
}

// ---- ping_pong: 2 tasks, n round trips; msgs = 2n -----------------------------
async fn ping_pong(a: &Args) -> (f64, u64) {
    let (ping_tx, mut ping_rx) = channel::<u64>(a.channel);
    let (pong_tx, mut pong_rx) = channel::<u64>(a.channel);
    let ponger = tokio::spawn(async move {
        let mut pings = 0u64;
        while let Some(k) = ping_rx.recv().await {
            pings += 1;
            pong_tx.send(k).await;
        }
        pings
    });
    let n = a.n;
    let start = Instant::now();
    let pinger = tokio::spawn(async move {
        let mut pongs = 0u64;
        ping_tx.send(n - 1).await;
        while let Some(k) = pong_rx.recv().await {
            pongs += 1;
            if k == 0 {
                break;
            }
            ping_tx.send(k - 1).await;
        }
        (start.elapsed(), pongs)
    });
    let (elapsed, pongs) = pinger.await.expect("pinger");
    let pings = ponger.await.expect("ponger");
    if pings != n || pongs != n {
        fail_check(a, format!("pings={pings} pongs={pongs}"));
    }
    (elapsed.as_secs_f64(), 2 * n)
}

// ---- fan_out: 1 master, 64 workers, n requests in rounds of 64; msgs = 2n ----
async fn fan_out(a: &Args) -> (f64, u64) {
    let (rep_tx, mut rep_rx) = channel::<u64>(a.channel);
    let handled = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    let mut joins = Vec::new();
    for _ in 0..FAN_OUT_WORKERS {
        let (tx, mut rx) = channel::<u64>(a.channel);
        let rep = rep_tx.clone();
        let h = handled.clone();
        workers.push(tx);
        joins.push(tokio::spawn(async move {
            let mut count = 0u64;
            while let Some(i) = rx.recv().await {
                count += 1;
                rep.send(i).await;
            }
            h.fetch_add(count, Ordering::AcqRel);
        }));
    }
    drop(rep_tx);
    let n = a.n;
    let start = Instant::now();
    let master = tokio::spawn(async move {
        let (mut next, mut replies, mut sum) = (0u64, 0u64, 0u64);
        while next < n {
            let m = FAN_OUT_WORKERS.min(n - next);
            for w in workers.iter().take(m as usize) {
                w.send(next).await;
                next += 1;
            }
            for _ in 0..m {
                let i = rep_rx.recv().await.expect("reply");
                replies += 1;
                sum += i;
            }
        }
        (start.elapsed(), replies, sum)
        // `workers` drops here: every worker's receiver ends and it exits.
    });
    let (elapsed, replies, sum) = master.await.expect("master");
    for j in joins {
        j.await.expect("worker");
    }
    let handled = handled.load(Ordering::Acquire);
    if replies != n || sum != triangle(n) || handled != n {
        fail_check(a, format!("replies={replies} sum={sum} (want {}) handled={handled}", triangle(n)));
    }
    (elapsed.as_secs_f64(), 2 * n)
}

// ---- thread_ring: 503 tasks, a token passed n hops; msgs = n ------------------
enum RingMsg {
    Token(u64),
    /// Shutdown pass after completion (as coact_peers.cpp's ring_stop): each
    /// task adds its hop count, forwards `remaining - 1` and exits.
    Stop(u64),
}

async fn thread_ring(a: &Args) -> (f64, u64) {
    let hops = Arc::new(AtomicU64::new(0));
    let (done_tx, mut done_rx) = channel::<(u64, Instant)>(a.channel);
    let mut txs = Vec::new();
    let mut rxs = Vec::new();
    for _ in 0..RING_SIZE {
        let (t, r) = channel::<RingMsg>(a.channel);
        txs.push(t);
        rxs.push(r);
    }
    let head = txs[0].clone();
    let mut joins = Vec::new();
    for (index, mut rx) in rxs.into_iter().enumerate() {
        let next = txs[(index + 1) % RING_SIZE as usize].clone();
        let done = done_tx.clone();
        let hops = hops.clone();
        joins.push(tokio::spawn(async move {
            let mut my_hops = 0u64;
            while let Some(m) = rx.recv().await {
                match m {
                    RingMsg::Token(k) if k > 0 => {
                        my_hops += 1;
                        next.send(RingMsg::Token(k - 1)).await;
                    }
                    RingMsg::Token(_) => {
                        done.send((index as u64, Instant::now())).await;
                        next.send(RingMsg::Stop(RING_SIZE - 2)).await;
                        break;
                    }
                    RingMsg::Stop(remaining) => {
                        if remaining > 0 {
                            next.send(RingMsg::Stop(remaining - 1)).await;
                        }
                        break;
                    }
                }
            }
            hops.fetch_add(my_hops, Ordering::AcqRel);
        }));
    }
    drop(txs);
    drop(done_tx);
    let start = Instant::now();
    head.send(RingMsg::Token(a.n)).await;
    drop(head);
    let (final_node, end) = done_rx.recv().await.expect("ring completion");
    let elapsed = end.duration_since(start);
    for j in joins {
        j.await.expect("ring task");
    }
    let hops = hops.load(Ordering::Acquire);
    if hops != a.n || final_node != a.n % RING_SIZE {
        fail_check(a, format!("hops={hops} final_node={final_node} (want {})", a.n % RING_SIZE));
    }
    (elapsed.as_secs_f64(), a.n)
}

// ---- skynet: 10-ary spawn tree with n leaves; msgs = actors spawned ---------
struct Start {
    num: u64,
    size: u64,
    parent: Option<Tx<(u64, u64)>>,
}

fn skynet_node(mut rx: Rx<Start>, kind: Channel) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        let m = rx.recv().await.expect("start");
        let (sum, actors) = if m.size == 1 {
            (m.num, 1)
        } else {
            let child = m.size / SKYNET_BRANCHING;
            let (rep_tx, mut rep_rx) = channel::<(u64, u64)>(kind);
            for i in 0..SKYNET_BRANCHING {
                let (tx, crx) = channel::<Start>(kind);
                tokio::spawn(skynet_node(crx, kind));
                tx.send(Start { num: m.num + i * child, size: child, parent: Some(rep_tx.clone()) }).await;
            }
            let (mut sum, mut actors) = (0u64, 1u64);
            for _ in 0..SKYNET_BRANCHING {
                let (s, c) = rep_rx.recv().await.expect("reply");
                sum += s;
                actors += c;
            }
            (sum, actors)
        };
        if let Some(p) = m.parent {
            p.send((sum, actors)).await;
        }
    })
}

async fn skynet(a: &Args) -> (f64, u64) {
    let (root_rep_tx, mut root_rep_rx) = channel::<(u64, u64)>(a.channel);
    let start = Instant::now();
    let (tx, rx) = channel::<Start>(a.channel);
    tokio::spawn(skynet_node(rx, a.channel));
    tx.send(Start { num: 0, size: a.n, parent: Some(root_rep_tx) }).await;
    let (sum, actors) = root_rep_rx.recv().await.expect("root reply");
    let elapsed = start.elapsed();
    let want = skynet_actor_count(a.n);
    if sum != triangle(a.n) || actors != want {
        fail_check(a, format!("sum={sum} (want {}) actors={actors} (want {want})", triangle(a.n)));
    }
    (elapsed.as_secs_f64(), want)
}

// ---- the idiomatic style (--style idiomatic / join) ------------------------------
// Concrete unbounded channels (no enum over channel kinds), arguments moved in
// at spawn; each function has the same timing and checks as its actor-style twin.

async fn ping_pong_idiomatic(a: &Args) -> (f64, u64) {
    let (ping_tx, mut ping_rx) = mpsc::unbounded_channel::<u64>();
    let (pong_tx, mut pong_rx) = mpsc::unbounded_channel::<u64>();
    let ponger = tokio::spawn(async move {
        let mut pings = 0u64;
        while let Some(k) = ping_rx.recv().await {
            pings += 1;
            if pong_tx.send(k).is_err() {
                break;
            }
        }
        pings
    });
    let n = a.n;
    let start = Instant::now();
    let pinger = tokio::spawn(async move {
        let mut pongs = 0u64;
        ping_tx.send(n - 1).expect("ponger alive");
        while let Some(k) = pong_rx.recv().await {
            pongs += 1;
            if k == 0 {
                break;
            }
            ping_tx.send(k - 1).expect("ponger alive");
        }
        (start.elapsed(), pongs)
        // ping_tx drops here: the ponger's loop ends.
    });
    let (elapsed, pongs) = pinger.await.expect("pinger");
    let pings = ponger.await.expect("ponger");
    if pings != n || pongs != n {
        fail_check(a, format!("pings={pings} pongs={pongs}"));
    }
    (elapsed.as_secs_f64(), 2 * n)
}

/// Per round, one task per request, spawned with its index; the replies come
/// back over the master's one channel (msgs = 2n: the spawn carries the request).
async fn fan_out_idiomatic(a: &Args) -> (f64, u64) {
    let n = a.n;
    let start = Instant::now();
    if a.style == Style::Join {
        return fan_out_join(a, start).await;
    }
    let master = tokio::spawn(async move {
        let (rep_tx, mut rep_rx) = mpsc::unbounded_channel::<u64>();
        let (mut next, mut replies, mut sum) = (0u64, 0u64, 0u64);
        while next < n {
            let m = FAN_OUT_WORKERS.min(n - next);
            for _ in 0..m {
                let (rep, i) = (rep_tx.clone(), next);
                tokio::spawn(async move {
                    let _ = rep.send(i);
                });
                next += 1;
            }
            for _ in 0..m {
                let i = rep_rx.recv().await.expect("reply");
                replies += 1;
                sum += i;
            }
        }
        (start.elapsed(), replies, sum)
    });
    let (elapsed, replies, sum) = master.await.expect("master");
    if replies != n || sum != triangle(n) {
        fail_check(a, format!("replies={replies} sum={sum} (want {})", triangle(n)));
    }
    (elapsed.as_secs_f64(), 2 * n)
}

/// fan_out, --style join: per round, one task per request returning its index;
/// the master awaits the round's JoinHandles in order (msgs = 2n).
async fn fan_out_join(a: &Args, start: Instant) -> (f64, u64) {
    let n = a.n;
    let master = tokio::spawn(async move {
        let (mut next, mut replies, mut sum) = (0u64, 0u64, 0u64);
        let mut handles = Vec::with_capacity(FAN_OUT_WORKERS as usize);
        while next < n {
            let m = FAN_OUT_WORKERS.min(n - next);
            for _ in 0..m {
                let i = next;
                handles.push(tokio::spawn(async move { i }));
                next += 1;
            }
            for h in handles.drain(..) {
                sum += h.await.expect("request task");
                replies += 1;
            }
        }
        (start.elapsed(), replies, sum)
    });
    let (elapsed, replies, sum) = master.await.expect("master");
    if replies != n || sum != triangle(n) {
        fail_check(a, format!("replies={replies} sum={sum} (want {})", triangle(n)));
    }
    (elapsed.as_secs_f64(), 2 * n)
}

/// 503 tasks; task i holds its receiver and task i+1's sender, moved in at
/// spawn. The task that sees token 0 reports and returns; dropping its sender
/// ends the next task's loop, and so on around the ring.
async fn thread_ring_idiomatic(a: &Args) -> (f64, u64) {
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(u64, Instant)>();
    let mut txs = Vec::with_capacity(RING_SIZE as usize);
    let mut rxs = Vec::with_capacity(RING_SIZE as usize);
    for _ in 0..RING_SIZE {
        let (t, r) = mpsc::unbounded_channel::<u64>();
        txs.push(Some(t));
        rxs.push(r);
    }
    let head = txs[0].clone().expect("head");
    let mut joins = Vec::with_capacity(RING_SIZE as usize);
    for (index, mut rx) in rxs.into_iter().enumerate() {
        let next = txs[(index + 1) % RING_SIZE as usize].take().expect("one sender per task");
        let done = done_tx.clone();
        joins.push(tokio::spawn(async move {
            let mut my_hops = 0u64;
            while let Some(k) = rx.recv().await {
                if k == 0 {
                    let _ = done.send((index as u64, Instant::now()));
                    break;
                }
                my_hops += 1;
                if next.send(k - 1).is_err() {
                    break;
                }
            }
            my_hops
        }));
    }
    drop(done_tx);
    let start = Instant::now();
    head.send(a.n).expect("ring head alive");
    drop(head);
    let (final_node, end) = done_rx.recv().await.expect("ring completion");
    let elapsed = end.duration_since(start);
    let mut hops = 0u64;
    for j in joins {
        hops += j.await.expect("ring task");
    }
    if hops != a.n || final_node != a.n % RING_SIZE {
        fail_check(a, format!("hops={hops} final_node={final_node} (want {})", a.n % RING_SIZE));
    }
    (elapsed.as_secs_f64(), a.n)
}

/// skynet, --style idiomatic: a node is spawned with its range and its parent's
/// sender; it spawns its children with theirs and sums (sum, actors) from one
/// channel of its own. Spawning through this plain function keeps the future
/// type non-recursive, so no node is boxed.
fn spawn_skynet_node(num: u64, size: u64, parent: mpsc::UnboundedSender<(u64, u64)>) {
    tokio::spawn(skynet_node_idiomatic(num, size, parent));
}

async fn skynet_node_idiomatic(num: u64, size: u64, parent: mpsc::UnboundedSender<(u64, u64)>) {
    let result = if size == 1 {
        (num, 1)
    } else {
        let child = size / SKYNET_BRANCHING;
        let (tx, mut rx) = mpsc::unbounded_channel();
        for i in 0..SKYNET_BRANCHING {
            spawn_skynet_node(num + i * child, child, tx.clone());
        }
        drop(tx);
        let (mut sum, mut actors) = (0u64, 1u64);
        for _ in 0..SKYNET_BRANCHING {
            let (s, c) = rx.recv().await.expect("child result");
            sum += s;
            actors += c;
        }
        (sum, actors)
    };
    let _ = parent.send(result);
}

/// skynet, --style join: as idiomatic, a parent awaiting its children's JoinHandles.
fn spawn_skynet_join(num: u64, size: u64) -> tokio::task::JoinHandle<(u64, u64)> {
    tokio::spawn(skynet_node_join(num, size))
}

async fn skynet_node_join(num: u64, size: u64) -> (u64, u64) {
    if size == 1 {
        return (num, 1);
    }
    let child = size / SKYNET_BRANCHING;
    let mut handles = Vec::with_capacity(SKYNET_BRANCHING as usize);
    for i in 0..SKYNET_BRANCHING {
        handles.push(spawn_skynet_join(num + i * child, child));
    }
    let (mut sum, mut actors) = (0u64, 1u64);
    for h in handles {
        let (s, c) = h.await.expect("child task");
        sum += s;
        actors += c;
    }
    (sum, actors)
}

async fn skynet_idiomatic(a: &Args) -> (f64, u64) {
    let start = Instant::now();
    let (sum, actors) = if a.style == Style::Join {
        spawn_skynet_join(0, a.n).await.expect("root task")
    } else {
        let (tx, mut rx) = mpsc::unbounded_channel();
        spawn_skynet_node(0, a.n, tx);
        rx.recv().await.expect("root result")
    };
    let elapsed = start.elapsed();
    let want = skynet_actor_count(a.n);
    if sum != triangle(a.n) || actors != want {
        fail_check(a, format!("sum={sum} (want {}) actors={actors} (want {want})", triangle(a.n)));
    }
    (elapsed.as_secs_f64(), want)
}

fn main() {
    let a = parse_args();
    if a.watchdog_s > 0 {
        let (secs, wl, n, w) = (a.watchdog_s, a.workload.clone(), a.n, a.workers);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(secs));
            eprintln!("tokio/{wl} n={n} workers={w}: HUNG after {secs}s");
            exit(3);
        });
    }
    let built = if a.current_thread {
        tokio::runtime::Builder::new_current_thread().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(a.workers).build()
    };
    let rt = built.unwrap_or_else(|e| {
        eprintln!("tokio-peers: cannot start the runtime: {e}");
        exit(1)
    });
    let (seconds, msgs) = rt.block_on(async {
        match (a.workload.as_str(), a.style == Style::Actor) {
            ("ping_pong", true) => ping_pong(&a).await,
            ("fan_out", true) => fan_out(&a).await,
            ("thread_ring", true) => thread_ring(&a).await,
            (_, true) => skynet(&a).await,
            ("ping_pong", false) => ping_pong_idiomatic(&a).await,
            ("fan_out", false) => fan_out_idiomatic(&a).await,
            ("thread_ring", false) => thread_ring_idiomatic(&a).await,
            (_, false) => skynet_idiomatic(&a).await,
        }
    });
    print_result(&a, seconds, msgs, if a.workload == "skynet" { "actors" } else { "msgs" });
}
