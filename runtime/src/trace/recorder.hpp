// runtime/src/trace/recorder.hpp: the per-mail trace (docs/traces.md): loss-tolerant per-thread event rings and the session
// that owns them and streams them out as Chrome trace-event JSON (export.cpp).
//
// What is recorded (COACT_TRACE=on or a sampling fraction; all times
// steady_clock ns, the clock of sync::now_ns):
//   send     one per traced mail, by the sending thread at the flush point:
//            t_construct_start (the handler's first buffered send), t_sent
//            (the flush at the handler boundary; a root send: both are the
//            send itself), the recipient, the message kind.
//   flush    one per flush that carried a traced mail: the producer handler
//            (actor type, kind), t_construct_start, t_sent, flush end.
//   handler  one per traced mail dispatched: t_enqueue (the start of the
//            worker job that dispatched it: the burst drainer's run, or the
//            actor's drain cycle), t_received (handler entered), t_finished
//            (handler returned). t_enqueue is the job's first handler entry
//            (the few ns of the job's set-up before it are not seen). The
//            exporter joins send and handler by the mail key (envelope
//            address and Envelope::trace_tag; hooks.hpp mail_key) and gives
//            each mail an id; t_enqueue is clamped to >= t_sent (a mail
//            deposited into a drain that was already running joined it at
//            t_sent).
//   park     one per park: when the worker parked, when it woke.
//   timer    one per timer fired: when, the deadline, the reason.
//   recruit  one per burst flush that published groups (COACT_BURST=on):
//            groups, siblings recruited, and whether the cost estimates
//            decided or the width gate (an untrusted cost cell).
//   experiment  a change of the causal controller's selection (region,
//            speedup), seen by the next traced event of any worker.
//
// Rings: one per worker plus one shared by every other thread (roots). A
// ring is a fixed array filled once: an append claims an index (fetch_add),
// writes the event and publishes it (release store of the slot's flag). When
// the array is full the event is dropped and counted; a writer never blocks
// and never waits for a reader. A reader (the exporter, any thread, also
// while writers run) takes the published slots (acquire) and skips slots
// still being written. Nothing is overwritten, so the file holds the first
// COACT_TRACE_BUFFER events of each thread and counts the rest.
//
// Window (COACT_TRACE_START_MS, COACT_TRACE_DURATION_MS): recording is on
// only from boot + start for the duration (0: until shutdown). The session's
// window thread opens and closes the gates (Session::start: the scheduler's
// per-worker ring pointers and recording() for roots; relaxed atomics, so a
// worker that read the gate just before it closed records that handler's
// events too) and writes the file when the window closes; the shutdown
// write is then skipped. Without a window the gates open at boot and there
// is no window thread.
//
// Threads: Ring::append from any thread; Session::write from any thread
// (serialized by the session's mutex). Lifetime: the Scheduler owns its
// Session; it is written at shutdown after the workers joined, and on
// request_stop and SIGINT/SIGTERM by the trace writer thread (writer.cpp).
//
// Writing (export.cpp): the file is streamed event by event from the rings
// in place (no copy of the events, no document in memory) into PATH.partial,
// renamed to PATH when complete. Memory while writing: a fixed buffer plus an
// index of the sends (joins sends to handlers, and the queue depths), at most
// kExportBytesPerEvent per recorded event. The partial file always ends after
// a whole event line, so a killed write leaves a file that loads once "]}" is
// appended (docs/traces.md). A signal's write has a deadline
// (COACT_TRACE_EXPORT_DEADLINE_MS): events not written by then are dropped and
// counted.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace coact::detail::trace {

enum class EventType : uint8_t { send = 1, flush, handler, park, timer, recruit, experiment };

/// One recorded event (64 bytes). Field use per type: see the file comment
/// and Session::write (export.cpp).
struct Event {
  EventType type;
  uint8_t flags;          // handler: 1 = coroutine resume; park: 1 = timed out; recruit: 1 = width gate
  uint16_t ring;          // the ring (thread track) it was recorded on
  uint32_t kind;          // message kind (send, handler, flush: the producer's), timer reason
  uint32_t kind2;         // send: the producer handler's kind; recruit: groups staged
  uint32_t count;         // flush: mails; recruit: siblings recruited; experiment: speedup %
  uint64_t t0, t1, t2;    // per type (ns)
  uint64_t id;            // mail key (send, handler; hooks.hpp mail_key); experiment: region id
  uint64_t a;             // recipient pid (send), actor pid (handler, flush)
  const void* type_info;  // actor type (handler: recipient, send and flush: producer)
};
static_assert(sizeof(Event) == 64);

/// A loss-tolerant event array (file comment). Any thread appends.
class Ring {
 public:
  /// The slots are mapped with mmap, not malloc: a free of a large malloc'd
  /// block raises glibc's mmap threshold, which moved later large
  /// allocations of the program onto the heap. No memory (mmap failed):
  /// capacity 0, every event dropped and counted.
  Ring(uint16_t index, uint32_t capacity);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  /// Records `e` (its `ring` is set here), or drops and counts it when the
  /// ring is full. Never blocks.
  void append(const Event& e) noexcept {
    const uint64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= cap_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    slots_[i].ev = e;
    slots_[i].ev.ring = index_;
    slots_[i].ready.store(1, std::memory_order_release);
  }
  /// An id unique in this session (ring index in the high bits); a traced
  /// mail's tag is derived from it (hooks.cpp mark).
  uint64_t next_id() noexcept {
    return (uint64_t(index_ + 1) << 40) | (ids_.fetch_add(1, std::memory_order_relaxed) + 1);
  }
  /// The published events so far (a reader; any thread).
  std::vector<Event> snapshot() const;
  /// Slots claimed so far (0..capacity); slot i < published() holds an event
  /// once at(i) is non-null. A reader; any thread.
  uint64_t published() const noexcept { return std::min<uint64_t>(next_.load(std::memory_order_acquire), cap_); }
  /// Slot i's event if it was published (acquire: pairs with append's
  /// release), else null (still being written). i < published().
  const Event* at(uint64_t i) const noexcept {
    return slots_[i].ready.load(std::memory_order_acquire) != 0 ? &slots_[i].ev : nullptr;
  }
  /// Bytes one slot takes (the event and its publish flag): the ring's size
  /// is capacity × this, mapped at construction.
  static constexpr size_t kSlotBytes = sizeof(Event) + 8;
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  uint16_t index() const noexcept { return index_; }
  uint32_t capacity() const noexcept { return cap_; }

 private:
  struct Slot {
    Event ev;
    std::atomic<uint8_t> ready{0};
  };
  uint16_t index_;
  uint32_t cap_;
  Slot* slots_ = nullptr;
  std::atomic<uint64_t> next_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> ids_{0};
};

/// What the exporter needs to know about the run.
struct SessionInfo {
  double rate = 1;
  bool burst = false;
  uint32_t workers = 0;
  uint64_t window_start_ns = 0;                 // recording starts this long after boot
  uint64_t window_duration_ns = 0;              // and stops after this long; 0: at shutdown
  uint64_t export_deadline_ns = 2'000'000'000;  // a signal's write may take this long; 0: no limit
};

/// What a write produced (export.cpp).
struct ExportResult {
  bool ok = false;        // the file was written and renamed into place
  uint64_t recorded = 0;  // events published in the rings
  uint64_t written = 0;   // events that made it into the file
  uint64_t cut = 0;       // events dropped because the deadline passed (recorded - written)
};

/// Export memory on top of the rings, per recorded event, at most: the send
/// index (24 bytes a send) and, while the depths are computed, 40 bytes a
/// handled mail; a mail is a send and a handler event, so 32 a recorded event.
inline constexpr size_t kExportBytesPerEvent = 32;

/// Streams the Chrome trace-event JSON of `rings` (their published events) to
/// `fd` (export.cpp); stops writing events when steady_clock (sync::now_ns)
/// passes `deadline_at_ns` (0: never) and counts the rest. Every write(2) ends
/// after a whole event line. Returns ok = false (errno set) if a write failed.
/// Any thread; the rings may still be appended to (later events are not seen).
ExportResult export_json(int fd, const std::vector<const Ring*>& rings, const SessionInfo& info, uint64_t boot_ns,
                         uint64_t dropped, uint64_t deadline_at_ns);

/// The trace of one runtime: rings (index 0..workers-1: the workers; index
/// `workers`: every other thread), the sampling decision and the writer.
class Session {
 public:
  Session(SessionInfo info, uint32_t capacity, std::string output);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Ring& ring(uint32_t i) noexcept { return *rings_[i]; }
  Ring& external() noexcept { return *rings_.back(); }
  /// Samples one mail with the caller's xorshift state: true = trace it.
  bool sample(uint64_t& state) const noexcept {
    if (all_) return true;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state < threshold_;
  }
  bool all() const noexcept { return all_; }
  /// Records an experiment event on `r` if the causal selection changed since
  /// the last one seen (any thread).
  void poll_experiment(Ring& r, uint64_t now_ns) noexcept;
  const std::string& output() const noexcept { return output_; }
  /// Opens the recording gates: at once without a window (gate(true) on this
  /// thread), else on the window thread at boot + start, closing them
  /// (gate(false)) after the duration and then writing the output. `gate`
  /// must stay callable until stop_window() returned. Once, after construction.
  void start(std::function<void(bool)> gate);
  /// Ends the window thread (joins; the gates stay as they are). Before the
  /// gate's targets go away; idempotent.
  void stop_window();
  /// Recording is on (the gate state, for threads without a gate of their
  /// own: roots). Any thread.
  bool recording() const noexcept { return recording_.load(std::memory_order_relaxed); }
  /// The window closed and its file was written (the shutdown write is
  /// then not needed).
  bool window_written() const noexcept { return window_written_.load(std::memory_order_acquire); }
  /// Streams the trace to `path` + ".partial", then renames it to `path`;
  /// false, with one line on stderr naming the file and the reason, if it
  /// cannot. `deadline_at_ns` (steady ns, 0: none): events not written by then
  /// are dropped, counted in the file and on stderr. Any thread.
  bool write(const std::string& path, uint64_t deadline_at_ns = 0);
  /// write(output()) unless the output is ""; `signalled`: on SIGINT/SIGTERM,
  /// bounded by info.export_deadline_ns from `since_ns` (steady ns).
  bool write_output(bool signalled = false, uint64_t since_ns = 0);
  const SessionInfo& info() const noexcept { return info_; }
  uint64_t dropped() const noexcept;
  uint64_t boot_ns() const noexcept { return boot_ns_; }

 private:
  SessionInfo info_;
  std::string output_;
  uint64_t boot_ns_;
  bool all_;
  uint64_t threshold_;
  std::vector<std::unique_ptr<Ring>> rings_;
  std::atomic<uint64_t> selection_{0};  // last seen (epoch << 32 | region), +1 so 0 = none yet
  std::mutex write_mu_;
  std::atomic<bool> recording_{false};
  std::atomic<bool> window_written_{false};
  std::function<void(bool)> gate_;
  std::thread window_thread_;
  std::mutex window_mu_;
  std::condition_variable window_cv_;
  bool window_stop_ = false;  // under window_mu_
};

/// Registers `s` with the process's trace writer thread (writer.cpp): it is
/// written on SIGINT/SIGTERM (handlers installed at the first registration,
/// then the signal's previous disposition runs) and on request_writes().
void register_session(Session* s);
void unregister_session(Session* s) noexcept;
/// Asks the writer thread to write every registered session (request_stop).
/// Never blocks; async-signal-safe.
void request_writes() noexcept;

}  // namespace coact::detail::trace
