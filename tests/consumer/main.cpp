// Consumer smoke test: an installed coact builds, links and runs actors.
#include <coact/runtime/runtime.hpp>

#include <cstdio>

struct Hello {
  int n;
};
struct Greeter : coact::Actor<Greeter> {
  int* seen;
  explicit Greeter(int* s) : seen(s) {}
  void on(const Hello& h) {
    *seen += h.n;
    stop();
  }
};

int main() {
  int seen = 0;
  {
    coact::SchedulerTuning t;
    t.workers = 2;
    coact::Runtime rt(t);
    rt.spawn<Greeter>(&seen).send(Hello{42});
    rt.run();
  }
  std::printf("consumer: %d\n", seen);
  return seen == 42 ? 0 : 1;
}
