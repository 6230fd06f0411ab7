// runtime/src/blocking_pool.cpp: the blocking pool behind coact::blocking
// (coact/runtime/blocking.hpp; docs/blocking.md): one pool per Scheduler,
// created by the first call, its threads started on demand up to
// COACT_BLOCKING_THREADS, at most COACT_BLOCKING_QUEUE calls waiting for a
// thread; blocking_pool_shutdown (called by Scheduler::shutdown once the
// workers have joined) discards the queued calls, waits for the running ones
// and joins the threads.
//
// Causal sweeps (causal/include/coact/causal/hooks.hpp, delay_ledger.hpp):
// a pool thread is a thread outside the worker pool that makes an actor
// runnable, so it follows the rules of the other such threads:
//   - start: the calling handler stamps the call with what it owed when it
//     made it (G minus its ledger position: the position a virtual timer
//     armed there would start from, timer_stamp_cycles). A thread that sat
//     idle until the call came is credited for that wait (on_resume, as a
//     parked worker woken by another thread), then waits out the stamped
//     debt before running f, so the call starts no earlier in virtual time
//     than the handler made it. A thread still busy with an earlier call
//     keeps its own position (it paid before its last delivery).
//   - end: before delivering the result it pays its debt (on_pay_point), which
//     includes the delay injected while f ran: f's time is not forgiven, so a
//     call of length T looks like T in virtual time, as a virtual
//     coact::sleep(T) would (crediting it would make the call T - D long in
//     virtual time and invent a speedup for whoever waits on it).
// Threads: blocking_reserve and blocking_submit run on workers (inside a
// handler coroutine's await_suspend); the pool threads run invoke/deliver;
// blocking_pool_shutdown runs on the thread destroying the Runtime.
#include <sys/prctl.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/runtime/blocking.hpp>

#include "detail/blocking_pool.hpp"
#include "detail/per_scheduler.hpp"
#include "detail/scheduler.hpp"

namespace coact::detail {

namespace {

struct Pool {
  Pool(uint32_t threads, uint32_t queue) : max_threads(std::max<uint32_t>(threads, 1)), queue_bound(queue) {}

  const uint32_t max_threads;
  const uint32_t queue_bound;  // calls waiting for a thread, at most
  std::mutex mu;
  std::condition_variable work_cv;  // a call was queued, or the pool closed
  std::condition_variable done_cv;  // running reached 0 after close
  std::deque<BlockingJob*> queue;   // guarded by mu (as every field below)
  uint32_t reserved = 0;            // slots reserved by blocking_reserve, not yet submitted
  uint32_t started = 0;             // threads started
  uint32_t idle = 0;                // threads waiting on work_cv
  uint32_t running = 0;             // calls taken off the queue and not yet finished
  bool closed = false;
  std::vector<std::thread> threads;

  void thread_main();
};

// Every live Scheduler's pool. Touched by the first call of a Runtime and
// by its shutdown; the pool itself is what calls lock afterwards. Never
// destroyed: a Runtime still alive at exit (leaked, or static) keeps its
// pool's threads parked on the pool's mutex until the process ends.
auto& g_pools = *new PerScheduler<Pool>;

// What the causal sweep asks of a pool thread before it runs a call (file
// comment, "start"). `waited`: the thread sat idle until this call came.
void start_call(bool waited, uint64_t owed_cycles) noexcept {
#if COACT_CAUSAL_ENABLED
  if (!waited || causal::pay_point_is_noop()) return;
  causal::on_resume();  // credited for the idle wait
  if (owed_cycles != 0) causal::wait_until_cycles(calibrate::now_cycles() + owed_cycles);
#else
  (void)waited;
  (void)owed_cycles;
#endif
}

void Pool::thread_main() {
  ::prctl(PR_SET_NAME, "coact-blocking", 0, 0, 0);
  causal::register_thread();  // owes the delay injected from now on
  std::unique_lock lk(mu);
  for (;;) {
    bool waited = false;
    while (queue.empty() && !closed) {
      waited = true;
      ++idle;
      work_cv.wait(lk);
      --idle;
    }
    if (closed) break;  // blocking_pool_shutdown discarded the queue
    BlockingJob* job = queue.front();
    queue.pop_front();
    ++running;
    lk.unlock();
    start_call(waited, job->owed_cycles);
    job->invoke();
    causal::on_pay_point();  // pay before the result makes the actor runnable
    lk.lock();
    // Under the lock, and the call counted finished first (so the actor's
    // next call, made as soon as this result resumes it, finds the slot
    // free): blocking_pool_shutdown, once it has closed the pool, sees no
    // delivery in progress and none after (the result is dropped: the actor
    // is being stopped with the runtime).
    --running;
    if (!closed) job->deliver();
    if (closed && running == 0) done_cv.notify_all();
    lk.unlock();
    delete job;  // f and its captures die on this thread (shutdown joins it before finalizing actors)
    lk.lock();
  }
}

}  // namespace

void* blocking_reserve() {
  Worker* w = Scheduler::current_worker();
  COACT_INVARIANT(w != nullptr && w->dispatch.current != nullptr && w->dispatch.in_handler,
                  "coact::blocking awaited outside a coact handler coroutine");
  Scheduler* s = w->dispatch.current->sched;
  // Alive until s's shutdown, which waits for every reserved call.
  Pool* pool =
      g_pools
          .get_or_make(s,
                       [s] { return std::make_shared<Pool>(s->tuning().blocking_threads, s->tuning().blocking_queue); })
          .get();
  std::lock_guard lk(pool->mu);
  // Every call not finished (running, queued or reserved) against the
  // threads plus the queue's bound: the calls beyond the threads are the
  // ones waiting, whichever thread takes which.
  const uint64_t in_flight = uint64_t(pool->running) + pool->queue.size() + pool->reserved;
  if (pool->closed || in_flight >= uint64_t(pool->max_threads) + pool->queue_bound) return nullptr;
  ++pool->reserved;
  return pool;
}

void blocking_submit(void* p, BlockingJob* job) {
  auto* pool = static_cast<Pool*>(p);
  // What the caller owes now: its ledger position is where a virtual timer
  // armed here would start from (hooks.hpp timer_stamp_cycles).
  const uint64_t stamp = causal::timer_stamp_cycles();
  const uint64_t g = causal::global_delay_cycles();
  job->owed_cycles = g > stamp ? g - stamp : 0;
  std::lock_guard lk(pool->mu);
  --pool->reserved;
  pool->queue.push_back(job);
  if (pool->queue.size() > pool->idle && pool->started < pool->max_threads) {
    ++pool->started;
    pool->threads.emplace_back([pool] { pool->thread_main(); });
  } else {
    pool->work_cv.notify_one();
  }
}

void blocking_pool_shutdown(Scheduler* s) noexcept {
  const std::shared_ptr<Pool> pool = g_pools.take(s);
  if (pool == nullptr) return;
  std::deque<BlockingJob*> discarded;
  {
    std::unique_lock lk(pool->mu);
    pool->closed = true;
    discarded.swap(pool->queue);
    pool->work_cv.notify_all();
    pool->done_cv.wait(lk, [&] { return pool->running == 0; });
  }
  for (BlockingJob* job : discarded) delete job;  // never run; the reply's cell reference goes
  for (std::thread& t : pool->threads) t.join();
}

}  // namespace coact::detail
