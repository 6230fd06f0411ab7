// coact/causal/hooks.hpp: the narrow interface the runtime calls at its
// hand-off points. The causal library knows nothing of actors; the runtime
// tells it when a handler starts and ends, when a worker is about to make
// another actor runnable (a pay point), between dispatches (a pay point),
// and when a parked worker was woken by another thread (a credit point).
//
// Cost: with COACT_CAUSAL compiled out (COACT_CAUSAL_ENABLED == 0) every hook
// is an empty inline function. Compiled in, each hook is one relaxed load of
// `g_sweep_active` and a predictable branch until a sweep activates it.
// Threads: hooks are called on the worker thread they describe.
#pragma once

#include <atomic>
#include <cstdint>

#ifndef COACT_CAUSAL_ENABLED
#define COACT_CAUSAL_ENABLED 0
#endif

namespace coact::causal {

#if COACT_CAUSAL_ENABLED
/// True while a sweep (or a test) has the profiler active. Written by the
/// controller; read relaxed by every hook (a stale read costs one dispatch of
/// lateness in starting or stopping delay accounting, never a wrong count).
inline std::atomic<bool> g_sweep_active{false};

namespace detail {
void hook_handler_enter(const void* actor_type, uint32_t kind) noexcept;
void hook_handler_exit(const void* actor_type, uint32_t kind) noexcept;
void hook_pay_point() noexcept;
void hook_resume() noexcept;
}  // namespace detail

inline void on_handler_enter(const void* actor_type, uint32_t kind) noexcept {
  if (g_sweep_active.load(std::memory_order_relaxed)) [[unlikely]]
    detail::hook_handler_enter(actor_type, kind);
}
inline void on_handler_exit(const void* actor_type, uint32_t kind) noexcept {
  if (g_sweep_active.load(std::memory_order_relaxed)) [[unlikely]]
    detail::hook_handler_exit(actor_type, kind);
}
/// Before this thread makes another thread or actor runnable, and between dispatches.
inline void on_pay_point() noexcept {
  if (g_sweep_active.load(std::memory_order_relaxed)) [[unlikely]]
    detail::hook_pay_point();
}
/// A parked thread was woken by another thread (which paid before waking it).
inline void on_resume() noexcept {
  if (g_sweep_active.load(std::memory_order_relaxed)) [[unlikely]]
    detail::hook_resume();
}
#else
inline void on_handler_enter(const void*, uint32_t) noexcept {}
inline void on_handler_exit(const void*, uint32_t) noexcept {}
inline void on_pay_point() noexcept {}
inline void on_resume() noexcept {}
#endif

}  // namespace coact::causal
