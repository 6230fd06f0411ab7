// examples/wordcount/wordcount.cpp: the program the README profiles.
//
// Reader -> Counter -> Sink, with credit-based flow control (the Sink asks
// the Reader for the next batch; four batches are in flight). The Sink's
// COACT_PROGRESS("batches") is the progress point; COACT_SCOPE("tokenize")
// marks a region inside Counter's handler.
//
// Usage: wordcount [SECONDS]   (default 0.3) generates text for SECONDS, then
// prints "12 distinct words" and exits 0 (2, with one line, for a SECONDS
// that is not a number above 0). Every --coact-* argument and COACT_*
// variable is read by coact::Runtime (a causal sweep: COACT_CAUSAL=1, or
// `coact-profile run -- wordcount SECONDS`).
#include <coact/causal/causal.hpp>
#include <coact/runtime/runtime.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using steady = std::chrono::steady_clock;

struct Batch { std::vector<std::string> lines; };
struct Counts { std::map<std::string, int> words; };
struct Credit {};  // the Sink asks for one more batch
struct Done {};

struct Reader;  // defined below: the Sink's handler sends to it all the same

struct Sink : coact::Actor<Sink> {
  coact::ActorRef<Reader> reader;
  std::map<std::string, long> total;
  explicit Sink(coact::ActorRef<Reader> r) : reader(std::move(r)) {}
  void on(const Counts& c) {
    for (const auto& [w, n] : c.words) total[w] += n;   // merge
    COACT_PROGRESS("batches");                         // one unit of work done
    reader.send(Credit{});
  }
  void on(const Done&) {
    std::printf("%zu distinct words\n", total.size());
    stop();
  }
};

struct Counter : coact::Actor<Counter> {
  coact::ActorRef<Sink> sink;
  explicit Counter(coact::ActorRef<Sink> s) : sink(std::move(s)) {}
  void on(const Batch& b) {
    Counts c;
    for (const auto& line : b.lines) {
      COACT_SCOPE("tokenize");                         // a finer region inside the handler
      std::istringstream words(line);
      for (std::string w; words >> w;) ++c.words[w];
    }
    sink.send(std::move(c));
  }
  void on(const Done& d) {
    sink.send(d);
    stop();
  }
};

struct Reader : coact::Actor<Reader> {
  coact::ActorRef<Counter> counter;
  steady::time_point end;
  unsigned seed = 1;
  explicit Reader(steady::time_point e) : end(e) {}
  void on(coact::ActorRef<Counter>& c) { counter = c; }
  void on(const Credit&) {
    if (steady::now() >= end) {                        // time is up: Done follows the last batch
      counter.send(Done{});
      stop();
      return;
    }
    static const char* const vocabulary[] = {"actor", "mail", "run", "token", "burst", "worker",
                                             "timer", "delay", "region", "progress", "speedup", "sweep"};
    Batch b;
    for (int i = 0; i < 200; ++i) {
      std::string line;
      for (int k = 0; k < 12; ++k) {
        seed = seed * 1103515245u + 12345u;
        line += vocabulary[(seed >> 16) % 12];
        line += ' ';
      }
      b.lines.push_back(std::move(line));
    }
    counter.send(std::move(b));
  }
};

int main(int argc, char** argv) {
  coact::Runtime rt(argc, argv);                       // --coact-* arguments, COACT_* environment
  double seconds = 0.3;
  if (argc > 2) {
    std::fprintf(stderr, "wordcount: one argument at most, SECONDS (see the file's header)\n");
    return 2;
  }
  if (argc == 2) {
    char* end = nullptr;
    seconds = std::strtod(argv[1], &end);
    if (end == argv[1] || *end != '\0' || !(seconds > 0) || seconds > 1e6) {
      std::fprintf(stderr, "wordcount: SECONDS '%s': want a number of seconds above 0\n", argv[1]);
      return 2;
    }
  }
  const auto end = steady::now() + std::chrono::duration_cast<steady::duration>(
                                       std::chrono::duration<double>(seconds));
  auto reader = rt.spawn<Reader>(end);
  auto sink = rt.spawn<Sink>(reader);
  auto counter = rt.spawn<Counter>(sink);
  reader.send(counter);
  for (int i = 0; i < 4; ++i) reader.send(Credit{});  // four batches in flight
  rt.run();                                            // returns when every actor has stopped
}
