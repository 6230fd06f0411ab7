// Sampler and symbolizer: samples land where the CPU time goes, the signal
// handler never allocates or takes a lock, and exiting threads, threads
// created before sampling and fork() children are tracked or listed.
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <coact/causal/sampler.hpp>
#include <coact/causal/symbolizer.hpp>

#include "support/watchdog.hpp"

using namespace std::chrono_literals;

// ---- interposers: count allocations and mutex locks made inside the handler --
// (Not in sanitizer builds: the sanitizers own malloc; ThreadSanitizer itself
// reports any signal-unsafe call — malloc included — made inside a handler.)
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define COACT_TEST_INTERPOSE 1
namespace {
std::atomic<bool> g_watch{false};
std::atomic<uint64_t> g_bad_calls{0};
inline void check_not_in_handler() {
  if (g_watch.load(std::memory_order_relaxed) && coact::causal::detail::in_sample_handler()) {
    g_bad_calls.fetch_add(1, std::memory_order_relaxed);
    if (std::getenv("COACT_TEST_TRAP_IN_HANDLER") != nullptr) __builtin_trap();  // debugging: where from
  }
}
}  // namespace
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
void* malloc(size_t n) {
  check_not_in_handler();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  check_not_in_handler();
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  check_not_in_handler();
  return __libc_realloc(p, n);
}
void free(void* p) {
  check_not_in_handler();
  __libc_free(p);
}
int pthread_mutex_lock(pthread_mutex_t* m) {
  using Fn = int (*)(pthread_mutex_t*);
  static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "pthread_mutex_lock"));
  check_not_in_handler();
  return real(m);
}
}
#endif

namespace {

std::atomic<uint64_t> g_sink{0};

// Burns about `cpu` of the calling thread's CPU time in this function's loop.
__attribute__((noinline)) void busy_loop(std::chrono::nanoseconds cpu) {
  timespec t0{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  const auto start = std::chrono::seconds(t0.tv_sec) + std::chrono::nanoseconds(t0.tv_nsec);
  uint64_t x = 1;
  for (;;) {
    for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;  // busy_loop body
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    if (std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec) - start >= cpu) break;
  }
  g_sink.fetch_add(x, std::memory_order_relaxed);
}

// Allocates and locks in a loop (the handler often interrupts malloc / a lock).
__attribute__((noinline)) void alloc_loop(std::chrono::milliseconds wall) {
  std::mutex mu;
  const auto end = std::chrono::steady_clock::now() + wall;
  while (std::chrono::steady_clock::now() < end) {
    std::vector<std::string> v;
    for (int i = 0; i < 100; ++i) {
      std::lock_guard lk(mu);
      v.emplace_back(64, 'x');
    }
    g_sink.fetch_add(v.size(), std::memory_order_relaxed);
  }
}

std::vector<coact::causal::RawSample> drain_all() {
  std::vector<coact::causal::RawSample> out;
  coact::causal::drain_samples([&](const coact::causal::RawSample& s) { out.push_back(s); });
  return out;
}

struct SamplingSession {
  explicit SamplingSession(std::chrono::nanoseconds period) {
    (void)drain_all();
    REQUIRE(coact::causal::start_sampling(period));
  }
  ~SamplingSession() { coact::causal::stop_sampling(); }
};

}  // namespace

TEST_CASE("sampler: samples of a busy registered thread land on its loop, symbolized to this file", "[sampler]") {
  coact::test::Watchdog wd(60, "sampler busy loop");
  std::vector<coact::causal::RawSample> samples;
  int tid = 0;
  {
    SamplingSession session(1ms);
    std::thread t([&] {
      coact::causal::register_sampled_thread();
      tid = static_cast<int>(gettid());
      busy_loop(200ms);
    });
    t.join();
    samples = drain_all();
  }
  coact::causal::Symbolizer sym;
  INFO("symbolizer: " << sym.error());
  REQUIRE(sym.has_lines());
  std::vector<coact::causal::Sample> mine;
  size_t deep = 0;
  uint64_t periods = 0;
  for (const auto& s : samples) {
    if (s.tid != tid) continue;
    mine.push_back(sym.unwind(s));
    deep += mine.back().depth >= 3 ? 1 : 0;  // busy_loop <- lambda <- std::thread's invoker ...
    periods += 1 + s.overrun;
  }
  INFO("samples of the busy thread: " << mine.size() << ", periods: " << periods
                                        << ", unwound to >= 3 frames: " << deep);
  // 200 ms of CPU at 1 ms: ~200 periods (CPU-clock timers fire at the
  // scheduler tick; the overrun count carries the periods in between).
  REQUIRE(mine.size() >= 10);  // under load a signal can stand for ~10 periods (ctest -j2, load ~12: 16 signals)
  CHECK(periods >= 150);
  CHECK(periods <= 260);
  CHECK(deep >= mine.size() * 9 / 10);
  std::map<std::string, int> by_function;
  int in_this_file = 0;
  for (const auto& s : mine) {
    REQUIRE(s.depth >= 1);
    const coact::causal::SourceLine* l = sym.attribute(s);
    if (l == nullptr) continue;
    if (l->file.ends_with("tests/causal/sampler_test.cpp")) ++in_this_file;
    ++by_function[l->function];
  }
  INFO("attributed to sampler_test.cpp: " << in_this_file);
  CHECK(in_this_file >= static_cast<int>(mine.size() * 9 / 10));
  int in_busy = 0;
  for (const auto& [f, n] : by_function) {
    if (f.find("busy_loop") != std::string::npos) in_busy += n;
  }
  CHECK(in_busy >= static_cast<int>(mine.size() * 9 / 10));
  // The loop body's line has address ranges (what a line region matches on).
  const coact::causal::SourceLine* body = nullptr;
  for (const auto& s : mine) {
    const auto* l = sym.attribute(s);
    if (l != nullptr && l->function.find("busy_loop") != std::string::npos) body = l;
  }
  REQUIRE(body != nullptr);
  CHECK(body->in_scope);
  CHECK(body->name.find("sampler_test.cpp:") != std::string::npos);
  CHECK_FALSE(sym.ranges_of(*body).empty());
  // in_scope_at (where unwind() stops) agrees with line_of; most samples
  // are interrupted in the loop, in scope (the others in clock_gettime).
  size_t pc_in_scope = 0;
  for (const auto& s : mine) {
    const coact::causal::SourceLine* l0 = sym.line_of(s.pc[0], false);
    CHECK(sym.in_scope_at(s.pc[0], false) == (l0 != nullptr && l0->in_scope));
    pc_in_scope += l0 != nullptr && l0->in_scope ? 1 : 0;
  }
  CHECK(pc_in_scope > 0);
}

TEST_CASE("symbolizer: line tables read per compilation unit on first use name every address as reading all of them",
          "[sampler]") {
  coact::causal::Symbolizer lazy;
  INFO("symbolizer: " << lazy.error());
  REQUIRE(lazy.has_lines());
  REQUIRE(lazy.units() > 2);
  // Construction reads headers, not rows, except for a CU without address
  // ranges (none here in the -Werror build; one under TSan).
  const size_t at_start = lazy.loaded_units();
  CHECK(at_start <= 1);
  const auto here = reinterpret_cast<uint64_t>(&busy_loop);
  const coact::causal::SourceLine* loop = lazy.line_of(here + 16, false);
  REQUIRE(loop != nullptr);
  CHECK(lazy.loaded_units() == at_start + 1);  // this file's CU only
  CHECK(loop->in_scope);
  CHECK(loop->name.rfind("sampler_test.cpp:", 0) == 0);  // the short name: this file's path was in a header's file table
  coact::causal::Symbolizer eager;
  eager.load_all();
  CHECK(eager.loaded_units() == eager.units());
  coact::causal::Symbolizer scoped;  // asked only whether addresses are in scope
  const size_t scoped_at_start = scoped.loaded_units();
  size_t scope_mismatches = 0;
  // Every 7th address over 4 MiB around this file's code (several CUs, and
  // addresses outside any): the same line, name, scope and function.
  size_t named = 0, in_scope = 0, short_names = 0, mismatches = 0;
  for (uint64_t pc = here > (2u << 20) ? here - (2u << 20) : 0; pc < here + (2u << 20); pc += 7) {
    for (const bool ret : {false, true}) {
      const coact::causal::SourceLine* a = lazy.line_of(pc, ret);
      const coact::causal::SourceLine* b = eager.line_of(pc, ret);
      scope_mismatches += scoped.in_scope_at(pc, ret) != (b != nullptr && b->in_scope) ? 1 : 0;
      if ((a == nullptr) != (b == nullptr) ||
          (a != nullptr && (a->file != b->file || a->line != b->line || a->name != b->name ||
                            a->in_scope != b->in_scope || a->function != b->function))) {
        ++mismatches;
        continue;
      }
      if (a == nullptr) continue;
      ++named;
      if (a->in_scope) {
        ++in_scope;
        // An in-scope file is named by a path suffix, found among the
        // headers' file tables (a path missing there would be shown whole).
        short_names += a->name != a->file + ":" + std::to_string(a->line) ? 1 : 0;
      }
      CHECK(lazy.in_scope_at(pc, ret) == a->in_scope);
    }
  }
  INFO("named " << named << ", in scope " << in_scope << ", short names " << short_names << ", CUs read lazily "
                << lazy.loaded_units() << " of " << lazy.units());
  CHECK(mismatches == 0);
  CHECK(scope_mismatches == 0);
  // coact's own units (runtime, causal) have no in-scope file: answered from
  // their headers, their rows unread.
  INFO("CUs read to answer in_scope_at: " << scoped.loaded_units() - scoped_at_start << " of " << scoped.units());
  CHECK(scoped.loaded_units() < lazy.loaded_units());
  CHECK(named > 10000);
  CHECK(in_scope > 1000);
  CHECK(short_names == in_scope);
  CHECK(lazy.loaded_units() > 1);
  CHECK(lazy.ranges_of(*loop) == eager.ranges_of(*eager.line_of(here + 16, false)));
}

// Not built under TSan: there the samples land in TSan's runtime (the
// interceptors of snprintf, malloc, memcpy), and libdwfl's own unwinder
// crashed (SIGSEGV inside libdw, dwfl_thread_getframes) on one of them, so the
// reference this test compares with is not usable. (An early return left a
// test case with no assertions, which the suite's --warn NoAssertions fails.)
// It runs in the -Werror build.
#if !defined(__SANITIZE_THREAD__)
namespace {
// Spends its CPU time mostly in libc and libstdc++ (sorting, formatting,
// copying), `depth` frames below the caller: samples there must be unwound
// through library frames to reach this file.
__attribute__((noinline)) void library_work(int depth, std::chrono::nanoseconds cpu) {
  if (depth > 0) {
    library_work(depth - 1, cpu);
    asm volatile("" ::: "memory");  // not a tail call: the frames stay
    return;
  }
  const auto thread_cpu = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  };
  const auto end = thread_cpu() + cpu;
  std::vector<std::string> v;
  char buf[64];
  while (thread_cpu() < end) {
    v.clear();
    for (int i = 0; i < 200; ++i) {
      std::snprintf(buf, sizeof buf, "%08x-%d", static_cast<unsigned>(i * 2654435761u), i);
      v.emplace_back(buf);
    }
    std::sort(v.begin(), v.end());
    g_sink.fetch_add(v.front().size(), std::memory_order_relaxed);
  }
}
}  // namespace

TEST_CASE("sampler: unwinding by cached CFI rules gives libdwfl's frames, sample by sample", "[sampler]") {
  coact::test::Watchdog wd(120, "sampler cached unwind");
  coact::causal::Symbolizer sym;
  REQUIRE(sym.has_lines());
  // The comparison must cover multi-frame walks through libraries. Usually
  // most samples are (136 of 198 unwound to >= 5 frames); twice a whole
  // round had almost none (2 of 197, run after the line-region tests at load
  // ~15; 1 of 198 on a quiet machine, 41 attributed), the same in both
  // unwinders, cause not found. So a round without deep walks is sampled
  // again (at most three rounds, every round's samples compared) and the
  // bound asks for some deep walks in one round, not for most.
  size_t mine = 0, deep = 0, attributed = 0;
  for (int round = 0; round < 3 && deep < 2; ++round) {
    if (round > 0) WARN("round " << round << ": " << deep << " of " << mine << " samples unwound to >= 5 frames; sampling again");
    std::vector<coact::causal::RawSample> samples;
    int tid = 0;
    {
      SamplingSession session(1ms);
      // The precise mode (the perf event where allowed): a sample per ms of
      // CPU, ~200, as many walks to compare as before the POSIX timer (~50 at
      // the 4-ms tick) became the base mode's source.
      (void)coact::causal::detail::set_armed_period(1ms);
      std::thread t([&] {
        coact::causal::register_sampled_thread();
        tid = static_cast<int>(gettid());
        library_work(6, 200ms);
      });
      t.join();
      samples = drain_all();
    }
    mine = deep = attributed = 0;
    for (const auto& raw : samples) {
      if (raw.tid != tid) continue;
      ++mine;
      for (const bool to_scope : {false, true}) {
        sym.use_cached_rules(true);
        const coact::causal::Sample cached = sym.unwind(raw, to_scope);
        sym.use_cached_rules(false);
        const coact::causal::Sample ref = sym.unwind(raw, to_scope);
        INFO("sample pc " << std::hex << raw.pc() << std::dec << ", to_first_in_scope " << to_scope << ", depth "
                          << cached.depth << " vs libdwfl " << ref.depth);
        REQUIRE(cached.depth == ref.depth);
        for (uint32_t i = 0; i < ref.depth; ++i) REQUIRE(cached.pc[i] == ref.pc[i]);
        if (!to_scope) deep += ref.depth >= 5 ? 1 : 0;
        if (to_scope) attributed += sym.attribute(cached) != nullptr ? 1 : 0;
      }
    }
    INFO("round " << round << ": samples " << mine << ", unwound to >= 5 frames " << deep);
    REQUIRE(mine >= 10);
  }
  INFO("samples " << mine << ", unwound to >= 5 frames " << deep << ", attributed " << attributed);
  CHECK(deep >= 2);
  CHECK(attributed >= 1);
}
#endif  // !defined(__SANITIZE_THREAD__)

TEST_CASE("sampler: source scope", "[sampler]") {
  using coact::causal::SourceScope;
  const SourceScope def;
  CHECK(def.contains("/home/u/prog/main.cpp"));
  CHECK_FALSE(def.contains("/usr/include/c++/12/bits/stl_vector.h"));
  CHECK_FALSE(def.contains("<built-in>"));
  const SourceScope s = SourceScope::parse("%/zstd_wrap.cpp, /src/%.hpp");
  REQUIRE(s.patterns.size() == 2);
  CHECK(s.contains("/a/b/zstd_wrap.cpp"));
  CHECK(s.contains("/src/x/y.hpp"));
  CHECK_FALSE(s.contains("/a/b/zstd_wrap.cc"));
  CHECK_FALSE(s.contains("/a/src/y.hpp"));
  CHECK(SourceScope::parse(" , ").patterns.empty());
}

TEST_CASE("sampler: the signal handler never allocates and takes no lock", "[sampler]") {
#if COACT_TEST_INTERPOSE
  coact::test::Watchdog wd(60, "sampler malloc hook");
  // Prove the interposer sees calls at all (a hook that cannot fire proves nothing).
  g_bad_calls.store(0);
  const uint64_t dropped0 = coact::causal::sampler_stats().dropped;
  g_watch.store(true);
  {
    SamplingSession session(100us);  // 10x Coz's rate: many interrupted mallocs and locks
    // Both sources: the mode flips between the POSIX timer (base) and the
    // perf event (precise) every 20 ms while the threads run.
    std::atomic<bool> flipping{true};
    std::thread flipper([&] {
      for (int k = 0; flipping.load(); ++k) {
        (void)coact::causal::detail::set_armed_period(k % 2 == 0 ? 100us : 0us);
        std::this_thread::sleep_for(20ms);
      }
    });
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; ++i) {
      ts.emplace_back([i] {
        coact::causal::register_sampled_thread();
        if (i % 2 == 0) {
          alloc_loop(1000ms);
        } else {
          busy_loop(300ms);
        }
      });
    }
    for (auto& t : ts) t.join();
    flipping = false;
    flipper.join();
  }
  g_watch.store(false);
  const auto samples = drain_all();
  uint64_t periods = 0;
  for (const auto& s : samples) periods += 1 + s.overrun;
  const uint64_t dropped = coact::causal::sampler_stats().dropped - dropped0;
  INFO("samples: " << samples.size() << ", periods: " << periods << ", dropped (rings full): " << dropped);
  // ~1.6 s of CPU gives about a hundred handler runs or more (a POSIX
  // CPU-clock timer fires at the scheduler tick, 4 ms here; the task-clock
  // perf event every 100 us, filling the 512-sample rings, which this test
  // drains only at the end), many inside malloc or a lock.
  CHECK(samples.size() >= 60);
  CHECK(periods + dropped >= 3000);  // >= 300 ms of CPU at 100 us (the machine is shared)
  CHECK(g_bad_calls.load() == 0);
#else
  WARN("malloc interposer not built under a sanitizer; ThreadSanitizer reports signal-unsafe calls instead");
  SamplingSession session(100us);
  std::thread t([] {
    coact::causal::register_sampled_thread();
    alloc_loop(200ms);
  });
  t.join();
  uint64_t periods = 0;
  for (const auto& s : drain_all()) periods += 1 + s.overrun;
  CHECK(periods >= 50);
#endif
}

namespace {
// Per-phase totals of one thread's samples: count by source, and the CPU
// time they stand for ((1 + overrun) x period_ns, ms), by source.
struct PhaseSamples {
  uint64_t n[3]{};
  double ms[3]{};
  uint64_t wrong_period = 0;  // samples whose period is not their source's
};
// Open perf-event file descriptors of this process.
int open_perf_events() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (const dirent* e = readdir(d)) {
      char link[128] = {};
      const std::string path = std::string("/proc/self/fd/") + e->d_name;
      if (readlink(path.c_str(), link, sizeof link - 1) > 0 && std::string(link) == "anon_inode:[perf_event]") ++n;
    }
    closedir(d);
  }
  return n;
}

PhaseSamples phase_samples(int tid, uint64_t timer_ns, uint64_t perf_ns) {
  PhaseSamples p;
  for (const auto& s : drain_all()) {
    if (s.tid != tid) continue;
    REQUIRE(s.source <= 2);
    ++p.n[s.source];
    p.ms[s.source] += static_cast<double>((1 + uint64_t{s.overrun}) * s.period_ns) / 1e6;
    const uint64_t want = s.source == static_cast<uint32_t>(coact::causal::SampleSource::perf_event) ? perf_ns : timer_ns;
    p.wrong_period += s.period_ns == want ? 0 : 1;
  }
  return p;
}
}  // namespace

TEST_CASE("sampler: the POSIX timer samples in the base mode, the perf event in the precise mode, each weighed by "
          "its own period",
          "[sampler]") {
  // Outside line experiments the cheap POSIX CPU-clock timer samples (it
  // fires at the kernel's tick; a sample weighs 1 + overrun periods); during
  // them (detail::set_armed_period(p)) the perf event at p. Three phases of
  // one busy thread, its samples drained between them while it waits: the
  // sources that took them, their periods, and the CPU time they add up to
  // against the thread's own CPU clock.
  namespace cc = coact::causal;
  coact::test::Watchdog wd(60, "sampler source switch");
  SamplingSession session(1ms);
  std::atomic<int> phase{0}, done{0};
  std::atomic<int> tid{0};
  double cpu_ms[3]{};
  std::thread t([&] {
    cc::register_sampled_thread();
    tid = static_cast<int>(gettid());
    for (int k = 0; k < 3; ++k) {
      while (phase.load() != k + 1) std::this_thread::sleep_for(1ms);
      timespec a{}, b{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
      busy_loop(k == 1 ? 50ms : 120ms);  // 50 ms at 125 us: ~400 samples, within the 512-sample ring
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
      cpu_ms[k] = static_cast<double>(b.tv_sec - a.tv_sec) * 1e3 + static_cast<double>(b.tv_nsec - a.tv_nsec) / 1e6;
      done = k + 1;
    }
  });
  auto run_phase = [&](int k) {
    phase = k;
    while (done.load() != k) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(5ms);  // a signal still in flight arrives
  };
  while (tid.load() == 0) std::this_thread::sleep_for(1ms);
  const auto st0 = cc::sampler_stats();
  (void)drain_all();
  // No perf event is open outside the precise mode (a disabled one still
  // costs each context switch of its thread).
  CHECK(open_perf_events() == 0);
  run_phase(1);  // base mode
  const PhaseSamples base = phase_samples(tid, 1'000'000, 125'000);
  REQUIRE(cc::detail::set_armed_period(125us));
  const auto st_precise = cc::sampler_stats();
  CHECK(st_precise.precise);
  CHECK(st_precise.armed_period_ns == 125'000);
  const bool perf = st_precise.threads_perf_event > 0;
  if (perf) {
    CHECK(open_perf_events() >= 1);  // this test's thread's (and any other registered thread's)
  } else {
    CHECK(open_perf_events() == 0);
  }
  run_phase(2);  // precise mode
  const PhaseSamples precise = phase_samples(tid, perf ? 1'000'000 : 125'000, 125'000);
  REQUIRE(cc::detail::set_armed_period(0us));
  CHECK_FALSE(cc::sampler_stats().precise);
  CHECK(open_perf_events() == 0);
  run_phase(3);  // base mode again
  const PhaseSamples back = phase_samples(tid, 1'000'000, 125'000);
  t.join();
  const auto st1 = cc::sampler_stats();
  constexpr int kTimer = 0, kPerf = 1, kOther = 2;
  INFO("perf events: " << (perf ? "yes" : "no (POSIX timer throughout)") << "; CPU ms per phase " << cpu_ms[0] << " / "
                       << cpu_ms[1] << " / " << cpu_ms[2]);
  INFO("base: timer " << base.n[kTimer] << " (" << base.ms[kTimer] << " ms), perf " << base.n[kPerf] << " ("
                      << base.ms[kPerf] << " ms)");
  INFO("precise: timer " << precise.n[kTimer] << " (" << precise.ms[kTimer] << " ms), perf " << precise.n[kPerf]
                         << " (" << precise.ms[kPerf] << " ms)");
  INFO("back: timer " << back.n[kTimer] << " (" << back.ms[kTimer] << " ms), perf " << back.n[kPerf] << " ("
                      << back.ms[kPerf] << " ms)");
  // The sources: no perf sample in the base mode, none but the perf event's
  // in the precise mode, save a few of the other source's around a switch.
  // How many is load-dependent: 1 in ~10 runs on a quiet machine; 2 in most
  // runs at load ~2 (a Release build while a build ran beside it); 11 once
  // under ThreadSanitizer (which runs a handler late, at the thread's next
  // intercepted call), 1.4 ms of the back phase's 120. So the bound after
  // the switch back is on their share of the phase's CPU time: a perf event
  // still armed through the phase would take all of it (~120 ms).
  constexpr size_t kLate = 3;
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer defers a signal to the thread's next intercepted call, so
  // the precise phase's perf samples can land well into the back phase (a
  // quarter of it once); still, an event armed through the phase takes all.
  CHECK(back.ms[kPerf] <= 0.5 * cpu_ms[2]);
  if (back.ms[kPerf] > 0.05 * cpu_ms[2])
    WARN("ThreadSanitizer: late perf samples in the back phase: " << back.ms[kPerf] << " ms");
#else
  CHECK(back.ms[kPerf] <= 0.05 * cpu_ms[2]);
#endif
  CHECK(base.n[kPerf] == 0);
  CHECK(base.n[kOther] + precise.n[kOther] + back.n[kOther] == 0);
  CHECK(base.n[kTimer] >= 5);
  CHECK(back.n[kTimer] >= 5);
  if (perf) {
    CHECK(precise.n[kTimer] <= kLate);
    CHECK(precise.n[kPerf] >= 100);  // ~400 at 125 us of 50 ms
  } else {
    CHECK(precise.n[kPerf] == 0);
    CHECK(precise.n[kTimer] >= 5);
  }
  // Each sample carries its own source's period.
  CHECK(base.wrong_period + precise.wrong_period + back.wrong_period == 0);
  // The weights: CPU time sampled by the phase's own source = the thread's
  // CPU time, less up to one period per phase boundary (a disarmed source's
  // partial period). The other source's late samples, bounded above, are
  // left out: they stand for the phase before (a CI run at load ~2 drained
  // one POSIX-timer sample weighing 10 ms, overrun 9, in a 50-ms precise
  // phase; its base phase had summed to 117 ms of 120).
  // Under ThreadSanitizer a handler runs late (at the thread's next
  // intercepted call), and the perf event's signal is a standard one: those
  // raised while one is pending merge, and the perf event keeps no overrun
  // count (the POSIX timer does). Its precise phase then summed to 32.4 and
  // 33.4 ms of 50 (259 and 267 samples of ~400) in 2 of 6 runs of the
  // [line], [sampler] and [controller] tests together: the lower bound is
  // half the phase there.
#if defined(__SANITIZE_THREAD__)
  constexpr double kLowShare = 0.5;
#else
  constexpr double kLowShare = 0.75;
#endif
  const int own_precise = perf ? kPerf : kTimer;
  for (const auto& [p, cpu, own] : {std::tuple{&base, cpu_ms[0], kTimer}, std::tuple{&precise, cpu_ms[1], own_precise},
                                    std::tuple{&back, cpu_ms[2], kTimer}}) {
    CHECK(p->ms[own] >= kLowShare * cpu - 2);
    CHECK(p->ms[own] <= 1.1 * cpu + 1);
  }
  // The counters say the same.
  CHECK(st1.samples_perf_event - st0.samples_perf_event >= precise.n[kPerf]);
  CHECK(st1.samples_cpu_timer - st0.samples_cpu_timer >= base.n[kTimer] + back.n[kTimer]);
}

TEST_CASE("sampler: threads that exit, threads never registered, and fork()", "[sampler]") {
  coact::test::Watchdog wd(60, "sampler threads");
  // A thread created before sampling starts and never registered: listed.
  std::atomic<bool> stop{false};
  std::atomic<int> early_tid{0};
  std::thread early([&] {
    early_tid = static_cast<int>(gettid());
    while (!stop.load()) std::this_thread::sleep_for(1ms);
  });
  while (early_tid.load() == 0) std::this_thread::yield();
  // A thread that registers before sampling starts is sampled once it starts.
  std::atomic<int> pre_tid{0};
  std::atomic<bool> go{false};
  std::thread pre([&] {
    coact::causal::register_sampled_thread();
    pre_tid = static_cast<int>(gettid());
    while (!go.load()) std::this_thread::sleep_for(1ms);
    busy_loop(50ms);
  });
  while (pre_tid.load() == 0) std::this_thread::yield();
  const auto before = coact::causal::sampler_stats();
  std::vector<coact::causal::RawSample> samples;
  {
    SamplingSession session(1ms);
    go = true;
    // 40 short-lived registered threads, 4 at a time, exit while sampling is on.
    for (int round = 0; round < 10; ++round) {
      std::vector<std::thread> ts;
      for (int i = 0; i < 4; ++i) {
        ts.emplace_back([] {
          coact::causal::register_sampled_thread();
          busy_loop(5ms);
        });
      }
      for (auto& t : ts) t.join();
    }
    pre.join();
    const auto st = coact::causal::sampler_stats();
    CHECK(st.active);
    CHECK(st.threads_registered >= before.threads_registered + 40);
    CHECK(st.threads_exited >= before.threads_exited + 41);
    bool listed = false;
    for (const auto& u : st.unsampled) listed = listed || u.tid == early_tid.load();
    CHECK(listed);

    // fork() while sampling: the child runs, sampling is off there, nothing crashes.
    std::thread busy([] {
      coact::causal::register_sampled_thread();
      busy_loop(100ms);
    });
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      coact::causal::register_sampled_thread();
      busy_loop(30ms);
      const auto cs = coact::causal::sampler_stats();
      bool ok = cs.disabled_after_fork && !cs.active && !coact::causal::start_sampling(1ms);
      _exit(ok ? 0 : 3);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    busy.join();
    samples = drain_all();
  }
  stop = true;
  early.join();
  int from_pre = 0;
  for (const auto& s : samples) from_pre += s.tid == pre_tid.load() ? static_cast<int>(1 + s.overrun) : 0;
  INFO("periods sampled on the pre-registered thread: " << from_pre);
#if COACT_TEST_INTERPOSE
  // ~50 expected (50 ms of CPU); one full random-order run under load avg 12
  // saw 10, so the bound only asserts that the thread is sampled at all.
  CHECK(from_pre >= 5);
#else
  // ThreadSanitizer defers asynchronous signals to its next interception
  // point; a pure compute loop may reach none before its thread exits.
  WARN("periods sampled on the pre-registered thread under a sanitizer: " << from_pre);
#endif
  CHECK(before.threads_live == 1);
  CHECK(coact::causal::sampler_stats().threads_live == 0);
}

TEST_CASE("sampler stress: threads register, sample and exit concurrently", "[sampler][stress]") {
  for (int threads : {1, 2, 4, 8}) {
    coact::test::Watchdog wd(60, "sampler stress " + std::to_string(threads));
    SamplingSession session(200us);
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i) {
      ts.emplace_back([i] {
        for (int k = 0; k < 20; ++k) {
          std::thread inner([i] {
            coact::causal::register_sampled_thread();
            if (i % 2 == 0) {
              busy_loop(2ms);
            } else {
              alloc_loop(2ms);
            }
          });
          inner.join();
        }
      });
    }
    // Drain concurrently with the exits.
    std::atomic<bool> done{false};
    std::thread drainer([&] {
      while (!done.load()) {
        (void)drain_all();
        std::this_thread::sleep_for(1ms);
      }
    });
    for (auto& t : ts) t.join();
    done = true;
    drainer.join();
    (void)drain_all();
    CHECK(coact::causal::sampler_stats().threads_live == 0);
  }
}

TEST_CASE("sampler: a sample's credit reaches its thread as soon as the sample is handed, not at the end of the batch",
          "[sampler]") {
  // The drainer adds a selected line's delay to G inside fn; a thread that
  // reaches a pay point while the rest of its ring's batch is still being
  // handed must already find that sample's credit, or it pays its own virtual
  // speedup (line_region.cpp; the credit taken later is clamped away).
  coact::test::Watchdog wd(60, "sampler credit per sample");
  SamplingSession session(10s);  // only raise() samples: the timer does not fire in the test
  std::atomic<int> phase{0};  // 1: samples raised; 2: take the credit now; 3: taken; 4: done
  std::atomic<uint64_t> taken{~uint64_t{0}};
  std::atomic<int> tid{0};
  std::thread t([&] {
    coact::causal::register_sampled_thread();
    tid.store(static_cast<int>(gettid()));
    REQUIRE(coact::causal::detail::raise_sample());
    REQUIRE(coact::causal::detail::raise_sample());
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
    taken.store(coact::causal::detail::take_sample_credit());
    phase.store(3);
    while (phase.load() != 4) std::this_thread::yield();  // alive (its ring not exited) until the drain ends
  });
  while (phase.load() != 1) std::this_thread::yield();
  int seen = 0;
  (void)coact::causal::drain_samples_with_credit([&](const coact::causal::RawSample& s) -> uint64_t {
    if (s.tid != tid.load()) return 0;
    if (++seen == 2) {  // the thread takes its credit while its second sample is being handed
      phase.store(2);
      while (phase.load() != 3) std::this_thread::yield();
    }
    return 100;
  });
  phase.store(4);
  t.join();
  REQUIRE(seen == 2);
  CHECK(taken.load() == 100);  // the first sample's credit (before: 0, both came after the batch)
}
