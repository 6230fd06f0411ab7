// runtime/src/reactor.cpp: the reactor behind coact::IoWatch
// (coact/runtime/reactor.hpp; docs/services.md): one epoll instance and one
// thread per Scheduler, created by the first watch; reactor_shutdown (called
// by Scheduler::shutdown once the workers have joined) stops the thread.
//
// Slots. A watch is a slot in a table guarded by the reactor's mutex, named
// in epoll by its token (slot index | generation << 32). The thread posts a
// report only under that mutex and only if the slot still holds the token's
// generation, and io_unregister frees the slot (bumping the generation) under
// the same mutex: once io_unregister returns, no report for that watch is
// posted, and a report of a freed slot that epoll had already returned is
// dropped, not posted to whoever took the slot next. Each slot holds a
// reference to its actor's cell, so posting to an actor that has stopped is
// the runtime's ordinary dropped (and counted) send.
//
// One-shot. The first arm adds the descriptor to epoll, every later one
// modifies it, always with EPOLLONESHOT: epoll reports the descriptor once
// and disarms it, so each arm gives at most one report, and epoll_ctl
// from any thread needs no lock of ours (epoll serialises it).
//
// Causal sweeps (causal/include/coact/causal/hooks.hpp): the thread is a
// thread outside the worker pool that makes actors runnable. Its wait in
// epoll_wait ends on input from outside the program, so the wait is credited
// (on_resume, as a parked worker's); it pays its debt (on_pay_point) before
// posting the reports of a wake.
//
// Shutdown, steps:
//   1. reactor_shutdown removes the Scheduler's reactor from the live list
//      (no new watch finds it; io_register for that Scheduler would start a
//      new one, but no handler runs any more).
//   2. It sets `closed` and writes the wake eventfd; the thread sees the wake
//      token, exits its loop and is joined.
//   3. Slots still registered keep their cell references until their watches
//      are destroyed (the actors' destructors, when the Scheduler finalizes
//      them); the Reactor object, shared by those watches, closes the epoll
//      and eventfd descriptors when the last one goes.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <coact/causal/hooks.hpp>
#include <coact/runtime/reactor.hpp>

#include "detail/per_scheduler.hpp"
#include "detail/reactor.hpp"
#include "detail/scheduler.hpp"

namespace coact::detail {

namespace {

constexpr uint64_t kWakeToken = ~uint64_t{0};
constexpr int kMaxEvents = 256;

struct Slot {
  ActorCell* cell = nullptr;  // a held reference; null when free
  IoPostFn post = nullptr;
  int fd = -1;
  uint32_t gen = 0;  // bumped when freed
};

struct Reactor {
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

  void thread_main();
  void stop();

  int epfd = -1;
  int wakefd = -1;
  std::thread thread;  // started by reactor_of, joined by stop()
  std::mutex mu;
  std::vector<Slot> slots;      // guarded by mu
  std::vector<uint32_t> free_slots;  // indices of free slots, guarded by mu
  bool closed = false;          // guarded by mu: stop() was called
};

// Every live Scheduler's reactor (shared with its watches). Touched by the
// first watch of a Runtime and by its shutdown.
auto& g_reactors = *new PerScheduler<Reactor>;

uint32_t to_report(uint32_t ev) {
  uint32_t r = 0;
  if (ev & EPOLLIN) r |= IoReady::kReadable;
  if (ev & EPOLLOUT) r |= IoReady::kWritable;
  if (ev & (EPOLLHUP | EPOLLRDHUP)) r |= IoReady::kHangup;
  if (ev & EPOLLERR) r |= IoReady::kError;
  return r;
}

void Reactor::thread_main() {
  ::prctl(PR_SET_NAME, "coact-reactor", 0, 0, 0);
  causal::register_thread();  // owes the delay injected from now on
  epoll_event evs[kMaxEvents];
  for (;;) {
    const int n = ::epoll_wait(epfd, evs, kMaxEvents, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // EBADF/EINVAL: cannot happen while the Reactor lives
    }
    causal::on_resume();     // the wait ended on input from outside: credited
    causal::on_pay_point();  // pay before making actors runnable
    std::lock_guard lk(mu);
    if (closed) return;
    for (int i = 0; i < n; ++i) {
      const uint64_t token = evs[i].data.u64;
      if (token == kWakeToken) continue;
      const uint32_t index = uint32_t(token);
      const uint32_t gen = uint32_t(token >> 32);
      if (index >= slots.size()) continue;
      Slot& s = slots[index];
      if (s.cell == nullptr || s.gen != gen) continue;  // unregistered since epoll returned it
      s.post(s.cell, s.fd, to_report(evs[i].events));
    }
  }
}

void Reactor::stop() {
  {
    std::lock_guard lk(mu);
    closed = true;
  }
  const uint64_t one = 1;
  (void)!::write(wakefd, &one, sizeof one);
  if (thread.joinable()) thread.join();
}

std::shared_ptr<Reactor> reactor_of(Scheduler* s) {
  return g_reactors.get_or_make(s, [] {
    auto r = std::make_shared<Reactor>();
    r->thread = std::thread([p = r.get()] { p->thread_main(); });
    return r;
  });
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

void io_arm(void* reactor, uint64_t token, int fd, Interest interest) {
  auto* r = static_cast<Reactor*>(reactor);
  epoll_event ev{};
  ev.events = EPOLLONESHOT | EPOLLRDHUP;
  if ((uint32_t(interest) & uint32_t(Interest::read)) != 0) ev.events |= EPOLLIN;
  if ((uint32_t(interest) & uint32_t(Interest::write)) != 0) ev.events |= EPOLLOUT;
  ev.data.u64 = token;
  // Added at the first arm, not at registration: a descriptor in epoll with
  // an empty mask still reports EPOLLHUP and EPOLLERR, while one disarmed by
  // a one-shot report reports nothing until modified.
  // A first arm racing another thread's first arm finds EEXIST and modifies.
  if (::epoll_ctl(r->epfd, EPOLL_CTL_MOD, fd, &ev) == 0) return;
  if (errno == ENOENT) {
    if (::epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev) == 0) return;
    if (errno == EEXIST && ::epoll_ctl(r->epfd, EPOLL_CTL_MOD, fd, &ev) == 0) return;
  }
  throw std::system_error(errno, std::generic_category(), "coact::IoWatch::arm: epoll_ctl of fd " + std::to_string(fd));
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
      ++s.gen;
      r->free_slots.push_back(index);
    }
  }
  // Outside the lock: the descriptor may already be closed (ENOENT/EBADF are fine).
  if (fd >= 0) (void)::epoll_ctl(r->epfd, EPOLL_CTL_DEL, fd, nullptr);
  if (cell != nullptr) cell->release();
}

void reactor_shutdown(Scheduler* s) noexcept {
  const std::shared_ptr<Reactor> r = g_reactors.take(s);
  if (r == nullptr) return;
  r->stop();
}

}  // namespace coact::detail
