// coact-host-probe: how fast the CPU it runs on is right now, in millions of
// probe steps per second; `scripts/bench.sh slowmode` runs it under each
// trial's condition just before the trial (under `taskset -c K`: on CPU K).
//
//   coact-host-probe [--steps N]
//
// One step is a 64-bit multiply-add (a dependent chain) and one load of a
// pointer chase through a 1 MiB random cycle (private caches), so the rate
// falls with the core's clock and with a neighbour on its caches: the two
// things a virtual CPU shares with the host's other tenants. Prints one JSON
// line: {"probe_msteps_per_s":R,"steps":N,"seconds":S,"cpu":C} (cpu: the CPU
// it ended on, sched_getcpu). Single-threaded; no coact runtime.
#include <sched.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

int main(int argc, char** argv) {
  CLI::App app{"coact-host-probe: the current speed of the CPU it runs on (one JSON line)"};
  uint64_t steps = 8'000'000;
  app.add_option("--steps", steps, "probe steps (multiply-add and chase load); about 10 ns each")
      ->check(CLI::Range(uint64_t{1000}, uint64_t{1} << 34));
  CLI11_PARSE(app, argc, argv);

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

  uint64_t x = 1;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < steps; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    p = next[p];
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json out = {{"probe_msteps_per_s", double(steps) / s / 1e6},
                        {"steps", steps},
                        {"seconds", s},
                        {"cpu", sched_getcpu()},
                        {"check", (x ^ p) & 1}};  // keeps both chains live
  std::puts(out.dump().c_str());
  return 0;
}
