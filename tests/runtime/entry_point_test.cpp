// entry_point_test.cpp: what a user sees at a program's entry point for a bad
// COACT_* option (coact/options.hpp): one line naming the key, the value and
// what is accepted, and exit status 2 — never an abort — from a program
// written as the README shows and from the repository's own programs; the
// library entry point throws options::option_error instead. Every program
// runs as a child process (tests/support/child.hpp) with a scrubbed COACT_*
// environment.
//
// Regressions: COACT_HANDOFF_COST_NS=auto was accepted by the runtime and then
// re-read by calibrate's digits-only parser (terminate, SIGABRT, exit 134);
// COACT_WORKERS=100000 and friends printed a clear message and then aborted
// (exit 134) because nothing caught the exception thrown out of
// Runtime(argc, argv).
#include <catch2/catch.hpp>

#include <coact/options.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "support/child.hpp"
#include "support/temp_dir.hpp"

using coact::test::ProgramResult;
using coact::test::run_program;
using coact::test::TempDir;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

int lines_of(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

struct BadInput {
  std::string env;       // KEY=VALUE
  std::string names;     // what the message must contain (key and value)
  std::string accepted;  // ... and what is accepted
};

const std::vector<BadInput>& bad_inputs() {
  static const std::vector<BadInput> v = {
      {"COACT_WORKERS=100000", "COACT_WORKERS='100000'", "0..1024"},
      {"COACT_WORKERS=-1", "COACT_WORKERS='-1'", "0..1024"},
      {"COACT_SPIN_WINDOW_US=abc", "COACT_SPIN_WINDOW_US='abc'", "0..1000000"},
      {"COACT_PEER_STEAL=maybe", "COACT_PEER_STEAL='maybe'", "1/0/true/false/yes/no/on/off"},
      {"COACT_CONFIG=/nonexistent", "COACT_CONFIG='/nonexistent'", "No such file or directory (expected a readable TOML file)"},
      {"COACT_SPIN_WINDOW_USEC=20", "COACT_SPIN_WINDOW_USEC", "use COACT_SPIN_WINDOW_US"},
      {"COACT_TSC_HZ=fast", "COACT_TSC_HZ='fast'", "or 'auto'"},
      {"COACT_CAUSAL_EXPRIMENT_MS=5", "COACT_CAUSAL_EXPRIMENT_MS", "did you mean COACT_CAUSAL_EXPERIMENT_MS?"},
  };
  return v;
}

void check_usage_error(const ProgramResult& r, const std::string& prog, const BadInput& b) {
  INFO("stderr: " << r.err << "stdout: " << r.out);
  CHECK(r.exited(2));
  INFO("status: " << r.describe());
  CHECK(lines_of(r.err) == 1);
  CHECK_THAT(r.err, StartsWith(prog + ": error: ") && Contains(b.names) && Contains(b.accepted));
}

// Every bad input (one SECTION each) ends `argv` with one line and exit 2;
// COACT_HANDOFF_COST_NS=auto from the environment and `extra` arguments
// (--coact-* among the program's own) run to exit 0. Unused where the
// benchmarks and examples are not built (a sanitizer build).
[[maybe_unused]] void check_program(std::vector<std::string> argv, const std::string& prog,
                                    const std::vector<std::string>& extra) {
  for (const BadInput& b : bad_inputs()) {
    SECTION(b.env) { check_usage_error(run_program(argv, {b.env}), prog, b); }
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  const ProgramResult r = run_program(argv, {"COACT_HANDOFF_COST_NS=auto"});
  INFO(prog << ": " << r.describe() << " " << r.err);
  CHECK(r.exited(0));
}

}  // namespace

TEST_CASE("a README-style program: a bad option is one line and exit 2", "[options][entry]") {
  for (const BadInput& b : bad_inputs()) {
    SECTION(b.env) { check_usage_error(run_program({COACT_README_PROGRAM}, {b.env}), "coact-readme-program", b); }
  }
  SECTION("the same on the command line") {
    const ProgramResult r = run_program({COACT_README_PROGRAM, "--coact-workers=100000"});
    check_usage_error(r, "coact-readme-program", {"", "--coact-workers='100000'", "0..1024"});
  }
  SECTION("a sweep's inconsistent keys are found at boot, same line and status") {
    TempDir dir;
    const ProgramResult r = run_program(
        {COACT_README_PROGRAM},
        {"COACT_CAUSAL=1", "COACT_CAUSAL_EXPERIMENT_MS=100", "COACT_CAUSAL_MAX_EXPERIMENT_MS=50",
         "COACT_CAUSAL_OUTPUT=" + (dir.path / "p.coz").string()});
    check_usage_error(r, "coact-readme-program", {"", "COACT_CAUSAL_MAX_EXPERIMENT_MS='50'", "at least"});
  }
  // Regression: a profile output in a missing directory aborted the program
  // (std::system_error from the writer: "terminate called", exit 134) and the
  // JSON one left an empty profile.coz behind.
  SECTION("a sweep output that cannot be written: one line, exit 2, nothing created") {
    TempDir dir;
    const std::string coz = (dir.path / "p.coz").string();
    ProgramResult r = run_program({COACT_README_PROGRAM},
                                  {"COACT_CAUSAL=1", "COACT_CAUSAL_OUTPUT=/nonexistent/dir/p.coz"});
    check_usage_error(r, "coact-readme-program",
                      {"", "COACT_CAUSAL_OUTPUT='/nonexistent/dir/p.coz'", "expected a writable file path"});
    r = run_program({COACT_README_PROGRAM}, {"COACT_CAUSAL=1", "COACT_CAUSAL_OUTPUT=" + coz,
                                             "COACT_CAUSAL_JSON_OUTPUT=/nonexistent/dir/p.jsonl"});
    check_usage_error(r, "coact-readme-program",
                      {"", "COACT_CAUSAL_JSON_OUTPUT='/nonexistent/dir/p.jsonl'", "expected a writable file path"});
    CHECK_FALSE(std::filesystem::exists(coz));
  }
}

TEST_CASE("the library entry point throws options::option_error instead of exiting", "[options][entry]") {
  const ProgramResult r = run_program({COACT_README_PROGRAM, "--library"}, {"COACT_WORKERS=-1"});
  INFO(r.err << r.out);
  CHECK(r.exited(3));
  CHECK_THAT(r.out, StartsWith("caught: COACT_WORKERS='-1' (from environment): expected an integer in 0..1024"));
  CHECK(r.err.empty());
}

TEST_CASE("COACT_HANDOFF_COST_NS=auto works from every source", "[options][entry]") {
  for (const std::string env : {"COACT_HANDOFF_COST_NS=auto", "COACT_HANDOFF_COST_NS=AUTO"}) {
    const ProgramResult r = run_program({COACT_README_PROGRAM}, {env});
    INFO(env << ": " << r.describe() << " " << r.err);
    CHECK(r.exited(0));
    CHECK(r.err.empty());
  }
  const ProgramResult r = run_program({COACT_README_PROGRAM, "--coact-handoff-cost-ns=auto"});
  INFO(r.describe() << " " << r.err);
  CHECK(r.exited(0));
  TempDir dir;
  const std::string toml = (dir.path / "c.toml").string();
  coact::test::write_file(toml, "[calibrate]\nhandoff_cost_ns = \"auto\"\n");
  const ProgramResult f = run_program({COACT_README_PROGRAM}, {"COACT_CONFIG=" + toml});
  INFO(f.describe() << " " << f.err);
  CHECK(f.exited(0));
}

TEST_CASE("Runtime(argc, argv) takes the --coact-* arguments out of argv and leaves the rest", "[options][entry]") {
  const ProgramResult r =
      run_program({COACT_README_PROGRAM, "in.txt", "--coact-workers=2", "-v", "--coact-spin-window-us", "7",
                   "--coact-peer-steal", "--out", "x", "--", "--coact-not-ours"});
  INFO(r.err);
  REQUIRE(r.exited(0));
  CHECK(r.out == "arg: in.txt\narg: -v\narg: --out\narg: x\narg: --\narg: --coact-not-ours\n");
}

TEST_CASE("--coact-help lists every key with its value and source, and exits 0", "[options][entry]") {
  const ProgramResult r = run_program({COACT_README_PROGRAM, "--coact-help", "--coact-workers=3"},
                                      {"COACT_SPIN_WINDOW_US=20"});
  INFO(r.err);
  REQUIRE(r.exited(0));
  CHECK_THAT(r.out, Contains("COACT_WORKERS=3  (command line --coact-workers;"));
  CHECK_THAT(r.out, Contains("COACT_SPIN_WINDOW_US=20  (environment COACT_SPIN_WINDOW_US;"));
  CHECK_THAT(r.out, Contains("COACT_PEER_STEAL=false  (default;"));
  for (const coact::options::Key& k : coact::options::keys()) {
    CHECK_THAT(r.out, Contains(std::string(k.name) + "="));
  }
}

TEST_CASE("every declared key is read by something", "[options][entry]") {
  // A sweep on (so the causal group is read), nothing pinned (so calibrate
  // reads its file setting): afterwards no key may be unread.
  TempDir dir;
  const ProgramResult r = run_program(
      {COACT_README_PROGRAM, "--print-unread"},
      {"COACT_CAUSAL=1", "COACT_CAUSAL_EXPERIMENT_MS=5", "COACT_CAUSAL_OUTPUT=" + (dir.path / "p.coz").string()});
  INFO(r.err);
  REQUIRE(r.exited(0));
  CHECK(r.out.find("unread:") == std::string::npos);
  CHECK_THAT(r.out, Contains("arg: --print-unread"));
}

#ifdef COACT_PEERS_BIN
TEST_CASE("coact-peers: bad options exit 2 with one line; auto works", "[options][entry]") {
  check_program({COACT_PEERS_BIN, "--workload", "ping_pong", "--n", "200", "--workers", "2"}, "coact-peers",
                {"--coact-spin-window-us=10"});
}
#endif

#ifdef COACT_KNOWN_ANSWER_BIN
TEST_CASE("coact-known-answer: bad options exit 2 with one line; auto works", "[options][entry]") {
  check_program({COACT_KNOWN_ANSWER_BIN, "--workload", "pipeline", "--seconds", "0.05", "--warmup-s", "0"},
                "coact-known-answer", {"--coact-handoff-cost-ns=auto"});  // our flag among CLI11's options
}
#endif

#ifdef COACT_DEDUP_BIN
TEST_CASE("coact-dedup: bad options exit 2 with one line; --coact-* beside CLI11; auto works", "[options][entry]") {
  TempDir dir;
  const std::string out = (dir.path / "a.cdar").string();
  check_program({COACT_DEDUP_BIN, "archive", "--coact-workers=2", COACT_SOURCE_DIR "/tests/support", "-o", out,
                 "--passes", "1", "-q"},
                "coact-dedup", {"--coact-handoff-cost-ns", "auto"});  // beside CLI11's subcommand options
  CHECK(std::filesystem::exists(out));
}
#endif

#ifdef COACT_PROFILE_BIN
TEST_CASE("coact-profile run: a child's bad option is one line and exit 2", "[options][entry]") {
  TempDir dir;
  for (const BadInput& b : bad_inputs()) {
    // coact-profile replaces inherited COACT_CAUSAL* keys with its own options (and says so).
    if (b.env.starts_with("COACT_CAUSAL")) continue;
    SECTION(b.env) {
      const ProgramResult r =
          run_program({COACT_PROFILE_BIN, "run", "-q", "--experiments", "1", "-o", (dir.path / "p.coz").string(), "--",
                       COACT_README_PROGRAM},
                      {b.env});
      INFO("stderr: " << r.err);
      CHECK(r.exited(2));
      CHECK_THAT(r.err, Contains(b.names) && Contains(b.accepted));
      CHECK(r.err.find("terminate") == std::string::npos);
    }
  }
}
#endif
