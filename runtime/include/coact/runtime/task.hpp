// coact/runtime/task.hpp: coroutine handlers. A handler may return
// coact::Task and co_await coact::sleep(d) / coact::sleep_wall(d):
//
//   struct Poller : coact::Actor<Poller> {
//     coact::Task on(Poll p) {           // take the message by value or by
//       co_await coact::sleep(5ms);     // reference: the envelope lives until
//       ...                             // the coroutine finishes
//     }
//   };
//
// Semantics (docs/DESIGN.md, timers): awaiting parks the actor: its run-token goes Idle with
// a registered wait identified by (pid, wait epoch). While it waits, mail for
// it is queued (kept aside in arrival order) and handled after the coroutine
// finishes, so a handler still runs to completion with respect to other mail.
// The wake is a system mail carrying the wait epoch; a wake whose epoch is not
// the current wait's is stale and discarded, so stale wakes are impossible by
// protocol. Stopping a waiting actor destroys the coroutine frame.
// Threads: co_await these only inside a handler coroutine of a coact actor
// (aborts with a message otherwise). Nested coroutines (awaiting another
// Task) are not supported.
#pragma once

#include <chrono>
#include <coroutine>
#include <exception>
#include <utility>

#include <coact/runtime/timer.hpp>

namespace coact {

class Task {
 public:
  struct promise_type {
    Task get_return_object() noexcept { return Task{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    // Rethrown into the dispatcher, which fails fast naming the actor.
    void unhandled_exception() { throw; }
  };

  Task(Task&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Task(const Task&) = delete;
  ~Task() {
    if (h_) h_.destroy();
  }
  bool done() const noexcept { return !h_ || h_.done(); }
  /// Gives up ownership of a suspended coroutine (the runtime now owns it).
  std::coroutine_handle<> release() noexcept { return std::exchange(h_, nullptr); }

 private:
  explicit Task(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
  std::coroutine_handle<promise_type> h_;
};

namespace detail {
/// Arms a Sleep timer for the actor running on this thread and records `h`
/// as its waiting coroutine. Aborts if called outside a handler.
void arm_sleep(std::coroutine_handle<> h, std::chrono::nanoseconds d, Anchor anchor);
}  // namespace detail

struct SleepAwaiter {
  std::chrono::nanoseconds d;
  Anchor anchor;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { detail::arm_sleep(h, d, anchor); }
  void await_resume() const noexcept {}
};

/// Parks the calling actor for `d` of virtual time (shifts with injected delay).
/// sleep(0) still yields: the actor resumes after the timer path, never inline.
template <class Rep, class Period>
SleepAwaiter sleep(std::chrono::duration<Rep, Period> d) {
  return {std::chrono::duration_cast<std::chrono::nanoseconds>(d), Anchor::virtual_time};
}
/// Parks the calling actor for `d` of wall time (ignores injected delay).
template <class Rep, class Period>
SleepAwaiter sleep_wall(std::chrono::duration<Rep, Period> d) {
  return {std::chrono::duration_cast<std::chrono::nanoseconds>(d), Anchor::wall};
}

}  // namespace coact
