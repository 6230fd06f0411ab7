// causal/src/hooks.cpp: slow paths of the runtime hooks (coact/causal/hooks.hpp).
// They run only while a sweep is active. Region accounting (handler regions,
// virtual speedup) lands with the causal profiler; until then the hooks pay
// and credit the delay ledger, which is what keeps injected delay consistent.
#include <coact/causal/hooks.hpp>

#if COACT_CAUSAL_ENABLED
#include <coact/causal/delay_ledger.hpp>

namespace coact::causal::detail {

void hook_handler_enter(const void*, uint32_t) noexcept {}
void hook_handler_exit(const void*, uint32_t) noexcept {}
void hook_pay_point() noexcept { (void)pay_debt(); }
void hook_resume() noexcept { credit_resume(); }

}  // namespace coact::causal::detail
#endif
