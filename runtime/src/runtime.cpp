// runtime/src/runtime.cpp: Runtime's out-of-line members, ActorCell::release,
// the post entry points and the live-scheduler set.
#include <coact/runtime/runtime.hpp>

#include <algorithm>
#include <mutex>
#include <vector>

#include <coact/causal/controller.hpp>
#include <coact/causal/hooks.hpp>

#include "detail/live_schedulers.hpp"
#include "detail/scheduler.hpp"

namespace coact {

namespace detail {

namespace {
std::mutex g_live_mu;
std::vector<Scheduler*> g_live;  // guarded by g_live_mu
}  // namespace

void live_schedulers_add(Scheduler* s) {
  std::lock_guard lk(g_live_mu);
  g_live.push_back(s);
}
void live_schedulers_remove(Scheduler* s) {
  std::lock_guard lk(g_live_mu);
  g_live.erase(std::remove(g_live.begin(), g_live.end(), s), g_live.end());
}
void count_late_drops(Scheduler* s, uint64_t n) noexcept {
  std::lock_guard lk(g_live_mu);
  if (std::find(g_live.begin(), g_live.end(), s) != g_live.end()) s->count_dropped_dead(n);
}

ActorCell*& constructing_cell() noexcept {
  thread_local ActorCell* c = nullptr;
  return c;
}

void ActorCell::release() noexcept {
  if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // Last reference: no producer can be mid-push (every producer holds a
  // reference while it sends), so the inbox is quiescent. Mail left here
  // raced the actor's stop: it was deposited after the final drain.
  uint64_t dropped = 0;
  while (Envelope* e = inbox.pop()) {
    if (e->system == SystemMail::none) ++dropped;
    e->drop(e);
  }
  if (dropped != 0 && sched != nullptr) count_late_drops(sched, dropped);
  free_cell(this);
}

// post(ActorCell*, Envelope*): scheduler.cpp (its direct send inline).

namespace {
struct StopEnvelope final : Envelope {
  StopEnvelope() {
    system = SystemMail::stop;
    drop = [](Envelope* self) { delete static_cast<StopEnvelope*>(self); };
  }
};
}  // namespace

void post_stop(ActorCell* target) { target->sched->post(target, new StopEnvelope()); }

}  // namespace detail

Runtime& ActorBase::runtime() const noexcept { return *cell_->sched->runtime(); }

Runtime::Runtime(SchedulerTuning tuning) : sched_(std::make_unique<detail::Scheduler>(this, tuning)) {
  // Causal profiling: region names for handler regions, and a sweep when the
  // environment asks for one (COACT_CAUSAL=1, set by coact-profile run). At
  // most one sweep per process; errors (a bad COACT_CAUSAL_* key) propagate.
  causal::set_kind_namer(&kind_name);
  causal::Controller::start_from_env();
  sched_->start();
}

namespace {
SchedulerTuning tuning_from_argv(int& argc, char** argv) { return tuning_from(options::init(argc, argv)); }
}  // namespace

// A function-try-block: a bad COACT_CAUSAL_* key is found when the sweep
// starts in the delegated constructor; the handler ends the program (exit
// status 2) instead of rethrowing.
Runtime::Runtime(int& argc, char** argv) try : Runtime(tuning_from_argv(argc, argv)) {
} catch (const options::option_error& e) {
  options::exit_with(argc > 0 ? argv[0] : nullptr, e);
}

Runtime::~Runtime() { sched_->shutdown(); }
void Runtime::shutdown() {
  COACT_INVARIANT(detail::Scheduler::current_worker() == nullptr, "Runtime::shutdown() called from a pool worker");
  sched_->shutdown();
}

void Runtime::run() {
  COACT_INVARIANT(detail::Scheduler::current_worker() == nullptr, "Runtime::run() called from a pool worker");
  // A caller that was blocked on the runtime was woken by a worker that paid
  // (the last actor's finalize_stop and a handler's request_stop pay before
  // they notify): credit it like a woken parker
  // (causal resume). Without this its L stays where it last touched the
  // ledger, and a driver that runs passes in a loop (coact-dedup) paid the
  // whole delay injected during the previous run() at its next send: a
  // pipeline stall per pass that is not injected delay, which turns a
  // faster stage's predicted speedup negative. A run() that returns without blocking (nothing live,
  // or a stop already requested) credits nothing: the caller was running.
  if (sched_->wait_until_done()) causal::on_resume();
}
void Runtime::request_stop() noexcept { sched_->request_stop(); }
bool Runtime::stop_requested() const noexcept { return sched_->stop_requested(); }

RuntimeStats Runtime::stats() const noexcept { return sched_->stats(); }
const SchedulerTuning& Runtime::tuning() const noexcept { return sched_->tuning(); }
uint32_t Runtime::workers() const noexcept { return sched_->worker_count(); }

Runtime* Runtime::current() noexcept {
  detail::Worker* w = detail::Scheduler::current_worker();
  return w ? w->sched->runtime() : nullptr;
}

detail::ActorCell* Runtime::resolve_cell(Pid pid, const std::type_info& type) const {
  return sched_->registry().lookup(pid, &type);
}
void Runtime::count_unresolved() noexcept { sched_->count_unresolved(); }

bool Runtime::bind_name(const std::string& name, uint32_t kind, detail::ActorCell* cell,
                        detail::MakeEnvelope make) {
  if (cell == nullptr) return false;
  return sched_->names().bind(name, kind, cell, make);
}
bool Runtime::unbind_name(const std::string& name) { return sched_->names().unbind(name); }

bool Runtime::send_named(const std::string& name, uint32_t kind, void* msg) {
  detail::NameRegistry::Entry e{};
  if (!sched_->names().lookup(name, kind, e)) {
    sched_->count_unresolved();
    return false;
  }
  detail::post(e.cell, e.make(msg));
  e.cell->release();
  return true;
}

Pid Runtime::whereis(const std::string& name) const {
  // Any kind: look the entry up regardless of its message kind.
  return sched_->names().pid_of(name);
}

void Runtime::register_spawn(detail::ActorCell* c) { sched_->register_spawn(c); }
void Runtime::finish_spawn(detail::ActorCell* c) noexcept { sched_->finish_spawn(c); }
void Runtime::abort_spawn(detail::ActorCell* c) noexcept { sched_->abort_spawn(c); }

}  // namespace coact

namespace coact {

TimerId Runtime::arm_send(std::chrono::nanoseconds d, Anchor anchor, detail::TimerAction* action) {
  const uint64_t ns = d.count() > 0 ? uint64_t(d.count()) : 0;
  return sched_->arm_send(ns, anchor, action);
}
bool Runtime::cancel(TimerId id) { return id && sched_->cancel(id.seq); }
size_t Runtime::pending_timers() const { return sched_->pending_timers(); }

}  // namespace coact
