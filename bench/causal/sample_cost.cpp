// coact-sample-cost: what one CPU-time sample costs (sampled-line regions).
//
//   coact-sample-cost [--samples N] [--depth D] [--drain both|scope|full]
//
// 1. signal: N samples taken by detail::raise_sample() (the sampling signal,
//    queued to the thread as coact's own) from a call chain D frames
//    deep on a registered thread while sampling is active (its timer period
//    set to 10 s so that only raised samples), against N signals queued the
//    same way (getpid, gettid, rt_tgsigqueueinfo) to an empty handler: the difference is the handler's own work (copying 17
//    registers and up to 2 KiB of stack, the region read), the rest is the
//    kernel's signal delivery, which a timer-driven sample pays as well.
// 2. drain: the drainer's work per sample: unwinding the copied stack with
//    libdwfl and attributing it to a line (Symbolizer::unwind + attribute),
//    on the same samples (one address cache, as a sweep's drainer): "scope"
//    unwinds up to the first frame in scope, as the drainer does (here:
//    the libc syscall stub, raise_sample, then chain()); "full" walks every frame
//    (D + 2), as the drainer did before. Both must attribute every sample
//    to the same line (exit 1 otherwise). Both use the cached unwinding
//    rules (Symbolizer::unwind); drain_dwfl_ns / drain_full_dwfl_ns are the
//    same walks by libdwfl's unwinder, which must give the same frames for
//    every sample (same_frames; exit 1 otherwise).
// 3. live (--live-rounds R, 0 = skip): the whole cost of timer-driven
//    samples on the sampled thread, kernel included (the timer, signal
//    delivery and return, the handler, cache misses of the ring slot): R
//    rounds of a fixed work loop (a pass over a 1 MiB buffer), in groups of
//    three in rotating order: without sampling, with the base mode (the
//    POSIX CPU-clock timer, as outside line experiments) and with the
//    precise mode (the perf event, as during them: its hrtimer), both at
//    --live-period-us, on this
//    thread's CPU clock (CLOCK_THREAD_CPUTIME_ID: other load on the machine
//    does not count, its cache interference does). live_overhead_pct: the
//    median over groups of (base - off) / off; live_per_sample_ns: the
//    median difference divided by the samples of the base round;
//    live_precise_*: the same for the precise mode (live_precise_perf_share:
//    the share of its samples the perf event took; 0 where perf events are
//    not allowed). The drainer is not included (rings are emptied between
//    rounds, untimed).
// Prints one JSON line: {"samples":N,"depth":D,"raise_empty_ns":..,
// "raise_sample_ns":..,"handler_ns":..,"drain_ns":..,"frames_mean":..,
// "drain_full_ns":..,"frames_full_mean":..,"attributed":..,
// "live_overhead_pct":..,"live_per_sample_ns":..,"live_samples_per_round":..,
// "load_all_ms":.. (reading every unit's line rows, done before the drains
// so that they time the per-sample work only),"units":..}. Wall-clock
// means; for a load-independent figure run it under valgrind
// --tool=callgrind (--drain scope or full alone, and read drain_pass's
// inclusive instruction count, and the handler's).
#include <signal.h>
#include <sys/syscall.h>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <coact/causal/sampler.hpp>
#include <coact/causal/symbolizer.hpp>

namespace {

using clock_type = std::chrono::steady_clock;

void empty_handler(int) {}

// 1a's signal, sent with raise_sample's system calls (SI_QUEUE to this thread).
bool queue_empty() noexcept {
  siginfo_t si{};
  si.si_signo = SIGPROF;
  si.si_code = SI_QUEUE;
  si.si_pid = ::getpid();
  si.si_uid = ::getuid();
  return ::syscall(SYS_rt_tgsigqueueinfo, ::getpid(), static_cast<pid_t>(::syscall(SYS_gettid)), SIGPROF, &si) == 0;
}
bool (*g_send)() noexcept = queue_empty;  // 1b: coact::causal::detail::raise_sample

__attribute__((noinline)) void chain(int depth, int n) {
  if (depth > 1) {
    chain(depth - 1, n);
    asm volatile("" ::: "memory");  // not a tail call: the frames stay
    return;
  }
  for (int i = 0; i < n; ++i) (void)g_send();
}

struct DrainResult {
  double ns = 0;
  size_t frames = 0;
  std::vector<const coact::causal::SourceLine*> lines;
  std::vector<std::vector<uint64_t>> pcs;  // each sample's frames
};

// One pass of the drainer's work over `raws` (noinline: callgrind's unit).
__attribute__((noinline)) DrainResult drain_pass(coact::causal::Symbolizer& sym,
                                                const std::vector<coact::causal::RawSample>& raws, bool to_scope) {
  DrainResult out;
  out.lines.reserve(raws.size());
  const auto t0 = clock_type::now();
  for (const auto& r : raws) {
    const coact::causal::Sample s = sym.unwind(r, to_scope);
    out.frames += s.depth;
    out.lines.push_back(sym.attribute(s));
    out.pcs.emplace_back(s.pc, s.pc + s.depth);
  }
  out.ns = raws.empty() ? 0.0
                        : static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - t0).count()) /
                              static_cast<double>(raws.size());
  return out;
}

// A fixed amount of work with memory traffic (noinline: the sampled frame).
__attribute__((noinline)) uint64_t work_round(std::vector<uint64_t>& buf, int passes) {
  uint64_t h = 0;
  for (int p = 0; p < passes; ++p) {
    for (auto& w : buf) {
      h = (h ^ w) * 0x100000001b3ULL;
      w += h >> 7;
    }
  }
  return h;
}

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ns_per(clock_type::duration d, int n) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()) / n;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coact-sample-cost: the cost of one CPU-time sample"};
  int n = 20000;
  int depth = 8;
  app.add_option("--samples", n, "Samples to take (at most the ring's size per round)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000'000));
  app.add_option("--depth", depth, "Call-chain depth at the sample")->capture_default_str()->check(CLI::Range(1, 64));
  std::string drain = "both";
  app.add_option("--drain", drain, "Drain the samples up to the first frame in scope, walking every frame, or both")
      ->capture_default_str()
      ->check(CLI::IsMember({"both", "scope", "full"}));
  int live_rounds = 42;
  app.add_option("--live-rounds", live_rounds, "Rounds of the live measurement (a third without sampling, a third in each mode; 0: skip)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  int live_period_us = 1000;
  app.add_option("--live-period-us", live_period_us, "Sampling period of the live measurement, us of CPU")
      ->capture_default_str()
      ->check(CLI::Range(10, 1'000'000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // 1a. Empty handler.
  struct sigaction sa {};
  sa.sa_handler = empty_handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, nullptr);
  auto t0 = clock_type::now();
  chain(depth, n);
  const double empty_ns = ns_per(clock_type::now() - t0, n);

  // 1b. The sampler's handler (installed by start_sampling), in rounds of a ring.
  coact::causal::register_sampled_thread();
  if (!coact::causal::start_sampling(std::chrono::seconds(10))) {
    std::fprintf(stderr, "coact-sample-cost: sampling did not start\n");
    return 1;
  }
  g_send = coact::causal::detail::raise_sample;
  std::vector<coact::causal::RawSample> raws;
  raws.reserve(static_cast<size_t>(n));
  clock_type::duration sampled{};
  for (int left = n; left > 0;) {
    const int k = std::min<int>(left, static_cast<int>(coact::causal::kSampleRing));
    t0 = clock_type::now();
    chain(depth, k);
    sampled += clock_type::now() - t0;
    coact::causal::drain_samples([&](const coact::causal::RawSample& s) { raws.push_back(s); });
    left -= k;
  }
  coact::causal::stop_sampling();
  const double sample_ns = ns_per(sampled, n);

  // 2. Drain: unwind + attribute, to the first frame in scope and/or every frame.
  coact::causal::Symbolizer sym;
  // The symbolizer reads a unit's line rows the first time a sample needs
  // them (symbolizer.hpp); reading them all first, timed on its own
  // (load_all_ms), keeps that one-time cost out of the per-sample drain
  // figures, which are then what they were when construction read every
  // unit (and what a drainer pays once the units it needs are read).
  const auto load_t0 = clock_type::now();
  sym.load_all();
  const double load_all_ms = std::chrono::duration<double, std::milli>(clock_type::now() - load_t0).count();
  DrainResult scope, full;
  if (drain != "full") scope = drain_pass(sym, raws, true);
  if (drain != "scope") full = drain_pass(sym, raws, false);
  // The reference: libdwfl's unwinder for every sample (Symbolizer::unwind
  // without cached rules); the cached rules must give the same frames.
  sym.use_cached_rules(false);
  const DrainResult ref_scope = drain_pass(sym, raws, true);
  const DrainResult ref_full = drain_pass(sym, raws, false);
  sym.use_cached_rules(true);
  const bool same_frames = (drain == "full" || scope.pcs == ref_scope.pcs) && (drain == "scope" || full.pcs == ref_full.pcs);
  if (!same_frames) std::fprintf(stderr, "coact-sample-cost: cached rules and libdwfl unwound some sample differently\n");
  const DrainResult& any = drain != "full" ? scope : full;
  size_t attributed = 0;
  for (const auto* l : any.lines) attributed += l != nullptr ? 1 : 0;
  const bool same = drain != "both" || scope.lines == full.lines;
  if (!same) std::fprintf(stderr, "coact-sample-cost: the two drains attributed some sample to different lines\n");
  // 3. Live: timer-driven samples on this thread, rounds with and without;
  // `precise`: the perf event (the precise mode, as during a line
  // experiment) instead of the POSIX CPU-clock timer (the base mode).
  std::vector<double> live_pct, live_per, precise_pct, precise_per;
  double live_samples = 0, precise_samples = 0;
  uint64_t precise_perf = 0, precise_all = 0;  // samples the perf event took in the precise rounds
  if (live_rounds > 0) {
    std::vector<uint64_t> buf(size_t{1} << 17, 1);  // 1 MiB
    const auto discard = [](const coact::causal::RawSample&) {};
    uint64_t sink = work_round(buf, 8);  // warm
    std::vector<double> samples_on, samples_precise;
    // Rounds of three (off, base, precise), the order rotating.
    for (int r = 0; r + 2 < live_rounds; r += 3) {
      double cpu[3]{};
      uint64_t taken[3]{};
      for (int k = 0; k < 3; ++k) {
        const int side = ((r / 3) + k) % 3;  // 0: off, 1: base (POSIX timer), 2: precise (perf event)
        coact::causal::drain_samples(discard);
        const auto st0 = coact::causal::sampler_stats();
        if (side != 0) (void)coact::causal::start_sampling(std::chrono::microseconds(live_period_us));
        if (side == 2) (void)coact::causal::detail::set_armed_period(std::chrono::microseconds(live_period_us));
        const double c0 = thread_cpu_ns();
        sink += work_round(buf, 400);
        const double c1 = thread_cpu_ns();
        if (side != 0) {
          coact::causal::stop_sampling();
          taken[side] = coact::causal::drain_samples(discard);
        }
        if (side == 2) {
          precise_perf += coact::causal::sampler_stats().samples_perf_event - st0.samples_perf_event;
          precise_all += taken[side];
        }
        cpu[side] = c1 - c0;
      }
      live_pct.push_back(100.0 * (cpu[1] - cpu[0]) / cpu[0]);
      if (taken[1] > 0) live_per.push_back((cpu[1] - cpu[0]) / static_cast<double>(taken[1]));
      samples_on.push_back(static_cast<double>(taken[1]));
      precise_pct.push_back(100.0 * (cpu[2] - cpu[0]) / cpu[0]);
      if (taken[2] > 0) precise_per.push_back((cpu[2] - cpu[0]) / static_cast<double>(taken[2]));
      samples_precise.push_back(static_cast<double>(taken[2]));
    }
    live_samples = median(samples_on);
    precise_samples = median(samples_precise);
    if (sink == 42) std::fprintf(stderr, " ");
  }
  const double per = raws.empty() ? 0.0 : 1.0 / static_cast<double>(raws.size());
  std::printf(
      "{\"samples\":%zu,\"depth\":%d,\"raise_empty_ns\":%.1f,\"raise_sample_ns\":%.1f,\"handler_ns\":%.1f,"
      "\"drain_ns\":%.1f,\"frames_mean\":%.2f,\"drain_full_ns\":%.1f,\"frames_full_mean\":%.2f,\"attributed\":%zu,"
      "\"same_lines\":%s,\"symbolizer_error\":\"%s\",\"live_overhead_pct\":%.2f,\"live_per_sample_ns\":%.1f,"
      "\"live_samples_per_round\":%.0f,\"drain_dwfl_ns\":%.1f,\"drain_full_dwfl_ns\":%.1f,\"same_frames\":%s,"
      "\"live_precise_overhead_pct\":%.2f,\"live_precise_per_sample_ns\":%.1f,\"live_precise_samples_per_round\":%.0f,"
      "\"live_precise_perf_share\":%.3f,\"load_all_ms\":%.2f,\"units\":%zu}\n",
      raws.size(), depth, empty_ns, sample_ns, sample_ns - empty_ns, scope.ns, static_cast<double>(scope.frames) * per,
      full.ns, static_cast<double>(full.frames) * per, attributed, same ? "true" : "false", sym.error().c_str(), median(live_pct), median(live_per), live_samples,
      ref_scope.ns, ref_full.ns, same_frames ? "true" : "false", median(precise_pct), median(precise_per),
      precise_samples, precise_all > 0 ? static_cast<double>(precise_perf) / static_cast<double>(precise_all) : 0.0,
      load_all_ms, sym.units());
  return raws.size() == static_cast<size_t>(n) && same && same_frames ? 0 : 1;
}
