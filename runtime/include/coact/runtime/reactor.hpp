// coact/runtime/reactor.hpp: the reactor. One epoll instance per Runtime,
// polled by its workers, turns the readiness of file descriptors (sockets,
// pipes, eventfds) into mail, so an actor waits on a socket without stalling
// a worker (docs/services.md):
//
//   struct Conn : coact::Actor<Conn> {
//     coact::IoWatch watch;
//     explicit Conn(int fd) : watch(self(), fd) { watch.arm(coact::Interest::read); }
//     void on(const coact::IoReady& r) {
//       ... read(fd) until EAGAIN, answer ...
//       watch.arm_drained(coact::Interest::read);   // one report per arm
//     }
//   };
//
// Semantics: an IoWatch registers a non-blocking descriptor with the reactor
// of the Runtime its actor lives in (started by the first watch of that
// Runtime). Each arm() asks for one report: the first time the descriptor is
// ready for the interest armed, the actor gets one coact::IoReady mail and
// the watch is disarmed until the next arm(). So a watch sends at most one
// report per arm, and an actor that stops arming for reads stops being told
// about input: the back-pressure of a connection whose output is not drained
// (arm for write only until it drains). Readiness is level-triggered at the
// moment of arm(): data that arrived before the arm is reported at once.
// arm_drained() is the cheaper arm for an actor that has just drained the
// descriptor (read or write returned EAGAIN, or a read returned less than it
// asked for): it reports readiness that arrives after the drain, and costs no
// system call while nothing has (the reactor watches edges and remembers
// those that come while the watch is disarmed). A report may find nothing to
// do (an actor that also re-arms outside its IoReady handler, or readiness
// that came and was consumed while the watch was disarmed): read or write
// until EAGAIN and arm again. Hang-ups and errors are reported with whatever
// was armed (IoReady::hangup(), error()); the actor reads to see EOF or the
// error. An IoReady is delivered even over COACT_MAILBOX_BOUND (one per arm:
// the arms bound it).
// Threads: construct, arm and destroy an IoWatch from any thread (usually
// the owning actor's handlers and destructor). Destroying the watch (or
// reset()) unregisters the descriptor and does not close it; close the
// descriptor after the watch is gone. An IoReady already queued when the
// watch goes stays queued (its fd may then be closed or reused: an actor that
// replaces its watch compares IoReady::fd and ignores stale reports).
// Who polls: the Runtime's own workers (no reactor thread): one worker with
// nothing to run waits in epoll instead of parking, posts the reports itself
// and runs the actors they wake; while none parks, busy workers poll between
// handlers (docs/services.md). A handler that runs long delays reports by as
// long.
// Causal sweeps: the polling worker is a parked worker, so its wait for
// input from outside the program is credited when it resumes (reactor.cpp).
// Shutdown: the Runtime's destructor closes the reactor after the workers
// have joined and before any actor is finalized; watches destroyed after
// that only unregister.
// Errors: arm() throws std::system_error when epoll refuses the descriptor
// (a regular file, a descriptor closed under the watch). Linux only.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include <coact/runtime/actor.hpp>

namespace coact {

/// What an arm() asks to be told about.
enum class Interest : uint32_t {
  read = 1,        ///< input, EOF or a pending connection (a listener)
  write = 2,       ///< room in the output buffer
  read_write = 3,  ///< either
};

/// One readiness report for a watched descriptor (the mail an IoWatch sends).
struct IoReady {
  static constexpr uint32_t kReadable = 1;
  static constexpr uint32_t kWritable = 2;
  static constexpr uint32_t kHangup = 4;  ///< the peer closed (EPOLLHUP / EPOLLRDHUP)
  static constexpr uint32_t kError = 8;   ///< an error is pending (EPOLLERR)

  int fd = -1;          ///< the watched descriptor
  uint32_t events = 0;  ///< the k* bits that were ready

  bool readable() const noexcept { return (events & kReadable) != 0; }
  bool writable() const noexcept { return (events & kWritable) != 0; }
  bool hangup() const noexcept { return (events & kHangup) != 0; }
  bool error() const noexcept { return (events & kError) != 0; }
};

namespace detail {
/// Posts IoReady{fd, events} to the actor of `cell` (type-erased per actor type).
using IoPostFn = void (*)(ActorCell* cell, int fd, uint32_t events);

template <class A>
void io_post(ActorCell* cell, int fd, uint32_t events) {
  post(cell, make_envelope<A, IoReady>(IoReady{fd, events}));
}

/// Registers `fd` with the reactor of `cell`'s Runtime (starting it on first
/// use), unarmed (epoll learns of it at the first arm); the slot holds a
/// reference to `cell`. Returns the reactor (shared: it outlives the Runtime
/// while watches remain) and the slot's token. Throws std::system_error. Any
/// thread.
std::shared_ptr<void> io_register(ActorCell* cell, IoPostFn post, int fd, uint64_t* token);
/// Arms one report of `interest` for the slot `token` of `fd`; `drained`:
/// readiness before the call need not be reported (IoWatch::arm_drained).
/// Throws std::system_error.
void io_arm(void* reactor, uint64_t token, int fd, Interest interest, bool drained);
/// Removes the slot (no report for it is posted after this returns) and the
/// descriptor from epoll. Never throws.
void io_unregister(void* reactor, uint64_t token, int fd) noexcept;
}  // namespace detail

/// A descriptor's registration with the reactor, reporting to one actor.
/// Move-only; destroying it unregisters (the descriptor stays open).
class IoWatch {
 public:
  IoWatch() noexcept = default;
  /// Registers non-blocking `fd` for `to` (unarmed: call arm()). A must have
  /// a handler for coact::IoReady; `to` must be live in a Runtime. May throw
  /// std::system_error (the reactor's epoll or thread could not be made).
  template <class A>
  IoWatch(const ActorRef<A>& to, int fd) : fd_(fd) {
    detail::check_handles<A, IoReady>();
    reactor_ = detail::io_register(to.cell(), &detail::io_post<A>, fd, &token_);
  }
  IoWatch(IoWatch&& o) noexcept
      : reactor_(std::move(o.reactor_)), token_(std::exchange(o.token_, 0)), fd_(std::exchange(o.fd_, -1)) {}
  IoWatch& operator=(IoWatch&& o) noexcept {
    if (this != &o) {
      reset();
      reactor_ = std::move(o.reactor_);
      token_ = std::exchange(o.token_, 0);
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  IoWatch(const IoWatch&) = delete;
  IoWatch& operator=(const IoWatch&) = delete;
  ~IoWatch() { reset(); }

  /// Asks for one IoReady when the descriptor is ready for `interest`
  /// (replacing an interest armed before and not yet reported). Requires a
  /// registered watch. Throws std::system_error.
  void arm(Interest interest) const { detail::io_arm(reactor_.get(), token_, fd_, interest, false); }
  /// As arm(), for a caller that has drained the descriptor for `interest`
  /// since the last report it handled: for read, its last read returned
  /// EAGAIN or fewer bytes than asked (a stream socket or a pipe); for write,
  /// its last write returned EAGAIN. Readiness that arrives after that drain
  /// is reported; readiness left over from before it may not be, so an actor
  /// that stopped reading with input left (back-pressure) calls arm(). Costs
  /// no system call unless epoll's registration must change (the watch's
  /// first arm, or an interest it was not last registered for).
  void arm_drained(Interest interest) const { detail::io_arm(reactor_.get(), token_, fd_, interest, true); }
  /// Unregisters now (as the destructor does). Idempotent.
  void reset() noexcept {
    if (reactor_) detail::io_unregister(reactor_.get(), token_, fd_);
    reactor_.reset();
    fd_ = -1;
  }
  /// The watched descriptor; -1 when not registered.
  int fd() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return reactor_ != nullptr; }

 private:
  std::shared_ptr<void> reactor_;
  uint64_t token_ = 0;
  int fd_ = -1;
};

}  // namespace coact
