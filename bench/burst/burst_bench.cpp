// bench/burst/burst_bench.cpp: one timed run of a burst dispatch row with
// burst on or off (COACT_BURST), for `scripts/bench.sh burst` and the coact
// rows of `scripts/bench.sh scaling`.
//
//   coact-burst-bench --side on|off [--workers 2] [--quick]
//                     --row fan_out --width N [--handler-us U]
//                   | --row chain [--handler-us U]
//                   | --row peers --workload W --peers PATH
//
// Rows:
//   fan_out  a fan actor sends one request to each of `width` workers (each
//            spins handler_us in its handler) and starts the next round when
//            all replied (msgs = 2 x width x rounds).
//   chain    a token relayed along a ring of 64 actors, handler_us each hop
//            (width 1; msgs = hops).
//   peers    a peers workload (ping_pong, fan_out, thread_ring, skynet) run as
//            the coact-peers program at --peers PATH with COACT_BURST=on|off in
//            its environment (width 0, handler_us 0).
// The sizes are fixed per row (--quick: small ones for a smoke run). The
// in-process rows run a fresh runtime made by resolve_tuning() (COACT_* knobs
// apply) with `workers` and `burst` forced.
//
// Output: one JSON line on stdout,
//   {"group":"burst","workload":W,"width":N,"handler_us":U,"workers":K,
//    "side":"on"|"off","msgs":M,"msgs_per_s":R,"syncs":S}
// syncs = scheduling synchronizations of the timed run: wakes of parked
// workers + injector pushes + own-deque pushes (RuntimeStats::syncs(); for
// peers rows, the whole process's, printed by coact-peers on stderr).
// The pairs of runs, their order and the medians and ratios of a row are the
// caller's: reports/coact_reports/bench_burst.py runs them through the one
// trial runner (scripts/bench.sh's header documents the rows it prints).
// Exit: 0; 1 on a wrong result or a failed coact-peers run; 2 on bad usage.
#include <coact/runtime/runtime.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"

namespace {

using coact::bench::now_ns;

void spin_us(uint32_t us) {
  if (us == 0) return;
  const int64_t end = now_ns() + int64_t(us) * 1000;
  while (now_ns() < end) {
  }
}

// ---- fan_out ------------------------------------------------------------------
struct fan;
struct request {
  coact::ActorRef<fan> from;
};
struct reply {};
struct start {
  uint32_t rounds;
};

struct leaf : coact::Actor<leaf> {
  uint32_t us;
  explicit leaf(uint32_t u) : us(u) {}
  void on(const request& r);
};

struct fan : coact::Actor<fan> {
  std::vector<coact::ActorRef<leaf>> leaves;
  uint32_t rounds = 0, waiting = 0;
  std::atomic<int64_t>* end;
  fan(std::vector<coact::ActorRef<leaf>> l, std::atomic<int64_t>* e) : leaves(std::move(l)), end(e) {}
  void round() {
    waiting = uint32_t(leaves.size());
    for (auto& l : leaves) l.send(request{self()});
  }
  void on(const start& s) {
    rounds = s.rounds;
    round();
  }
  void on(const reply&) {
    if (--waiting > 0) return;
    if (--rounds > 0) {
      round();
    } else {
      end->store(now_ns(), std::memory_order_release);
      runtime().request_stop();
    }
  }
};

void leaf::on(const request& r) {
  spin_us(us);
  r.from.send(reply{});
}

// ---- chain --------------------------------------------------------------------
struct link;
struct token {
  uint64_t left;
};
struct link : coact::Actor<link> {
  coact::ActorRef<link> next;
  uint32_t us;
  std::atomic<int64_t>* end;
  link(uint32_t u, std::atomic<int64_t>* e) : us(u), end(e) {}
  void on(const coact::ActorRef<link>& n) { next = n; }
  void on(const token& t) {
    spin_us(us);
    if (t.left == 0) {
      end->store(now_ns(), std::memory_order_release);
      runtime().request_stop();
      return;
    }
    next.send(token{t.left - 1});
  }
};

// One timed run: its messages, rate and scheduling synchronizations.
struct trial {
  uint64_t msgs;
  double msgs_per_s;
  uint64_t syncs;
};

coact::SchedulerTuning tuning(uint32_t workers, bool burst) {
  coact::SchedulerTuning t = coact::resolve_tuning();
  t.workers = workers;
  t.burst = burst;
  return t;
}

trial run_fan_out(uint32_t workers, bool burst, uint32_t width, uint32_t us, uint32_t rounds) {
  std::atomic<int64_t> end{0};
  coact::Runtime rt(tuning(workers, burst));
  std::vector<coact::ActorRef<leaf>> ls;
  for (uint32_t i = 0; i < width; ++i) ls.push_back(rt.spawn<leaf>(us));
  auto f = rt.spawn<fan>(ls, &end);
  const coact::RuntimeStats before = rt.stats();
  const int64_t t0 = now_ns();
  f.send(start{rounds});
  rt.run();
  const coact::RuntimeStats after = rt.stats();
  const double s = double(end.load() - t0) * 1e-9;
  const uint64_t msgs = 2ull * width * rounds;
  return {msgs, double(msgs) / s, after.syncs() - before.syncs()};
}

trial run_chain(uint32_t workers, bool burst, uint32_t us, uint64_t hops) {
  std::atomic<int64_t> end{0};
  coact::Runtime rt(tuning(workers, burst));
  constexpr uint32_t kLinks = 64;
  std::vector<coact::ActorRef<link>> ls;
  for (uint32_t i = 0; i < kLinks; ++i) ls.push_back(rt.spawn<link>(us, &end));
  for (uint32_t i = 0; i < kLinks; ++i) ls[i].send(ls[(i + 1) % kLinks]);
  while (rt.stats().delivered < kLinks) std::this_thread::yield();
  const coact::RuntimeStats before = rt.stats();
  const int64_t t0 = now_ns();
  ls[0].send(token{hops});
  rt.run();
  const coact::RuntimeStats after = rt.stats();
  const double s = double(end.load() - t0) * 1e-9;
  return {hops + 1, double(hops + 1) / s, after.syncs() - before.syncs()};
}

// One coact-peers run with COACT_BURST=on|off: its msgs and msgs_per_s
// (stdout JSON) and syncs (stderr stats line).
trial run_peer(const std::string& bin, const std::string& workload, uint64_t n, uint32_t workers, bool burst) {
  const std::string cmd = std::string("COACT_BURST=") + (burst ? "on" : "off") + " '" + bin + "' --workload " +
                          workload + " --n " + std::to_string(n) + " --workers " + std::to_string(workers) +
                          " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) coact::bench::wrong_result("coact-burst-bench", "cannot run " + cmd);
  std::string out;
  char buf[4096];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, k);
  const int rc = pclose(p);
  trial t{0, 0, 0};
  bool have_rate = false, have_syncs = false;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    const std::string line = out.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line[0] == '{') {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.contains("msgs_per_s")) {
        t.msgs_per_s = j["msgs_per_s"].get<double>();
        t.msgs = j.value("msgs", uint64_t{0});
        have_rate = true;
      }
    } else if (line.rfind("coact-peers stats:", 0) == 0) {
      const size_t at = line.find("syncs=");
      if (at != std::string::npos) {
        t.syncs = std::stoull(line.substr(at + 6));
        have_syncs = true;
      }
    }
  }
  if (rc != 0 || !have_rate || !have_syncs) {
    coact::bench::wrong_result("coact-burst-bench", "coact-peers failed (" + cmd + "): " + out);
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t workers = 2, width = 0, handler_us = 0;
  bool quick = false;
  std::string side, row, workload, peers;
  CLI::App app{"One timed run of a burst dispatch row, burst on or off (bench/burst/burst_bench.cpp)."};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--side", side, "burst dispatch on or off for this run")
      ->required()
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--row", row, "fan_out, chain or peers")
      ->required()
      ->check(CLI::IsMember({"fan_out", "chain", "peers"}));
  coact::bench::add_uint_option(app, "--workers", workers, 1, 1024, "worker threads");
  coact::bench::add_uint_option(app, "--width", width, 1, 1000000, "fan_out: workers the fan sends to (required)");
  coact::bench::add_uint_option(app, "--handler-us", handler_us, 0, 1000000,
                                "fan_out and chain: microseconds each handler spins");
  app.add_option("--workload", workload, "peers: the coact-peers workload (required)")
      ->check(CLI::IsMember({"ping_pong", "fan_out", "thread_ring", "skynet"}));
  app.add_option("--peers", peers, "peers: path of the coact-peers program (required)");
  app.add_flag("--quick", quick, "small sizes (smoke test; the numbers then mean little)");
  app.final_callback([&] {
    const bool in_process = row != "peers";
    if (row == "fan_out" && width == 0) throw CLI::ValidationError("--row fan_out needs --width N (N >= 1)");
    if (row != "fan_out" && app.count("--width") > 0)
      throw CLI::ValidationError("--width is for --row fan_out only (chain is width 1, peers width 0)");
    if (!in_process && (workload.empty() || peers.empty()))
      throw CLI::ValidationError("--row peers needs --workload W and --peers PATH (the coact-peers program)");
    if (in_process && (app.count("--workload") > 0 || app.count("--peers") > 0))
      throw CLI::ValidationError("--workload and --peers are for --row peers only");
    if (!in_process && app.count("--handler-us") > 0)
      throw CLI::ValidationError("--handler-us is for --row fan_out and chain only");
  });
  coact::bench::parse_or_exit(app, argc, argv);
  try {
    (void)coact::resolve_tuning();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coact-burst-bench: %s\n", e.what());
    return 2;
  }
  const bool on = side == "on";
  const uint32_t scale = quick ? 20 : 1;
  trial t{};
  if (row == "fan_out") {
    // About 2*10^6 messages for zero-work rows (~0.1 s at 2 workers),
    // 10^5 for 20 us rows (~1 s of handler time; w512: ~97 rounds), so
    // that the start-up and the last round's stragglers are a small part
    // of a run (with ten times fewer they were most of it, and the on/off
    // ratios scattered for rows perf-compare finds unchanged).
    const uint64_t msgs = handler_us == 0 ? 2000000 : 100000;
    const uint32_t rounds = std::max<uint32_t>(2, uint32_t(msgs / (2ull * width) / scale));
    t = run_fan_out(workers, on, width, handler_us, rounds);
  } else if (row == "chain") {
    width = 1;
    const uint64_t hops = (handler_us == 0 ? 3000000 : 20000) / scale;  // ~0.1 s / ~0.4 s
    t = run_chain(workers, on, handler_us, hops);
  } else {
    // Three times scripts/bench.sh peers' n (skynet the same): ~0.1-0.3 s a run.
    const uint64_t full = workload == "skynet" ? 1000000 : 3000000;
    const uint64_t n = quick ? (workload == "skynet" ? 1000 : full / 100) : full;
    t = run_peer(peers, workload, n, workers, on);
  }
  coact::bench::print_json_line({{"group", "burst"},
                                 {"workload", row == "peers" ? workload : row},
                                 {"width", width},
                                 {"handler_us", handler_us},
                                 {"workers", workers},
                                 {"side", side},
                                 {"msgs", t.msgs},
                                 {"msgs_per_s", t.msgs_per_s},
                                 {"syncs", t.syncs}});
  return 0;
}
