// causal/src/line_region.cpp: the drainer of sampled-line regions
// (coact/causal/line_region.hpp).
#include <coact/causal/line_region.hpp>

#include <algorithm>
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
  uint64_t period_ns = 0;  // the base period (LineSamplingOptions::period)
  uint64_t period_cycles = 0;
  uint64_t experiment_ns = 0;  // the period while an experiment selects a line
  uint64_t experiment_cycles = 0;
  std::unordered_map<const SourceLine*, uint32_t> line_ids;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> qualified_ids;  // (context region, line region) -> region
  struct Target {
    const SourceLine* line;
    uint32_t context;  // kNoRegion: the overall line
  };
  std::unordered_map<uint32_t, Target> targets;  // line region -> what the handler must match
  std::unordered_map<const SourceLine*, std::vector<AddressRange>> ranges;  // cache of Symbolizer::ranges_of
  LineSamplingStats stats;
  // Drainer thread control.
  std::mutex run_mu;
  std::condition_variable cv;
  bool stopping = false;  // guarded by run_mu
  bool precise = false;   // guarded by run_mu: an experiment selects a line (drain every drain_interval)
  std::thread drainer;
  bool running = false;  // guarded by run_mu
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
    if (it->second != kNoRegion) st.targets[it->second] = State::Target{&line, context};
  }
  return it->second;
}

// Cycles of one period of a sample armed at `ns`.
uint64_t period_cycles_of(const State& st, uint64_t ns) {
  if (ns == st.period_ns || ns == 0) return st.period_cycles;
  if (ns == st.experiment_ns) return st.experiment_cycles;
  return calibrate::duration_to_cycles(std::chrono::nanoseconds(ns));
}

// The symbolizer's objects into the stats (under st.mu), after it read some.
// An object without a line table is named in symbolizer_error (the sampler
// record's field) when nothing worse is to be said there.
void note_objects(State& st) {
  st.stats.no_debug_info = st.sym->objects_without_lines();
  st.stats.symbolizer_error = st.sym->error();
  if (st.stats.symbolizer_error.empty() && !st.stats.no_debug_info.empty()) {
    std::string paths;
    for (const auto& p : st.stats.no_debug_info) paths += (paths.empty() ? "" : ", ") + p;
    st.stats.symbolizer_error = "no debug information (no DWARF line table) in " + paths;
  }
}

// One raw sample (under st.mu). Returns the credit owed back to its thread.
uint64_t process(State& st, const RawSample& raw) {
  ++st.stats.samples;
  const uint64_t periods = 1 + uint64_t{raw.overrun};
  st.stats.periods += periods;
  // A PC in no module known: an object dlopen()ed since the last look (read
  // now, off the signal handler), or code outside any file (JIT, the vDSO
  // under a default scope), for which refresh() costs one dl_iterate_phdr.
  if (!st.sym->known_address(raw.pc()) && st.sym->refresh()) note_objects(st);
  // No line table (a build without -g: stats.symbolizer_error says so): no
  // sample can be attributed, so none is unwound (that was every frame of
  // every sample, ~87,000 instructions each, for nothing).
  if (!st.sym->has_lines()) return 0;
  const Sample s = st.sym->unwind(raw, /*to_first_in_scope=*/true);  // attribute() needs no frame beyond it
  const SourceLine* line = st.sym->attribute(s);
  if (line == nullptr) return 0;
  ++st.stats.attributed;
  auto [it, fresh] = st.line_ids.try_emplace(line, kNoRegion);
  if (fresh) {
    it->second = line_region(line->name);
    ++st.stats.line_regions;
    if (it->second != kNoRegion) st.targets[it->second] = State::Target{line, kNoRegion};
  }
  const uint32_t id = it->second;
  const uint64_t cycles = periods * period_cycles_of(st, raw.period_ns);
  detail::add_region_counts(id, periods, cycles);
  uint32_t qid = kNoRegion;
  if (raw.region != kNoRegion && id != kNoRegion) {
    qid = qualified_id(st, raw.region, id, *line);
    detail::add_region_counts(qid, periods, cycles);
  }
  if (raw.injected != 0) {  // the handler injected it already (the sample's PC was on the selected line)
    ++st.stats.delayed;
    st.stats.delay_cycles += raw.injected;
    return 0;  // and credited its thread
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
  // Objects dlopen()ed since the last drain, before their samples are
  // looked up (a sample whose PC is in one is also caught by process()).
  if (st.sym->refresh()) note_objects(st);
  (void)drain_samples_with_credit([&](const RawSample& raw) { return process(st, raw); });
}

// Switches the drainer between the two intervals (LineSamplingOptions::
// drain_interval while an experiment selects a line, base_drain_interval
// otherwise); entering the precise mode wakes it, so a base-interval wait
// does not outlast the rings' 64 ms at the experiment period.
void set_precise_drain(State& st, bool precise) noexcept {
  {
    std::lock_guard lk(st.run_mu);
    if (st.precise == precise) return;
    st.precise = precise;
  }
  if (precise) st.cv.notify_all();
}

void end_experiment_hook() noexcept {
  drain_line_samples();
  detail::clear_sample_target();
  (void)detail::set_armed_period(std::chrono::nanoseconds(0));  // back to the base period
  set_precise_drain(state(), false);
}

// Publishes the selected line's addresses for the signal handler
// (sampler.hpp set_sample_target), or none when the selection is not a
// line; an experiment on a line (at any speedup, 0 included: its baseline
// must be perturbed alike) samples at the experiment period.
void begin_experiment_hook(const Selection& sel) noexcept {
  State& st = state();
  try {
    std::lock_guard lk(st.mu);
    const auto it = st.targets.find(sel.region);
    const bool line = st.sym && it != st.targets.end();
    (void)detail::set_armed_period(std::chrono::nanoseconds(line ? st.experiment_ns : 0));
    set_precise_drain(st, line);
    if (!line || sel.speedup_pct == 0) {
      detail::clear_sample_target();
      return;
    }
    auto [r, fresh] = st.ranges.try_emplace(it->second.line);
    if (fresh) r->second = st.sym->ranges_of(*it->second.line);
    detail::set_sample_target(sel.epoch, sel.region, it->second.context, st.experiment_cycles * sel.speedup_pct / 100,
                              st.experiment_ns, r->second.data(), r->second.size());
  } catch (...) {
    detail::clear_sample_target();  // allocation failure: the drainer injects this experiment's samples
  }
}

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
    st.period_ns = static_cast<uint64_t>(options.period.count());
    st.period_cycles = calibrate::duration_to_cycles(options.period);
    const auto fast =
        options.experiment_period.count() > 0 ? options.experiment_period : options.period / kExperimentPeriodDivisor;
    st.experiment_ns =
        static_cast<uint64_t>(std::max<std::chrono::nanoseconds>(fast, std::chrono::microseconds(10)).count());
    st.experiment_cycles = calibrate::duration_to_cycles(std::chrono::nanoseconds(st.experiment_ns));
    note_objects(st);
    st.stats.experiment_period_ns = st.experiment_ns;
  }
  if (!start_sampling(options.period, options.signal)) return false;
  detail::set_end_experiment_hook(end_experiment_hook);
  detail::set_begin_experiment_hook(begin_experiment_hook);
  std::lock_guard lk(st.run_mu);
  st.stopping = false;
  st.precise = false;
  st.running = true;
  const auto precise = options.drain_interval;
  const auto base = base_drain_interval(options.period, precise);
  st.drainer = std::thread([&st, precise, base] {
    std::unique_lock lk(st.run_mu);
    while (!st.stopping) {
      // A switch to the precise mode ends a base-interval wait (set_precise_drain).
      const bool was_precise = st.precise;
      st.cv.wait_for(lk, was_precise ? precise : base, [&] { return st.stopping || st.precise != was_precise; });
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
  detail::set_begin_experiment_hook(nullptr);
  detail::clear_sample_target();
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
