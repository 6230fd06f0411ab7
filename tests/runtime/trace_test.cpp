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
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <coact/runtime/runtime.hpp>

#include "support/child.hpp"
#include "support/temp_dir.hpp"
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
    coact::Runtime rt(t);
    auto r1 = rt.spawn<Sink>(2);
    auto r2 = rt.spawn<Sink>(kBacklog);
    rt.spawn<Producer>(r1, kBefore, kBetween).send(Go{});
    rt.spawn<Backlog>(r2, kBacklog, kEach).send(Go{});
    rt.run();
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
    coact::Runtime rt(t);
    auto s = rt.spawn<Sink>(kMails);
    for (int i = 0; i < kMails; ++i) s.send(Work{0});
    rt.run();
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
  coact::Runtime rt(t);
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
  rt.shutdown();
  CHECK(mails_to(read_json(out), "Sink::on(").size() == mails.size());  // not rewritten at shutdown
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
