// coact-readme-program: a coact program written as the README shows
// (`coact::Runtime rt(argc, argv);`), run as a child process by
// tests/runtime/entry_point_test.cpp.
//
//   coact-readme-program [ARGS...]        boots Runtime(argc, argv), prints every
//                                   argument left after it ("arg: X"), runs
//                                   one actor through 100 mails, exits 0
//   coact-readme-program --library        boots with the library entry point
//                                   (Runtime() = resolve_tuning()) and reports
//                                   a caught options::option_error on stdout
//                                   ("caught: MESSAGE"), exit 3
//   coact-readme-program --print-unread   as the first form, then prints the
//                                   declared keys nothing read ("unread: K")
#include <coact/runtime/runtime.hpp>

#include <cstdio>
#include <cstring>
#include <optional>

namespace {

struct Ping {
  int n;
};

struct Counter : coact::Actor<Counter> {
  void on(const Ping& p) {
    if (p.n > 0) {
      self().send(Ping{p.n - 1});
    } else {
      stop();
    }
  }
};

void run_one_actor(coact::Runtime& rt) {
  auto c = rt.spawn<Counter>();
  c.send(Ping{100});
  rt.run();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--library") == 0) {
    try {
      coact::Runtime rt;  // library entry point: throws, never exits
      run_one_actor(rt);
    } catch (const coact::options::option_error& e) {
      std::printf("caught: %s\n", e.what());
      return 3;
    }
    return 0;
  }
  coact::Runtime rt(argc, argv);
  bool print_unread = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--print-unread") == 0) print_unread = true;
    std::printf("arg: %s\n", argv[i]);
  }
  run_one_actor(rt);
  if (print_unread) {
    for (const auto& k : coact::options::unread_keys()) std::printf("unread: %s\n", k.c_str());
  }
  return 0;
}
