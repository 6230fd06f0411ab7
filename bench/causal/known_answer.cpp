// coact-known-answer: the causal profiler's known-answer workloads
// (known_answer.hpp) as one program.
//
//   coact-known-answer --workload fork_join|pipeline|ping_pong|timer_stage|farm|
//                                 sleepers|sleepers_spin|sleepers_send|fork_join_lines|shared_callee
//                      --seconds S [--speed STAGE=S]... [--unit-us U]
//                      [--warmup-s W] [--queue N] [--no-pin]
//   coact-known-answer --list
//
// --speed STAGE=S really makes stage STAGE (A or B; see --list) run a fraction
// S (0..1) faster: its busy loop is (1 - S) of its cost. That is the
// "actually faster program" `coact-profile validate` compares a virtual
// speedup of S with.
//
// Runs the workload for W (warm-up, default 0.3 s) + S seconds, then prints one
// JSON line on stdout:
//   {"workload":..,"unit_us":..,"speed":{"A":..,"B":..},"seconds":..,
//    "iterations":N,"period_us":..,"rate_per_s":..,"pinned":true|false}
// where iterations, period and rate are measured over the S seconds after the
// warm-up (wall clock), and pinned says whether the workers ran one per core:
// sleepers and sleepers_send pin them unless --no-pin (known_answer.hpp
// pins_workers; false also where the process has fewer cores than workers).
// --list prints the workloads, their stages, regions, source lines (where a
// stage's loop has one of its own) and ideal curves as one JSON object.
//
// Built twice: coact-known-answer, and coact-known-answer-coz (COACT_KA_COZ:
// the iteration is also Coz's progress point, DWARF 4 debug information that
// Debian's Coz 0.2.2 can read) for `coact-profile validate --with-coz`.
//
// The runtime tuning is resolve_tuning() (--coact-* arguments, COACT_* knobs
// and COACT_CONFIG apply) with workers = 2, peer_steal = on and a spin window of at least 4
// units (known_answer.hpp says why). A causal-profiling sweep runs when
// COACT_CAUSAL=1 is set (coact-profile run / validate set it), started by the
// runtime at boot. Exit status: 0, or 2 on a usage error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <coact/runtime/runtime.hpp>

#include "known_answer.hpp"
#include "worker_pinning.hpp"

namespace ka = coact::known_answer;

namespace {

std::string list_json() {
  std::string out = "{\"progress\":\"" + std::string(ka::kProgressPoint) + "\",\"workloads\":[";
  bool first_w = true;
  for (ka::Workload w : ka::kAllWorkloads) {
    const auto sts = ka::stages(w);
    const bool lines = std::any_of(sts.begin(), sts.end(), [](const ka::Stage& s) { return s.kind == "line"; });
    out += fmt::format("{}{{\"name\":\"{}\",\"ideal_period_units\":{},\"sampling\":{},\"stages\":[",
                       first_w ? "" : ",", ka::to_string(w), ka::ideal_period_units(w), lines ? "true" : "false");
    first_w = false;
    bool first_s = true;
    for (const auto& st : ka::stages(w)) {
      out += fmt::format(
          "{}{{\"stage\":\"{}\",\"region\":\"{}\",\"region_kind\":\"{}\",\"units\":{},\"line\":\"{}\",\"ideal\":[",
          first_s ? "" : ",", st.key, st.region, st.kind, st.units, st.line);
      first_s = false;
      for (int i = 0; i <= 20; ++i) {
        out += fmt::format("{}{:.4f}", i == 0 ? "" : ",", ka::ideal_speedup(w, st.key, i / 20.0));
      }
      out += "]}";
    }
    out += "]}";
  }
  return out + "]}";
}

}  // namespace

int main(int argc, char** argv) {
  coact::options::init(argc, argv);  // --coact-* out of argv; a bad option: one line, exit 2
  CLI::App app{"coact-known-answer: known-answer workloads for the coact causal profiler"};
  std::string workload_name;
  double seconds = 5;
  double warmup = 0.3;
  int64_t unit_us = 500;
  uint32_t queue = 4;
  std::vector<std::string> speeds;
  bool list = false;
  bool no_pin = false;
  app.add_flag("--list", list, "Print the workloads, stages, regions and ideal curves as JSON and exit");
  app.add_option("--workload", workload_name,
                 "fork_join | pipeline | ping_pong | timer_stage | farm | sleepers | sleepers_spin | sleepers_send | "
                 "fork_join_lines | shared_callee");
  app.add_option("--seconds", seconds, "Measured run time after the warm-up, s")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 86400.0));
  app.add_option("--warmup-s", warmup, "Warm-up before measuring, s")->capture_default_str()->check(CLI::Range(0.0, 60.0));
  app.add_option("--unit-us", unit_us, "One unit of stage cost, microseconds")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{10}, int64_t{1'000'000}));
  app.add_option("--queue", queue, "pipeline: items in flight")->capture_default_str()->check(CLI::Range(1u, 1024u));
  app.add_option("--speed", speeds, "STAGE=S: stage STAGE really runs a fraction S (0..1) faster (repeatable)");
  app.add_flag("--no-pin", no_pin,
               "Leave the workers where the kernel places them (sleepers and sleepers_send pin one worker per core by "
               "default: known_answer.hpp pins_workers)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (list) {
    std::printf("%s\n", list_json().c_str());
    return 0;
  }
  const auto w = ka::parse_workload(workload_name);
  if (!w) {
    std::string names;
    for (ka::Workload x : ka::kAllWorkloads) names += (names.empty() ? "" : ", ") + std::string(ka::to_string(x));
    std::fprintf(stderr, "coact-known-answer: --workload '%s': expected one of %s\n", workload_name.c_str(), names.c_str());
    return 2;
  }
  ka::Config c;
  c.workload = *w;
  c.unit = std::chrono::microseconds(unit_us);
  c.queue = queue;
  const auto st = ka::stages(*w);
  for (const auto& kv : speeds) {
    const auto eq = kv.find('=');
    std::string key = kv.substr(0, eq);
    double v = -1;
    try {
      if (eq != std::string::npos) v = std::stod(kv.substr(eq + 1));
    } catch (...) {
      v = -1;
    }
    const auto stage = std::find_if(st.begin(), st.end(), [&](const ka::Stage& s) { return s.key == key; });
    if (stage == st.end() || !(v >= 0 && v <= 1)) {
      std::string keys;
      for (const auto& s : st) keys += (keys.empty() ? "" : ",") + s.key;
      std::fprintf(stderr, "coact-known-answer: --speed '%s': expected STAGE=S with STAGE one of %s and S in 0..1\n",
                   kv.c_str(), keys.c_str());
      return 2;
    }
    // The cost slots the stage really shortens (T computes nothing: none, its truth is 0 by construction).
    if ((stage->slots & 1u) != 0) c.speed_a = v;
    if ((stage->slots & 2u) != 0) c.speed_b = v;
    if ((stage->slots & 4u) != 0) c.speed_c = v;
  }

  (void)coact::calibrate::tsc_hz();  // before the clock starts
  ka::Shared sh;
  auto tuning = ka::workload_tuning(coact::resolve_tuning(), c.unit, c.workload);
  using clock = std::chrono::steady_clock;
  uint64_t n0 = 0, n1 = 0;
  clock::time_point t0, t1;
  bool pinned = false;
  {
    std::optional<coact::Runtime> boot;
    const std::vector<pid_t> threads_before = ka::thread_ids();
    try {
      boot.emplace(tuning);
    } catch (const coact::options::option_error& e) {  // a bad COACT_CAUSAL_* combination
      coact::options::exit_with(argv[0], e);
    }
    coact::Runtime& rt = *boot;
    if (ka::pins_workers(*w) && !no_pin) pinned = ka::pin_new_threads(threads_before, static_cast<int>(tuning.workers));
    ka::start(rt, c, sh);
    std::this_thread::sleep_for(std::chrono::duration<double>(warmup));
    n0 = sh.iterations.load(std::memory_order_relaxed);
    t0 = clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    n1 = sh.iterations.load(std::memory_order_relaxed);
    t1 = clock::now();
    sh.stopping.store(true, std::memory_order_relaxed);  // the actors quiesce; then the workers can be joined
    rt.request_stop();
  }
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  const uint64_t n = n1 - n0;
  const double period_us = n > 0 ? secs * 1e6 / static_cast<double>(n) : 0.0;
  std::printf(
      "{\"workload\":\"%s\",\"unit_us\":%lld,\"speed\":{\"A\":%.4f,\"B\":%.4f,\"C\":%.4f},\"seconds\":%.6f,\"iterations\":%llu,"
      "\"period_us\":%.4f,\"rate_per_s\":%.4f,\"pinned\":%s}\n",
      std::string(ka::to_string(*w)).c_str(), static_cast<long long>(unit_us), c.speed_a, c.speed_b, c.speed_c, secs,
      static_cast<unsigned long long>(n), period_us, secs > 0 ? static_cast<double>(n) / secs : 0.0,
      pinned ? "true" : "false");
  std::fflush(stdout);
  return 0;
}
