// A small server-like coact program for coact-profile's tests
// (test_coact_profile.py): a Listener actor "accepts a request" every
// millisecond (a wall-clock send_after to itself) and hands it to a Worker,
// which works ~100 µs on it. It runs until --seconds S have passed (default
// 60) or it is signalled, like a server.
//
//   coact-test-server [--seconds S] [--progress] [--exit-status N]
//     --progress       visit the progress point "requests" once per request
//                      (without it the point is never reached, as in a
//                      server that gets no traffic)
//     --exit-status N  exit with status N at the end (default 0)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <coact/causal/causal.hpp>
#include <coact/runtime/runtime.hpp>

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

bool g_progress = false;

struct Request {
  int n;
};
struct Tick {};

void spin_for(std::chrono::microseconds d) {
  const auto end = steady::now() + d;
  while (steady::now() < end) {
  }
}

struct Worker : coact::Actor<Worker> {
  void on(const Request&) {
    spin_for(100us);
    if (g_progress) COACT_PROGRESS("requests");
  }
};

struct Listener : coact::Actor<Listener> {
  coact::ActorRef<Worker> worker;
  steady::time_point end;
  int n = 0;
  Listener(coact::ActorRef<Worker> w, steady::time_point e) : worker(std::move(w)), end(e) {}
  void on(const Tick&) {
    if (steady::now() >= end) {
      worker.stop();
      stop();
      return;
    }
    worker.send(Request{n++});
    runtime().send_after_wall(self(), 1ms, Tick{});
  }
};

}  // namespace

int main(int argc, char** argv) {
  double seconds = 60;
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--progress") {
      g_progress = true;
    } else if (a == "--exit-status" && i + 1 < argc) {
      status = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "coact-test-server: unknown argument '%s' (expected --seconds S, --progress, "
                           "--exit-status N)\n", argv[i]);
      return 2;
    }
  }
  coact::SchedulerTuning t = coact::resolve_tuning();  // the COACT_* knobs (coact-profile run --trace sets some)
  t.workers = 2;
  coact::Runtime rt(t);
  auto w = rt.spawn<Worker>();
  const auto end = steady::now() + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(seconds));
  rt.spawn<Listener>(w, end).send(Tick{});
  rt.run();
  return status;
}
