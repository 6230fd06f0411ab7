// analytics/analytics.hpp: a fan-out/fan-in analytics job on coact actors.
//
//   Coordinator --Batch--> Worker x N --Partial--> Coordinator
//
// One job = the whole corpus of access-log lines (make_corpus) cut into
// `batches` batches, all sent at once to N Worker actors round-robin (fan
// out); each Worker parses its lines and aggregates them (requests, bytes,
// latency and errors per endpoint, status classes) and replies one Partial;
// the Coordinator merges the partials (fan in) and, when the last one of the
// job arrives, counts the progress point "jobs" (COACT_PROGRESS), checks the
// job's aggregate against the first job's, and starts the next job. Jobs
// repeat until RunOptions::seconds have passed (at least one job runs).
// The job's time is the longest Worker's share plus the merge: the barrier
// of a fork-join, not the archiver's pipeline.
//
// The really-faster variant (RunOptions::fast_parse, `coact-analytics
// --fast-parse`): the Workers parse with parse_fast (string_view fields,
// std::from_chars, a transparent map lookup) instead of parse_simple
// (std::istringstream, std::stoull, a std::string key per line). Both give
// the same Aggregate for every line (tests/examples/analytics_test.cpp), so
// the variant changes only Worker::on(Batch)'s time. RunOptions::alternate
// runs both in one run: the jobs after the first block of kAlternateBlock
// alternate by blocks, A B B A ... (A: parse_simple), and RunStats says what
// each arm took (examples/common/alternation.hpp).
//
// Threads: run() blocks its caller (not a coact handler) while the actors
// run on the Runtime's workers. Errors: run() throws std::runtime_error if a
// job's aggregate differs from the first job's (a parser bug) or an option is
// out of range.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <coact/runtime/runtime.hpp>

#include "common/alternation.hpp"

namespace coact::analytics {

/// Requests of one endpoint ("METHOD /path/with/:id").
struct EndpointStat {
  uint64_t requests = 0, bytes = 0, latency_us = 0, errors = 0;  ///< errors: status >= 500
  bool operator==(const EndpointStat&) const = default;
};

/// What a set of lines adds up to; merge() is associative and commutative.
struct Aggregate {
  uint64_t lines = 0, malformed = 0, bytes = 0;
  std::array<uint64_t, 6> status_class{};  ///< [k]: statuses k00..k99 (k = 1..5)
  std::map<std::string, EndpointStat, std::less<>> endpoints;
  void merge(const Aggregate& o);
  bool operator==(const Aggregate&) const = default;
};

/// Parses one access-log line into `a`. A line is well formed when its
/// space-separated fields are: ip, ident, user, [time, zone], "METHOD, path,
/// PROTO", status (three digits, 100..599), bytes and latency in
/// microseconds (1..18 digits each); fields after the eleventh are ignored.
/// The endpoint is METHOD and the path with every all-digit segment replaced
/// by ":id". A malformed line counts in lines and malformed only. The two
/// parsers give the same result for every line; parse_fast allocates only
/// for an endpoint not yet in `a`. Thread: any.
void parse_simple(std::string_view line, Aggregate& a);
void parse_fast(std::string_view line, Aggregate& a);

/// `lines` deterministic access-log lines (seeded; about 1 in 200 malformed).
std::vector<std::string> make_corpus(size_t lines, uint64_t seed = 1);

struct RunOptions {
  size_t lines = 8192;       ///< corpus lines per job
  uint32_t batches = 32;     ///< batches per job, 1..4096
  uint32_t workers = 4;      ///< Worker actors, 1..256
  double seconds = 1;        ///< run jobs until this much time passed (at least one job)
  bool fast_parse = false;   ///< Workers use parse_fast (the really-faster variant)
  /// Blocks of kAlternateBlock jobs alternate parse_simple and parse_fast
  /// (fast_parse is then ignored); RunStats::alternation has each arm.
  bool alternate = false;
};

/// Jobs per unit of RunOptions::alternate: long enough that a Worker visit
/// still closing when its block ends (its region counters are read as the
/// next block starts) is a small part of a block, short enough to follow
/// the machine's drifting speed.
inline constexpr uint64_t kAlternateBlock = 16;

struct RunStats {
  uint64_t jobs = 0;
  double seconds = 0;
  Aggregate last;  ///< the last job's aggregate (every job's is the same)
  /// With RunOptions::alternate: the whole blocks' seconds and region
  /// counters per arm (the last, unfinished block is in neither).
  examples::Alternation alternation;
};

/// Runs jobs on `rt` as RunOptions says; see the file comment. Not from a handler.
RunStats run(Runtime& rt, const RunOptions& opt);

// ---- messages and actors ---------------------------------------------------------

struct Worker;
struct Coordinator;

struct Start {  ///< driver -> Coordinator: the Workers, then go
  std::vector<ActorRef<Worker>> workers;
};
struct Batch {  ///< Coordinator -> Worker: lines [begin, end) of the corpus
  uint64_t job;
  uint32_t begin, end;
  bool fast;  ///< parse with parse_fast
};
struct Partial {  ///< Worker -> Coordinator
  uint64_t job;
  Aggregate agg;
};
struct Stop {};  ///< Coordinator -> Worker: no more batches

/// State the actors share for one run; lives as long as the longest holder.
struct JobContext {
  RunOptions opt;
  std::vector<std::string> corpus;
  std::chrono::steady_clock::time_point end;
  RunStats stats;         ///< written by the Coordinator when it stops; read by run() after rt.run()
  std::string error;      ///< a job whose aggregate differed (same protocol as stats)
};

struct Worker : Actor<Worker> {
  Worker(std::shared_ptr<JobContext> ctx, ActorRef<Coordinator> coordinator);
  void on(const Batch& b);
  void on(Stop);

 private:
  std::shared_ptr<JobContext> ctx_;
  ActorRef<Coordinator> coordinator_;
};

struct Coordinator : Actor<Coordinator> {
  explicit Coordinator(std::shared_ptr<JobContext> ctx);
  void on(Start& s);
  void on(Partial& p);

 private:
  void start_job();
  void finish();

  std::shared_ptr<JobContext> ctx_;
  std::vector<ActorRef<Worker>> workers_;
  uint64_t job_ = 0;
  uint32_t received_ = 0;
  Aggregate merged_, first_;
  std::chrono::steady_clock::time_point t0_;
  std::chrono::steady_clock::time_point block_t0_;  // RunOptions::alternate: the current block's start
};

}  // namespace coact::analytics
