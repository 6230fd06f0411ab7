// coact/runtime/blocking.hpp: the blocking pool. A handler coroutine hands a
// blocking call (a file read, a DNS lookup, a C library that sleeps) to a
// separate bounded pool of threads and is resumed with its result, so no
// worker stalls on it (docs/blocking.md):
//
//   struct Loader : coact::Actor<Loader> {
//     coact::Task on(Load l) {
//       std::string text = co_await coact::blocking([path = l.path] { return read_file(path); });
//       ...                                 // resumed on a worker with the value
//     }
//   };
//
// Semantics: the awaiting actor parks exactly as for coact::ask (task.hpp,
// reply.hpp): a wait identified by (pid, wait epoch); its other mail is kept
// aside and handled after the coroutine finishes. f runs on a pool thread;
// its value, or the exception it threw, comes back as a system mail (a reply
// for that wait) and the coroutine resumes on a worker: the value is returned
// by the co_await, the exception rethrown there. Uncaught in the handler, it
// escapes the coroutine and the runtime fails fast naming the actor and the
// message (the rule for any handler exception). One call per actor is in
// flight at a time (the actor is parked until its result arrives), so the
// results reach an actor in the order it made the calls.
// Bounds: COACT_BLOCKING_THREADS threads per Runtime (started on demand, the
// first call starts one) and COACT_BLOCKING_QUEUE calls waiting for a thread;
// a call made when that queue is full does not wait and does not run: the
// co_await throws coact::blocking_pool_full (the handler may catch it, retry
// later with coact::sleep, or shed the request).
// Shutdown (the Runtime's destructor, after run() returned): calls still
// queued never run (their awaiting coroutines are destroyed with their
// actors); calls already running are waited for, and their results dropped,
// so f must return (a call that never returns keeps the destructor waiting).
// Causal sweeps: a pool thread follows the profiler's rules for threads
// outside the pool (blocking_pool.cpp): it starts a call no earlier in
// virtual time than the handler that made it, is credited for the time it sat
// idle waiting for work, and pays the delay injected while f ran before it
// delivers the result (as a virtual sleep of the same length would shift).
// Threads: co_await coact::blocking only inside a handler coroutine of a coact
// actor (aborts with a message otherwise). f is moved to the pool thread and
// destroyed there; it must not touch the actor's state without its own
// synchronisation (the actor is parked, not running, while f runs).
#pragma once

#include <chrono>
#include <coroutine>
#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include <coact/runtime/actor.hpp>
#include <coact/runtime/reply.hpp>
#include <coact/runtime/timer.hpp>

namespace coact {

/// Thrown by co_await coact::blocking(f) when COACT_BLOCKING_QUEUE calls are
/// already waiting for a pool thread: f was not run and will not be.
class blocking_pool_full : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

/// What a pool thread sends back: f's value (std::monostate for void) or the
/// exception it threw.
template <class R>
struct BlockingOutcome {
  std::optional<R> value;
  std::exception_ptr error;
};

/// One call: invoke() runs f on a pool thread and keeps its outcome;
/// deliver() posts it to the awaiting actor; the owner deletes the job after
/// deliver() or, at shutdown, without it (the reply is then dropped).
struct BlockingJob {
  virtual ~BlockingJob() = default;
  virtual void invoke() noexcept = 0;
  virtual void deliver() noexcept = 0;
  uint64_t owed_cycles = 0;  ///< what the caller owed the delay ledger when it made the call (blocking_pool.cpp)
};

template <class F, class R>
struct BlockingJobImpl final : BlockingJob {
  BlockingJobImpl(F f, ReplyTo<BlockingOutcome<R>> reply) : f_(std::move(f)), reply_(std::move(reply)) {}
  void invoke() noexcept override {
    try {
      if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
        f_();
        out_.value.emplace();
      } else {
        out_.value.emplace(f_());
      }
    } catch (...) {
      out_.error = std::current_exception();
    }
  }
  void deliver() noexcept override { reply_.send(std::move(out_)); }

 private:
  F f_;
  ReplyTo<BlockingOutcome<R>> reply_;
  BlockingOutcome<R> out_;
};

/// The pool of the Runtime whose handler runs on this thread, with a queue
/// slot reserved for one call; null if COACT_BLOCKING_QUEUE calls already
/// wait (nothing reserved). Aborts outside a handler. Worker thread.
void* blocking_reserve();
/// Hands `job` (ownership) to `pool`, whose slot blocking_reserve reserved,
/// stamped with this thread's delay-ledger position. Worker thread; never
/// blocks beyond the pool's lock.
void blocking_submit(void* pool, BlockingJob* job);
/// How long the wait behind a blocking call is armed for: far beyond any
/// call (its timer only keeps the wait registered; wall-anchored so injected
/// delay never brings it nearer).
inline constexpr std::chrono::hours kBlockingWaitForever{24 * 365 * 50};

}  // namespace detail

template <class F>
class [[nodiscard]] BlockingAwaiter {
 public:
  using Value = std::invoke_result_t<F&>;
  using R = std::conditional_t<std::is_void_v<Value>, std::monostate, Value>;

  explicit BlockingAwaiter(F f) : f_(std::move(f)) {}
  bool await_ready() const noexcept { return false; }
  /// Reserves a slot (or, the queue full, resumes at once to throw), then
  /// parks the actor and queues the call.
  bool await_suspend(std::coroutine_handle<> h) {
    void* pool = detail::blocking_reserve();
    if (pool == nullptr) {
      full_ = true;
      return false;
    }
    auto [cell, epoch] = detail::begin_reply_wait(h, &result_, detail::kBlockingWaitForever, Anchor::wall);
    detail::blocking_submit(
        pool, new detail::BlockingJobImpl<F, R>(std::move(f_), ReplyTo<detail::BlockingOutcome<R>>(cell, epoch)));
    return true;
  }
  Value await_resume() {
    if (full_) throw blocking_pool_full("coact::blocking: the blocking pool's queue is full (COACT_BLOCKING_QUEUE)");
    if (!result_) throw std::logic_error("coact::blocking: resumed without a result");
    if (result_->error) std::rethrow_exception(result_->error);
    if constexpr (!std::is_void_v<Value>) return std::move(*result_->value);
  }

 private:
  F f_;
  bool full_ = false;
  std::optional<detail::BlockingOutcome<R>> result_;
};

/// Runs `f()` on the Runtime's blocking pool; co_await it inside a handler
/// coroutine for f's value (or its exception). See the header comment.
template <class F>
requires std::is_invocable_v < std::decay_t<F>
& > BlockingAwaiter<std::decay_t<F>> blocking(F&& f) { return BlockingAwaiter<std::decay_t<F>>(std::forward<F>(f)); }

}  // namespace coact
