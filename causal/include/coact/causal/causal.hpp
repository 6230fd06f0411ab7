// coact/causal/causal.hpp: everything a program needs to be causally
// profiled — the progress-point macros (COACT_PROGRESS, COACT_BEGIN,
// COACT_END), COACT_SCOPE, and the controller (start_from_env, start, stop).
// See the included headers for threads, blocking, ordering and lifetime.
//
// Typical use: mark progress with COACT_PROGRESS("requests") where a unit of
// work completes, run `coact-profile run -- ./program`, plot with
// reports/coact_plot.py. The coact runtime starts the controller from the
// environment at boot, so nothing else is needed in an actor program; a
// program without the runtime calls Controller::start_from_env() itself.
#pragma once

#include <coact/causal/controller.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/profile_writer.hpp>
#include <coact/causal/progress.hpp>
#include <coact/causal/region.hpp>
