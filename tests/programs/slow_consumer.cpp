// slow_consumer.cpp: a producer faster than its consumer (docs/mailboxes.md).
//
// The main thread (outside the pool) sends fixed-size messages to one
// Consumer actor as fast as it can, for --seconds or until --messages were
// accepted; the consumer spends --consumer-us of CPU on each. Like most
// programs, the producer also allocates a little that stays (a 64-byte
// record every 4096 sends, kept to the end): those blocks sit between the
// envelopes in the heap, so freeing the envelopes alone returns little
// memory to the system (glibc gives back only the heap's free top).
// --no-keep leaves them out. --stall-after N: after N accepted sends the
// producer waits until the consumer has drained them, then goes on (an
// earlier, smaller backlog drained shortly before the big one: the memory
// must still come back after the big one). The program
// samples its RSS and the consumer's mailbox while producing, waits until
// the backlog has drained, and prints one JSON object: RSS at start, peak
// and after the drain, mail sent / accepted / refused, the mailbox's
// high-water mark. The depth is counted with COACT_MAILBOX_STATS=on
// (--coact-mailbox-stats=on) or a bound; with COACT_MAILBOX_BOUND (or
// --coact-mailbox-bound) set, sends beyond the bound are refused and counted.
//
// --check asserts what docs/mailboxes.md promises and exits 1 naming the
// first figure that fails: the depth is visible when counted (high-water
// mark near the backlog); with a bound, peak RSS stays within bound x message size plus
// --rss-slack-mb; after the drain, RSS is within 10% or 20 MB of the start.
// Usage: coact-slow-consumer [--seconds S] [--messages N] [--consumer-us U]
//        [--rss-slack-mb M] [--stall-after N] [--check] [--no-keep] [--coact-* options];
//        bad input: exit 2.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <coact/runtime/runtime.hpp>

namespace {

constexpr size_t kPayloadBytes = 216;  // + the 40-byte envelope header: 256 bytes a message

struct Msg {
  char payload[kPayloadBytes];
};

struct Consumer : coact::Actor<Consumer> {
  std::chrono::nanoseconds cost;
  std::atomic<uint64_t>* handled;
  Consumer(std::chrono::nanoseconds c, std::atomic<uint64_t>* h) : cost(c), handled(h) {}
  void on(const Msg& m) {
    const auto until = std::chrono::steady_clock::now() + cost;
    volatile char sink = m.payload[0];
    while (std::chrono::steady_clock::now() < until) sink = sink + 1;
    handled->fetch_add(1, std::memory_order_relaxed);
  }
};

long rss_kb() {
  std::ifstream in("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  in >> pages_total >> pages_resident;
  return pages_resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

[[noreturn]] void usage_error(const char* prog, const std::string& what) {
  std::fprintf(stderr, "%s: error: %s\n", prog, what.c_str());
  std::exit(2);
}

double number_arg(const char* prog, const char* flag, const char* value, double lo, double hi) {
  if (value == nullptr) usage_error(prog, std::string(flag) + " needs a value");
  char* end = nullptr;
  const double v = std::strtod(value, &end);
  if (end == value || *end != '\0' || !(v >= lo && v <= hi)) {
    usage_error(prog, std::string(flag) + "=" + value + ": expected a number in [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + "]");
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  coact::Runtime rt(argc, argv);  // takes the --coact-* options out of argv
  const char* prog = argv[0];
  double seconds = 3, consumer_us = 5, slack_mb = 24;
  double messages = 400000, stall_after = 0;
  bool check = false, keep = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--seconds") {
      seconds = number_arg(prog, "--seconds", v, 0.01, 600), ++i;
    } else if (a == "--messages") {
      messages = number_arg(prog, "--messages", v, 1, 1e9), ++i;
    } else if (a == "--consumer-us") {
      consumer_us = number_arg(prog, "--consumer-us", v, 0, 1e6), ++i;
    } else if (a == "--stall-after") {
      stall_after = number_arg(prog, "--stall-after", v, 0, 1e9), ++i;
    } else if (a == "--rss-slack-mb") {
      slack_mb = number_arg(prog, "--rss-slack-mb", v, 0, 1e6), ++i;
    } else if (a == "--check") {
      check = true;
    } else if (a == "--no-keep") {
      keep = false;
    } else {
      usage_error(prog, "unknown argument " + a + " (accepted: --seconds, --messages, --consumer-us, --rss-slack-mb, --stall-after, --check, --no-keep)");
    }
  }

  std::atomic<uint64_t> handled{0};
  auto consumer = rt.spawn<Consumer>(
      std::chrono::nanoseconds(static_cast<int64_t>(consumer_us * 1000)), &handled);
  const uint32_t bound = consumer.mailbox().bound;
  const long rss_start = rss_kb();
  long rss_peak = rss_start;

  // Produce: as fast as send() goes, sampling RSS every 4096 sends.
  const auto t0 = std::chrono::steady_clock::now();
  const auto stop_at = t0 + std::chrono::duration<double>(seconds);
  uint64_t sent = 0, accepted = 0;
  Msg m{};
  std::vector<std::unique_ptr<char[]>> kept;  // the records that stay (file comment)
  while (accepted < static_cast<uint64_t>(messages)) {
    m.payload[0] = static_cast<char>(sent);
    accepted += consumer.send(m) ? 1 : 0;
    ++sent;
    if (stall_after > 0 && accepted == static_cast<uint64_t>(stall_after)) {
      while (handled.load(std::memory_order_relaxed) < accepted) std::this_thread::yield();
    }
    if ((sent & 4095) == 0) {
      if (keep) kept.push_back(std::make_unique<char[]>(64));
      rss_peak = std::max(rss_peak, rss_kb());
      if (std::chrono::steady_clock::now() >= stop_at) break;
      if (bound != 0) std::this_thread::yield();  // a bounded producer mostly spins on refusals: let the consumer in
    }
  }
  const double produce_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const coact::MailboxStats at_end_of_production = consumer.mailbox();

  // Drain: wait until every accepted message was handled.
  while (handled.load(std::memory_order_relaxed) < accepted) {
    rss_peak = std::max(rss_peak, rss_kb());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double drained_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the consumer's trim runs as the last mail leaves
  const long rss_end = rss_kb();
  const coact::MailboxStats mb = consumer.mailbox();
  const coact::RuntimeStats st = rt.stats();
  consumer.stop();
  rt.run();

  const double message_bytes = kPayloadBytes + 40;
  std::printf(
      "{\"bound\":%u,\"seconds\":%.3f,\"drained_s\":%.3f,\"consumer_us\":%.2f,\"message_bytes\":%.0f,"
      "\"sent\":%llu,\"accepted\":%llu,\"rejected\":%llu,\"stats_mailbox_rejected\":%llu,"
      "\"counted\":%s,\"depth_at_end_of_production\":%llu,\"high_water\":%llu,\"handled\":%llu,"
      "\"rss_start_kb\":%ld,\"rss_peak_kb\":%ld,\"rss_end_kb\":%ld}\n",
      bound, produce_s, drained_s, consumer_us, message_bytes, static_cast<unsigned long long>(sent),
      static_cast<unsigned long long>(accepted), static_cast<unsigned long long>(mb.rejected),
      static_cast<unsigned long long>(st.mailbox_rejected), mb.counted ? "true" : "false",
      static_cast<unsigned long long>(at_end_of_production.depth), static_cast<unsigned long long>(mb.high_water),
      static_cast<unsigned long long>(handled.load()), rss_start, rss_peak, rss_end);
  if (!check) return 0;

  int failed = 0;
  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "%s: check failed: %s\n", prog, what.c_str());
    failed = 1;
  };
  if (handled.load() != accepted) fail("handled " + std::to_string(handled.load()) + " != accepted " + std::to_string(accepted));
  if (mb.rejected != sent - accepted || st.mailbox_rejected != sent - accepted) {
    fail("refusals not all counted: sent - accepted = " + std::to_string(sent - accepted) + ", mailbox rejected " +
         std::to_string(mb.rejected) + ", RuntimeStats::mailbox_rejected " + std::to_string(st.mailbox_rejected));
  }
  // The depth is visible: a backlog that never drained during production
  // shows as a high-water mark of at least the depth the producer left.
  // The high-water mark is sampled every kHighWaterStride pops (mailbox.hpp).
  if (mb.counted && (mb.high_water + coact::detail::Mailbox::kHighWaterStride < at_end_of_production.depth ||
                     mb.high_water == 0)) {
    fail("high_water " + std::to_string(mb.high_water) + " more than " +
         std::to_string(coact::detail::Mailbox::kHighWaterStride) + " below the depth at the end of production " +
         std::to_string(at_end_of_production.depth));
  }
  if (bound != 0) {
    if (mb.high_water > uint64_t(bound) + 1) fail("high_water " + std::to_string(mb.high_water) + " above the bound");
    const double limit_kb = bound * message_bytes / 1024 + slack_mb * 1024;
    if (rss_peak - rss_start > limit_kb) {
      fail("peak RSS grew " + std::to_string(rss_peak - rss_start) + " kB, above bound x message size + " +
           std::to_string(slack_mb) + " MB = " + std::to_string(static_cast<long>(limit_kb)) + " kB");
    }
  }
  const long grown = rss_end - rss_start;
  if (grown > 20 * 1024 && grown > rss_start / 10) {
    fail("RSS after the drain " + std::to_string(rss_end) + " kB, " + std::to_string(grown) +
         " kB above the start (allowed: 10% or 20 MB)");
  }
  return failed;
}
