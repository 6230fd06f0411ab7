// tests/solib/solib_lines.cpp: coact-solib-lines, a known-answer workload
// whose hot line is in a shared library (tests/solib/CMakeLists.txt).
//
// The fork_join shape of bench/causal/known_answer.hpp, with its machinery
// (Shared, the progress point "known_answer.iteration", the runtime tuning):
// Join sends Go to A and B in parallel and forks again when both answered.
// A calls the plugin's coact_solib_work for 2 units (the plugin's loop, one
// source line: solib_plugin.hpp kPluginLine); B spins 1 unit in this
// program. Speeding the plugin's line by s: min(s, 1/2) (A = 2 - 2s against
// B's 1); B: 0.
//
// --plugin linked calls the library linked into the program; --plugin PATH
// dlopen()s PATH (the MODULE build) --dlopen-after-s seconds after the
// runtime (and so the profiler and its symbolizer) started, so the plugin is
// an object the symbolizer finds only by its re-scan; the actors start once
// it is loaded. Prints one JSON line: iterations and period over --seconds.
// Exit 2 with one line naming a bad option or a plugin that cannot be loaded.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "known_answer.hpp"
#include "solib_plugin.hpp"

namespace ka = coact::known_answer;

namespace solib_lines {
struct Join;
struct Go {
  coact::ActorRef<Join> join;
};
struct Done {};
struct Start {};
struct Plugin {
  coact::solib::WorkFn work = nullptr;
  uint64_t a_cycles = 0;  // A's call into the plugin
};
struct A : coact::Actor<A> {
  ka::Shared* sh;
  const Plugin* plugin;
  A(ka::Shared* s, const Plugin* p) : sh(s), plugin(p) {}
  void on(Go& g) {
    plugin->work(plugin->a_cycles);
    g.join.send(Done{});
  }
};
struct B : coact::Actor<B> {
  ka::Shared* sh;
  explicit B(ka::Shared* s) : sh(s) {}
  void on(Go& g) {
    ka::spin_cycles(sh->b_cycles.load(std::memory_order_relaxed));
    g.join.send(Done{});
  }
};
struct Join : coact::Actor<Join> {
  ka::Shared* sh;
  coact::ActorRef<A> a;
  coact::ActorRef<B> b;
  int pending = 0;
  Join(ka::Shared* s, coact::ActorRef<A> ra, coact::ActorRef<B> rb) : sh(s), a(std::move(ra)), b(std::move(rb)) {}
  void fork() {
    pending = 2;
    a.send(Go{self()});
    b.send(Go{self()});
  }
  void on(Start&) { fork(); }
  void on(Done&) {
    if (--pending > 0) return;
    ka::iteration_done(*sh);
    if (sh->running()) fork();
  }
};
}  // namespace solib_lines

int main(int argc, char** argv) {
  CLI::App app{"coact-solib-lines: a known-answer workload whose hot line is in a shared library"};
  std::string plugin = "linked";
  double seconds = 2, warmup = 0.2, speed = 0, dlopen_after = 0.3;
  int64_t unit_us = 500;
  app.add_option("--plugin", plugin, "'linked', or the path of the module to dlopen()")->capture_default_str();
  app.add_option("--dlopen-after-s", dlopen_after, "--plugin PATH: dlopen() this long after the runtime started, s")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 60.0));
  app.add_option("--seconds", seconds, "Measured run time, s")->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  app.add_option("--warmup-s", warmup, "Warm-up before measuring, s")->capture_default_str()->check(CLI::Range(0.0, 60.0));
  app.add_option("--unit-us", unit_us, "One unit of stage cost, microseconds")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{10}, int64_t{1'000'000}));
  app.add_option("--speed", speed, "The plugin's loop really runs this fraction (0..1) faster")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  (void)coact::calibrate::tsc_hz();  // before the clock starts
  ka::Shared sh;
  sh.unit_cycles = coact::calibrate::duration_to_cycles(std::chrono::microseconds(unit_us));
  sh.b_cycles.store(sh.unit_cycles, std::memory_order_relaxed);
  solib_lines::Plugin p;
  p.a_cycles = static_cast<uint64_t>(2.0 * static_cast<double>(sh.unit_cycles) * (1.0 - speed));
  const auto tuning = ka::workload_tuning(coact::resolve_tuning(), std::chrono::microseconds(unit_us));
  using clock = std::chrono::steady_clock;
  uint64_t n0 = 0, n1 = 0;
  clock::time_point t0, t1;
  {
    std::optional<coact::Runtime> boot;
    try {
      boot.emplace(tuning);
    } catch (const coact::options::option_error& e) {  // a bad COACT_CAUSAL_* combination
      coact::options::exit_with(argv[0], e);
    }
    coact::Runtime& rt = *boot;
    if (plugin == "linked") {
      p.work = &coact_solib_work;
    } else {
      std::this_thread::sleep_for(std::chrono::duration<double>(dlopen_after));
      void* h = dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h != nullptr) p.work = reinterpret_cast<coact::solib::WorkFn>(dlsym(h, coact::solib::kWorkSymbol));
      if (p.work == nullptr) {
        std::fprintf(stderr, "coact-solib-lines: --plugin '%s': %s\n", plugin.c_str(), dlerror());
        rt.request_stop();
        return 2;
      }
    }
    auto a = rt.spawn<solib_lines::A>(&sh, &p);
    auto b = rt.spawn<solib_lines::B>(&sh);
    auto j = rt.spawn<solib_lines::Join>(&sh, a, b);
    j.send(solib_lines::Start{});
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
  std::printf("{\"plugin\":\"%s\",\"unit_us\":%lld,\"speed\":%.4f,\"seconds\":%.6f,\"iterations\":%llu,\"period_us\":%.4f}\n",
              plugin == "linked" ? "linked" : "dlopen", static_cast<long long>(unit_us), speed, secs,
              static_cast<unsigned long long>(n), n > 0 ? secs * 1e6 / static_cast<double>(n) : 0.0);
  std::fflush(stdout);
  return 0;
}
