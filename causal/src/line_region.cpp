// causal/src/line_region.cpp: the drainer of sampled-line regions
// (coact/causal/line_region.hpp).
#include <coact/causal/line_region.hpp>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/region.hpp>

namespace coact::causal {

namespace {

struct State {
  std::mutex mu;  // everything below; taken by the drainer and the end-experiment hook
  std::unique_ptr<Symbolizer> sym;
  uint64_t period_cycles = 0;
  std::unordered_map<const SourceLine*, uint32_t> line_ids;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> qualified_ids;  // (context region, line region) -> region
  LineSamplingStats stats;
  // Drainer thread control.
  std::mutex run_mu;
  std::condition_variable cv;
  bool stopping = false;  // guarded by run_mu
  std::thread drainer;
  bool running = false;   // guarded by run_mu
};

State& state() {
  static State* s = new State;  // leaked: the hook may run during static destruction
  return *s;
}

uint32_t qualified_id(State& st, uint32_t context, uint32_t line_id, const SourceLine& line) {
  auto [it, fresh] = st.qualified_ids.try_emplace({context, line_id}, kNoRegion);
  if (fresh) {
    it->second = line_region(region_name(context) + " @ " + line.name);
    ++st.stats.line_regions;
  }
  return it->second;
}

// One raw sample (under st.mu). Returns the credit owed back to its thread.
uint64_t process(State& st, const RawSample& raw) {
  ++st.stats.samples;
  const uint64_t periods = 1 + uint64_t{raw.overrun};
  st.stats.periods += periods;
  // No line table (a build without -g: stats.symbolizer_error says so): no
  // sample can be attributed, so none is unwound (that was every frame of
  // every sample, ~87,000 instructions each, for nothing).
  if (st.sym->rows() == 0) return 0;
  const Sample s = st.sym->unwind(raw, /*to_first_in_scope=*/true);  // attribute() needs no frame beyond it
  const SourceLine* line = st.sym->attribute(s);
  if (line == nullptr) return 0;
  ++st.stats.attributed;
  auto [it, fresh] = st.line_ids.try_emplace(line, kNoRegion);
  if (fresh) {
    it->second = line_region(line->name);
    ++st.stats.line_regions;
  }
  const uint32_t id = it->second;
  const uint64_t cycles = periods * st.period_cycles;
  detail::add_region_counts(id, periods, cycles);
  uint32_t qid = kNoRegion;
  if (raw.region != kNoRegion && id != kNoRegion) {
    qid = qualified_id(st, raw.region, id, *line);
    detail::add_region_counts(qid, periods, cycles);
  }
  const Selection sel = current_selection();
  if (sel.speedup_pct == 0 || sel.region == kNoRegion || raw.epoch != sel.epoch) return 0;
  if (sel.region != id && sel.region != qid) return 0;
  const uint64_t x = cycles * sel.speedup_pct / 100;
  if (x == 0) return 0;
  add_global_delay(x);
  ++st.stats.delayed;
  st.stats.delay_cycles += x;
  return x;
}

void drain_locked(State& st) {
  if (!st.sym) return;
  (void)drain_samples_with_credit([&](const RawSample& raw) { return process(st, raw); });
}

void end_experiment_hook() noexcept { drain_line_samples(); }

}  // namespace

bool start_line_sampling(const LineSamplingOptions& options) {
  State& st = state();
  {
    std::lock_guard lk(st.run_mu);
    if (st.running) return false;
  }
  {
    std::lock_guard lk(st.mu);
    if (!st.sym) st.sym = std::make_unique<Symbolizer>(options.scope);  // the table of the first sweep's scope
    st.period_cycles = calibrate::duration_to_cycles(options.period);
    st.stats.symbolizer_error = st.sym->error();
  }
  if (!start_sampling(options.period)) return false;
  detail::set_end_experiment_hook(end_experiment_hook);
  std::lock_guard lk(st.run_mu);
  st.stopping = false;
  st.running = true;
  const auto interval = options.drain_interval;
  st.drainer = std::thread([&st, interval] {
    std::unique_lock lk(st.run_mu);
    while (!st.stopping) {
      st.cv.wait_for(lk, interval, [&] { return st.stopping; });
      lk.unlock();
      drain_line_samples();
      lk.lock();
    }
  });
  return true;
}

void stop_line_sampling() noexcept {
  State& st = state();
  std::thread t;
  {
    std::lock_guard lk(st.run_mu);
    if (!st.running) return;
    st.stopping = true;
    st.running = false;
    t = std::move(st.drainer);
  }
  st.cv.notify_all();
  if (t.joinable()) t.join();
  stop_sampling();
  drain_line_samples();
  detail::set_end_experiment_hook(nullptr);
}

void drain_line_samples() noexcept {
  State& st = state();
  try {
    std::lock_guard lk(st.mu);
    drain_locked(st);
  } catch (...) {
    // allocation failure while naming a line: the samples drained so far are counted
  }
}

LineSamplingStats line_sampling_stats() {
  State& st = state();
  std::lock_guard lk(st.mu);
  return st.stats;
}

}  // namespace coact::causal
