// causal/src/hooks.cpp: slow paths of the runtime hooks (coact/causal/hooks.hpp)
// and the kind namer. The hooks run only while a sweep is active:
// handler enter/exit drive the region stack (region.cpp: visits, exclusive
// cycles, virtual speedup, handler-completion points); pay points and resumes
// drive the delay ledger.
#include <coact/causal/hooks.hpp>

#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/region.hpp>

namespace coact::causal {

namespace {
// The runtime's kind namer. Written by set_kind_namer (any thread, release),
// read when a handler region is first named (acquire): the pointer is all
// that is published, and the function it points to is code.
std::atomic<std::string (*)(uint32_t)> g_kind_namer{nullptr};
}  // namespace

void set_kind_namer(std::string (*namer)(uint32_t)) noexcept { g_kind_namer.store(namer, std::memory_order_release); }

namespace detail {

std::string (*kind_namer() noexcept)(uint32_t) { return g_kind_namer.load(std::memory_order_acquire); }

#if COACT_CAUSAL_ENABLED
// Below this, a payment counts as "caught up" (about 0.1-0.3 µs of cycles).
constexpr uint64_t kPayCatchUpCycles = 512;

void hook_handler_enter(const void* actor_type, uint32_t kind) noexcept { enter_handler(actor_type, kind); }
void hook_handler_exit(const void* actor_type, uint32_t kind) noexcept { exit_handler(actor_type, kind); }
void hook_pay_point() noexcept {
  // Pay until caught up: delay injected while this thread was paying is owed
  // too. A thread must not make another runnable before the wall time at
  // which its own virtual time has caught up with the global delay, or a
  // consumer of its mail would see it virtually early (fork-join's short
  // branch would beat the sped-up long one past the plateau). Converges
  // geometrically while a region with speedup s < 1 runs, and stops once it
  // ends; capped so a 100% speedup of an endless region cannot trap a thread.
  try {
    for (int i = 0; i < 1000; ++i) {
      if (pay_debt() < kPayCatchUpCycles) break;
    }
  } catch (...) {
    // Only a first-use tsc_hz() with a bad COACT_TSC_HZ throws; the controller
    // calls tsc_hz() before activating a sweep, so this is unreachable there.
  }
}
void hook_resume() noexcept { credit_resume(); }
#endif

}  // namespace detail
}  // namespace coact::causal
