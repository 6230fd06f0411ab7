// tests/support/sweep_on.hpp: the causal region tests' sweep gate and a
// duration-to-cycles shorthand (were written twice, in region_test and
// cheap_sweep_test). Test-only; main test thread.
#pragma once

#include <chrono>
#include <cstdint>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/region.hpp>

namespace coact::test {

/// Turns the sweep gate on for the scope's duration (hooks and scopes act);
/// at the end ends any running experiment and turns the gate off.
struct SweepOn {
  SweepOn() { causal::g_sweep_active.store(true); }
  ~SweepOn() {
    causal::end_experiment();
    causal::g_sweep_active.store(false);
  }
  SweepOn(const SweepOn&) = delete;
  SweepOn& operator=(const SweepOn&) = delete;
};

/// `d` in TSC cycles at the calibrated tsc_hz.
inline uint64_t cycles_of(std::chrono::nanoseconds d) { return calibrate::duration_to_cycles(d); }

}  // namespace coact::test
