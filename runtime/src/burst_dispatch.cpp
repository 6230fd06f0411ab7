// runtime/src/burst_dispatch.cpp: the flush and burst dispatch, the burst
// lifecycle of detail/burst.hpp steps 2-6: flush (the one flush point, after
// every handler: pay, seal the ring, route the outbound list), flush_burst
// and flush_burst_groups (group the mail by recipient, recruit drainers),
// run_burst (the drainers' cursor race), requeue_under, deliver_claimed, and
// discard_burst (shutdown's step 5). Called by the worker that ran the
// handler (flush) or popped the drainer (run_burst); never off the pool.
#include <sys/prctl.h>

#include <algorithm>
#include <coroutine>
#include <cstdio>
#include <deque>
#include <exception>
#include <string>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/sampler.hpp>

#include "detail/live_schedulers.hpp"
#include "detail/scheduler_inl.hpp"
#include "trace/hooks.hpp"

namespace coact::detail {

void Scheduler::discard_burst(Burst* b) {
  while (auto idx = b->life.claim()) {
    Group& g = b->groups()[*idx];
    uint64_t n = 0;
    while (Envelope* e = g.take_or_close()) {
      while (e != nullptr) {
        Envelope* next = e->next.load(std::memory_order_relaxed);
        if (e->system == SystemMail::none) ++n;
        e->drop(e);
        e = next;
      }
    }
    if (n != 0) count_dropped_dead(n);
    g.target->release();
    b->life.complete();
  }
  b->release();
}

// flush()'s first step.
[[gnu::always_inline]] inline void Scheduler::flush_seal(Worker& w) {
  causal::on_pay_point();  // pay before making other actors runnable
  // t_ring_armed: this invocation buffered a send with the ring on (only
  // then can a region be open or the ring have refused; only a worker with
  // a ring, i.e. burst on, sets it); a handler whose sends all went direct
  // (w.dispatch.batched clear) skips the seal.
  if (w.dispatch.batched && t_ring_armed) {
    w.ring.seal();  // lock = mail count, before any mail leaves this thread
    t_ring_armed = false;
    w.dispatch.ring_refused = false;
  }
}

// The burst lifecycle step 2 (detail/burst.hpp): the one flush point.
void Scheduler::flush(Worker& w, ActorCell* producer) {
  if (w.tracing()) [[unlikely]] {
    flush_traced(w, producer);
    return;
  }
  flush_untraced(w, producer);
}

// flush() with the per-mail trace off (dispatch's untraced copy calls it
// directly: no trace check per flush).
void Scheduler::flush_untraced(Worker& w, ActorCell* producer) {
  flush_seal(w);
  flush_route(w, producer);
}

// flush() with the per-mail trace on: send events, routing, the flush event.
// Out of line so the untraced flush keeps its small frame.
void Scheduler::flush_traced(Worker& w, ActorCell* producer) {
  flush_seal(w);
  if (w.outbound.empty()) return;
  const uint32_t mails = uint32_t(w.outbound.size());
  uint32_t traced = 0;
  const uint64_t t_sent = trace::on_flush_begin(w, producer, traced);
  flush_route(w, producer);
  trace::on_flush_end(w, producer, t_sent, mails, traced);
}

// Inlined into flush (out of line it would add the call, and registers saved
// twice, to every flush).
[[gnu::always_inline]] inline void Scheduler::flush_route(Worker& w, ActorCell* producer) {
  // w.dispatch.batched: some send of this invocation was buffered (buffer_send). If
  // none was, every entry is a direct send that took its recipient's
  // run-token ({t, nullptr}): burst on or off, all that is left is to
  // schedule them (the loop below), at the cost of this one check.
  if (w.dispatch.batched) [[unlikely]] {
    w.dispatch.batched = false;
    if (tuning_.burst && producer != nullptr && !w.outbound.empty()) {
      if (w.outbound.size() > 1) {
        flush_burst(w, producer);
        return;
      }
      // One entry. A direct send (post) that took its recipient's run-token
      // ({t, nullptr}) only needs t scheduled: the loop below.
      if (w.outbound[0].second != nullptr) {
        BurstProducer* bp = producer->producer;
        if (bp != nullptr && (bp->active != nullptr || bp->prev != nullptr)) {
          flush_burst(w, producer);
          return;
        }
      }
    }
    // One mail from a producer without live bursts: no open group anywhere,
    // so the direct path below is the burst path's own one-mail case.
  }
  // COACT_BURST=off: every mail deposits and wakes its recipient on its own.
  // deposit() never appends to outbound (we are outside the handler now).
  for (auto& [t, e] : w.outbound) {
    if (e == nullptr) {  // a direct send took t's run-token (post): schedule t
      schedule_hop(w, t);
      continue;
    }
    t->sched->deposit(t, e, &w);
    t->release();
  }
  w.outbound.clear();
}

// The burst lifecycle steps 3 and 4 (detail/burst.hpp).
void Scheduler::flush_burst(Worker& w, ActorCell* p) {
  ActorCell* direct = nullptr;
  flush_burst_groups(w, p, direct);
  // The invocation's first send went direct (post) and took its recipient's
  // run-token: scheduled after the drainer, so that (LIFO own deque) it runs
  // before the batched groups, in send order as if it had been batched too.
  // Scheduled first, it sat under a relay that the drainer kept running in
  // place (the starvation test's third actor: 856 hops instead of a few).
  // schedule_hop: the hand-off slot when nothing else is local (no drainer
  // was pushed: a one-mail flush), else schedule_local's push.
  if (direct != nullptr) schedule_hop(w, direct);
}

void Scheduler::flush_burst_groups(Worker& w, ActorCell* p, ActorCell*& direct) {
  auto& out = w.outbound;
  uint32_t directs = 0;  // direct sends among out ({t, nullptr})
  BurstProducer* bp = p->producer;
  if (bp == nullptr) bp = p->producer = new BurstProducer();
  bp->prune();
  Burst* b = bp->active;
  if (b != nullptr && b->life.retired()) {  // every group closed: roll a fresh burst
    b->release();
    b = bp->active = nullptr;
    bp->index.clear();
  }
  // The recipient's open group in the live bursts, if any: push onto it.
  auto push_open = [&](ActorCell* t, Envelope* e, uint32_t gi) {
    if (gi != UINT32_MAX && b->groups()[gi].push(e)) return true;
    if (bp->prev != nullptr) {
      const uint32_t pi = bp->prev_index.find(t);
      if (pi != UINT32_MAX && bp->prev->groups()[pi].push(e)) return true;
    }
    return false;
  };
  if (out.size() == 1) {
    // One mail: onto the recipient's open group if it has one, else the
    // direct path (no open group, so nothing to order behind).
    auto [t, e] = out[0];
    out.clear();
    if (e == nullptr) {  // a direct send (post) took t's run-token: schedule t
      direct = t;
      return;
    }
    if (!push_open(t, e, b != nullptr ? bp->index.find(t) : UINT32_MAX)) {
      // No open group: the direct path. A push that takes t's run-token
      // schedules t as a direct send does (flush_burst: the hand-off slot
      // when the own deque is empty, else the deque's top).
      if (t->sched == this && !t->is_dead()) {
        if (t->inbox.push(e)) {
          direct = t;  // the token's holder now: keeps t alive (its life reference) until scheduled
        }
      } else {
        t->sched->deposit(t, e, &w);
      }
    }
    t->release();
    return;
  }
  const size_t want = std::min<size_t>(std::max<size_t>(8, out.size() + out.size() / 2), Lifecycle::kMaxGroups);
  if (b != nullptr && bp->prev == nullptr && b->life.peek_len() + out.size() > b->cap) {
    // The active burst may fill before it retires: it becomes `prev` (its
    // open groups still take their recipients' mail) and a fresh one opens.
    bp->prev = b;
    bp->prev_index.swap(bp->index);
    bp->index.clear();
    b = bp->active = nullptr;
  }
  if (b == nullptr) b = bp->active = Burst::create(uint32_t(want));
  bp->index.reserve(out.size());  // one table for this flush's recipients, no regrow mid-flush
  const uint32_t base = b->life.peek_len();
  Group* groups = b->groups();
  uint32_t staged = 0;
  // Cost of the fresh groups (read before publish: afterwards a claimer
  // owns their lists). One untrusted cell sends the decision to the width gate.
  bool confident = true;
  auto cost = [&](const Envelope* e) -> uint64_t {
    if (auto ns = costs_.trusted(e->kind)) return *ns;
    confident = false;
    return 0;
  };
  std::vector<uint64_t>& work = w.scratch.group_work;  // per staged group, ns
  work.clear();
  for (auto& [t, e] : out) {
    if (e == nullptr) {  // a direct send (post) took t's run-token
      // The first send's recipient is scheduled after the drainer (below);
      // any other direct send's (the direct hint ended mid-invocation: sends
      // before it went direct) now, its mail already in its inbox.
      if (direct != nullptr) schedule_local(w, direct);
      direct = t;
      ++directs;
      continue;
    }
    if (t->sched != this) {  // another runtime's actor: its own door
      t->sched->deposit(t, e, &w);
      t->release();
      continue;
    }
    const uint32_t gi = bp->index.find(t);
    if (gi != UINT32_MAX && gi >= base) {  // opened by this flush, not yet published
      groups[gi].push_unpublished(e);
      work[gi - base] += cost(e);
      t->release();
      continue;
    }
    if (push_open(t, e, gi)) {
      t->release();
      continue;
    }
    // No open group (or its claimer closed it: a fresh group lands behind
    // everything that one dispatched).
    if (base + staged >= b->cap) {  // array full: the direct path (no open group)
      deposit(t, e, &w);
      t->release();
      continue;
    }
    Group* g = ::new (&groups[base + staged]) Group();
    g->target = t;  // the outbound reference moves to the group
    g->push_unpublished(e);
    work.push_back(cost(e));
    bp->index.put(t, base + staged);
    ++staged;
  }
  out.clear();
  if (staged == 0) return;
  uint64_t total_ns = 0, max_group_ns = 0;
  for (uint64_t x : work) {
    total_ns += x;
    max_group_ns = std::max(max_group_ns, x);
  }
  if (b->life.publish(staged) != Lifecycle::Published::ok) {
    // Retired meanwhile (every earlier group closed, so none of these
    // recipients has an open group): the staged groups were never claimable;
    // deposit their mail in order and roll a fresh burst next time.
    for (uint32_t i = 0; i < staged; ++i) {
      Group& g = groups[base + i];
      for (Envelope* e = g.head; e != nullptr;) {
        Envelope* next = e->next.load(std::memory_order_relaxed);
        deposit(g.target, e, &w);
        e = next;
      }
      g.target->release();
      g.~Group();
    }
    b->release();
    bp->active = nullptr;
    bp->index.clear();
    return;
  }
  bump(w.stats.bursts);
  // Keep warm: one drainer on this worker's own deque.
  b->add_ref();
  spill_next(w);                // the hand-off slot counts as the deque's top
  w.dispatch.burst_mark = w.own.size();  // run_burst's depth-first yield (requeue_under)
  schedule_job(w, job_of(b));
  // Recruit: K from the cost estimates of the fresh groups, or the width gate.
  uint32_t extra = 0;
  if (confident) {
    const uint64_t wake_ns = uint64_t(handoff_->wake_break_even().count());
    extra = recruit_k(total_ns, max_group_ns, staged, worker_count(), wake_ns) - 1;
  } else if (staged >= tuning_.burst_recruit_min) {
    extra = std::min(staged, worker_count()) - 1;
  }
  // The direct hint for p's next invocations (start_direct): this burst was
  // narrow and cheap (trusted costs, nobody worth recruiting).
  bp->direct_hint = confident && extra == 0 && staged + directs < tuning_.burst_recruit_min;
  // Judged too cheap to share (trusted costs, K = 1): the keep-local valve
  // must not share it wholesale either. The drainer sits under the first
  // send's recipient (and soon the reply it makes runnable), so the next
  // push's backlog check would spill the drainer, every group of this burst
  // with it, to a sibling woken for it, cold, while this worker idles. The
  // burst restarts the cascade clock: the valve spills only a cascade that
  // runs on past its own period after this (without it, a wide zero-work
  // fan-out's rounds woke a parked sibling and ran cold there).
  if (confident && extra == 0) w.dispatch.cascade_start_ns = w.dispatch.clock_ns;
  extra = std::min(extra, tuning_.burst_recruit_max);
  if (w.tracing()) [[unlikely]]
    trace::on_recruit(w, p, staged, extra, !confident);
  if (extra != 0) {
    for (uint32_t i = 0; i < extra; ++i) {
      b->add_ref();
      injector_.push(job_of(b));
    }
    injector_pushes_.fetch_add(extra, std::memory_order_relaxed);
    w.stats.recruited.fetch_add(extra, std::memory_order_relaxed);
    // Recruitment wakes siblings directly: one spinner cannot drain K drainers.
    spin_park_.wake_workers(extra);
  }
}

// The burst lifecycle step 5: race the cursor, one whole group per claim.
void Scheduler::run_burst(Worker& w, Burst* b) {
  // The claimed mail's region releases are held back and given back
  // together (mailbox.hpp RegionReleaseBatch): at every return below.
  RegionReleaseBatch batch;
  t_region_batch = &batch;
  struct Uninstall {
    RegionReleaseBatch& b;
    ~Uninstall() {
      b.flush();
      t_region_batch = nullptr;
    }
  } uninstall{batch};
  // Groups are claimed in runs (Lifecycle::complete_and_claim_n): one CAS
  // of the word per run instead of one per group. A run starts at one
  // group and doubles after each run in which no recipient published a
  // burst of its own, up to kMaxRun, and at most a 2 x workers share of
  // what is unclaimed (guided self-scheduling: a recruited sibling still
  // finds groups, and runs shrink to one toward the end). Why: a fan-out's
  // groups hold one mail each, so one CAS per group is one per mail.
  constexpr uint32_t kMaxRun = 8;
  const uint32_t share = 2 * worker_count();
  uint32_t want = 1;
  bool retired = false;
  Lifecycle::Claimed run = b->life.complete_and_claim_n(0, want, share, retired);
  while (run.n != 0) {
    bool yield = false;
    for (uint32_t i = 0; i < run.n; ++i) {
      // The run's later groups wait for this worker: an actor run in place
      // (deliver_claimed) that reaches its budget is published, not given
      // another batch here (nothing_waits), so an actor that keeps itself
      // busy cannot hold them back longer than one budget.
      w.dispatch.claimed_left = run.n - i - 1;
      Group& g = b->groups()[run.first + i];
      ActorCell* t = g.target;  // the group's reference keeps t alive through its drain
      const uint64_t bursts_before = w.stats.bursts.load(std::memory_order_relaxed);
      // Drain in send order until the group is found empty, which closes it
      // (the FIFO barrier for the producer's later pushes).
      while (Envelope* e = g.take_or_close()) {
        while (e != nullptr) {
          Envelope* next = e->next.load(std::memory_order_relaxed);
          deliver_claimed(w, t, e);
          e = next;
        }
      }
      t->release();
      if (w.stats.bursts.load(std::memory_order_relaxed) != bursts_before) [[unlikely]]
        yield = true;
    }
    w.dispatch.claimed_left = 0;
    // Depth first: a recipient run here that published a burst of its own
    // (a spawn tree's node) left that burst's drainer (and its direct
    // first send's recipient) on top of the own deque. Claiming the next
    // group now would run every sibling, each expanding its own subtree,
    // before any grandchild (breadth first: skynet with burst on peaked at
    // 45,905 live small blocks, 18,864 with burst off, and paid for them in
    // glibc malloc/free). So this drainer yields: it goes back under the
    // jobs that run pushed, and the new subtree runs first. (A run longer
    // than one group finishes its groups first, those siblings breadth
    // first; the publish resets the run length to one, so a spawn tree's
    // inner levels, whose every recipient publishes, claim one at a time.)
    if (yield) [[unlikely]] {
      want = 1;
      (void)b->life.complete_and_claim_n(run.n, 0, share, retired);  // want 0: complete only
      if (requeue_under(w, b)) return;
      run = b->life.complete_and_claim_n(0, want, share, retired);
      continue;
    }
    const uint32_t done = run.n;
    want = std::min(want * 2, kMaxRun);
    run = b->life.complete_and_claim_n(done, want, share, retired);
  }
  b->release();  // this drainer's reference
}

// run_burst's yield: if b still has unclaimed groups and 1..kMaxUnder jobs
// sit above the own deque's length before the last burst's drainer was
// pushed (Worker::dispatch.burst_mark: that drainer, its direct first send's
// recipient, anything pushed after), puts b's drainer (the caller's
// reference) under them, their order kept, and returns true. A spill
// (schedule_backlog) that moved them to the injector leaves nothing above
// the mark: then the caller claims on.
bool Scheduler::requeue_under(Worker& w, Burst* b) {
  constexpr int64_t kMaxUnder = 4;
  spill_next(w);  // the hand-off slot counts as the deque's top
  const int64_t k = w.own.size() - w.dispatch.burst_mark;
  if (k <= 0 || k > kMaxUnder) return false;
  const Lifecycle::Snapshot s = b->life.snapshot();
  if (s.cursor >= s.len) return false;  // nothing left to claim: finish here
  Job top[kMaxUnder];
  int64_t n = 0;
  while (n < k) {
    Job j = pop_own(w);
    if (j == nullptr) break;  // taken by a thief (peer steal)
    top[n++] = j;
  }
  schedule_job(w, job_of(b));
  while (n > 0) w.own.push(top[--n]);
  return true;
}

// The burst lifecycle step 6: seize the recipient and run it here, or deposit.
void Scheduler::deliver_claimed(Worker& w, ActorCell* t, Envelope* e) {
  if (t->inbox.seize()) {
    bump(w.stats.seized);
    // We hold t's run-token, so its consumer state is ours to read. Older
    // mail in the inbox (an earlier deposit, possibly from this very
    // producer) or a suspended coroutine goes first: then this mail queues
    // behind it and the inbox is drained in order.
    if (t->waiting == nullptr && (t->stash == nullptr || t->stash->q.empty()) && t->inbox.empty_for_consumer()) {
      drain_cell(w, t, e);
    } else {
      t->inbox.push(e);
      drain_cell(w, t, nullptr);
    }
    return;
  }
  bump(w.stats.seize_lost);
  causal::on_pay_point();  // the deposit may make t runnable
  deposit(t, e, &w);
}

}  // namespace coact::detail
