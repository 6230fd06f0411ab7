// runtime/src/reactor.cpp: the reactor behind coact::IoWatch
// (coact/runtime/reactor.hpp; docs/services.md): one epoll instance per
// Scheduler, made by the first watch (Scheduler::io_poll_or_make; it lives
// as long as the Scheduler and its watches) and polled by the Scheduler's own
// workers (detail/reactor.hpp, IoPoll): no thread of its own, so a readiness
// report is posted by the worker that will run it, with no cross-thread wake
// between the socket and the handler.
//
// The poll role. At most one worker at a time polls (try_begin, then
// deliver_and_end). A worker about to park takes the role if it is free and
// parks in epoll_pwait2 instead of its futex (Parker::park_polling): an
// unpark writes the wake eventfd. A busy worker takes the role now and then
// and polls without waiting (Scheduler::busy_poll), so readiness is seen
// while every worker is busy; where the busy workers do not all have a CPU,
// only the lowest-indexed one that keeps polling does (cpu_headroom.hpp).
// The role's holder collects the reports into the reactor's
// buffer and posts them (deliver_and_end) from its worker thread, outside any
// handler: mail to an actor made runnable lands on that worker's own deque
// (a busy worker's, under the jobs it already had: run_reports_after_backlog).
//
// Slots. A watch is a slot in a table guarded by the reactor's mutex, named
// in epoll by its token (slot index | generation << 32). A report is posted
// only under that mutex and only if the slot still holds the token's
// generation, and io_unregister frees the slot (bumping the generation) under
// the same mutex: once io_unregister returns, no report for that watch is
// posted, and a report of a freed slot that epoll had already returned is
// dropped, not posted to whoever took the slot next. Each slot holds a
// reference to its actor's cell, so posting to an actor that has stopped is
// the runtime's ordinary dropped (and counted) send.
//
// Arming. A slot's descriptor joins epoll at its first arm, edge-triggered
// (EPOLLET) for the interest of the arm that last asked epoll, and stays in
// it until unregistered. The one-report-per-arm rule is the slot's, kept
// under the mutex: `armed` is what the actor asked to be told about and not
// yet told; `latched` is readiness epoll reported since the last report
// posted, kept until a report carries it. An edge for a slot not armed for
// it is latched, not posted. An arm first looks at `latched`: readiness
// already seen is posted at once by the arming thread. Otherwise:
//   - arm() (level: data already there must be reported) re-registers the
//     descriptor with EPOLL_CTL_MOD, which makes epoll check its readiness
//     now and queue an edge if it is ready: one system call;
//   - arm_drained() (the actor saw EAGAIN or a short read since its last
//     report, so anything more arrives as a new edge) only records the
//     interest, unless epoll's registration lacks part of it.
// epoll_ctl runs under the mutex, so the registration and the slot's record
// of it (`mask`) cannot disagree when two threads arm one watch.
// Hang-up and error bits stay latched (a closed peer stays closed), as a
// level-triggered watch would report them at every arm.
//
// Causal sweeps (causal/include/coact/causal/hooks.hpp): the poller is a
// parked worker, credited when it resumes like any parked worker (its wait
// ends on input from outside the program), then it posts; a busy worker's
// poll waits for nothing and posts as a worker outside a handler does.
//
// Shutdown, steps:
//   1. reactor_shutdown (after the workers have joined: nobody polls any
//      more) sets `closed`: nothing is posted after it. A watch registered
//      later (an actor's destructor) joins the closed reactor and is never
//      reported.
//   2. Slots still registered keep their cell references until their watches
//      are destroyed (the actors' destructors, when the Scheduler finalizes
//      them); the Reactor object, shared by those watches and by the
//      Scheduler (whose parkers may name it until the Scheduler goes),
//      closes the epoll and eventfd descriptors when the last one goes.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <ctime>
#include <memory>
#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

#include <coact/runtime/reactor.hpp>

#include "detail/reactor.hpp"
#include "detail/scheduler.hpp"

namespace coact::detail {

namespace {

constexpr uint64_t kWakeToken = ~uint64_t{0};
constexpr int kMaxEvents = 256;

constexpr uint32_t kReadWrite = IoReady::kReadable | IoReady::kWritable;
constexpr uint32_t kAlways = IoReady::kHangup | IoReady::kError;  // reported with any interest

struct Slot {
  ActorCell* cell = nullptr;  // a held reference; null when free
  IoPostFn post = nullptr;
  int fd = -1;
  uint32_t gen = 0;      // bumped when freed
  uint32_t armed = 0;    // IoReady bits asked for and not yet reported (0: disarmed)
  uint32_t latched = 0;  // IoReady bits epoll reported and no report has carried yet
  uint32_t mask = 0;     // IoReady read/write bits of epoll's registration (0: not in epoll)

  // Posts what is both latched and armed, if anything, and disarms.
  // The reactor's mutex held, the reactor open.
  void post_ready() {
    if (armed == 0) return;
    const uint32_t now = latched & (armed | kAlways);
    if (now == 0) return;
    post(cell, fd, now);
    armed = 0;
    latched &= ~(now & kReadWrite);
  }
};

struct Reactor final : IoPoll {
  Reactor() {
    epfd = ::epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) throw std::system_error(errno, std::generic_category(), "coact reactor: epoll_create1");
    wakefd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wakefd < 0) {
      const int e = errno;
      ::close(epfd);
      throw std::system_error(e, std::generic_category(), "coact reactor: eventfd");
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeToken;
    if (::epoll_ctl(epfd, EPOLL_CTL_ADD, wakefd, &ev) != 0) {
      const int e = errno;
      ::close(wakefd);
      ::close(epfd);
      throw std::system_error(e, std::generic_category(), "coact reactor: epoll_ctl(eventfd)");
    }
  }
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;
  ~Reactor() {
    for (Slot& s : slots) {
      if (s.cell != nullptr) s.cell->release();
    }
    ::close(wakefd);
    ::close(epfd);
  }

  // IoPoll (detail/reactor.hpp).
  bool try_begin() noexcept override {
    return !polling.load(std::memory_order_relaxed) && !polling.exchange(true, std::memory_order_acquire);
  }
  bool poll_now() noexcept override {
    collect(0);
    return ready > 0;
  }
  void deliver_and_end() noexcept override;
  Result wait(bool timed, uint64_t deadline_ns) noexcept override;
  void wake() noexcept override {
    const uint64_t one = 1;
    (void)!::write(wakefd, &one, sizeof one);
  }

  // The holder of the poll role: one epoll_pwait2 (timeout_ns < 0: no
  // limit), its reports (the wake eventfd's left out, and drained) kept in
  // evs[0, ready). Returns epoll's count (-1 on EINTR).
  int collect(int64_t timeout_ns) noexcept;
  void stop();

  int epfd = -1;
  int wakefd = -1;
  std::atomic<bool> polling{false};  // the poll role is held (try_begin / deliver_and_end)
  // Reports collected and not yet posted: the role's holder's to touch.
  epoll_event evs[kMaxEvents];
  int ready = 0;
  std::mutex mu;
  std::vector<Slot> slots;      // guarded by mu
  std::vector<uint32_t> free_slots;  // indices of free slots, guarded by mu
  bool closed = false;               // guarded by mu: reactor_shutdown was called
};

uint32_t to_report(uint32_t ev) {
  uint32_t r = 0;
  if (ev & EPOLLIN) r |= IoReady::kReadable;
  if (ev & EPOLLOUT) r |= IoReady::kWritable;
  if (ev & (EPOLLHUP | EPOLLRDHUP)) r |= IoReady::kHangup;
  if (ev & EPOLLERR) r |= IoReady::kError;
  return r;
}

int Reactor::collect(int64_t timeout_ns) noexcept {
  timespec ts{};
  if (timeout_ns > 0) {
    ts.tv_sec = time_t(timeout_ns / 1000000000);
    ts.tv_nsec = long(timeout_ns % 1000000000);
  }
  // `ready` is 0 here: a holder posts what it collected before it collects
  // again, and a wait that collected nothing left nothing.
  const int n = ::epoll_pwait2(epfd, evs, kMaxEvents, timeout_ns < 0 ? nullptr : &ts, nullptr);
  if (n < 0) return -1;  // EINTR; EBADF/EINVAL cannot happen while the Reactor lives
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.u64 == kWakeToken) {
      uint64_t count = 0;
      (void)!::read(wakefd, &count, sizeof count);
      continue;
    }
    evs[kept++] = evs[i];
  }
  ready = kept;
  return n;
}

IoPoll::Result Reactor::wait(bool timed, uint64_t deadline_ns) noexcept {
  int64_t timeout = -1;
  if (timed) {
    const uint64_t now = sync::now_ns();
    timeout = deadline_ns > now ? int64_t(deadline_ns - now) : 0;
  }
  const int n = collect(timeout);
  if (ready > 0) return Result::ready;
  return timed && n == 0 ? Result::timed_out : Result::woken;
}

void Reactor::deliver_and_end() noexcept {
  if (ready > 0) {
    std::lock_guard lk(mu);
    for (int i = 0; i < ready && !closed; ++i) {
      const uint64_t token = evs[i].data.u64;
      const uint32_t index = uint32_t(token);
      const uint32_t gen = uint32_t(token >> 32);
      if (index >= slots.size()) continue;
      Slot& s = slots[index];
      if (s.cell == nullptr || s.gen != gen) continue;  // unregistered since epoll returned it
      s.latched |= to_report(evs[i].events);
      s.post_ready();
    }
  }
  ready = 0;
  polling.store(false, std::memory_order_release);
}

void Reactor::stop() {
  std::lock_guard lk(mu);
  closed = true;
}

std::shared_ptr<Reactor> reactor_of(Scheduler* s) {
  return std::static_pointer_cast<Reactor>(
      s->io_poll_or_make([]() -> std::shared_ptr<IoPoll> { return std::make_shared<Reactor>(); }));
}

}  // namespace

std::shared_ptr<void> io_register(ActorCell* cell, IoPostFn post, int fd, uint64_t* token) {
  std::shared_ptr<Reactor> r = reactor_of(cell->sched);
  uint32_t index = 0;
  uint32_t gen = 0;
  {
    std::lock_guard lk(r->mu);
    if (r->free_slots.empty()) {
      index = uint32_t(r->slots.size());
      r->slots.emplace_back();
    } else {
      index = r->free_slots.back();
      r->free_slots.pop_back();
    }
    Slot& s = r->slots[index];
    cell->add_ref();
    s.cell = cell;
    s.post = post;
    s.fd = fd;
    gen = s.gen;
  }
  *token = uint64_t(gen) << 32 | index;
  return r;
}

void io_arm(void* reactor, uint64_t token, int fd, Interest interest, bool drained) {
  auto* r = static_cast<Reactor*>(reactor);
  uint32_t want = 0;
  if ((uint32_t(interest) & uint32_t(Interest::read)) != 0) want |= IoReady::kReadable;
  if ((uint32_t(interest) & uint32_t(Interest::write)) != 0) want |= IoReady::kWritable;
  std::lock_guard lk(r->mu);
  const uint32_t index = uint32_t(token);
  if (r->closed || index >= r->slots.size()) return;  // nothing is reported after shutdown
  Slot& s = r->slots[index];
  if (s.cell == nullptr || s.gen != uint32_t(token >> 32)) return;
  s.armed = want;
  s.post_ready();
  if (s.armed == 0) return;  // reported from what was latched
  if (drained && s.mask != 0 && (want & ~s.mask) == 0) return;  // the next edge reports it
  epoll_event ev{};
  ev.events = EPOLLET | EPOLLRDHUP;
  if ((want & IoReady::kReadable) != 0) ev.events |= EPOLLIN;
  if ((want & IoReady::kWritable) != 0) ev.events |= EPOLLOUT;
  ev.data.u64 = token;
  // Added at the first arm, not at registration: a descriptor in epoll with
  // an empty mask still reports EPOLLHUP and EPOLLERR.
  if (::epoll_ctl(r->epfd, s.mask != 0 ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0) {
    s.armed = 0;
    throw std::system_error(errno, std::generic_category(),
                            "coact::IoWatch::arm: epoll_ctl of fd " + std::to_string(fd));
  }
  s.mask = want;
}

void io_unregister(void* reactor, uint64_t token, int fd) noexcept {
  auto* r = static_cast<Reactor*>(reactor);
  ActorCell* cell = nullptr;
  {
    std::lock_guard lk(r->mu);
    const uint32_t index = uint32_t(token);
    if (index < r->slots.size() && r->slots[index].gen == uint32_t(token >> 32) && r->slots[index].cell != nullptr) {
      Slot& s = r->slots[index];
      cell = std::exchange(s.cell, nullptr);
      s.post = nullptr;
      s.fd = -1;
      s.armed = s.latched = s.mask = 0;
      ++s.gen;
      r->free_slots.push_back(index);
    }
  }
  // Outside the lock: the descriptor may already be closed (ENOENT/EBADF are fine).
  if (fd >= 0) (void)::epoll_ctl(r->epfd, EPOLL_CTL_DEL, fd, nullptr);
  if (cell != nullptr) cell->release();
}

void reactor_shutdown(Scheduler* s) noexcept {
  if (const std::shared_ptr<IoPoll> io = s->io_poll()) static_cast<Reactor*>(io.get())->stop();
}

}  // namespace coact::detail
