// Student's t quantile for the 95% intervals coact prints: one table shared by
// the sweep's running estimates (src/evidence.cpp) and by `coact-profile
// validate`'s interval on a really-faster build's measured speedup.
#pragma once

#include <cstdint>

namespace coact::causal {

/// Two-sided 95% quantile of Student's t with `df` degrees of freedom (df >= 1;
/// NaN for 0). Pure; any thread.
double student_t95(uint32_t df);

}  // namespace coact::causal
