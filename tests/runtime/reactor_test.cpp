// The reactor (coact/runtime/reactor.hpp) and TCP descriptors (tcp.hpp): an
// echo server of a listener actor and connection actors answers many
// clients across worker counts; a connection that stops arming reads while
// its output is not drained bounds its buffered output and the others keep
// being answered; a reset mid-request and a stopped runtime with live
// watches are survived; an idle listener costs no CPU; a report of an
// unregistered watch is never posted; the workers' poll reports a first
// watch made while they were parked, and readiness while they are busy, or
// while one runs a long handler and other threads fill the CPUs; input that
// arrives between a drain and arm_drained() is reported, and arm() reports
// input left unread.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <coact/runtime/reactor.hpp>
#include <coact/runtime/runtime.hpp>
#include <coact/runtime/tcp.hpp>

#include "support/loopback.hpp"
#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

using namespace std::chrono_literals;
using coact::test::connect_loopback;
using coact::test::read_exact;
using coact::test::send_all;

namespace {

struct Counters {
  std::atomic<int> accepted{0};
  std::atomic<int> closed{0};          // connections that saw EOF or an error and stopped
  std::atomic<size_t> max_pending{0};  // the most output any connection held unsent
  std::atomic<int> reports{0};
};

// Echoes what it reads. Holds at most `bound` bytes of unsent output: while
// output is pending it arms for write only (no reads: back-pressure).
struct EchoConn : coact::Actor<EchoConn> {
  EchoConn(int fd, size_t bound, Counters* c) : fd_(fd), bound_(bound), c_(c), watch_(self(), fd) {
    watch_.arm(coact::Interest::read);
  }
  ~EchoConn() override {
    watch_.reset();
    ::close(fd_);
  }

  void on(const coact::IoReady& r) {
    c_->reports.fetch_add(1, std::memory_order_relaxed);
    if (r.fd != fd_) return;
    if (!flush()) return finish();
    bool drained = false;  // the reads ended on EAGAIN, not on the output bound
    if (out_.empty()) {
      char buf[16384];
      for (;;) {
        const ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n > 0) {
          out_.append(buf, size_t(n));
          if (!flush()) return finish();
          if (out_.size() >= bound_) break;  // stop reading: the peer does not drain
          continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) return finish();  // EOF, or reset
        if (errno == EAGAIN) {
          drained = true;
          break;
        }
      }
    }
    size_t m = c_->max_pending.load();
    while (out_.size() > m && !c_->max_pending.compare_exchange_weak(m, out_.size())) {
    }
    // Output left means the last send saw EAGAIN: drained for write. Input
    // left unread (the bound) is reported only by the level arm().
    if (!out_.empty()) {
      watch_.arm_drained(coact::Interest::write);
    } else if (drained) {
      watch_.arm_drained(coact::Interest::read);
    } else {
      watch_.arm(coact::Interest::read);
    }
  }

 private:
  // Writes what it can; false on a write error (reset peer).
  bool flush() {
    while (!out_.empty()) {
      const ssize_t n = ::send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL);
      if (n > 0) {
        out_.erase(0, size_t(n));
        continue;
      }
      if (n < 0 && errno == EAGAIN) return true;
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    return true;
  }
  void finish() {
    c_->closed.fetch_add(1);
    stop();
  }

  int fd_;
  size_t bound_;
  Counters* c_;
  std::string out_;
  coact::IoWatch watch_;
};

struct StopListening {};

// Counts the reports sent to it, by watches that others make on its behalf.
struct CountingProbe : coact::Actor<CountingProbe> {
  explicit CountingProbe(Counters* c) : c_(c) {}
  void on(const coact::IoReady&) { c_->reports.fetch_add(1); }
  void on(StopListening) { stop(); }
  Counters* c_;
};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Watches `fd` for one read report, stores when it ran (steady_ns() in
// `at`), counts it, and stops.
struct Probe : coact::Actor<Probe> {
  Probe(Counters* c, std::atomic<int64_t>* at, int fd) : c_(c), at_(at), watch_(self(), fd) {
    watch_.arm(coact::Interest::read);
  }
  void on(const coact::IoReady&) {
    at_->store(steady_ns());
    c_->reports.fetch_add(1);
    watch_.reset();
    stop();
  }
  Counters* c_;
  std::atomic<int64_t>* at_;
  coact::IoWatch watch_;
};

struct Listener : coact::Actor<Listener> {
  Listener(int fd, size_t bound, Counters* c) : fd_(fd), bound_(bound), c_(c), watch_(self(), fd) {
    watch_.arm(coact::Interest::read);
  }
  ~Listener() override {
    watch_.reset();
    ::close(fd_);
  }
  void on(const coact::IoReady&) {
    for (;;) {
      const int fd = coact::tcp_accept(fd_);
      if (fd < 0) break;
      c_->accepted.fetch_add(1);
      runtime().spawn<EchoConn>(fd, bound_, c_);
    }
    watch_.arm(coact::Interest::read);
  }
  void on(StopListening) { stop(); }

 private:
  int fd_;
  size_t bound_;
  Counters* c_;
  coact::IoWatch watch_;
};

// A client socket to the server on `port`, on the test's thread (REQUIREs it).
int connected(uint16_t port) {
  const int fd = connect_loopback(port, 0);
  REQUIRE(fd >= 0);
  return fd;
}

double process_cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

}  // namespace

TEST_CASE("an echo server of watched sockets answers every client, across worker counts", "[reactor]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  coact::test::Watchdog wd(60, "echo server");
  Counters c;
  coact::test::run_checked(workers, [&](coact::Runtime& rt) {
    const int lfd = coact::tcp_listen("127.0.0.1", 0);
    const uint16_t port = coact::tcp_local_port(lfd);
    REQUIRE(port != 0);
    auto listener = rt.spawn<Listener>(lfd, size_t(1) << 20, &c);
    constexpr int kClients = 16;
    constexpr int kRounds = 200;
    std::atomic<int> ok{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.emplace_back([&, i] {
        const int fd = connect_loopback(port, 0);  // no Catch assertion off the test's thread
        bool good = fd >= 0;
        for (int r = 0; r < kRounds && good; ++r) {
          const std::string msg = "client " + std::to_string(i) + " round " + std::to_string(r) + "\n";
          std::string back(msg.size(), '\0');
          good = send_all(fd, msg.data(), msg.size()) && read_exact(fd, back.data(), back.size()) && back == msg;
        }
        if (good) ok.fetch_add(1);
        if (fd >= 0) ::close(fd);
      });
    }
    for (auto& t : clients) t.join();
    listener.send(StopListening{});
    rt.run();  // returns once the listener and every connection stopped
    INFO("workers=" << workers);
    CHECK(ok.load() == kClients);
    CHECK(c.accepted.load() == kClients);
    CHECK(c.closed.load() == kClients);
  });
}

TEST_CASE("a connection that stops reading while its output is not drained bounds that output", "[reactor]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 2));
  coact::test::Watchdog wd(60, "back-pressure");
  Counters c;
  constexpr size_t kBound = 64 * 1024;
  coact::test::run_checked(workers, [&](coact::Runtime& rt) {
    const int lfd = coact::tcp_listen("127.0.0.1", 0);
    const uint16_t port = coact::tcp_local_port(lfd);
    auto listener = rt.spawn<Listener>(lfd, kBound, &c);
    // The slow client writes 32 MiB and never reads: the server must stop
    // reading it (its socket buffers fill and the client's writes block).
    const int slow = connected(port);
    timeval tv{0, 200'000};
    ::setsockopt(slow, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    std::string chunk(64 * 1024, 'x');
    size_t written = 0;
    for (int i = 0; i < 512; ++i) {
      const ssize_t n = ::send(slow, chunk.data(), chunk.size(), MSG_NOSIGNAL);
      if (n <= 0) break;  // the send timed out: the server stopped draining us
      written += size_t(n);
    }
    CHECK(written < size_t(32) << 20);
    // Meanwhile another client is answered.
    const int quick = connected(port);
    const std::string msg = "still answering\n";
    std::string back(msg.size(), '\0');
    CHECK(send_all(quick, msg.data(), msg.size()));
    CHECK(read_exact(quick, back.data(), back.size()));
    CHECK(back == msg);
    ::close(quick);
    ::close(slow);
    listener.send(StopListening{});
    rt.run();
    INFO("workers=" << workers << " written=" << written << " max_pending=" << c.max_pending.load());
    // One read past the bound at most (the read that crossed it).
    CHECK(c.max_pending.load() <= kBound + 16384);
    CHECK(c.closed.load() == 2);
  });
}

TEST_CASE("a client reset mid-request closes its connection and the server keeps answering", "[reactor]") {
  coact::test::Watchdog wd(60, "reset");
  Counters c;
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    const int lfd = coact::tcp_listen("127.0.0.1", 0);
    const uint16_t port = coact::tcp_local_port(lfd);
    auto listener = rt.spawn<Listener>(lfd, size_t(1) << 20, &c);
    for (int i = 0; i < 20; ++i) {
      const int fd = connected(port);
      const std::string half(1000, 'r');
      CHECK(send_all(fd, half.data(), half.size()));
      linger lg{1, 0};  // close with RST
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
      ::close(fd);
    }
    const int fd = connected(port);
    const std::string msg = "after the resets\n";
    std::string back(msg.size(), '\0');
    CHECK(send_all(fd, msg.data(), msg.size()));
    CHECK(read_exact(fd, back.data(), back.size()));
    CHECK(back == msg);
    ::close(fd);
    listener.send(StopListening{});
    rt.run();
    CHECK(c.accepted.load() == 21);
    CHECK(c.closed.load() == 21);
  });
}

TEST_CASE("a runtime stopped with watches still registered shuts down cleanly", "[reactor]") {
  coact::test::Watchdog wd(60, "shutdown with live watches");
  Counters c;
  std::vector<int> fds;
  {
    coact::Runtime rt(coact::test::tuning_for(2));
    const int lfd = coact::tcp_listen("127.0.0.1", 0);
    const uint16_t port = coact::tcp_local_port(lfd);
    rt.spawn<Listener>(lfd, size_t(1) << 20, &c);
    for (int i = 0; i < 8; ++i) fds.push_back(connected(port));
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (c.accepted.load() < 8 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    CHECK(c.accepted.load() == 8);
    rt.request_stop();
    rt.run();
  }  // the destructor stops the reactor, then destroys the actors (their watches unregister)
  for (int fd : fds) {
    char b;
    CHECK(::read(fd, &b, 1) == 0);  // the server closed: EOF
    ::close(fd);
  }
}

TEST_CASE("an idle watched listener costs no more CPU than an idle runtime", "[reactor]") {
  coact::test::Watchdog wd(60, "idle listener");
  auto idle_cpu_ms = [](bool with_listener) {
    Counters c;
    double used = 0;
    coact::test::run_checked(2, [&](coact::Runtime& rt) {
      coact::ActorRef<Listener> l;
      if (with_listener) l = rt.spawn<Listener>(coact::tcp_listen("127.0.0.1", 0), size_t(1) << 20, &c);
      std::this_thread::sleep_for(100ms);  // the pool settles into its parked state
      const double t0 = process_cpu_ms();
      std::this_thread::sleep_for(500ms);
      used = process_cpu_ms() - t0;
      if (l) l.send(StopListening{});
      rt.run();
    });
    return used;
  };
  const double without = idle_cpu_ms(false);
  const double with = idle_cpu_ms(true);
  INFO("idle CPU over 500 ms: without a listener " << without << " ms, with " << with << " ms");
  // A parked worker sleeps in epoll_pwait2 instead of its futex: nothing
  // beyond scheduling noise.
  CHECK(with <= without + 25.0);
}

TEST_CASE("a watch unregistered before its report is processed gets no report", "[reactor]") {
  coact::test::Watchdog wd(60, "stale reports");
  Counters c;
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    auto p = rt.spawn<CountingProbe>(&c);
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    REQUIRE(::write(sv[1], "x", 1) == 1);  // sv[0] is readable from the start
    for (int i = 0; i < 2000; ++i) {
      coact::IoWatch w(p, sv[0]);
      w.arm(coact::Interest::read);
      w.reset();  // races the polling worker: the report is posted before this, or never
    }
    std::this_thread::sleep_for(50ms);
    const int after_resets = c.reports.load();
    std::this_thread::sleep_for(100ms);
    CHECK(c.reports.load() == after_resets);  // nothing posted after the last reset returned
    CHECK(after_resets <= 2000);
    {
      coact::IoWatch w(p, sv[0]);
      w.arm(coact::Interest::read);
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (c.reports.load() == after_resets && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
      CHECK(c.reports.load() == after_resets + 1);  // an armed, registered watch is reported
    }
    ::close(sv[0]);
    ::close(sv[1]);
    p.send(StopListening{});
    rt.run();
  });
}

// The workers poll the reactor themselves (reactor.cpp, "The poll role"): a
// worker parked before the first watch existed sleeps on its futex, so the
// first watch must wake one to park again polling, or nothing would ever
// report (every worker asleep, the descriptor ready).
TEST_CASE("a first watch made while every worker is parked is reported", "[reactor]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 4));
  coact::test::Watchdog wd(60, "first watch on a parked pool");
  Counters c;
  coact::test::run_checked(workers, [&](coact::Runtime& rt) {
    auto p = rt.spawn<CountingProbe>(&c);
    std::this_thread::sleep_for(100ms);  // the pool parks: nothing to run
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    {
      coact::IoWatch w(p, sv[0]);  // the Scheduler's first watch, made off the pool
      w.arm(coact::Interest::read);
      REQUIRE(::write(sv[1], "x", 1) == 1);
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (c.reports.load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
      INFO("workers=" << workers);
      CHECK(c.reports.load() == 1);
    }
    p.send(StopListening{});
    rt.run();
    ::close(sv[0]);
    ::close(sv[1]);
  });
}

// While no worker parks, a busy worker polls between handlers (at most every
// Scheduler::kBusyPollNs of its clock), so readiness is reported while the
// pool is saturated by short handlers, not when it drains.
TEST_CASE("readiness is reported while every worker runs short handlers", "[reactor]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 2));
  coact::test::Watchdog wd(60, "busy pool polls");
  Counters c;
  std::atomic<int64_t> report_ns{0};
  std::atomic<int64_t> busy_end_ns{0};
  coact::test::run_checked(workers, [&](coact::Runtime& rt) {
    struct Tick {};
    // Self-sends short handlers for 400 ms: its worker never parks meanwhile.
    struct Spinner : coact::Actor<Spinner> {
      Spinner(std::atomic<int64_t>* end, int64_t until) : end_(end), until_(until) {}
      void on(Tick) {
        const auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - t0 < 20us) {
        }
        const int64_t t =
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
                .count();
        if (t < until_) {
          self().send(Tick{});
          return;
        }
        end_->store(t);
        stop();
      }
      std::atomic<int64_t>* end_;
      int64_t until_;
    };
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    rt.spawn<Probe>(&c, &report_ns, sv[0]);
    const int64_t until = steady_ns() + 400'000'000;
    for (uint32_t i = 0; i < workers; ++i) rt.spawn<Spinner>(&busy_end_ns, until).send(Tick{});
    std::this_thread::sleep_for(100ms);  // every worker is busy now
    REQUIRE(::write(sv[1], "x", 1) == 1);
    rt.run();
    ::close(sv[0]);
    ::close(sv[1]);
  });
  INFO("workers=" << workers << ": reported " << (busy_end_ns.load() - report_ns.load()) / 1000000
                  << " ms before the busy handlers ended");
  REQUIRE(c.reports.load() == 1);
  CHECK(report_ns.load() < busy_end_ns.load() - 100'000'000);  // well before: written 300 ms before the end
}

TEST_CASE("readiness is reported while one worker runs a long handler and other threads fill the CPUs",
          "[reactor]") {
  // The idle worker leaves the poll role to a busy sibling that polls, where
  // no CPU is free for it (park_idle, cpu_headroom.hpp). Here the sibling
  // polls, then stops polling inside one long handler: the idle worker must
  // take the role back instead of leaving the socket to wait for the handler.
  // Spinning threads outside the pool fill every CPU; while the sibling
  // polls, a periodic timer makes the idle worker park and decide again
  // every 2 ms (it stops when the long handler starts: its fires would make
  // the idle worker poll as it runs them).
  coact::test::Watchdog wd(60, "long handler, crowded CPUs");
  std::atomic<bool> spin{true};
  std::vector<std::thread> spinners;
  for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency()); ++i) {
    spinners.emplace_back([&] {
      while (spin.load(std::memory_order_relaxed)) {
      }
    });
  }
  Counters c;
  std::atomic<int64_t> report_ns{0};
  std::atomic<int64_t> long_end_ns{0};
  std::atomic<int64_t> written_ns{0};
  coact::RuntimeStats stats;
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    struct Tick {};
    struct Long {};
    // Short handlers for 200 ms (its worker busy-polls), then one 400 ms
    // handler; sets `done` as that one starts.
    struct Busy : coact::Actor<Busy> {
      Busy(std::atomic<int64_t>* end, int64_t short_until, std::atomic<bool>* done)
          : end_(end), short_until_(short_until), done_(done) {}
      void on(Tick) {
        const auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - t0 < 20us) {
        }
        if (steady_ns() < short_until_) {
          self().send(Tick{});
        } else {
          self().send(Long{});
        }
      }
      void on(Long) {
        done_->store(true);
        const auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - t0 < 400ms) {
        }
        end_->store(steady_ns());
        stop();
      }
      std::atomic<int64_t>* end_;
      int64_t short_until_;
      std::atomic<bool>* done_;
    };
    // A 2 ms periodic timer until `done`.
    struct Periodic : coact::Actor<Periodic> {
      explicit Periodic(std::atomic<bool>* done) : done_(done) {}
      void on(Tick) {
        if (done_->load()) return stop();
        runtime().send_after(self(), 2ms, Tick{});
      }
      std::atomic<bool>* done_;
    };
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    rt.spawn<Probe>(&c, &report_ns, sv[0]);
    std::atomic<bool> done{false};
    rt.spawn<Periodic>(&done).send(Tick{});
    rt.spawn<Busy>(&long_end_ns, steady_ns() + 200'000'000, &done).send(Tick{});
    std::this_thread::sleep_for(300ms);  // 100 ms into the long handler
    written_ns.store(steady_ns());
    REQUIRE(::write(sv[1], "x", 1) == 1);
    rt.run();
    stats = rt.stats();
    ::close(sv[0]);
    ::close(sv[1]);
  });
  spin.store(false);
  for (auto& t : spinners) t.join();
  INFO("reported " << (report_ns.load() - written_ns.load()) / 1000000 << " ms after the write, "
                   << (long_end_ns.load() - report_ns.load()) / 1000000 << " ms before the long handler ended; "
                   << stats.poll_yields << " parks left the poll role to the busy worker");
  REQUIRE(c.reports.load() == 1);
  CHECK(report_ns.load() < long_end_ns.load() - 100'000'000);  // written 300 ms before the end
}

// arm_drained() costs no epoll_ctl, so input that arrives after the drain
// and before the arm must still be reported: the reactor's edge-triggered
// registration queues it whether or not the watch is armed (reactor.cpp,
// "Arming"). Here every byte is written by the handler itself between its
// read that saw EAGAIN and its arm_drained(), the window a lost edge would
// fall in; an idle worker's poll collects it before the arm, or the poll
// after the handler does.
TEST_CASE("input that arrives between the drain and arm_drained is reported", "[reactor]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 4));
  coact::test::Watchdog wd(60, "arm_drained window");
  constexpr int kRounds = 2000;
  std::atomic<int> got{0};
  coact::test::run_checked(workers, [&](coact::Runtime& rt) {
    struct Pinger : coact::Actor<Pinger> {
      Pinger(int rd, int wr, std::atomic<int>* got) : rd_(rd), wr_(wr), got_(got), watch_(self(), rd) {
        watch_.arm(coact::Interest::read);
      }
      void on(const coact::IoReady&) {
        char buf[64];
        ssize_t n;
        while ((n = ::read(rd_, buf, sizeof buf)) > 0) got_->fetch_add(int(n));
        if (n == 0 || errno != EAGAIN) return stop();
        if (got_->load() >= kRounds) {
          watch_.reset();
          return stop();
        }
        if (::write(wr_, "x", 1) != 1) return stop();  // after the drain, before the arm
        // Time for an idle worker's poll to collect the edge while the watch
        // is disarmed: the reactor must keep it for the arm.
        std::this_thread::sleep_for(100us);
        watch_.arm_drained(coact::Interest::read);
      }
      int rd_, wr_;
      std::atomic<int>* got_;
      coact::IoWatch watch_;
    };
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    REQUIRE(::write(sv[1], "x", 1) == 1);
    rt.spawn<Pinger>(sv[0], sv[1], &got);
    rt.run();  // returns when the Pinger stops: every round reported, or the watchdog fires
    ::close(sv[0]);
    ::close(sv[1]);
  });
  INFO("workers=" << workers);
  CHECK(got.load() == kRounds);
}

// arm() is level-triggered although the registration is edge-triggered: it
// asks epoll to look again, so input left unread is reported without a new
// edge. The reader takes one byte per report of a buffer written once.
TEST_CASE("arm() reports input left unread from before it", "[reactor]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 2));
  coact::test::Watchdog wd(60, "level arm");
  constexpr int kBytes = 500;
  std::atomic<int> got{0};
  coact::test::run_checked(workers, [&](coact::Runtime& rt) {
    struct Sipper : coact::Actor<Sipper> {
      Sipper(int rd, std::atomic<int>* got) : rd_(rd), got_(got), watch_(self(), rd) {
        watch_.arm(coact::Interest::read);
      }
      void on(const coact::IoReady&) {
        char b;
        if (::read(rd_, &b, 1) == 1 && got_->fetch_add(1) + 1 < kBytes) return watch_.arm(coact::Interest::read);
        watch_.reset();
        stop();
      }
      int rd_;
      std::atomic<int>* got_;
      coact::IoWatch watch_;
    };
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    const std::string all(kBytes, 'x');
    REQUIRE(::write(sv[1], all.data(), all.size()) == kBytes);
    rt.spawn<Sipper>(sv[0], &got);
    rt.run();
    ::close(sv[0]);
    ::close(sv[1]);
  });
  INFO("workers=" << workers);
  CHECK(got.load() == kBytes);
}

TEST_CASE("arming a descriptor epoll cannot watch throws a system_error naming it", "[reactor]") {
  coact::test::Watchdog wd(60, "bad descriptor");
  Counters c;
  coact::test::run_checked(1, [&](coact::Runtime& rt) {
    const int lfd = coact::tcp_listen("127.0.0.1", 0);
    auto l = rt.spawn<Listener>(lfd, size_t(1) << 20, &c);
    const int file = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);  // a regular file: EPERM
    REQUIRE(file >= 0);
    coact::IoWatch w(l, file);
    CHECK_THROWS_WITH(w.arm(coact::Interest::read), Catch::Contains("fd " + std::to_string(file)));
    w.reset();
    ::close(file);
    CHECK_THROWS_AS(coact::tcp_listen("not-an-address", 0), std::system_error);
    l.send(StopListening{});
    rt.run();
  });
}
