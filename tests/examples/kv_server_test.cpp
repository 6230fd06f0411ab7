// coact-kv's server (examples/kv/server.hpp) over real sockets: pipelined
// requests are answered in order across shards; malformed or oversized
// requests get an -ERR and a closed connection without hurting the others;
// a client that never reads stops being read; 10,000 idle connections cost
// a bounded amount of memory; resets mid-request are survived; a drain
// answers what was read and then run() returns; idle clients time out.
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <coact/runtime/runtime.hpp>

#include "kv/server.hpp"
#include "support/loopback.hpp"
#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

using namespace std::chrono_literals;
namespace kv = coact::kv;

namespace {

int connect_to(uint16_t port) {
  const int fd = coact::test::connect_loopback(port);
  REQUIRE(fd >= 0);
  return fd;
}

void send_all(int fd, const std::string& s) { REQUIRE(coact::test::send_all(fd, s)); }

// Reads until `want` bytes arrived, EOF or the receive timeout.
std::string read_n(int fd, size_t want) {
  std::string got;
  char buf[4096];
  while (got.size() < want) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, size_t(n));
  }
  return got;
}

// Reads until EOF (or the receive timeout): true if the peer closed.
bool read_to_eof(int fd, std::string* got = nullptr) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return true;
    if (n < 0) return false;
    if (got) got->append(buf, size_t(n));
  }
}

std::string cmd(std::initializer_list<std::string> args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// A server on an ephemeral port in its own Runtime; the destructor drains
// it and waits for run() to return.
struct TestServer {
  explicit TestServer(kv::ServerOptions opt = {}, uint32_t workers = 2) : rt(coact::test::tuning_for(workers)) {
    opt.port = 0;
    server = kv::start(rt, opt);
    runner = std::thread([this] { rt.run(); });
  }
  ~TestServer() {
    server.drain();
    runner.join();
  }
  coact::Runtime rt;
  kv::Server server;
  std::thread runner;
};

}  // namespace

TEST_CASE("kv answers pipelined requests in order across shards", "[kv]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 4));
  coact::test::Watchdog wd(60, "kv pipelining");
  TestServer ts({}, workers);
  const int fd = connect_to(ts.server.port);
  std::string req, want;
  for (int i = 0; i < 200; ++i) {
    const std::string k = "key:" + std::to_string(i);
    req += cmd({"SET", k, "v" + std::to_string(i)});
    want += "+OK\r\n";
    req += cmd({"INCR", "n:" + std::to_string(i % 7)});
    want += ":" + std::to_string(i / 7 + 1) + "\r\n";
    req += cmd({"GET", k});
    const std::string v = "v" + std::to_string(i);
    want += "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n";
  }
  req += cmd({"MGET", "key:0", "missing", "key:199"});
  want += "*3\r\n$2\r\nv0\r\n$-1\r\n$4\r\nv199\r\n";
  req += cmd({"DEL", "key:0", "key:1", "missing"});
  want += ":2\r\n";
  req += cmd({"EXISTS", "key:0", "key:2"});
  want += ":1\r\n";
  req += "PING\r\n";  // inline
  want += "+PONG\r\n";
  req += cmd({"GET"});
  want += "-ERR wrong number of arguments for 'get' command\r\n";
  send_all(fd, req);
  CHECK(read_n(fd, want.size()) == want);
  ::close(fd);
  CHECK(ts.server.stats->protocol_errors.load() == 0);
}

// Requests read while the pipeline was full waited in the connection's
// buffer with nothing left in the socket to report them, so a client that
// sent more than --max-pipeline requests at once waited forever.
TEST_CASE("kv answers a pipeline deeper than its pipeline bound", "[kv]") {
  coact::test::Watchdog wd(60, "kv deep pipeline");
  kv::ServerOptions opt;
  opt.max_pipeline = 4;
  opt.max_output_bytes = 1024;
  TestServer ts(opt);
  const int fd = connect_to(ts.server.port);
  std::string req, want;
  for (int i = 0; i < 300; ++i) {
    req += cmd({"INCR", "n"});
    want += ":" + std::to_string(i + 1) + "\r\n";
  }
  send_all(fd, req);
  CHECK(read_n(fd, want.size()) == want);
  ::close(fd);
}

TEST_CASE("kv answers a malformed request with an error and closes only that connection", "[kv]") {
  coact::test::Watchdog wd(60, "kv malformed");
  kv::ServerOptions opt;
  opt.limits.max_request_bytes = 4096;
  TestServer ts(opt);
  const int good = connect_to(ts.server.port);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"*1\r\n!3\r\nGET\r\n", "Protocol error"},           // bad type byte inside an array
      {"*1\r\n$-5\r\n", "Protocol error"},                 // negative length
      {"*1\r\n$99999999999\r\n", "Protocol error"},        // huge length: refused before allocating
      {"*99999999999\r\n", "Protocol error"},              // huge array
      {"*1\r\n$3\r\nGETxx", "Protocol error"},             // bulk data without its CRLF
      {std::string(5000, 'A'), "Protocol error"},          // an inline line over the limit, no CRLF
      {"*2\r\n$3\r\nSET\r\n$5000\r\n", "Protocol error"},  // one request over --max-request
  };
  for (const auto& [input, expect] : bad) {
    const int fd = connect_to(ts.server.port);
    send_all(fd, input);
    std::string got;
    INFO("input: " << input.substr(0, 40));
    CHECK(read_to_eof(fd, &got));  // the server closed the connection
    if (!expect.empty()) {
      CHECK(got.rfind("-ERR", 0) == 0);
      CHECK(got.find(expect) != std::string::npos);
    }
    ::close(fd);
    // The other connection is still answered.
    send_all(good, cmd({"PING"}));
    CHECK(read_n(good, 7) == "+PONG\r\n");
  }
  // Binary garbage on a line reads as an inline command nobody knows: an
  // error reply, and the connection stays usable (as with Redis).
  const int fd = connect_to(ts.server.port);
  send_all(fd, std::string("\x00\xff\xfe*\r\n", 6));
  const std::string got = read_n(fd, 4);
  CHECK(got.rfind("-ERR unknown command", 0) == 0);
  ::close(fd);
  ::close(good);
  CHECK(ts.server.stats->protocol_errors.load() == bad.size());
}

TEST_CASE("kv stops reading a client that never reads its replies and keeps answering the others", "[kv]") {
  coact::test::Watchdog wd(60, "kv slow reader");
  kv::ServerOptions opt;
  opt.max_output_bytes = 256 * 1024;
  opt.max_pipeline = 16;  // output held: at most 256 KiB + 16 replies of 64 KiB
  TestServer ts(opt);
  const int setter = connect_to(ts.server.port);
  const std::string big(64 * 1024, 'b');
  send_all(setter, cmd({"SET", "big", big}));
  CHECK(read_n(setter, 5) == "+OK\r\n");
  const long rss_before = rss_kib();
  // GET big, pipelined, never read: each reply is 64 KiB.
  const int slow = connect_to(ts.server.port);
  timeval tv{0, 300'000};
  ::setsockopt(slow, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const std::string get = cmd({"GET", "big"});
  std::string burst;
  for (int i = 0; i < 1000; ++i) burst += get;
  size_t sent = 0;
  for (int round = 0; round < 200; ++round) {
    const ssize_t n = ::send(slow, burst.data(), burst.size(), MSG_NOSIGNAL);
    if (n <= 0) break;  // the server stopped reading us
    sent += size_t(n);
  }
  const long rss_after = rss_kib();
  INFO("request bytes accepted from the slow client: " << sent << "; RSS " << rss_before << " -> " << rss_after
                                                       << " KiB");
  CHECK(sent < 200 * burst.size());
  // Replies held for it: at most the output bound plus one reply (and what
  // the kernel buffers, outside RSS); the allocator may keep a few MiB.
  CHECK(rss_after - rss_before < 16 * 1024);
  send_all(setter, cmd({"PING"}));
  CHECK(read_n(setter, 7) == "+PONG\r\n");
  ::close(slow);
  ::close(setter);
}

TEST_CASE("kv holds 10000 idle connections in bounded memory and answers another client", "[kv][stress]") {
  coact::test::Watchdog wd(120, "kv idle connections");
  constexpr int kIdle = 10000;
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = r.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &r);
  if (r.rlim_cur < kIdle + 200) {
    WARN("RLIMIT_NOFILE hard limit " << r.rlim_max << " is below " << kIdle + 200 << ": test skipped");
    return;
  }
  kv::ServerOptions opt;
  opt.max_clients = kIdle + 10;
  TestServer ts(opt);
  const long rss_before = rss_kib();
  // The clients live in another process (its own descriptor limit): it
  // connects kIdle sockets and holds them until its stdin closes.
  const std::string script =
      "import socket,sys,resource\n"
      "h=resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
      "resource.setrlimit(resource.RLIMIT_NOFILE,(h,h))\n"
      "s=[socket.create_connection(('127.0.0.1'," +
      std::to_string(ts.server.port) + ")) for _ in range(" + std::to_string(kIdle) +
      ")]\n"
      "sys.stdin.read()\n";
  FILE* clients = ::popen(("/usr/bin/python3 -c \"" + script + "\"").c_str(), "w");
  REQUIRE(clients != nullptr);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (ts.server.stats->open.load() < uint64_t(kIdle) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  CHECK(ts.server.stats->open.load() == uint64_t(kIdle));
  const long per_conn_bytes = (rss_kib() - rss_before) * 1024 / kIdle;
  INFO("server memory per idle connection (RSS growth): " << per_conn_bytes << " B");
  CHECK(per_conn_bytes < 2048);
  const int fd = connect_to(ts.server.port);
  send_all(fd, cmd({"PING"}));
  CHECK(read_n(fd, 7) == "+PONG\r\n");
  ::close(fd);
  ::pclose(clients);  // the clients close; the server sees EOF on each
  const auto closed_by = std::chrono::steady_clock::now() + 60s;
  while (ts.server.stats->open.load() > 0 && std::chrono::steady_clock::now() < closed_by)
    std::this_thread::sleep_for(5ms);
  CHECK(ts.server.stats->open.load() == 0u);
}

TEST_CASE("kv survives clients that reset mid-request", "[kv]") {
  coact::test::Watchdog wd(60, "kv resets");
  TestServer ts;
  for (int i = 0; i < 50; ++i) {
    const int fd = connect_to(ts.server.port);
    send_all(fd, cmd({"SET", "k", std::string(3000, 'x')}).substr(0, 1500));  // half a request
    linger lg{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    ::close(fd);  // RST
  }
  const int fd = connect_to(ts.server.port);
  send_all(fd, cmd({"PING"}));
  CHECK(read_n(fd, 7) == "+PONG\r\n");
  ::close(fd);
}

TEST_CASE("a drained kv answers every request it read, closes, and run() returns", "[kv]") {
  coact::test::Watchdog wd(60, "kv drain");
  coact::Runtime rt(coact::test::tuning_for(2));
  kv::ServerOptions opt;
  opt.port = 0;
  opt.shard_cost = 200us;  // replies still owed when the drain starts
  const kv::Server server = kv::start(rt, opt);
  std::thread runner([&] { rt.run(); });
  const int fd = connect_to(server.port);
  std::string req;
  for (int i = 0; i < 500; ++i) req += cmd({"SET", "k" + std::to_string(i), "v"});
  send_all(fd, req);
  // Wait until the server has read all of it (a request read is a request answered).
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (server.stats->requests.load() < 500 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  server.drain();
  std::string got;
  CHECK(read_to_eof(fd, &got));
  std::string want;
  for (int i = 0; i < 500; ++i) want += "+OK\r\n";
  CHECK(got == want);
  ::close(fd);
  runner.join();  // run() returned: every actor stopped
  CHECK(rt.stats().live == 0u);
}

TEST_CASE("kv closes a client idle longer than the idle timeout", "[kv]") {
  coact::test::Watchdog wd(60, "kv idle timeout");
  kv::ServerOptions opt;
  opt.idle_timeout = 1s;
  TestServer ts(opt);
  const int fd = connect_to(ts.server.port);
  send_all(fd, cmd({"PING"}));
  CHECK(read_n(fd, 7) == "+PONG\r\n");
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(read_to_eof(fd));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(waited > 0.8);
  CHECK(waited < 5.0);
  CHECK(ts.server.stats->idle_closed.load() == 1);
  ::close(fd);
}
