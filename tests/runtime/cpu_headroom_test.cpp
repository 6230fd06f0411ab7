// CpuHeadroom (runtime/src/detail/cpu_headroom.hpp): the /proc/loadavg
// parse, the average of the machine's other runnable threads, and the fit
// rule, driven with a loadavg file the test writes and explicit clocks
// (deterministic); then the real /proc/loadavg once.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "detail/cpu_headroom.hpp"

using coact::detail::CpuHeadroom;

namespace {
constexpr uint64_t kPeriod = CpuHeadroom::kRefreshNs;

struct LoadavgFile {
  std::string path = "/tmp/coact-cpu-headroom-test-" + std::to_string(::getpid());
  explicit LoadavgFile(int runnable) { set(runnable); }
  ~LoadavgFile() { std::remove(path.c_str()); }
  void set(int runnable) const { std::ofstream(path) << "0.52 0.14 0.05 " << runnable << "/110 4242\n"; }
};
}  // namespace

TEST_CASE("cpu headroom: the runnable count of a loadavg line", "[cpu_headroom]") {
  CHECK(CpuHeadroom::parse_runnable("0.52 0.14 0.05 3/110 4242\n") == 3);
  CHECK(CpuHeadroom::parse_runnable("12.00 8.00 4.00 17/2048 99") == 17);
  CHECK(CpuHeadroom::parse_runnable("0.52 0.14 0.05 /110 4242") == -1);
  CHECK(CpuHeadroom::parse_runnable("0.52 0.14 0.05 3") == -1);
  CHECK(CpuHeadroom::parse_runnable("0.52 0.14") == -1);
  CHECK(CpuHeadroom::parse_runnable("") == -1);
  CHECK(CpuHeadroom::parse_runnable("a b c x/1 2") == -1);
}

TEST_CASE("cpu headroom: a client that keeps a CPU busy leaves no room for a second worker", "[cpu_headroom]") {
  // Two CPUs; one worker busy and a client on the other CPU: the kernel
  // counts 2 runnable, 1 of them the worker, so the others average 1.
  LoadavgFile f(2);
  CpuHeadroom h(f.path.c_str(), 2);
  uint64_t now = kPeriod;
  for (int i = 0; i < 64; ++i, now += kPeriod) (void)h.fits(now, 1, 1);
  CHECK(h.fits(now, 1, 1));       // the busy worker itself fits
  CHECK_FALSE(h.fits(now, 1, 2)); // waking a sibling would not: it would take turns
  // The client goes away: the average falls within a few periods (an
  // eighth per sample), and a sibling fits again.
  f.set(1);
  int periods = 0;
  for (; periods < 64 && !h.fits(now, 1, 2); ++periods) now += kPeriod;
  CHECK(periods >= 1);
  CHECK(periods <= 8);
}

TEST_CASE("cpu headroom: the Scheduler's own workers are not counted as other load", "[cpu_headroom]") {
  // Both workers on a CPU and nothing else: 2 runnable, both ours.
  LoadavgFile f(2);
  CpuHeadroom h(f.path.c_str(), 2);
  uint64_t now = kPeriod;
  for (int i = 0; i < 64; ++i, now += kPeriod) CHECK(h.fits(now, 2, 2));
  // A third worker on two CPUs does not fit.
  CHECK_FALSE(h.fits(now, 2, 3));
}

TEST_CASE("cpu headroom: samples are a period apart; between them the average stands", "[cpu_headroom]") {
  LoadavgFile f(0);
  CpuHeadroom h(f.path.c_str(), 2);
  REQUIRE(h.fits(kPeriod, 0, 2));  // sample 1: nothing else runs
  f.set(8);                        // a burst of other load
  for (uint64_t t = kPeriod; t < 2 * kPeriod; t += kPeriod / 10) CHECK(h.fits(t, 0, 2));
  // The next period's sample sees it: E = 8/8 = 1, and 1 + 2 > 2.5.
  CHECK_FALSE(h.fits(2 * kPeriod, 0, 2));
  CHECK(CpuHeadroom::next_average_x256(0, 8) == 256);
}

TEST_CASE("cpu headroom: no loadavg file means no limit", "[cpu_headroom]") {
  CpuHeadroom h("/nonexistent/loadavg", 2);
  CHECK(h.fits(kPeriod, 64, 64));
  LoadavgFile f(0);
  std::ofstream(f.path) << "not a loadavg line\n";
  CpuHeadroom g(f.path.c_str(), 2);
  CHECK(g.fits(kPeriod, 64, 64));
}

TEST_CASE("cpu headroom: the real /proc/loadavg parses", "[cpu_headroom]") {
  // coact runs on Linux, where /proc/loadavg is always there; this thread
  // is running while it reads, so the count is at least 1.
  std::ifstream in("/proc/loadavg");
  std::string line;
  REQUIRE(std::getline(in, line));
  CHECK(CpuHeadroom::parse_runnable(line) >= 1);
}
