// runtime/src/runtime.cpp: Runtime's out-of-line members, ActorCell::release,
// the post entry points, the live-scheduler set and the fork rule.
//
// Fork rule (docs/mailboxes.md "fork"): a child forked while a Runtime is
// live has one thread, the forking one, and none of the pool's workers, so
// the parent's runtime cannot run there and a new one would inherit the
// forking thread's worker state. A pthread_atfork child handler marks such a
// child; there, constructing a Runtime, run() and spawn() throw fork_error.
// Supported: fork then exec (or _exit), and fork before the first Runtime
// is constructed or after the last one is destroyed.
#include <coact/runtime/runtime.hpp>

#include <pthread.h>

#include <algorithm>
#include <atomic>
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

namespace {
// Runtimes constructed and not yet destroyed: Runtime's constructor and
// destructor (relaxed: read by the atfork child handler on the forking
// thread, after fork's own synchronization).
std::atomic<uint32_t> g_live_runtimes{0};
// Set in a child forked while a Runtime was live (the atfork child handler);
// read by check_not_forked_child on the child's one thread.
std::atomic<bool> g_forked_with_runtime{false};
void mark_forked_child() noexcept {
  if (g_live_runtimes.load(std::memory_order_relaxed) != 0)
    g_forked_with_runtime.store(true, std::memory_order_relaxed);
}
[[maybe_unused]] const int g_fork_rule_atfork = ::pthread_atfork(nullptr, nullptr, &mark_forked_child);

void check_not_forked_child(const char* what) {
  if (!g_forked_with_runtime.load(std::memory_order_relaxed)) return;
  throw fork_error(std::string("coact: ") + what +
                   " in a process forked while a Runtime was running: the child has none of its worker threads. "
                   "Supported: fork then exec (or _exit) in the child, or fork before the first Runtime is "
                   "constructed (docs/mailboxes.md, \"fork\")");
}
}  // namespace

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

Runtime::Runtime(SchedulerTuning tuning)
    : sched_(
          (detail::check_not_forked_child("Runtime constructed"), std::make_unique<detail::Scheduler>(this, tuning))) {
  // Causal profiling: region names for handler regions, and a sweep when the
  // environment asks for one (COACT_CAUSAL=1, set by coact-profile run). At
  // most one sweep per process; errors (a bad COACT_CAUSAL_* key) propagate.
  causal::set_kind_namer(&kind_name);
  causal::Controller::start_from_env();
  sched_->start();
  detail::g_live_runtimes.fetch_add(1, std::memory_order_relaxed);
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

Runtime::~Runtime() {
  if (detail::g_forked_with_runtime.load(std::memory_order_relaxed)) {
    // A forked child: the workers are not here to stop or join; the
    // scheduler's memory is left to the child's exit.
    static_cast<void>(sched_.release());
    return;
  }
  sched_->shutdown();
  detail::g_live_runtimes.fetch_sub(1, std::memory_order_relaxed);
}
void Runtime::shutdown() {
  COACT_INVARIANT(detail::Scheduler::current_worker() == nullptr, "Runtime::shutdown() called from a pool worker");
  sched_->shutdown();
}

void Runtime::run() {
  detail::check_not_forked_child("Runtime::run() called");
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

RuntimeStats Runtime::stats() const noexcept {
  RuntimeStats s = sched_->stats();
  s.mailbox_rejected = mailbox_rejected_.load(std::memory_order_relaxed);
  return s;
}
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

bool Runtime::bind_name(const std::string& name, uint32_t kind, detail::ActorCell* cell, detail::MakeEnvelope make) {
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
  detail::Envelope* env = e.make(msg);
  bool queued = true;
  if (e.cell->mailbox_bound != 0) {
    queued = detail::post_bounded(e.cell, env);  // false: refused by COACT_MAILBOX_BOUND, counted
  } else {
    detail::post(e.cell, env);
  }
  e.cell->release();
  return queued;
}

Pid Runtime::whereis(const std::string& name) const {
  // Any kind: look the entry up regardless of its message kind.
  return sched_->names().pid_of(name);
}

void Runtime::register_spawn(detail::ActorCell* c) {
  detail::check_not_forked_child("Runtime::spawn() called");
  // Before the cell is published (it has no pid yet): the bound needs the depth.
  c->mailbox_bound = sched_->tuning().mailbox_bound;
  c->inbox.set_counting(sched_->tuning().mailbox_stats || c->mailbox_bound != 0);
  sched_->register_spawn(c);
}
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
