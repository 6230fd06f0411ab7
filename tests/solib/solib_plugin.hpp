// tests/solib/solib_plugin.hpp: what coact-solib-lines and its test know of
// the plugin (solib_plugin.cpp): the function's name and its loop's line.
#pragma once
#include <cstdint>

namespace coact::solib {
/// The source line of the plugin's loop (a static_assert there keeps it true):
/// its region is "solib_plugin.cpp:12".
inline constexpr int kPluginLine = 12;
/// The plugin's symbol: busy-waits `cycles` TSC cycles, returns.
using WorkFn = void (*)(uint64_t cycles);
inline constexpr const char* kWorkSymbol = "coact_solib_work";
}  // namespace coact::solib

extern "C" void coact_solib_work(uint64_t cycles);
