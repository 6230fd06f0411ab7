// analytics/analytics.cpp: the parsers, the corpus, the actors and the
// driver of the fan-out/fan-in job (analytics.hpp).
#include "analytics/analytics.hpp"

#include <charconv>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include <coact/causal/progress.hpp>

namespace coact::analytics {

void Aggregate::merge(const Aggregate& o) {
  lines += o.lines;
  malformed += o.malformed;
  bytes += o.bytes;
  for (size_t k = 0; k < status_class.size(); ++k) status_class[k] += o.status_class[k];
  for (const auto& [key, s] : o.endpoints) {
    EndpointStat& d = endpoints[key];
    d.requests += s.requests;
    d.bytes += s.bytes;
    d.latency_us += s.latency_us;
    d.errors += s.errors;
  }
}

namespace {

bool all_digits(std::string_view s, size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

void count(Aggregate& a, EndpointStat& e, unsigned status, uint64_t bytes, uint64_t latency_us) {
  ++a.status_class[status / 100];
  a.bytes += bytes;
  ++e.requests;
  e.bytes += bytes;
  e.latency_us += latency_us;
  e.errors += status >= 500 ? 1 : 0;
}

}  // namespace

// The baseline: the fields through a stream, numbers through std::sto*, the
// endpoint built segment by segment as std::strings.
void parse_simple(std::string_view line, Aggregate& a) {
  ++a.lines;
  std::istringstream in{std::string(line)};
  std::string ip, ident, user, time, zone, method, path, proto, status, bytes, latency;
  in >> ip >> ident >> user >> time >> zone >> method >> path >> proto >> status >> bytes >> latency;
  if (!in || method.size() < 2 || method.front() != '"' || proto.empty() || proto.back() != '"' ||
      !all_digits(status, 3) || status.size() != 3 || !all_digits(bytes, 18) || !all_digits(latency, 18)) {
    ++a.malformed;
    return;
  }
  const unsigned st = static_cast<unsigned>(std::stoul(status));
  if (st < 100 || st > 599) {
    ++a.malformed;
    return;
  }
  std::string endpoint = method.substr(1) + " ";
  std::istringstream segs(path);
  std::vector<std::string> parts;
  for (std::string seg; std::getline(segs, seg, '/');) parts.push_back(seg);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) endpoint += "/";
    endpoint += all_digits(parts[i], SIZE_MAX) ? std::string(":id") : parts[i];
  }
  if (!path.empty() && path.back() == '/') endpoint += "/";  // getline drops a trailing empty segment
  count(a, a.endpoints[endpoint], st, std::stoull(bytes), std::stoull(latency));
}

// The really-faster parser: string_view fields, std::from_chars, the
// endpoint assembled in one reused buffer and looked up without a key copy.
void parse_fast(std::string_view line, Aggregate& a) {
  ++a.lines;
  std::array<std::string_view, 11> f;
  size_t n = 0, i = 0;
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  while (n < f.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    if (i == line.size()) break;
    const size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    f[n++] = line.substr(start, i - start);
  }
  const std::string_view method = f[5], path = f[6], proto = f[7], status = f[8], bytes = f[9], latency = f[10];
  if (n < f.size() || method.size() < 2 || method.front() != '"' || proto.back() != '"' ||
      status.size() != 3 || !all_digits(status, 3) || !all_digits(bytes, 18) || !all_digits(latency, 18)) {
    ++a.malformed;
    return;
  }
  unsigned st = 0;
  uint64_t b = 0, l = 0;
  std::from_chars(status.data(), status.data() + status.size(), st);
  if (st < 100 || st > 599) {
    ++a.malformed;
    return;
  }
  std::from_chars(bytes.data(), bytes.data() + bytes.size(), b);
  std::from_chars(latency.data(), latency.data() + latency.size(), l);
  thread_local std::string endpoint;
  endpoint.assign(method.substr(1));
  endpoint += ' ';
  for (size_t p = 0; p <= path.size();) {
    size_t q = path.find('/', p);
    if (q == std::string_view::npos) q = path.size();
    const std::string_view seg = path.substr(p, q - p);
    if (p > 0) endpoint += '/';
    if (all_digits(seg, SIZE_MAX))
      endpoint += ":id";
    else
      endpoint += seg;
    p = q + 1;
    if (q == path.size()) break;
  }
  auto it = a.endpoints.find(std::string_view(endpoint));
  if (it == a.endpoints.end()) it = a.endpoints.emplace(endpoint, EndpointStat{}).first;
  count(a, it->second, st, b, l);
}

std::vector<std::string> make_corpus(size_t lines, uint64_t seed) {
  static const char* const kMethods[] = {"GET", "GET", "GET", "POST", "PUT", "DELETE"};
  static const char* const kPaths[] = {"/api/v1/items/", "/api/v1/users/", "/api/v1/orders/", "/static/app.js",
                                       "/health", "/api/v2/search", "/api/v1/users/", "/img/logo.png"};
  static const unsigned kStatus[] = {200, 200, 200, 200, 201, 204, 301, 304, 404, 500, 503, 200};
  uint64_t x = seed;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::vector<std::string> out;
  out.reserve(lines);
  char buf[256];
  for (size_t i = 0; i < lines; ++i) {
    const uint64_t r = next();
    const char* path = kPaths[r % 8];
    std::string p = path;
    if (p.back() == '/') p += std::to_string((r >> 8) % 100000) + ((r >> 30) % 3 == 0 ? "/history" : "");
    const int n = std::snprintf(buf, sizeof buf, "10.%u.%u.%u - - [01/Dec/2026:%02u:%02u:%02u +0000] \"%s %s HTTP/1.1\" %u %llu %llu",
                                unsigned((r >> 3) % 256), unsigned((r >> 11) % 256), unsigned((r >> 19) % 256),
                                unsigned((r >> 27) % 24), unsigned((r >> 32) % 60), unsigned((r >> 38) % 60),
                                kMethods[(r >> 44) % 6], p.c_str(), kStatus[(r >> 47) % 12],
                                static_cast<unsigned long long>((r >> 20) % 200000),
                                static_cast<unsigned long long>(100 + (r >> 40) % 50000));
    std::string line(buf, static_cast<size_t>(n));
    if (r % 200 == 7) line.resize(line.size() / 2);           // truncated: malformed
    if (r % 200 == 11) line.replace(line.rfind('"') + 2, 3, "2x0");  // a bad status: malformed
    out.push_back(std::move(line));
  }
  return out;
}

// ---- actors -----------------------------------------------------------------

Worker::Worker(std::shared_ptr<JobContext> ctx, ActorRef<Coordinator> coordinator)
    : ctx_(std::move(ctx)), coordinator_(std::move(coordinator)) {}

void Worker::on(const Batch& b) {
  Aggregate a;
  const bool fast = b.fast;
  for (uint32_t i = b.begin; i < b.end; ++i) {
    if (fast)
      parse_fast(ctx_->corpus[i], a);
    else
      parse_simple(ctx_->corpus[i], a);
  }
  coordinator_.send(Partial{b.job, std::move(a)});
}

void Worker::on(Stop) { stop(); }

Coordinator::Coordinator(std::shared_ptr<JobContext> ctx) : ctx_(std::move(ctx)) {}

void Coordinator::on(Start& s) {
  workers_ = std::move(s.workers);
  t0_ = std::chrono::steady_clock::now();
  start_job();
}

// Fans the job's batches out: batch k covers lines [k L / B, (k+1) L / B).
void Coordinator::start_job() {
  merged_ = Aggregate{};
  received_ = 0;
  bool fast = ctx_->opt.fast_parse;
  if (ctx_->opt.alternate) {
    if (job_ % kAlternateBlock == 0) {  // a block ends (but the first) and the next begins
      const auto now = std::chrono::steady_clock::now();
      if (job_ > 0) ctx_->stats.alternation.end(std::chrono::duration<double>(now - block_t0_).count());
      ctx_->stats.alternation.begin(job_ / kAlternateBlock);
      block_t0_ = now;
    }
    fast = examples::Alternation::arm_of(job_ / kAlternateBlock) == 1;
  }
  const uint64_t lines = ctx_->corpus.size(), batches = ctx_->opt.batches;
  for (uint64_t k = 0; k < batches; ++k) {
    workers_[k % workers_.size()].send(Batch{job_, static_cast<uint32_t>(k * lines / batches),
                                             static_cast<uint32_t>((k + 1) * lines / batches), fast});
  }
}

// Fans a partial in; the job's last one ends the job (see the file comment).
void Coordinator::on(Partial& p) {
  merged_.merge(p.agg);
  if (++received_ < ctx_->opt.batches) return;
  COACT_PROGRESS("jobs");
  if (job_ == 0) {
    first_ = merged_;
  } else if (!(merged_ == first_) && ctx_->error.empty()) {
    ctx_->error = "job " + std::to_string(job_) + " aggregated differently from job 0";
  }
  ++job_;
  if (std::chrono::steady_clock::now() >= ctx_->end || !ctx_->error.empty()) {
    finish();
    return;
  }
  start_job();
}

void Coordinator::finish() {
  ctx_->stats.jobs = job_;
  ctx_->stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  ctx_->stats.last = merged_;
  for (auto& w : workers_) w.send(Stop{});
  stop();
}

// ---- driver -----------------------------------------------------------------

RunStats run(Runtime& rt, const RunOptions& opt) {
  if (opt.lines < 1 || opt.lines > UINT32_MAX) throw std::runtime_error("lines must be 1..4294967295");
  if (opt.batches < 1 || opt.batches > 4096 || opt.batches > opt.lines)
    throw std::runtime_error("batches must be 1..4096 and at most the lines");
  if (opt.workers < 1 || opt.workers > 256) throw std::runtime_error("workers must be 1..256");
  auto ctx = std::make_shared<JobContext>();
  ctx->opt = opt;
  ctx->corpus = make_corpus(opt.lines);
  ctx->end = std::chrono::steady_clock::now() +
             std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(opt.seconds));
  auto coordinator = rt.spawn<Coordinator>(ctx);
  std::vector<ActorRef<Worker>> workers;
  for (uint32_t i = 0; i < opt.workers; ++i) workers.push_back(rt.spawn<Worker>(ctx, coordinator));
  coordinator.send(Start{std::move(workers)});
  rt.run();
  if (!ctx->error.empty()) throw std::runtime_error(ctx->error);
  return ctx->stats;
}

}  // namespace coact::analytics
