// coact-analytics (examples/analytics): the really-faster parser gives the
// baseline's aggregate for every line, and a run of either gives the same
// jobs' aggregates.
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <coact/runtime/runtime.hpp>

#include "analytics/analytics.hpp"
#include "support/watchdog.hpp"

namespace an = coact::analytics;
using coact::test::tuning_for;
using coact::test::Watchdog;

namespace {

an::Aggregate parse_all(const std::vector<std::string>& lines, bool fast) {
  an::Aggregate a;
  for (const auto& l : lines) (fast ? an::parse_fast : an::parse_simple)(l, a);
  return a;
}

}  // namespace

TEST_CASE("parse_fast aggregates every corpus line as parse_simple does", "[analytics]") {
  const auto corpus = an::make_corpus(20'000, 7);
  const an::Aggregate simple = parse_all(corpus, false);
  CHECK(parse_all(corpus, true) == simple);
  CHECK(simple.lines == 20'000);
  CHECK(simple.malformed > 0);  // the corpus has truncated lines and bad statuses
  CHECK(simple.malformed < 400);
  CHECK(simple.endpoints.count("GET /api/v1/items/:id") == 1);
  CHECK(simple.endpoints.count("GET /api/v1/items/:id/history") == 1);
  CHECK(simple.status_class[5] > 0);
}

TEST_CASE("parse_fast and parse_simple agree on odd and garbled lines", "[analytics]") {
  const std::vector<std::string> odd{
      R"(1.2.3.4 - - [t +0] "GET / HTTP/1.1" 200 10 20)",
      R"(1.2.3.4 - - [t +0] "GET /a/ HTTP/1.1" 200 10 20)",
      R"(1.2.3.4 - - [t +0] "GET //x//12// HTTP/1.1" 404 0 5)",
      R"(1.2.3.4 - - [t +0] "GET abc HTTP/1.1" 503 1 1 trailing fields)",
      "1.2.3.4\t-  - [t +0] \"PUT /u/7 HTTP/1.1\"  201 3 4",
      R"(1.2.3.4 - - [t +0] "GET /x HTTP/1.1" 099 1 1)",
      R"(1.2.3.4 - - [t +0] "GET /x HTTP/1.1" 600 1 1)",
      R"(1.2.3.4 - - [t +0] "GET /x HTTP/1.1" 2000 1 1)",
      R"(1.2.3.4 - - [t +0] "GET /x HTTP/1.1" 200 -1 1)",
      R"(1.2.3.4 - - [t +0] "GET /x HTTP/1.1" 200 1234567890123456789 1)",
      R"(1.2.3.4 - - [t +0] GET /x HTTP/1.1 200 1 1)",
      R"(1.2.3.4 - - [t +0] " /x HTTP/1.1" 200 1 1)",
      R"(1.2.3.4 - - [t +0] "GET /x HTTP/1.1" 200 1)",
      "",
      "   ",
  };
  for (const auto& l : odd) {
    INFO(l);
    an::Aggregate a, b;
    an::parse_simple(l, a);
    an::parse_fast(l, b);
    CHECK(a == b);
  }
  CHECK(parse_all(odd, false).malformed == 10);
  // Random byte damage to real lines: the two still agree line by line.
  auto corpus = an::make_corpus(3000, 3);
  std::mt19937_64 rng(5);
  for (auto& l : corpus) {
    if (l.empty()) continue;
    for (int k = 0; k < 2; ++k) l[rng() % l.size()] = " /\"0a9"[rng() % 6];
    an::Aggregate a, b;
    an::parse_simple(l, a);
    an::parse_fast(l, b);
    REQUIRE(a == b);
  }
}

TEST_CASE("a run of jobs joins every batch; the fast parser gives the same aggregates", "[analytics]") {
  Watchdog wd(60, "analytics run");
  an::RunOptions opt;
  opt.lines = 2000;
  opt.batches = 7;  // batches of unequal size
  opt.workers = 3;
  opt.seconds = 0.2;
  an::Aggregate base;
  for (bool fast : {false, true}) {
    INFO("fast " << fast);
    coact::Runtime rt(tuning_for(2));
    opt.fast_parse = fast;
    const an::RunStats s = an::run(rt, opt);
    CHECK(s.jobs >= 1);
    CHECK(s.last.lines == 2000);
    if (!fast)
      base = s.last;
    else
      CHECK(s.last == base);
  }
  CHECK(base == parse_all(an::make_corpus(2000), false));
}

TEST_CASE("--alternate runs blocks of jobs A B B A, the fast parser's blocks faster", "[analytics]") {
  Watchdog wd(60, "analytics alternate");
  an::RunOptions opt;
  opt.lines = 2000;
  opt.batches = 8;
  opt.seconds = 0.5;
  opt.fast_parse = true;
  opt.alternate = true;
  coact::Runtime rt(tuning_for(2));
  const an::RunStats s = an::run(rt, opt);  // throws if the two parsers' jobs aggregated differently
  const nlohmann::json j = s.alternation.to_json("block of jobs", an::kAlternateBlock);
  CHECK(j["order"] == "ABBA");
  CHECK(j["progress_per_unit"] == an::kAlternateBlock);
  const auto& a = j["baseline"]["seconds"];
  const auto& b = j["variant"]["seconds"];
  REQUIRE(a.size() >= 2);
  REQUIRE(b.size() >= 2);
  // Whole blocks after the first, A B B A ...: the arms differ by at most two blocks.
  const uint64_t whole = s.jobs / an::kAlternateBlock - 1;  // the last block may be unfinished
  CHECK(a.size() + b.size() >= whole);
  CHECK(a.size() + b.size() <= whole + 1);
  CHECK((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) <= 2);
  double sa = 0, sb = 0;
  for (double x : a) sa += x;
  for (double x : b) sb += x;
  CHECK(sb / double(b.size()) < sa / double(a.size()));  // parse_fast is several times faster
  CHECK(j["baseline"]["regions"].empty());  // region counters run only under a sweep
}
