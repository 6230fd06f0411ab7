// tests/runtime/trace_test.cpp: the per-mail trace (runtime/src/trace/):
// span arithmetic on a workload with known spans, with burst dispatch off and
// on (a handler that sleeps before its first send and between its sends; a
// recipient behind a known backlog), sampling, the trace file on SIGTERM, and
// the loss-tolerant ring's drop-and-count under concurrent writers and a
// reader (stress; also under TSan).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <malloc.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <coact/runtime/runtime.hpp>

#include "support/child.hpp"
#include "support/temp_dir.hpp"
#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"
#include "trace/recorder.hpp"

namespace trace_test {

using namespace std::chrono_literals;
using nlohmann::json;

struct Work {
  int ms;
};
struct Go {};

// Stops after `expect` mails; each mail sleeps its ms.
struct Sink : coact::Actor<Sink> {
  int expect;
  int got = 0;
  explicit Sink(int n) : expect(n) {}
  void on(const Work& w) {
    std::this_thread::sleep_for(std::chrono::milliseconds(w.ms));
    if (++got == expect) stop();
  }
};

// Sleeps `before` ms, sends one Work, sleeps `between` ms, sends another.
struct Producer : coact::Actor<Producer> {
  coact::ActorRef<Sink> to;
  int before, between;
  Producer(coact::ActorRef<Sink> t, int b, int m) : to(t), before(b), between(m) {}
  void on(Go) {
    std::this_thread::sleep_for(std::chrono::milliseconds(before));
    to.send(Work{0});
    std::this_thread::sleep_for(std::chrono::milliseconds(between));
    to.send(Work{0});
    stop();
  }
};

// Sends `n` Work{ms} to one recipient in one handler (one flush): the i-th
// waits behind i mails of ms each.
struct Backlog : coact::Actor<Backlog> {
  coact::ActorRef<Sink> to;
  int n, ms;
  Backlog(coact::ActorRef<Sink> t, int count, int each) : to(t), n(count), ms(each) {}
  void on(Go) {
    for (int i = 0; i < n; ++i) to.send(Work{ms});
    stop();
  }
};

json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  REQUIRE(in.good());
  return json::parse(in);
}

// Handler slices carrying a traced mail whose region name contains `needle`.
std::vector<json> mails_to(const json& doc, const std::string& needle) {
  std::vector<json> out;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "X" && e.value("cat", "") == "handler" && e["args"].contains("mail") &&
        e["name"].get<std::string>().find(needle) != std::string::npos) {
      out.push_back(e);
    }
  }
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) {
    const double sa = a["args"]["t_sent"], sb = b["args"]["t_sent"];
    if (sa != sb) return sa < sb;
    return a["args"]["mail"].get<uint64_t>() < b["args"]["mail"].get<uint64_t>();
  });
  return out;
}

// A file a killed export left (PATH.partial), repaired as docs/traces.md
// says: "]}" appended; if the last line is incomplete (killed inside a
// write), cut it first.
json load_repaired(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in.good());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json doc = json::parse(text + "]}", nullptr, false);
  if (doc.is_discarded()) {
    const auto cut = text.rfind(",\n");
    REQUIRE(cut != std::string::npos);
    doc = json::parse(text.substr(0, cut) + "]}", nullptr, false);
  }
  REQUIRE_FALSE(doc.is_discarded());
  return doc;
}

// Fills every ring of `s` with mail as the runtime records it: per mail a
// send (with its producer) on one ring and its handler on the next, a flush
// every 4 mails. Returns the events appended.
uint64_t fill(coact::detail::trace::Session& s, uint32_t rings, uint32_t capacity) {
  using coact::detail::trace::Event;
  using coact::detail::trace::EventType;
  const uint32_t kind = coact::kind_id<Work>();
  uint64_t t = s.boot_ns() + 1000, appended = 0;
  for (uint64_t m = 0; appended + 3 <= uint64_t(rings) * capacity - rings * 16; ++m) {
    const uint32_t r = uint32_t(m % rings);
    Event send{};
    send.type = EventType::send;
    send.id = (m + 1) << 4;  // a mail key (never 0)
    send.t0 = t;
    send.t1 = t + 100;
    send.a = (uint64_t(m % 7) << 32) | 1;  // seven recipients
    send.kind = kind;
    send.kind2 = kind;
    send.type_info = &typeid(Sink);
    s.ring(r).append(send);
    Event h{};
    h.type = EventType::handler;
    h.id = send.id;
    h.t0 = t + 150;
    h.t1 = t + 200;
    h.t2 = t + 900;
    h.a = send.a;
    h.kind = kind;
    h.type_info = &typeid(Sink);
    s.ring((r + 1) % rings).append(h);
    appended += 2;
    if (m % 4 == 0) {
      Event f{};
      f.type = EventType::flush;
      f.t0 = t;
      f.t1 = t + 100;
      f.t2 = t + 120;
      f.count = 4;
      f.a = send.a;
      f.kind = kind;
      f.type_info = &typeid(Sink);
      s.ring(r).append(f);
      ++appended;
    }
    t += 1000;
  }
  return appended;
}

// "VmRSS:" / "VmHWM:" of this process, bytes.
uint64_t proc_status_bytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size())) * 1024;
  }
  return 0;
}

// A child that floods a traced runtime (2 workers, the default buffer) until
// its rings are full, says so on `ready`, then keeps sending until a signal
// ends it.
[[noreturn]] void flood_until_signalled(const std::filesystem::path& out, int ready, uint64_t deadline_ms) {
  for (int sig : {SIGABRT, SIGSEGV, SIGILL, SIGFPE, SIGBUS, SIGTERM, SIGINT}) ::signal(sig, SIG_DFL);
  coact::SchedulerTuning t;
  t.workers = 2;
  t.trace = 1;
  t.trace_output = out.string();
  t.trace_export_deadline_ms = deadline_ms;
  coact::Runtime rt(t);
  // Two sinks, so both workers record handlers; never done: the signal ends
  // the program. 131072 root sends fill the roots' ring, 262144 handlers the
  // workers'; twice that is sent so every ring fills.
  auto a = rt.spawn<Sink>(1 << 30);
  auto b = rt.spawn<Sink>(1 << 30);
  for (int i = 0; i < 400000; ++i) {
    a.send(Work{0});
    b.send(Work{0});
    if (i % 50000 == 0) std::this_thread::sleep_for(50ms);  // let the workers drain
  }
  std::this_thread::sleep_for(500ms);
  const char one = 1;
  [[maybe_unused]] ssize_t n = ::write(ready, &one, 1);
  for (;;) {
    a.send(Work{0});
    std::this_thread::sleep_for(1ms);
  }
}

struct Flood {
  pid_t pid = -1;
  int status = 0;
  double exit_s = 0;  // from the signal to the child's end
};

// Forks flood_until_signalled, waits until it is ready, sends `sig`, and
// (kill_after_ms >= 0) SIGKILL that long after; waits for the child.
Flood flood_and_signal(const std::filesystem::path& out, int sig, int kill_after_ms, uint64_t deadline_ms = 2000) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  Flood f;
  f.pid = ::fork();
  REQUIRE(f.pid >= 0);
  if (f.pid == 0) {
    ::close(fds[0]);
    flood_until_signalled(out, fds[1], deadline_ms);
  }
  ::close(fds[1]);
  char b = 0;
  const ssize_t got = ::read(fds[0], &b, 1);
  ::close(fds[0]);
  REQUIRE(got == 1);
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(f.pid, sig);
  if (kill_after_ms >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms));
    ::kill(f.pid, SIGKILL);
  }
  ::waitpid(f.pid, &f.status, 0);
  f.exit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return f;
}

}  // namespace trace_test

using namespace trace_test;

TEST_CASE("trace: the five timestamps give the known spans (burst off and on)") {
  const bool burst = GENERATE(false, true);
  INFO("burst=" << burst);
  coact::test::TempDir dir("trace");
  const auto out = dir.path / "trace.json";
  coact::SchedulerTuning t = coact::test::tuning_for(2);
  t.burst = burst;
  t.trace = 1;
  t.trace_output = out.string();
  constexpr int kBefore = 100, kBetween = 10;  // ms
  constexpr int kBacklog = 4, kEach = 20;      // mails, ms
  {
    coact::test::Watchdog wd(120, "trace spans");
    coact::test::run_checked(t, [&](coact::Runtime& rt) {
      auto r1 = rt.spawn<Sink>(2);
      auto r2 = rt.spawn<Sink>(kBacklog);
      rt.spawn<Producer>(r1, kBefore, kBetween).send(Go{});
      rt.spawn<Backlog>(r2, kBacklog, kEach).send(Go{});
      rt.run();
    });
  }  // shutdown writes the file
  const json doc = read_json(out);
  CHECK(doc["otherData"]["dropped"] == 0);
  CHECK(doc["otherData"]["burst"] == burst);

  // Every traced mail: t_sent <= t_enqueue <= t_received <= t_finished, and
  // the spans add up.
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] != "X" || !e["args"].contains("t_sent")) continue;
    const json& a = e["args"];
    CHECK(a["t_construct_start"].get<double>() <= a["t_sent"].get<double>());
    CHECK(a["t_sent"].get<double>() <= a["t_enqueue"].get<double>());
    CHECK(a["t_enqueue"].get<double>() <= a["t_received"].get<double>());
    CHECK(a["t_received"].get<double>() <= a["t_finished"].get<double>());
    CHECK(a["queued_us"].get<double>() + a["drain_us"].get<double>() ==
          Approx(a["t_received"].get<double>() - a["t_sent"].get<double>()).margin(0.01));
  }

  // Construct: from the first send to the flush, i.e. the sleep between the
  // two sends, and not the sleep before the first send.
  const auto produced = mails_to(doc, "Sink::on(trace_test::Work)");
  REQUIRE(produced.size() == 2 + kBacklog);
  std::vector<json> from_producer, from_backlog;
  for (const json& m : produced) {
    const std::string from = m["args"]["from"];
    if (from.find("Producer::on(trace_test::Go)") != std::string::npos) from_producer.push_back(m);
    if (from.find("Backlog::on(trace_test::Go)") != std::string::npos) from_backlog.push_back(m);
  }
  REQUIRE(from_producer.size() == 2);
  for (const json& m : from_producer) {
    const double construct = m["args"]["construct_us"];
    CHECK(construct >= kBetween * 1000.0 - 1);
    CHECK(construct < kBefore * 1000.0);  // a stamp at handler entry would read >= 110 ms
  }
  // The producer's own handler slice spans both sleeps.
  bool saw_producer = false;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "X" && e["name"].get<std::string>().find("Producer::on(trace_test::Go)") != std::string::npos) {
      saw_producer = true;
      CHECK(e["dur"].get<double>() >= (kBefore + kBetween) * 1000.0 - 1);
    }
  }
  CHECK(saw_producer);

  // Backlog: the i-th mail (send order) waits behind i mails of kEach ms, and
  // saw i mails ahead of it at deposit.
  REQUIRE(from_backlog.size() == size_t(kBacklog));
  for (size_t i = 0; i < from_backlog.size(); ++i) {
    INFO("backlog mail " << i);
    const json& a = from_backlog[i]["args"];
    const double waited = a["t_received"].get<double>() - a["t_sent"].get<double>();
    CHECK(waited >= double(i) * kEach * 1000.0 - 1);
    CHECK(a["handler_us"].get<double>() >= kEach * 1000.0 - 1);
    CHECK(a["depth"] == i);
  }
}

TEST_CASE("trace: a sampling rate traces about that fraction of mail") {
  coact::test::TempDir dir("trace");
  const auto out = dir.path / "trace.json";
  coact::SchedulerTuning t = coact::test::tuning_for(2);
  t.trace = 0.25;
  t.trace_output = out.string();
  constexpr int kMails = 4000;
  {
    coact::test::Watchdog wd(60, "trace sampling");
    coact::test::run_checked(t, [&](coact::Runtime& rt) {
      auto s = rt.spawn<Sink>(kMails);
      for (int i = 0; i < kMails; ++i) s.send(Work{0});
      rt.run();
    });
  }
  const json doc = read_json(out);
  const size_t traced = mails_to(doc, "Sink::on(").size();
  // Binomial(4000, 0.25): mean 1000, sd 27; +-200 is over 7 sd.
  CHECK(traced > 800);
  CHECK(traced < 1200);
}

TEST_CASE("trace: a bad COACT_TRACE value is one error naming the key") {
  coact::TuningSources s;
  s.env = std::vector<std::string>{"COACT_TRACE=2"};
  CHECK_THROWS_WITH(coact::resolve_tuning(s), Catch::Contains("COACT_TRACE=2") && Catch::Contains("0 < r <= 1"));
  s.env = std::vector<std::string>{"COACT_TRACE=0.5"};
  CHECK(coact::resolve_tuning(s).trace == 0.5);
  s.env = std::vector<std::string>{"COACT_TRACE=on"};
  CHECK(coact::resolve_tuning(s).trace == 1);
  s.env = std::vector<std::string>{"COACT_TRACE=off"};
  CHECK(coact::resolve_tuning(s).trace == 0);
}

TEST_CASE("trace: a window records only the mail sent inside it and writes the file when it closes") {
  coact::test::TempDir dir("trace");
  const auto out = dir.path / "trace.json";
  coact::SchedulerTuning t = coact::test::tuning_for(2);
  t.trace = 1;
  t.trace_output = out.string();
  t.trace_start_ms = 1000;  // late enough that a slow boot (TSan, a loaded machine) is over
  t.trace_duration_ms = 300;
  coact::test::Watchdog wd(60, "trace window");
  size_t in_window = 0;
  coact::test::run_checked(t, [&](coact::Runtime& rt) {
    const auto boot = std::chrono::steady_clock::now();  // after the session's boot stamp
    auto s = rt.spawn<Sink>(1000000);                    // stays live
    int sent = 0;
    // A mail every ~1 ms until the file exists (written when the window closes
    // at 1.3 s, while the runtime is still up), at least until 1.5 s.
    while (std::chrono::steady_clock::now() - boot < 1500ms || !std::filesystem::exists(out)) {
      s.send(Work{0});
      ++sent;
      std::this_thread::sleep_for(1ms);
      REQUIRE(std::chrono::steady_clock::now() - boot < 20s);
    }
    const json doc = read_json(out);
    const auto mails = mails_to(doc, "Sink::on(");
    in_window = mails.size();
    INFO("sent " << sent << ", " << doc["otherData"].dump() << ", file at "
                 << std::chrono::duration<double>(std::chrono::steady_clock::now() - boot).count() << " s");
    CHECK(mails.size() > 10);
    CHECK(int(mails.size()) < sent);  // the mail before and after the window is not in it
    for (const json& m : mails) {
      // Times in the file: us since the session booted, before `boot` here.
      CHECK(m["args"]["t_sent"].get<double>() >= 1000000.0);
      // The window closes at 1.3 s; a worker that read its gate just before
      // may still enter that handler (100 ms of slack for preemption).
      CHECK(m["args"]["t_sent"].get<double>() <= 1400000.0);
      CHECK(m["args"]["t_received"].get<double>() <= 1400000.0);
    }
    s.stop();
    rt.run();
  });                                                                // the destructor shuts the runtime down
  CHECK(mails_to(read_json(out), "Sink::on(").size() == in_window);  // not rewritten at shutdown
}

TEST_CASE("trace: bad window knobs are one error naming the key") {
  coact::TuningSources s;
  s.env = std::vector<std::string>{"COACT_TRACE_START_MS=-5"};
  CHECK_THROWS_WITH(coact::resolve_tuning(s), Catch::Contains("COACT_TRACE_START_MS"));
  s.env = std::vector<std::string>{"COACT_TRACE_DURATION_MS=soon"};
  CHECK_THROWS_WITH(coact::resolve_tuning(s), Catch::Contains("COACT_TRACE_DURATION_MS"));
  s.env = std::vector<std::string>{"COACT_TRACE_START_MS=2000", "COACT_TRACE_DURATION_MS=500"};
  const auto t = coact::resolve_tuning(s);
  CHECK(t.trace_start_ms == 2000);
  CHECK(t.trace_duration_ms == 500);
  CHECK(t.trace_export_deadline_ms == 2000);  // the default
  s.env = std::vector<std::string>{"COACT_TRACE_EXPORT_DEADLINE_MS=250"};
  CHECK(coact::resolve_tuning(s).trace_export_deadline_ms == 250);
  s.env = std::vector<std::string>{"COACT_TRACE_EXPORT_DEADLINE_MS=-1"};
  CHECK_THROWS_WITH(coact::resolve_tuning(s), Catch::Contains("COACT_TRACE_EXPORT_DEADLINE_MS"));
}

TEST_CASE("trace: request_stop writes the trace file while the runtime is still up") {
  coact::test::TempDir dir("trace");
  const auto out = dir.path / "trace.json";
  coact::SchedulerTuning t = coact::test::tuning_for(2);
  t.trace = 1;
  t.trace_output = out.string();
  coact::test::Watchdog wd(60, "trace request_stop");
  coact::Runtime rt(t);
  auto s = rt.spawn<Sink>(1000000);  // stays live
  for (int i = 0; i < 50; ++i) s.send(Work{0});
  std::this_thread::sleep_for(50ms);
  rt.request_stop();
  for (int i = 0; i < 500 && !std::filesystem::exists(out); ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(std::filesystem::exists(out));  // written by the writer thread, before shutdown
  CHECK(mails_to(read_json(out), "Sink::on(").size() == 50);
  s.stop();
  rt.shutdown();
}

TEST_CASE("trace: SIGTERM writes the trace file, then the signal ends the program") {
#if defined(__SANITIZE_THREAD__)
  SUCCEED("fork with threads under TSan: skipped");
#else
  coact::test::TempDir dir("trace");
  const auto out = dir.path / "trace.json";
  const auto r = coact::test::run_in_child([&] {
    coact::SchedulerTuning t;
    t.workers = 2;
    t.trace = 1;
    t.trace_output = out.string();
    coact::Runtime rt(t);
    auto s = rt.spawn<Sink>(1000000);  // never done: the signal ends the program
    for (int i = 0; i < 100; ++i) s.send(Work{0});
    std::this_thread::sleep_for(100ms);
    ::kill(::getpid(), SIGTERM);
    std::this_thread::sleep_for(10s);  // the writer thread re-raises SIGTERM
    std::_Exit(3);
  });
  CHECK(r.signaled(SIGTERM));
  const json doc = read_json(out);
  CHECK(mails_to(doc, "Sink::on(").size() == 100);
#endif
}

TEST_CASE("trace ring: full drops and counts, never blocks, readers see whole events", "[stress]") {
  for (uint32_t writers : {1u, 2u, 4u, 8u}) {
    INFO("writers=" << writers);
    coact::test::Watchdog wd(60, "trace ring");
    constexpr uint32_t kCap = 4096, kEach = 20000;
    coact::detail::trace::Ring ring(0, kCap);
    std::atomic<bool> done{false};
    std::atomic<uint64_t> torn{0};
    std::thread reader([&] {
      while (!done.load(std::memory_order_acquire)) {
        for (const auto& e : ring.snapshot()) {
          if (e.t0 != e.id || e.t1 != e.id * 2) torn.fetch_add(1);
        }
      }
    });
    std::vector<std::thread> ts;
    for (uint32_t w = 0; w < writers; ++w) {
      ts.emplace_back([&] {
        for (uint32_t i = 0; i < kEach; ++i) {
          coact::detail::trace::Event e{};
          e.type = coact::detail::trace::EventType::timer;
          e.id = ring.next_id();
          e.t0 = e.id;
          e.t1 = e.id * 2;
          ring.append(e);
        }
      });
    }
    for (auto& th : ts) th.join();
    done.store(true, std::memory_order_release);
    reader.join();
    const auto all = ring.snapshot();
    CHECK(all.size() == kCap);
    CHECK(ring.dropped() == uint64_t(writers) * kEach - kCap);
    CHECK(torn.load() == 0u);
    for (const auto& e : all) CHECK(e.t1 == e.t0 * 2);
  }
}

TEST_CASE("trace: SIGTERM at the default buffer ends the process within 3 s with a loadable file") {
#if defined(__SANITIZE_THREAD__)
  SUCCEED("fork with threads under TSan: skipped");
#else
  coact::test::TempDir dir("trace");
  const auto out = dir.path / "trace.json";
  for (int sig : {SIGTERM, SIGINT}) {
    INFO("signal " << sig);
    std::filesystem::remove(out);
    const Flood f = flood_and_signal(out, sig, -1);
    CHECK((WIFSIGNALED(f.status) && WTERMSIG(f.status) == sig));
    CHECK(f.exit_s < 3.0);
    const json doc = read_json(out);
    const json& od = doc["otherData"];
    std::fprintf(stderr, "trace SIGTERM test: signal %d: ended %.2f s after it; %zu trace events in the file, "
                 "%llu recorded, %llu dropped (full rings), %llu cut (deadline)\n",
                 sig, f.exit_s, doc["traceEvents"].size(), od["events"].get<unsigned long long>(),
                 od["dropped"].get<unsigned long long>(), od["export_cut"].get<unsigned long long>());
    CHECK(od["dropped"].get<uint64_t>() > 0);       // the rings were full: the default buffer's worst case
    CHECK(od["events"].get<uint64_t>() > 300000u);  // of (2 workers + roots) x 131072 slots
    CHECK(od["written"].get<uint64_t>() + od["export_cut"].get<uint64_t>() == od["events"].get<uint64_t>());
    CHECK(mails_to(doc, "Sink::on(").size() > 100000u);
    CHECK_FALSE(std::filesystem::exists(out.string() + ".partial"));
  }
#endif
}

TEST_CASE("trace: the signal's export deadline drops and counts what does not fit") {
#if defined(__SANITIZE_THREAD__)
  SUCCEED("fork with threads under TSan: skipped");
#else
  coact::test::TempDir dir("trace");
  const auto out = dir.path / "trace.json";
  const Flood f = flood_and_signal(out, SIGTERM, -1, /*deadline_ms=*/1);
  CHECK((WIFSIGNALED(f.status) && WTERMSIG(f.status) == SIGTERM));
  const json doc = read_json(out);
  const json& od = doc["otherData"];
  INFO(od.dump());
  CHECK(od["export_deadline_ms"] == 1);
  CHECK(od["export_cut"].get<uint64_t>() > 0);
  CHECK(od["joined"] == false);  // the send index (half the deadline) did not fit either
  CHECK(od["written"].get<uint64_t>() + od["export_cut"].get<uint64_t>() == od["events"].get<uint64_t>());
#endif
}

TEST_CASE("trace: SIGKILL half a second after SIGTERM leaves a loadable file") {
#if defined(__SANITIZE_THREAD__)
  SUCCEED("fork with threads under TSan: skipped");
#else
  coact::test::TempDir dir("trace");
  const auto out = dir.path / "trace.json";
  const auto partial = std::filesystem::path(out.string() + ".partial");
  // 500 ms: a supervisor's grace period. The shorter ones land inside the
  // export (its own test, the default buffer, takes a few hundred ms here).
  for (int after_ms : {500, 100, 30, 10}) {
    INFO("SIGKILL " << after_ms << " ms after SIGTERM");
    std::filesystem::remove(out);
    std::filesystem::remove(partial);
    const Flood f = flood_and_signal(out, SIGTERM, after_ms);
    CHECK(WIFSIGNALED(f.status));
    const bool done = std::filesystem::exists(out), cut = std::filesystem::exists(partial);
    std::fprintf(stderr, "trace SIGKILL test: killed %d ms after SIGTERM: %s\n", after_ms,
                 done ? "the whole file" : cut ? "a partial file" : "no file");
    if (after_ms == 500) CHECK((done || cut));
    if (done) {
      const json doc = read_json(out);
      CHECK(doc["traceEvents"].size() > 100000u);
    } else if (cut) {
      const json doc = load_repaired(partial);
      REQUIRE(doc["traceEvents"].is_array());
      CHECK(doc["traceEvents"].size() >= 4u);  // the track names come first
      std::fprintf(stderr, "trace SIGKILL test: %zu events in the repaired partial file\n",
                   doc["traceEvents"].size());
    }
  }
#endif
}

TEST_CASE("trace export: every write ends after a whole event, so any cut file loads after the repair") {
  // SOCK_SEQPACKET keeps each write(2) one message: the test sees where a
  // killed export could have stopped.
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
  const int big = 1 << 20;
  ::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  coact::detail::trace::SessionInfo info;
  info.workers = 2;
  coact::detail::trace::Session s(info, 8192, "");
  const uint64_t appended = fill(s, 3, 8192);
  std::vector<std::string> writes;
  std::thread reader([&] {
    std::vector<char> buf(1 << 20);
    for (;;) {
      const ssize_t n = ::recv(sv[1], buf.data(), buf.size(), 0);
      if (n <= 0) return;
      writes.emplace_back(buf.data(), size_t(n));
    }
  });
  std::vector<const coact::detail::trace::Ring*> rings{&s.ring(0), &s.ring(1), &s.ring(2)};
  const auto res = coact::detail::trace::export_json(sv[0], rings, info, s.boot_ns(), 0, 0);
  ::shutdown(sv[0], SHUT_WR);
  reader.join();
  ::close(sv[0]);
  ::close(sv[1]);
  REQUIRE(res.ok);
  CHECK(res.recorded == appended);
  CHECK(res.written == appended);
  REQUIRE(writes.size() > 10u);
  std::string prefix;
  size_t cut_events = 0;
  for (size_t i = 0; i + 1 < writes.size(); ++i) {
    INFO("write " << i << " of " << writes.size());
    CHECK(writes[i].back() == '}');
    if (i + 2 < writes.size()) CHECK(writes[i + 1].rfind(",\n{", 0) == 0);
    prefix += writes[i];
    if (i == 0 || i == writes.size() / 2 || i + 2 == writes.size()) {
      const json doc = json::parse(prefix + "]}", nullptr, false);  // the repair of docs/traces.md
      REQUIRE_FALSE(doc.is_discarded());
      CHECK(doc["traceEvents"].size() > cut_events);
      cut_events = doc["traceEvents"].size();
    }
  }
  const json whole = json::parse(prefix + writes.back());
  CHECK(whole["otherData"]["events"] == appended);
  CHECK(whole["otherData"]["export_cut"] == 0);
  CHECK(whole["otherData"]["joined"] == true);
  CHECK(whole["traceEvents"].size() > cut_events);
  // The mail ids join each send to its handler: one flow pair per mail.
  CHECK(whole["otherData"]["flows"].get<uint64_t>() > appended / 3);
}

TEST_CASE("trace export: memory per event stays within twice the documented figure") {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  SUCCEED("RSS under a sanitizer's allocator: skipped");
#else
  coact::test::TempDir dir("trace");
  const auto out = dir.path / "trace.json";
  // In a child: a fresh heap, and the peak RSS reset just before the export.
  const auto r = coact::test::run_in_child([&] {
    coact::detail::trace::SessionInfo info;
    info.workers = 2;
    constexpr uint32_t kCap = 131072;  // the default COACT_TRACE_BUFFER
    coact::detail::trace::Session s(info, kCap, "");
    const uint64_t events = fill(s, 3, kCap);
    // Every large block its own fresh mapping: the heap this child inherited
    // has free pages that would hide the export's allocations from RSS.
    ::mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    ::mallopt(M_TRIM_THRESHOLD, 64 * 1024);
    ::malloc_trim(0);
    const uint64_t before = proc_status_bytes("VmRSS:");
    {
      std::ofstream reset("/proc/self/clear_refs");
      reset << "5";  // resets VmHWM to the current RSS
    }
    if (proc_status_bytes("VmHWM:") > before + (1 << 20)) {
      std::fprintf(stderr, "RESULT cannot reset VmHWM\n");
      std::_Exit(1);
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (!s.write(out.string())) std::_Exit(1);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const uint64_t peak = proc_status_bytes("VmHWM:");
    std::fprintf(stderr, "RESULT %llu %llu %.3f\n", static_cast<unsigned long long>(peak > before ? peak - before : 0),
                 static_cast<unsigned long long>(events), took);
    std::_Exit(0);
  });
  INFO(r.err);
  REQUIRE(WIFEXITED(r.status));
  REQUIRE(WEXITSTATUS(r.status) == 0);
  const auto at = r.err.find("RESULT ");
  REQUIRE(at != std::string::npos);
  unsigned long long growth = 0, events = 0;
  double took = 0;
  REQUIRE(std::sscanf(r.err.c_str() + at, "RESULT %llu %llu %lf", &growth, &events, &took) == 3);
  const double per_event = double(growth) / double(events);
  std::fprintf(stderr, "trace export memory test: %llu events written in %.3f s, peak RSS +%llu bytes while writing: "
               "%.1f bytes/event (documented %zu), file %.1f MB\n", events, took, growth, per_event,
               coact::detail::trace::kExportBytesPerEvent, double(std::filesystem::file_size(out)) / 1e6);
  CHECK(events > 300000u);
  CHECK(per_event <= 2.0 * double(coact::detail::trace::kExportBytesPerEvent));
  const json doc = read_json(out);
  CHECK(doc["otherData"]["events"] == events);
#endif
}
