// bench/burst/burst_bench.cpp: burst dispatch on vs off (COACT_BURST), side by
// side in one run, behind `scripts/bench.sh burst`.
//
//   coact-burst-bench [--workers 2] [--trials 3] [--quick] [--peers PATH] [--rows fan_out,chain,peers]
//                     [--widths 1,8,64,512] [--handler-us 0,20] [--sides on,off]
//
// Rows (one JSON line each on stdout):
//   fan_out  width 1, 8, 64, 512 x handler_us 0, 20: a fan actor sends one
//            request to each of `width` workers and starts the next round when
//            all replied (msgs = 2 x width x rounds).
//   chain    handler_us 0, 20: a token relayed along a ring of 64 actors
//            (width 1; msgs = hops).
//   peers    the four workloads of `scripts/bench.sh peers` (ping_pong,
//            fan_out, thread_ring, skynet), run as the coact-peers program at
//            --peers PATH with COACT_BURST=on / off in its environment.
// Each row runs --trials pairs (on and off, which first alternating in ABBA
// blocks), a fresh runtime (or process) per run, and reports medians; ratio
// is the median of the pairs' on/off (the pairs share the machine's drift),
// ratio_of_medians the medians' quotient:
//   {"group":"burst","workload":W,"width":N,"handler_us":U,"workers":K,
//    "on_msgs_per_s":M,"off_msgs_per_s":M,"ratio":R,"ratio_of_medians":R,
//    "syncs_on":S,"syncs_off":S,"sync_ratio":off/on,"trials":T,
//    "on_trials":[...],"off_trials":[...],"pair_ratios":[...]}  (every trial, run order)
// syncs = scheduling synchronizations of the timed run: wakes of parked
// workers + injector pushes + own-deque pushes (RuntimeStats::syncs(); for
// peers rows, the whole process's, printed by coact-peers on stderr).
// The in-process rows use resolve_tuning() (COACT_* knobs apply) with
// `workers` and `burst` forced. Exit: 0; 1 on a wrong result or a failed
// coact-peers run; 2 on bad usage.
#include <coact/runtime/runtime.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
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

struct trial {
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
  return {double(2ull * width * rounds) / s, after.syncs() - before.syncs()};
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
  return {double(hops + 1) / s, after.syncs() - before.syncs()};
}

// One coact-peers run with COACT_BURST=on|off: its msgs_per_s (stdout JSON)
// and syncs (stderr stats line).
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
  trial t{0, 0};
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

template <class T>
T median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Which sides a row runs (--sides): both by default; one alone for profiling
// (the other side's fields are then 0 and the ratios omitted).
bool g_run_on = true, g_run_off = true;

// Parses "1,8,64" into numbers; false on anything else.
bool parse_u32_list(const std::string& text, std::vector<uint32_t>& out) {
  out.clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 9) return false;
    out.push_back(uint32_t(std::stoul(item)));
    pos = comma + 1;
  }
  return !out.empty();
}

template <class F>
void row(const char* workload, uint32_t width, uint32_t us, uint32_t workers, uint32_t trials, F run) {
  std::vector<double> on_r, off_r;
  std::vector<uint64_t> on_s, off_s;
  std::vector<double> pair_r;  // on / off of each trial's pair
  for (uint32_t i = 0; i < trials; ++i) {
    // Which side runs first alternates (on, off, off, on, on, off, ...: ABBA
    // blocks, as perf-compare's pairs): a fixed order gave the side that ran
    // first a consistent ~1-3 % on rows that burst does not change.
    const bool on_first = (i % 4 == 0 || i % 4 == 3);
    for (int k = 0; k < 2; ++k) {
      const bool on = (k == 0) == on_first;
      if (on && g_run_on) {
        const trial a = run(true);
        on_r.push_back(a.msgs_per_s);
        on_s.push_back(a.syncs);
      } else if (!on && g_run_off) {
        const trial b = run(false);
        off_r.push_back(b.msgs_per_s);
        off_s.push_back(b.syncs);
      }
    }
    if (g_run_on && g_run_off) pair_r.push_back(on_r.back() / off_r.back());
  }
  if (!g_run_on || !g_run_off) {
    const bool on_side = g_run_on;
    coact::bench::print_json_line({{"group", "burst"},
                                   {"workload", workload},
                                   {"width", width},
                                   {"handler_us", us},
                                   {"workers", workers},
                                   {on_side ? "on_msgs_per_s" : "off_msgs_per_s",
                                    coact::bench::rounded(median(on_side ? on_r : off_r), 1)},
                                   {on_side ? "syncs_on" : "syncs_off", median(on_side ? on_s : off_s)},
                                   {"trials", trials}});
    std::fflush(stdout);
    return;
  }
  const double on = median(on_r), off = median(off_r);
  const uint64_t son = median(on_s), soff = median(off_s);
  // Every trial, in run order (pair i = on_trials[i] / off_trials[i]): the
  // interval of the ratio is computed from these (scripts/bench.sh burst).
  auto every = [](const std::vector<double>& v, int places) {
    nlohmann::json a = nlohmann::json::array();
    for (double x : v) a.push_back(coact::bench::rounded(x, places));
    return a;
  };
  coact::bench::print_json_line({{"group", "burst"},
                                 {"workload", workload},
                                 {"width", width},
                                 {"handler_us", us},
                                 {"workers", workers},
                                 {"on_msgs_per_s", coact::bench::rounded(on, 1)},
                                 {"off_msgs_per_s", coact::bench::rounded(off, 1)},
                                 {"ratio", coact::bench::rounded(median(pair_r), 3)},
                                 {"ratio_of_medians", coact::bench::rounded(on / off, 3)},
                                 {"syncs_on", son},
                                 {"syncs_off", soff},
                                 {"sync_ratio", coact::bench::rounded(double(soff) / double(std::max<uint64_t>(son, 1)), 2)},
                                 {"trials", trials},
                                 {"on_trials", every(on_r, 1)},
                                 {"off_trials", every(off_r, 1)},
                                 {"pair_ratios", every(pair_r, 5)}});
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t workers = 2, trials = 3;
  bool quick = false;
  std::string peers, rows = "fan_out,chain,peers", widths_arg = "1,8,64,512", us_arg = "0,20", sides = "on,off";
  CLI::App app{"Burst dispatch on vs off, side by side (bench/burst/burst_bench.cpp)."};
  app.add_option("--workers", workers, "worker threads")->check(CLI::Range(1u, 1024u));
  app.add_option("--trials", trials, "trials per side (alternating on, off)")->check(CLI::Range(1u, 1000u));
  app.add_flag("--quick", quick, "small sizes (smoke test; the numbers then mean little)");
  app.add_option("--peers", peers, "path of the coact-peers program (for the peers rows)");
  app.add_option("--rows", rows, "comma-separated subset of fan_out, chain, peers");
  app.add_option("--widths", widths_arg, "comma-separated fan_out widths (default 1,8,64,512)");
  app.add_option("--handler-us", us_arg, "comma-separated handler times in us for fan_out and chain (default 0,20)");
  app.add_option("--sides", sides, "on,off (default), on or off: which burst settings to run (a single side for profiling)");
  coact::bench::parse_or_exit(app, argc, argv);
  auto want = [&](const char* r) { return ("," + rows + ",").find(std::string(",") + r + ",") != std::string::npos; };
  try {
    (void)coact::resolve_tuning();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coact-burst-bench: %s\n", e.what());
    return 2;
  }
  std::vector<uint32_t> widths, handler_us;
  if (!parse_u32_list(widths_arg, widths) || std::count(widths.begin(), widths.end(), 0u) > 0) {
    std::fprintf(stderr, "coact-burst-bench: --widths '%s': expected a comma-separated list of widths >= 1\n",
                 widths_arg.c_str());
    return 2;
  }
  if (!parse_u32_list(us_arg, handler_us)) {
    std::fprintf(stderr, "coact-burst-bench: --handler-us '%s': expected a comma-separated list of microseconds\n",
                 us_arg.c_str());
    return 2;
  }
  if (sides == "on") {
    g_run_off = false;
  } else if (sides == "off") {
    g_run_on = false;
  } else if (sides != "on,off" && sides != "off,on") {
    std::fprintf(stderr, "coact-burst-bench: --sides '%s': expected on,off, on or off\n", sides.c_str());
    return 2;
  }
  const uint32_t scale = quick ? 20 : 1;
  if (want("fan_out")) {
    for (uint32_t us : handler_us) {
      for (uint32_t width : widths) {
        // About 2*10^6 messages for zero-work rows (~0.1 s at 2 workers),
        // 10^5 for 20 us rows (~1 s of handler time; w512: ~97 rounds), so
        // that the start-up and the last round's stragglers are a small part
        // of a run (with ten times fewer they were most of it, and the on/off
        // ratios scattered for rows perf-compare finds unchanged).
        const uint64_t msgs = us == 0 ? 2000000 : 100000;
        const uint32_t rounds = std::max<uint32_t>(2, uint32_t(msgs / (2ull * width) / scale));
        row("fan_out", width, us, workers, trials,
            [&](bool on) { return run_fan_out(workers, on, width, us, rounds); });
      }
    }
  }
  if (want("chain")) {
    for (uint32_t us : handler_us) {
      const uint64_t hops = (us == 0 ? 3000000 : 20000) / scale;  // ~0.1 s / ~0.4 s
      row("chain", 1, us, workers, trials, [&](bool on) { return run_chain(workers, on, us, hops); });
    }
  }
  if (want("peers")) {
    if (peers.empty()) {
      std::fprintf(stderr, "coact-burst-bench: --rows peers needs --peers PATH (the coact-peers program)\n");
      return 2;
    }
    struct peer_wl {
      const char* name;
      uint64_t n;
    };
    // Three times scripts/bench.sh peers' n (skynet the same): ~0.1-0.3 s a run.
    for (const peer_wl& p : {peer_wl{"ping_pong", 3000000}, peer_wl{"fan_out", 3000000},
                             peer_wl{"thread_ring", 3000000}, peer_wl{"skynet", 1000000}}) {
      const uint64_t n = quick ? (std::string(p.name) == "skynet" ? 1000 : p.n / 100) : p.n;
      row(p.name, 0, 0, workers, trials, [&](bool on) { return run_peer(peers, p.name, n, workers, on); });
    }
  }
  return 0;
}
