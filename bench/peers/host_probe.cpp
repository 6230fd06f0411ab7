// coact-host-probe: how fast the CPUs it may run on are right now, in
// millions of probe steps per second; `scripts/bench.sh slowmode` runs it
// under each trial's condition just before the trial.
//
//   coact-host-probe [--steps N]
//
// One step is a 64-bit multiply-add (a dependent chain) and one load of a
// pointer chase through a 1 MiB random cycle (private caches), so the rate
// falls with the core's clock and with a neighbour on its caches: the two
// things a virtual CPU shares with the host's other tenants. The probe runs
// N steps on each CPU of its affinity set in turn (pinned to it), so under
// `taskset -c K` it measures CPU K alone, and unpinned every CPU a trial's
// threads may land on. Prints one JSON line:
//   {"check":B,"per_cpu":{"C":R,...},"probe_msteps_per_s":R,"seconds":S,"steps":N}
// R: the slowest CPU's rate (a trial that uses every CPU waits on that one);
// check: one bit of both chains' results, printed so that neither loop is
// optimized away.
// Single-threaded; no coact runtime. Exit 2 on bad usage, 1 if the
// affinity calls fail.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "bench_support.hpp"

int main(int argc, char** argv) {
  CLI::App app{"coact-host-probe: the current speed of the slowest CPU it may run on (one JSON line)"};
  uint64_t steps = 2'000'000;
  coact::bench::add_uint_option(app, "--steps", steps, 1000, uint64_t{1} << 34,
                                "probe steps per CPU (multiply-add and chase load); about 7 ns each");
  coact::bench::parse_or_exit(app, argc, argv);  // bad usage: exit 2

  // A single random cycle through every slot (Sattolo's shuffle), so each
  // load depends on the previous one and the prefetcher cannot follow.
  constexpr uint32_t kSlots = (1u << 20) / sizeof(uint32_t);
  std::vector<uint32_t> next(kSlots);
  std::iota(next.begin(), next.end(), 0u);
  std::mt19937 rng(12345);
  for (uint32_t i = kSlots - 1; i > 0; --i) {
    std::uniform_int_distribution<uint32_t> pick(0, i - 1);
    std::swap(next[i], next[pick(rng)]);
  }
  // One warm-up lap so the first laps do not measure page faults.
  uint32_t p = 0;
  for (uint32_t i = 0; i < kSlots; ++i) p = next[p];

  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    std::perror("coact-host-probe: sched_getaffinity");
    return 1;
  }
  uint64_t x = 1;
  double slowest = 0, total_s = 0;
  nlohmann::json per_cpu = nlohmann::json::object();
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
      std::perror("coact-host-probe: sched_setaffinity");
      return 1;
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < steps; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      p = next[p];
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = double(steps) / s / 1e6;
    per_cpu[std::to_string(cpu)] = rate;
    slowest = slowest == 0 ? rate : std::min(slowest, rate);
    total_s += s;
  }
  nlohmann::json out = {{"probe_msteps_per_s", slowest},
                        {"per_cpu", per_cpu},
                        {"steps", steps},
                        {"seconds", total_s},
                        {"check", (x ^ p) & 1}};
  std::puts(out.dump().c_str());
  return 0;
}
