// runtime/src/mailbox.cpp: the mailbox's out-of-line parts (docs/mailboxes.md):
// the bound's send policy (post_bounded), the per-actor listing
// (Runtime::mailboxes) and memory given back after a backlog drains
// (backlog_drained). The counters themselves live in detail/mailbox.hpp.
//
// Bound policy (COACT_MAILBOX_BOUND=N, N > 0):
//   1. A sender outside every pool (main, an IO or blocking thread) that finds
//      the recipient's depth at N or more gets false from send(); the
//      envelope is destroyed on the sender's thread, the refusal counted in
//      the recipient's MailboxStats::rejected and RuntimeStats::mailbox_rejected,
//      and the process's first refusal is reported on stderr. Never a silent
//      loss: the caller sees false, the counters see every refusal.
//   2. A sender on a pool worker (a handler, a timer firing, a destructor's
//      sends) is never refused: actor protocols rely on delivery, and a
//      refused reply or stop could wedge a program. Its mail is queued over
//      the bound; the high-water mark shows by how much.
//   3. The check and the push are not one atomic step: concurrent outside
//      senders may overshoot N by at most their number.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <coact/runtime/message_kind.hpp>
#include <coact/runtime/runtime.hpp>

#include "detail/scheduler.hpp"

namespace coact {

namespace detail {

namespace {
std::atomic<bool> g_reported_refusal{false};  // the first refusal's stderr line (relaxed: once per process)
}  // namespace

bool post_bounded(ActorCell* target, Envelope* e) {
  const uint32_t bound = target->mailbox_bound;
  if (Scheduler::current_worker() == nullptr && !target->is_dead()) {
    const uint64_t depth = target->inbox.depth();
    if (depth >= bound) {
      target->inbox.count_rejected();
      target->sched->runtime()->mailbox_rejected_.fetch_add(1, std::memory_order_relaxed);
      if (!g_reported_refusal.exchange(true, std::memory_order_relaxed)) {
        const std::string type = coact::demangle(*target->type);
        std::fprintf(stderr,
                     "coact: mailbox bound: a send to %s pid %u.%u was refused (%llu mails queued, "
                     "COACT_MAILBOX_BOUND=%u); send() returned false. Later refusals are counted in "
                     "RuntimeStats::mailbox_rejected without a message.\n",
                     type.c_str(), target->pid.id, target->pid.epoch, static_cast<unsigned long long>(depth), bound);
      }
      e->drop(e);
      return false;
    }
  }
  post(target, e);
  return true;
}

namespace {
// Steady-clock ns of the last trim; 0 before the first. CAS-claimed, so one
// thread trims per interval.
std::atomic<int64_t> g_last_trim_ns{0};
// The interval between trims: a second, or a tenth of one after a run of at
// least kLargeRun mails (megabytes at stake: a backlog that big drained
// within a second of an earlier, smaller one must not keep its memory).
constexpr int64_t kTrimIntervalNs = 1'000'000'000;
constexpr int64_t kLargeRunTrimIntervalNs = 100'000'000;
constexpr uint64_t kLargeRun = 65536;
}  // namespace

void backlog_drained(uint64_t mails) noexcept {
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const int64_t interval = mails >= kLargeRun ? kLargeRunTrimIntervalNs : kTrimIntervalNs;
  int64_t last = g_last_trim_ns.load(std::memory_order_relaxed);
  if (last != 0 && now - last < interval) return;
  if (!g_last_trim_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  // The drained envelopes went back to glibc (the per-thread small-object
  // caches hold a bounded number): free pages in the middle of the heap and
  // of each arena stay resident until trimmed.
  ::malloc_trim(0);
}

}  // namespace detail

std::vector<Runtime::ActorMailbox> Runtime::mailboxes() const {
  std::vector<detail::ActorCell*> cells = sched_->registry().snapshot();
  std::vector<ActorMailbox> out;
  out.reserve(cells.size());
  for (detail::ActorCell* c : cells) {
    out.push_back(ActorMailbox{c->pid, demangle(*c->type), detail::mailbox_stats(c)});
    c->release();
  }
  std::sort(out.begin(), out.end(), [](const ActorMailbox& a, const ActorMailbox& b) {
    if (a.mailbox.depth != b.mailbox.depth) return a.mailbox.depth > b.mailbox.depth;
    return a.mailbox.high_water > b.mailbox.high_water;
  });
  return out;
}

}  // namespace coact
