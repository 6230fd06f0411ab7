// coact/causal/hooks.hpp: the narrow interface the runtime calls at its
// hand-off points. The causal library knows nothing of actors; the runtime
// tells it when a handler starts and ends, when a worker is about to make
// another actor runnable (a pay point), between dispatches (a pay point),
// and when a parked worker was woken by another thread (a credit point).
//
// What the hooks do while a sweep is active (causal/src/hooks.cpp):
//   on_handler_enter / on_handler_exit: push / pop the handler region
//     (actor type × message kind) on the worker's region stack (region.hpp):
//     visit counts, exclusive cycles, virtual speedup of a selected region
//     (add_delay); handler-completion progress points read those visits;
//   on_pay_point: delay_ledger pay_debt(); on_pay_point_in_handler: the
//     same inside a handler, its running region suspended while it pays;
//   on_resume: delay_ledger credit_resume();
//   timer_stamp_cycles: the ledger value a virtual timer armed now on this
//     thread is shifted from (G minus this thread's debt).
//
// Cost: with COACT_CAUSAL compiled out (COACT_CAUSAL_ENABLED == 0) every hook
// is an empty inline function. Compiled in, each hook is one relaxed load
// and a predictable branch until a sweep activates it (`g_sweep_active` for
// the handler hooks; G for the pay and resume hooks, which read the flag only
// once G != 0: two loads in a process whose earlier sweep injected delay).
// During a sweep, a handler whose region is not being sped up reads no clock
// (but for a sample of runs; region.hpp) and calls nothing: its enter and
// exit are inlined here (handler_fast_path.hpp: a cache look-up, the live
// slot's open and close stores, a visit count); a pay point while no delay
// was ever injected (a sweep at speedup 0) is one load.
// Threads: hooks are called on the worker thread they describe.
// set_kind_namer: any thread, typically once at runtime boot.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include <coact/causal/delay_ledger.hpp>

#ifndef COACT_CAUSAL_ENABLED
#define COACT_CAUSAL_ENABLED 0
#endif
#if COACT_CAUSAL_ENABLED
#include <coact/causal/delay_ledger.hpp>  // detail::g_global_delay, for the inline G == 0 tests
#include <coact/causal/handler_fast_path.hpp>
#endif

namespace coact::causal {

/// True while a sweep (or a test) has the profiler active. Written by the
/// controller (and tests); read relaxed by every hook and COACT_SCOPE (a stale
/// read costs one dispatch of lateness in starting or stopping region and delay
/// accounting, never a wrong count). Exists in both build modes; with
/// COACT_CAUSAL compiled out nothing reads it.
COACT_CAUSAL_LOCAL inline std::atomic<bool> g_sweep_active{false};

/// Tells the causal library how to name message kinds (for handler region
/// names "ActorType::on(MsgType)"): the runtime passes &coact::kind_name at
/// boot. `namer` must be callable from any thread, forever, and must not call
/// back into coact::causal. Null resets to the fallback "kind#N". Names are
/// built once per region, so regions registered before the call keep
/// "kind#N". Any thread; never blocks.
void set_kind_namer(std::string (*namer)(uint32_t kind)) noexcept;

namespace detail {
/// The namer set by set_kind_namer (null if none). Any thread.
std::string (*kind_namer() noexcept)(uint32_t);
}  // namespace detail

#if COACT_CAUSAL_ENABLED
namespace detail {
/// The general paths of the handler hooks (handler_sampling.cpp enter_handler_slow /
/// exit_handler_slow): called when fast_enter / fast_exit refused.
/// cold: the callers keep their registers for the fast path.
[[gnu::cold]] void hook_handler_enter(const void* actor_type, uint32_t kind) noexcept;
[[gnu::cold]] void hook_handler_exit(const void* actor_type, uint32_t kind) noexcept;
void hook_pay_point() noexcept;
void hook_pay_point_in_handler() noexcept;
void hook_resume() noexcept;
uint64_t hook_timer_stamp() noexcept;
}  // namespace detail

/// A handler for message kind `kind` starts on actor type `actor_type` (a
/// `const std::type_info*`) on this worker. Returns the token to pass to the
/// matching on_handler_exit: null if no sweep was active (nothing opened),
/// else what was opened (the fast frame's cache entry, or
/// detail::g_fast_general after the general path).
inline void* on_handler_enter(const void* actor_type, uint32_t kind) noexcept {
  if (g_sweep_active.load(std::memory_order_relaxed)) [[unlikely]] {
    if (detail::FastEntry* e = detail::fast_enter(actor_type, kind)) return e;
    detail::hook_handler_enter(actor_type, kind);
    return &detail::g_fast_general;
  }
  return nullptr;
}
/// The handler begun by the matching on_handler_enter has returned; `token`
/// is what that enter returned. A run opened during a sweep is closed here
/// even if the sweep ended meanwhile (its visit and any delay it owes are
/// counted). A null token (no sweep at the enter) needs nothing, even if a
/// sweep began during the run: the run has no frame and no slot (the
/// general exit would find none and ignore it), and a caller that always
/// passes its token leaves no frame open for a later exit to find. So the
/// exit outside a sweep is one test of a register, and with a token from the
/// fast enter it reads no sweep flag, hashes nothing and compares no keys
/// (handler_fast_path.hpp fast_exit_entry).
/// `type_of` (the template form) is called for the actor type only when
/// the general exit needs it: a caller that passes `[c] { return c->type; }`
/// loads nothing more on the fast exit (passing the type itself made GCC
/// load it on every exit, one instruction per handler run).
template <class TypeOf>
requires std::is_invocable_r_v<const void*, TypeOf>
inline void on_handler_exit(void* token, TypeOf type_of, uint32_t kind) noexcept {
  if (token != nullptr) [[unlikely]] {
    if (!detail::fast_exit_entry(static_cast<detail::FastEntry*>(token))) detail::hook_handler_exit(type_of(), kind);
  }
}
inline void on_handler_exit(void* token, const void* actor_type, uint32_t kind) noexcept {
  on_handler_exit(
      token, [actor_type] { return actor_type; }, kind);
}
/// The same without a token (tests, programs that did not keep it). Enter
/// and exit must name the same (type, kind), and every enter that opened a
/// run during a sweep must reach its exit before the thread's next handler
/// enter (as the runtime's do: handlers never nest on a worker): the inline
/// fast enter does not look for an open fast frame, so a second enter would
/// overwrite one (handler_fast_path.hpp, "The gate"). So the fast exit finds
/// the open fast frame by its keys even after the sweep ended, and while the
/// gate is open (a fast frame may be open) a refused fast exit takes the
/// general exit even after the sweep ended; any other frame of a run begun
/// during a sweep (a stack frame, a sampled fast frame: the gate is closed)
/// is skipped if the sweep has ended (the next general-path enter drops it).
inline void on_handler_exit(const void* actor_type, uint32_t kind) noexcept {
  if (detail::fast_exit(actor_type, kind)) return;
  if (g_sweep_active.load(std::memory_order_relaxed) || detail::t_fast.gate == detail::t_fast.cache) [[unlikely]]
    detail::hook_handler_exit(actor_type, kind);
}
/// Before this thread makes another thread or actor runnable, and between dispatches.
/// While no delay was ever injected (G == 0: no sweep, or a sweep at
/// speedup 0) there is nothing to pay: one relaxed load of G, no call. (G is
/// read first: it is 0 both without a sweep and during one at speedup 0, so
/// either case is one load; the sweep flag is read only once G != 0.)
// always_inline (this and the two below): one or two loads each, but GCC
// stopped inlining on_pay_point into the scheduler's dispatch once
// scheduler.cpp grew (the claimed-run drainer): an out-of-line call per
// message.
[[gnu::always_inline]] inline void on_pay_point() noexcept {
  if (detail::g_global_delay.load(std::memory_order_relaxed) != 0 && g_sweep_active.load(std::memory_order_relaxed))
      [[unlikely]]
    detail::hook_pay_point();
}
/// on_pay_point() from inside a running handler, before a send makes mail
/// visible to another actor at once (the runtime's direct send during a
/// sweep, scheduler's post): the thread pays its debt there, mid-handler,
/// so that its mail is not early in virtual time, and its running region is
/// suspended while it pays (region.hpp suspend_running_segment): the wait
/// counts as neither the region's time nor its virtual speedup. So a sweep
/// delivers a handler's mail when the program without a sweep would, not at
/// the handler's end. While no delay was ever injected: one load, as
/// on_pay_point; a thread that owes nothing (it paid at its last dispatch)
/// reads its debt and returns, its region not suspended. Called on a worker
/// thread inside a handler (between its on_handler_enter and
/// on_handler_exit).
[[gnu::always_inline]] inline void on_pay_point_in_handler() noexcept {
  if (detail::g_global_delay.load(std::memory_order_relaxed) != 0 && g_sweep_active.load(std::memory_order_relaxed))
      [[unlikely]]
    detail::hook_pay_point_in_handler();
}
/// Whether on_pay_point() on this thread would pay nothing if called now: no
/// sweep runs, or no delay was ever injected (G == 0: a sweep at speedup 0,
/// or one whose experiments with s > 0 have not yet published any delay) —
/// exactly the test on_pay_point makes before its slow path. The runtime
/// keeps direct sends on while it holds (scheduler.cpp Scheduler::post: a
/// send pushed while the sender owes nothing needs no pay point before it).
/// One relaxed load while G == 0 (G first, as in on_pay_point), two after;
/// a stale read is the same race as on_pay_point's. Any thread; never blocks.
[[gnu::always_inline]] inline bool pay_point_is_noop() noexcept {
  return detail::g_global_delay.load(std::memory_order_relaxed) == 0 || !g_sweep_active.load(std::memory_order_relaxed);
}
/// A parked thread was woken by another thread (which paid before waking it).
[[gnu::always_inline]] inline void on_resume() noexcept {
  if (detail::g_global_delay.load(std::memory_order_relaxed) != 0 && g_sweep_active.load(std::memory_order_relaxed))
      [[unlikely]]
    detail::hook_resume();
}
/// The delay_stamp of a virtual timer armed now on this thread (cycles): the
/// thread's own position in the ledger, G minus what it still owes, with its
/// running region's virtual speedup so far settled first (region.hpp). The
/// timer's deadline then shifts by G's growth since the stamp, which covers
/// the delay injected while it waits *and* the debt its thread owed when it
/// armed it: in virtual time the thread arms it only once it has paid. (A
/// stamp of G forgave that debt: a sleep armed by a thread owing D fired at
/// T instead of T + D, and an off-path region that injected D looked like a
/// bottleneck; known_answer.hpp "sleepers".) Outside a sweep: G (a thread's
/// stale debt from an ended sweep shifts nothing). Any thread; never blocks
/// except while a payer updates this thread's live slot (nanoseconds).
inline uint64_t timer_stamp_cycles() noexcept {
  if (g_sweep_active.load(std::memory_order_relaxed)) [[unlikely]]
    return detail::hook_timer_stamp();
  return global_delay_cycles();
}
#else
inline uint64_t timer_stamp_cycles() noexcept { return global_delay_cycles(); }
inline void* on_handler_enter(const void*, uint32_t) noexcept { return nullptr; }
inline void on_handler_exit(void*, const void*, uint32_t) noexcept {}
template <class TypeOf>
requires std::is_invocable_r_v<const void*, TypeOf>
inline void on_handler_exit(void*, TypeOf, uint32_t) noexcept {}
inline void on_handler_exit(const void*, uint32_t) noexcept {}
inline void on_pay_point() noexcept {}
inline void on_pay_point_in_handler() noexcept {}
inline void on_resume() noexcept {}
inline bool pay_point_is_noop() noexcept { return true; }
#endif

}  // namespace coact::causal
