// runtime/src/panic.cpp: fail-fast. A panic (an exception escaping a handler,
// or a violated invariant) prints what happened, the actor (demangled type and
// pid) or worker it happened on, and a backtrace, then aborts.
//
// Which backtrace: for an exception escaping a handler, the stack of its
// throw site. By the time the scheduler's catch block calls panic() the
// throwing frames are unwound, so the runtime defines __cxa_throw (the C++
// ABI entry every `throw` expression calls; this object is linked into every
// program that uses the runtime, so its definition precedes libstdc++'s):
// while a handler runs on a pool worker it records the throwing thread's
// return addresses (unw_backtrace) and the thrown object's address in a
// thread-local slot, then calls the next __cxa_throw (dlsym RTLD_NEXT:
// libstdc++'s, or a sanitizer's interceptor). panic() prints that record
// when it belongs to the exception being handled (same object: a rethrow of
// it keeps the record), else the stack of the panic call itself. Exceptions
// thrown outside handlers (and on threads outside the pool) are not recorded.
// Frame names: the main executable's frames by the causal symbolizer (ELF
// symbol table, local symbols included, and DWARF lines), a return address
// looked up inside its call instruction (address - 1), since a call ending a
// function returns past its end into the next symbol; other objects' frames
// by their dynamic symbol (dladdr), with the object's path.
// Async-signal safety is not needed (panics run on a normal thread); the
// symbolizer allocates, so a corrupted heap may cost the frame names, never
// the addresses (printed first, frame by frame).
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <typeinfo>

#include <coact/causal/symbolizer.hpp>
#include <coact/runtime/message_kind.hpp>

#include "detail/scheduler.hpp"

namespace coact::detail {

namespace {

constexpr int kMaxFrames = 64;

// The throw site of the last exception thrown by a handler on this thread.
// Written by __cxa_throw on this thread only; read by panic() on this thread.
struct ThrowSite {
  void* object = nullptr;  // the thrown object (what std::exception_ptr points at)
  int frames = 0;
  void* ips[kMaxFrames];
};
thread_local ThrowSite t_throw_site;

// The thrown object of the exception being handled on this thread, or null.
// libstdc++'s exception_ptr holds exactly that pointer.
void* current_exception_object() noexcept {
  static_assert(sizeof(std::exception_ptr) == sizeof(void*), "libstdc++'s exception_ptr layout");
  std::exception_ptr ep = std::current_exception();
  void* obj = nullptr;
  __builtin_memcpy(&obj, static_cast<const void*>(&ep), sizeof obj);
  return obj;
}

void print_frame(int frame, uintptr_t ip, bool return_address, causal::Symbolizer* sym) noexcept {
  std::fprintf(stderr, "  #%-2d 0x%016lx", frame, static_cast<unsigned long>(ip));
  if (sym != nullptr) {
    try {
      if (const causal::SourceLine* l = sym->line_of(ip, return_address); l != nullptr && !l->function.empty()) {
        std::fprintf(stderr, " %s at %s:%u\n", l->function.c_str(), l->file.c_str(), l->line);
        return;
      }
    } catch (...) {  // out of memory: fall back to dladdr's names
    }
  }
  const uintptr_t at = return_address && ip > 0 ? ip - 1 : ip;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(at), &info) == 0 || info.dli_fname == nullptr) {
    std::fputs(" ??\n", stderr);
    return;
  }
  if (info.dli_sname != nullptr) {
    int status = 0;
    char* dem = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    std::fprintf(stderr, " %s+0x%lx", status == 0 && dem ? dem : info.dli_sname,
                 static_cast<unsigned long>(ip - reinterpret_cast<uintptr_t>(info.dli_saddr)));
    std::free(dem);
  } else {
    std::fprintf(stderr, " +0x%lx", static_cast<unsigned long>(ip - reinterpret_cast<uintptr_t>(info.dli_fbase)));
  }
  std::fprintf(stderr, " (%s)\n", info.dli_fname);
}

std::unique_ptr<causal::Symbolizer> make_symbolizer() noexcept {
  try {
    return std::make_unique<causal::Symbolizer>();
  } catch (...) {
    return nullptr;
  }
}

void print_ips(void* const* ips, int n) noexcept {
  std::unique_ptr<causal::Symbolizer> sym = make_symbolizer();
  for (int i = 0; i < n; ++i) print_frame(i, reinterpret_cast<uintptr_t>(ips[i]), i > 0, sym.get());
}

void print_backtrace() noexcept {
  if (void* obj = current_exception_object(); obj != nullptr && obj == t_throw_site.object) {
    std::fputs("backtrace: the throw site\n", stderr);
    print_ips(t_throw_site.ips, t_throw_site.frames);
    return;
  }
  void* ips[kMaxFrames];
  const int n = unw_backtrace(ips, kMaxFrames);
  if (n <= 0) {
    std::fputs("  (backtrace unavailable)\n", stderr);
    return;
  }
  std::fputs("backtrace: the panic site\n", stderr);
  print_ips(ips + 1, n - 1);  // frame 0 is this function
}

using CxaThrow = void (*)(void*, std::type_info*, void (*)(void*));

CxaThrow next_cxa_throw() noexcept {
  static const CxaThrow next = reinterpret_cast<CxaThrow>(::dlsym(RTLD_NEXT, "__cxa_throw"));
  return next;
}

/// Called by __cxa_throw on the throwing thread: records the throw site when
/// a handler is running on this thread (a pool worker with a current actor).
/// noinline: the frames it skips are its own and __cxa_throw's.
[[gnu::noinline]] void record_throw_site(void* object) noexcept {
  Worker* w = Scheduler::current_worker();
  if (w == nullptr || w->dispatch.current == nullptr) return;
  ThrowSite& t = t_throw_site;
  void* ips[kMaxFrames];
  const int n = unw_backtrace(ips, kMaxFrames);
  // Frames 0 and 1 are this function and __cxa_throw: the throw site is 2.
  t.frames = 0;
  for (int i = 2; i < n; ++i) t.ips[t.frames++] = ips[i];
  t.object = object;
}

}  // namespace

[[noreturn]] void panic(const char* what, const char* detail) noexcept {
  Worker* w = Scheduler::current_worker();
  std::fprintf(stderr, "coact: panic: %s", what);
  if (detail) std::fprintf(stderr, " (%s)", detail);
  if (w != nullptr && w->dispatch.current != nullptr) {
    const ActorCell* c = w->dispatch.current;
    std::string type = demangle(*c->type);
    std::fprintf(stderr, "\n  in actor %s pid %u.%u on worker %u\n", type.c_str(), c->pid.id, c->pid.epoch, w->index);
  } else if (w != nullptr) {
    std::fprintf(stderr, "\n  on worker %u\n", w->index);
  } else {
    std::fputs("\n  outside the pool\n", stderr);
  }
  std::fflush(stderr);
  print_backtrace();
  std::fflush(stderr);
  std::abort();
}

}  // namespace coact::detail

// The C++ ABI's throw entry (Itanium C++ ABI 2.4.3), called by every `throw`
// expression: records the throw site (file comment), then throws through the
// next definition (never returns). noinline: record_throw_site skips exactly
// its own frame and this one.
namespace __cxxabiv1 {
extern "C" [[noreturn, gnu::noinline]] void __cxa_throw(void* object, std::type_info* type, void (*destroy)(void*)) {
  coact::detail::record_throw_site(object);
  if (auto next = coact::detail::next_cxa_throw()) next(object, type, destroy);
  std::fputs("coact: no __cxa_throw after the runtime's (dlsym RTLD_NEXT failed)\n", stderr);
  std::abort();
}
}  // namespace __cxxabiv1
