// coact/runtime/reply.hpp: request / reply with a timeout, for coroutine
// handlers (a WaitTimeout entry in the timer heap; docs/DESIGN.md, "Runtime": timers).
//
//   struct Query { int key; coact::ReplyTo<int> reply; };
//   struct Store : coact::Actor<Store> {
//     void on(Query& q) { q.reply.send(42); }
//   };
//   struct Client : coact::Actor<Client> {
//     coact::ActorRef<Store> store;
//     coact::Task on(Go) {
//       std::optional<int> v = co_await coact::ask<int>(
//           store, [](coact::ReplyTo<int> r) { return Query{7, std::move(r)}; }, 50ms);
//       if (!v) { /* timed out */ }
//     }
//   };
//
// The wait is identified by (pid, wait epoch): the reply and the timeout race,
// the first to reach the waiting actor resumes it and bumps the epoch, and the
// other is stale and discarded by protocol. A reply sent after the timeout is
// dropped (not counted as dead mail). ReplyTo is copyable; only the first
// reply for a wait counts. ReplyTo::send may be called from any thread.
// The timeout is virtual (it shifts with injected delay) unless `anchor` is wall.
#pragma once

#include <chrono>
#include <coroutine>
#include <optional>
#include <utility>

#include <coact/runtime/actor.hpp>
#include <coact/runtime/timer.hpp>

namespace coact {

namespace detail {
/// System mail carrying a reply for wait `epoch`; deliver() moves the value
/// into the waiting awaiter's slot.
struct ReplyEnvelopeBase : Envelope {
  uint64_t epoch = 0;
  void (*deliver)(ReplyEnvelopeBase* self, void* slot) = nullptr;
};
template <class R>
struct ReplyEnvelope final : ReplyEnvelopeBase {
  R value;
  ReplyEnvelope(uint64_t ep, R v) : value(std::move(v)) {
    system = SystemMail::reply;
    epoch = ep;
    drop = [](Envelope* e) { delete static_cast<ReplyEnvelope*>(e); };
    deliver = [](ReplyEnvelopeBase* e, void* slot) {
      static_cast<std::optional<R>*>(slot)->emplace(std::move(static_cast<ReplyEnvelope*>(e)->value));
    };
  }
};
/// Registers the running actor's wait (coroutine `h`, reply slot, timeout
/// timer) and returns (cell with a new reference, wait epoch). Aborts outside
/// a handler coroutine.
std::pair<ActorCell*, uint64_t> begin_reply_wait(std::coroutine_handle<> h, void* slot,
                                                 std::chrono::nanoseconds timeout, Anchor anchor);
}  // namespace detail

/// The responder's handle for one wait. Copyable (reference-counted).
template <class R>
class ReplyTo {
 public:
  ReplyTo() = default;
  ReplyTo(detail::ActorCell* c, uint64_t epoch) noexcept : cell_(c), epoch_(epoch) {}  // adopts a reference
  ReplyTo(const ReplyTo& o) noexcept : cell_(o.cell_), epoch_(o.epoch_) {
    if (cell_) cell_->add_ref();
  }
  ReplyTo(ReplyTo&& o) noexcept : cell_(std::exchange(o.cell_, nullptr)), epoch_(o.epoch_) {}
  ReplyTo& operator=(ReplyTo o) noexcept {
    std::swap(cell_, o.cell_);
    epoch_ = o.epoch_;
    return *this;
  }
  ~ReplyTo() {
    if (cell_) cell_->release();
  }
  explicit operator bool() const noexcept { return cell_ != nullptr; }

  /// Delivers the reply to the waiting coroutine (if it still waits on this
  /// wait). Any thread.
  void send(R value) const {
    if (cell_) detail::post(cell_, new detail::ReplyEnvelope<R>(epoch_, std::move(value)));
  }

 private:
  detail::ActorCell* cell_ = nullptr;
  uint64_t epoch_ = 0;
};

template <class R, class Target, class Make>
struct AskAwaiter {
  Target target;
  Make make;
  std::chrono::nanoseconds timeout;
  Anchor anchor;
  std::optional<R> result;

  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    auto [cell, epoch] = detail::begin_reply_wait(h, &result, timeout, anchor);
    target.send(make(ReplyTo<R>(cell, epoch)));  // buffered: flushed once the handler suspends
  }
  std::optional<R> await_resume() { return std::move(result); }
};

/// Sends `make(ReplyTo<R>)` to `target` and parks the calling actor until the
/// reply arrives (engaged optional) or `timeout` passes (nullopt).
template <class R, class A, class Make>
AskAwaiter<R, ActorRef<A>, Make> ask(const ActorRef<A>& target, Make make, std::chrono::nanoseconds timeout,
                                     Anchor anchor = Anchor::virtual_time) {
  return {target, std::move(make), timeout, anchor, std::nullopt};
}

}  // namespace coact
