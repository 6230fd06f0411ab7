// runtime/src/panic.cpp: fail-fast. A panic (an exception escaping a handler,
// or a violated invariant) prints what happened, the actor (demangled type and
// pid) or worker it happened on, and a libunwind backtrace, then aborts.
// Async-signal safety is not needed (panics run on a normal thread), but the
// path avoids allocation after the first line so a corrupted heap still
// yields a backtrace.
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>

#include <coact/runtime/message_kind.hpp>

#include "detail/scheduler.hpp"

namespace coact::detail {

namespace {
void print_backtrace() noexcept {
  unw_context_t ctx;
  unw_cursor_t cur;
  if (unw_getcontext(&ctx) != 0 || unw_init_local(&cur, &ctx) != 0) {
    std::fputs("  (backtrace unavailable)\n", stderr);
    return;
  }
  std::fputs("backtrace:\n", stderr);
  int frame = 0;
  while (unw_step(&cur) > 0 && frame < 64) {
    unw_word_t ip = 0, off = 0;
    unw_get_reg(&cur, UNW_REG_IP, &ip);
    char name[512];
    if (unw_get_proc_name(&cur, name, sizeof name, &off) == 0) {
      int status = 0;
      char* dem = abi::__cxa_demangle(name, nullptr, nullptr, &status);
      std::fprintf(stderr, "  #%-2d 0x%016lx %s+0x%lx\n", frame, (unsigned long)ip,
                   status == 0 && dem ? dem : name, (unsigned long)off);
      std::free(dem);
    } else {
      std::fprintf(stderr, "  #%-2d 0x%016lx ??\n", frame, (unsigned long)ip);
    }
    ++frame;
  }
}
}  // namespace

[[noreturn]] void panic(const char* what, const char* detail) noexcept {
  Worker* w = Scheduler::current_worker();
  std::fprintf(stderr, "coact: panic: %s", what);
  if (detail) std::fprintf(stderr, " (%s)", detail);
  if (w != nullptr && w->current != nullptr) {
    const ActorCell* c = w->current;
    std::string type = demangle(*c->type);
    std::fprintf(stderr, "\n  in actor %s pid %u.%u on worker %u\n", type.c_str(), c->pid.id, c->pid.epoch,
                 w->index);
  } else if (w != nullptr) {
    std::fprintf(stderr, "\n  on worker %u\n", w->index);
  } else {
    std::fputs("\n  outside the pool\n", stderr);
  }
  print_backtrace();
  std::fflush(stderr);
  std::abort();
}

}  // namespace coact::detail
