// tests/solib/solib_plugin.cpp: the hot loop of coact-solib-lines, built as a
// shared library three ways (tests/solib/CMakeLists.txt): linked
// (libcoact_solib_plugin.so), dlopen()ed (coact_solib_plugin_module.so, a
// MODULE) and the same module without debug information. It depends on no
// coact library: the loop is the known-answer workloads' shape (a TSC
// deadline and a pause, the shape of COACT_KA_SPIN in
// bench/causal/known_answer.hpp) on one source line, kPluginLine, whose
// number the program and the test know (solib_plugin.hpp).
#include "solib_plugin.hpp"

extern "C" __attribute__((visibility("default"), noinline)) void coact_solib_work(uint64_t cycles) {
  const uint64_t end = __builtin_ia32_rdtsc() + cycles; while (__builtin_ia32_rdtsc() < end) __builtin_ia32_pause(); static_assert(__LINE__ == coact::solib::kPluginLine);
}
