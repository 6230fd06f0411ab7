// kv example (examples/kv): the RESP2 parser (arrays, inline commands,
// pipelining, byte-by-byte arrival, malformed and oversized input), the reply
// encoders' bytes, the shard store's Redis semantics under a test-controlled
// clock, shard selection and the command table.
#include <chrono>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "kv/resp.hpp"
#include "kv/store.hpp"

using namespace std::string_literals;
using namespace std::string_view_literals;
using coact::kv::Limits;
using coact::kv::ParseStatus;
using coact::kv::Request;
using coact::kv::Store;

namespace {

struct Parsed {
  ParseStatus status;
  std::vector<std::string> args;
  size_t consumed;
  std::string error;
};

Parsed parse(std::string_view buf, const Limits& limits = {}) {
  Request req;
  size_t consumed = 12345;
  std::string error;
  const ParseStatus status = coact::kv::parse_request(buf, limits, req, consumed, error);
  return {status, req.args, consumed, error};
}

std::string array_of(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

const Store::TimePoint kT0 = Store::TimePoint{} + std::chrono::hours(1);

}  // namespace

TEST_CASE("an array request parses into its arguments and consumes exactly its bytes", "[kv]") {
  const std::string buf = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
  const Parsed p = parse(buf);
  REQUIRE(p.status == ParseStatus::complete);
  CHECK(p.args == std::vector<std::string>{"SET", "key", "value"});
  CHECK(p.consumed == buf.size());

  const Parsed empty_arg = parse("*2\r\n$4\r\nECHO\r\n$0\r\n\r\n");
  REQUIRE(empty_arg.status == ParseStatus::complete);
  CHECK(empty_arg.args == std::vector<std::string>{"ECHO", ""});
}

TEST_CASE("a reused Request is overwritten, not appended to", "[kv]") {
  Request req;
  req.args = {"old", "args", "here", "four"};
  size_t consumed = 0;
  std::string error;
  REQUIRE(coact::kv::parse_request(array_of({"GET", "k"}), {}, req, consumed, error) == ParseStatus::complete);
  CHECK(req.args == std::vector<std::string>{"GET", "k"});
  REQUIRE(coact::kv::parse_request("PING\r\n", {}, req, consumed, error) == ParseStatus::complete);
  CHECK(req.args == std::vector<std::string>{"PING"});
}

TEST_CASE("an inline command splits on whitespace, ends at LF or CRLF, and honours quotes", "[kv]") {
  CHECK(parse("PING\r\n").args == std::vector<std::string>{"PING"});
  CHECK(parse("PING\r\n").consumed == 6);
  CHECK(parse("PING\n").consumed == 5);
  CHECK(parse("  set  k \t v\r\n").args == std::vector<std::string>{"set", "k", "v"});
  CHECK(parse("SET k \"hello world\"\r\n").args == std::vector<std::string>{"SET", "k", "hello world"});
  CHECK(parse("ECHO \"a\\r\\n\\x41\\\"\"\n").args == std::vector<std::string>{"ECHO", "a\r\nA\""});
  CHECK(parse("ECHO 'it\\'s'\n").args == std::vector<std::string>{"ECHO", "it's"});
  CHECK(parse("ECHO a\"b c\"d\n").status == ParseStatus::error);  // closing quote not ending the word
  CHECK(parse("ECHO a\"b c\" d\n").args == std::vector<std::string>{"ECHO", "ab c", "d"});
  CHECK(parse("PING").status == ParseStatus::incomplete);
  CHECK(parse("PING\r").status == ParseStatus::incomplete);
}

TEST_CASE("pipelined requests parse one after another, consumed marking each boundary", "[kv]") {
  const std::vector<std::vector<std::string>> expected = {
      {"SET", "a", "1"}, {"PING"}, {"GET", "a"}, {"INCR", "a"}, {"ECHO", "x y"}};
  const std::string buf =
      array_of(expected[0]) + "PING\r\n" + array_of(expected[2]) + "INCR a\n" + array_of(expected[4]) + "*1\r\n$3";
  std::string_view rest = buf;
  for (const auto& want : expected) {
    const Parsed p = parse(rest);
    REQUIRE(p.status == ParseStatus::complete);
    CHECK(p.args == want);
    rest.remove_prefix(p.consumed);
  }
  const Parsed tail = parse(rest);
  CHECK(tail.status == ParseStatus::incomplete);
  CHECK(tail.consumed == 0);
  CHECK(rest == "*1\r\n$3");
}

TEST_CASE("every proper prefix of a request is incomplete and the whole is complete", "[kv]") {
  const std::string request = GENERATE(array_of({"SET", "key", std::string("v\r\n\0x", 5)}), array_of({"PING"}),
                                       std::string("SET k \"quoted value\"\r\n"), std::string("INCR counter\n"),
                                       array_of({"MGET", std::string(300, 'k'), ""}));
  for (size_t n = 0; n < request.size(); ++n) {
    const Parsed p = parse(std::string_view(request).substr(0, n));
    INFO("prefix of " << n << " bytes: " << p.error);
    REQUIRE(p.status == ParseStatus::incomplete);
    REQUIRE(p.consumed == 0);
  }
  const Parsed whole = parse(request + "*1\r\n");  // the next request's start does not matter
  REQUIRE(whole.status == ParseStatus::complete);
  CHECK(whole.consumed == request.size());
}

TEST_CASE("bulk strings are binary-safe: CR, LF and NUL survive", "[kv]") {
  const std::string value("a\r\nb\0c\r\n\r\n\0", 11);
  const Parsed p = parse(array_of({"SET", std::string("k\0", 2), value}));
  REQUIRE(p.status == ParseStatus::complete);
  REQUIRE(p.args.size() == 3);
  CHECK(p.args[1] == std::string("k\0", 2));
  CHECK(p.args[2] == value);
}

TEST_CASE("empty requests are skipped and their bytes counted in consumed", "[kv]") {
  const Parsed p = parse("*0\r\n\r\n  \n*1\r\n$4\r\nPING\r\n");
  REQUIRE(p.status == ParseStatus::complete);
  CHECK(p.args == std::vector<std::string>{"PING"});
  CHECK(p.consumed == 23);

  const Parsed only_empty = parse("\r\n*0\r\nPI");
  CHECK(only_empty.status == ParseStatus::incomplete);
  CHECK(only_empty.consumed == 6);  // the caller drops these and keeps "PI"
}

TEST_CASE("malformed requests are errors with Redis's message", "[kv]") {
  const auto [input, message] = GENERATE(table<std::string, std::string>({
      {"*1\r\nx3\r\nfoo\r\n", "Protocol error: expected '$', got 'x'"},
      {"*2\r\n$3\r\nGET\r\n:1\r\n", "Protocol error: expected '$', got ':'"},
      {"*1\r\n\x01", "Protocol error: expected '$', got '\\x01'"},
      {"*-1\r\n", "Protocol error: invalid multibulk length"},
      {"*-2\r\n", "Protocol error: invalid multibulk length"},
      {"*1\r\n$-1\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n$-5\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n$99999999999\r\n", "Protocol error: invalid bulk length"},
      {"*99999999999\r\n", "Protocol error: invalid multibulk length"},
      {"*1\r\n$99999999999999999999\r\n", "Protocol error: invalid bulk length"},  // over INT64_MAX
      {"*1x\r\n", "Protocol error: invalid multibulk length"},
      {"*\r\n", "Protocol error: invalid multibulk length"},
      {"*+1\r\n", "Protocol error: invalid multibulk length"},
      {"*01\r\n", "Protocol error: invalid multibulk length"},
      {"*1\r\n$ 3\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n$3a", "Protocol error: invalid bulk length"},  // known bad before the CRLF arrives
      {"*1\r\n$3\rx", "Protocol error: invalid bulk length"},
      {"*1\r\n$1-\r\n", "Protocol error: invalid bulk length"},
      {"*1" + std::string(20, '1'), "Protocol error: too big mbulk count string"},
      {"*1\r\n$" + std::string(21, '1'), "Protocol error: too big bulk count string"},
      {"*1\r\n$3\r\nfooXY", "Protocol error: expected CRLF after bulk data"},
      {"*1\r\n$3\r\nfoo\rX", "Protocol error: expected CRLF after bulk data"},
      {"*1\r\n$3\r\nfooo\r\n", "Protocol error: expected CRLF after bulk data"},
      {"SET k \"unterminated\r\n", "Protocol error: unbalanced quotes in request"},
      {"SET k 'a'b\r\n", "Protocol error: unbalanced quotes in request"},
  }));
  INFO(input);
  const Parsed p = parse(input);
  CHECK(p.status == ParseStatus::error);
  CHECK(p.error == message);
  CHECK(p.consumed == 0);
}

TEST_CASE("the limits refuse an oversized request from its header, before its bytes arrive", "[kv]") {
  // A bulk over max_request_bytes (1 MiB by default), announced by its header alone.
  Parsed p = parse("*1\r\n$1048577\r\n");
  CHECK(p.status == ParseStatus::error);
  CHECK(p.error == "Protocol error: invalid bulk length");
  // Each element fits, but the request cannot: known once the second length is read.
  const std::string first = "*3\r\n$3\r\nSET\r\n$600000\r\n" + std::string(600000, 'a') + "\r\n$600000\r\n";
  p = parse(first);
  CHECK(p.status == ParseStatus::error);
  CHECK(p.error == "Protocol error: too big request");
  // The least size the remaining elements can take counts too.
  p = parse("*3\r\n$1048560\r\n");
  CHECK(p.status == ParseStatus::error);
  CHECK(p.error == "Protocol error: too big request");
  p = parse("*1\r\n$1048560\r\n");
  CHECK(p.status == ParseStatus::incomplete);

  Limits small;
  small.max_request_bytes = 64;
  small.max_args = 3;
  CHECK(parse(array_of({"a", "b", "c"}), small).status == ParseStatus::complete);
  p = parse("*4\r\n", small);
  CHECK(p.error == "Protocol error: invalid multibulk length");
  p = parse("*3\r\n$50\r\n", small);  // 4 + 5 + 52 + 2 * 6 > 64
  CHECK(p.error == "Protocol error: too big request");
  CHECK(parse("*1\r\n$50\r\n", small).status == ParseStatus::incomplete);
  p = parse("*11\r\n", small);
  CHECK(p.error == "Protocol error: invalid multibulk length");
  CHECK(parse("a b c\r\n", small).status == ParseStatus::complete);
  CHECK(parse("a b c d\r\n", small).error == "Protocol error: too many arguments in inline request");
}

TEST_CASE("an inline line that outgrows the limit is an error, newline or not", "[kv]") {
  Limits limits;
  limits.max_request_bytes = 16;
  CHECK(parse(std::string(15, 'a'), limits).status == ParseStatus::incomplete);  // 16 with its newline
  CHECK(parse(std::string(15, 'a') + "\n", limits).status == ParseStatus::complete);
  const Parsed no_newline = parse(std::string(16, 'a'), limits);
  CHECK(no_newline.status == ParseStatus::error);
  CHECK(no_newline.error == "Protocol error: too big inline request");
  CHECK(parse(std::string(15, 'a') + "\r\n", limits).error == "Protocol error: too big inline request");
  // The default limit: a megabyte of telnet input with no newline.
  CHECK(parse(std::string(size_t{1} << 20, 'x')).error == "Protocol error: too big inline request");
}

TEST_CASE("arbitrary bytes never crash the parser and consumed stays within the buffer", "[kv]") {
  std::mt19937 rng(7);
  const std::string alphabet = "*$:+-0123456789\r\n abc\"'\\x";
  const std::string valid = array_of({"SET", "key", "value"}) + "GET key\r\n";
  for (int round = 0; round < 20000; ++round) {
    std::string buf;
    if (round % 2 == 0) {
      const size_t len = rng() % 40;
      for (size_t i = 0; i < len; ++i) buf += alphabet[rng() % alphabet.size()];
    } else {
      buf = valid;
      for (int m = 0; m < 3; ++m) buf[rng() % buf.size()] = static_cast<char>(rng());
    }
    size_t offset = 0;
    for (;;) {
      const Parsed p = parse(std::string_view(buf).substr(offset));
      REQUIRE(p.consumed <= buf.size() - offset);
      if (p.status != ParseStatus::complete) {
        if (p.status == ParseStatus::error) REQUIRE(!p.error.empty());
        break;
      }
      REQUIRE(!p.args.empty());
      REQUIRE(p.consumed > 0);
      offset += p.consumed;
    }
  }
}

TEST_CASE("parse_int64 accepts exactly Redis's integer syntax", "[kv]") {
  using coact::kv::parse_int64;
  CHECK(parse_int64("0") == 0);
  CHECK(parse_int64("42") == 42);
  CHECK(parse_int64("-42") == -42);
  CHECK(parse_int64("9223372036854775807") == std::numeric_limits<int64_t>::max());
  CHECK(parse_int64("-9223372036854775808") == std::numeric_limits<int64_t>::min());
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "01", "-0", "00", "1a", "9223372036854775808",
                          "-9223372036854775809", "99999999999999999999", "1.5", "0x10"}) {
    INFO(bad);
    CHECK_FALSE(parse_int64(bad).has_value());
  }
}

TEST_CASE("the encoders write exact RESP2 bytes", "[kv]") {
  std::string out;
  coact::kv::append_simple(out, "OK");
  CHECK(out == "+OK\r\n");
  out.clear();
  coact::kv::append_error(out, "ERR bad\r\nthing");
  CHECK(out == "-ERR bad  thing\r\n");  // CR and LF cannot end the line early
  out.clear();
  coact::kv::append_integer(out, 0);
  coact::kv::append_integer(out, -7);
  coact::kv::append_integer(out, std::numeric_limits<int64_t>::min());
  CHECK(out == ":0\r\n:-7\r\n:-9223372036854775808\r\n");
  out.clear();
  coact::kv::append_bulk(out, std::string("a\r\n\0", 4));
  coact::kv::append_bulk(out, "");
  CHECK(out == std::string("$4\r\na\r\n\0\r\n$0\r\n\r\n", 16));
  out.clear();
  coact::kv::append_null(out);
  coact::kv::append_array_header(out, 2);
  coact::kv::append_array_header(out, 0);
  CHECK(out == "$-1\r\n*2\r\n*0\r\n");
  out = "prefix";
  coact::kv::append_simple(out, "PONG");
  CHECK(out == "prefix+PONG\r\n");
}

TEST_CASE("the store gets, sets, deletes and tells existence", "[kv]") {
  Store store;
  CHECK_FALSE(store.get("k", kT0).has_value());
  store.set("k", "v1", kT0);
  CHECK(store.get("k", kT0) == "v1"sv);
  store.set("k",
            std::string("v\0"
                        "2",
                        3),
            kT0);
  CHECK(store.get("k", kT0) == std::string_view("v\0"
                                                "2",
                                                3));
  CHECK(store.exists("k", kT0));
  CHECK(store.size() == 1);
  CHECK(store.del("k", kT0));
  CHECK_FALSE(store.del("k", kT0));
  CHECK_FALSE(store.exists("k", kT0));
  CHECK(store.size() == 0);
}

TEST_CASE("incr follows Redis: missing is 0, strict integers, overflow is an error", "[kv]") {
  Store store;
  CHECK(store.incr("n", kT0).value == 1);
  CHECK(store.incr("n", kT0).value == 2);
  CHECK(store.get("n", kT0) == "2"sv);
  store.set("n", "-1", kT0);
  CHECK(store.incr("n", kT0).value == 0);
  CHECK(store.get("n", kT0) == "0"sv);

  store.set("max", "9223372036854775807", kT0);
  const auto overflow = store.incr("max", kT0);
  CHECK_FALSE(overflow.value.has_value());
  CHECK(overflow.error == "ERR increment or decrement would overflow");
  CHECK(store.get("max", kT0) == "9223372036854775807"sv);
  store.set("min", "-9223372036854775808", kT0);
  CHECK(store.incr_by("min", -1, kT0).error == coact::kv::kOverflowError);
  CHECK(store.incr_by("min", 5, kT0).value == std::numeric_limits<int64_t>::min() + 5);

  for (const char* bad : {"abc", "", " 1", "+1", "01", "1.0", "99999999999999999999"}) {
    INFO(bad);
    store.set("bad", bad, kT0);
    const auto r = store.incr("bad", kT0);
    CHECK_FALSE(r.value.has_value());
    CHECK(r.error == "ERR value is not an integer or out of range");
    CHECK(store.get("bad", kT0) == std::string_view(bad));
  }
}

TEST_CASE("an expired key is absent from its deadline on and expire_due erases it", "[kv]") {
  using std::chrono::seconds;
  Store store;
  CHECK_FALSE(store.next_deadline().has_value());
  CHECK_FALSE(store.expire("missing", seconds(10), kT0));
  store.set("a", "1", kT0);
  store.set("b", "2", kT0);
  store.set("c", "3", kT0);
  CHECK(store.expire("a", seconds(10), kT0));
  CHECK(store.expire("b", seconds(5), kT0));
  CHECK(store.next_deadline() == kT0 + seconds(5));

  CHECK(store.get("b", kT0 + seconds(4)) == "2"sv);
  CHECK_FALSE(store.get("b", kT0 + seconds(5)).has_value());  // lazily erased
  CHECK(store.size() == 2);
  CHECK(store.next_deadline() == kT0 + seconds(10));

  CHECK(store.expire_due(kT0 + seconds(9)) == 0);
  CHECK(store.expire_due(kT0 + seconds(10)) == 1);
  CHECK(store.size() == 1);
  CHECK_FALSE(store.next_deadline().has_value());
  CHECK(store.get("c", kT0 + seconds(100)) == "3"sv);
}

TEST_CASE("expire replaces a deadline, keeps one index entry, and deletes on ttl <= 0", "[kv]") {
  using std::chrono::seconds;
  Store store;
  store.set("k", "v", kT0);
  for (int i = 1; i <= 100; ++i) CHECK(store.expire("k", seconds(i), kT0));
  CHECK(store.next_deadline() == kT0 + seconds(100));
  CHECK(store.expire_due(kT0 + seconds(99)) == 0);
  CHECK(store.get("k", kT0 + seconds(99)) == "v"sv);
  CHECK(store.expire("k", seconds(1), kT0));  // shortening works too
  CHECK(store.expire_due(kT0 + seconds(1)) == 1);

  store.set("z", "v", kT0);
  CHECK(store.expire("z", seconds(0), kT0));
  CHECK_FALSE(store.exists("z", kT0));
  CHECK_FALSE(store.expire("z", seconds(-1), kT0));
  store.set("n", "v", kT0);
  CHECK(store.expire("n", seconds(-5), kT0));
  CHECK(store.size() == 0);
  CHECK_FALSE(store.next_deadline().has_value());
}

TEST_CASE("expire_due erases earliest first, at most max_keys per call", "[kv]") {
  using std::chrono::milliseconds;
  Store store;
  for (int i = 0; i < 10; ++i) {
    const std::string key = "k" + std::to_string(i);
    store.set(key, "v", kT0);
    CHECK(store.pexpire(key, milliseconds(10 * (i + 1)), kT0));
  }
  CHECK(store.expire_due(kT0 + milliseconds(100), 4) == 4);
  CHECK(store.next_deadline() == kT0 + milliseconds(50));
  CHECK_FALSE(store.exists("k3", kT0));
  CHECK(store.exists("k4", kT0));
  CHECK(store.expire_due(kT0 + milliseconds(100)) == 6);
  CHECK(store.size() == 0);
}

TEST_CASE("a huge ttl saturates to a deadline that never passes", "[kv]") {
  Store store;
  store.set("k", "v", kT0);
  CHECK(store.expire("k", std::chrono::seconds(std::numeric_limits<int64_t>::max()), kT0));
  CHECK(store.next_deadline() == Store::TimePoint::max());
  CHECK(store.expire_due(kT0 + std::chrono::hours(24 * 365 * 100)) == 0);
  CHECK(store.exists("k", kT0 + std::chrono::hours(24 * 365 * 100)));
}

TEST_CASE("SET clears an expiry and INCR keeps it", "[kv]") {
  using std::chrono::seconds;
  Store store;
  store.set("k", "v", kT0);
  store.expire("k", seconds(5), kT0);
  store.set("k", "w", kT0 + seconds(1));
  CHECK_FALSE(store.next_deadline().has_value());
  CHECK(store.get("k", kT0 + seconds(60)) == "w"sv);

  store.set("n", "1", kT0);
  store.expire("n", seconds(5), kT0);
  CHECK(store.incr("n", kT0 + seconds(1)).value == 2);
  CHECK(store.next_deadline() == kT0 + seconds(5));
  CHECK_FALSE(store.get("n", kT0 + seconds(5)).has_value());
  CHECK(store.incr("n", kT0 + seconds(6)).value == 1);  // expired counts as missing
  CHECK_FALSE(store.next_deadline().has_value());
}

TEST_CASE("a moved store keeps its keys and deadlines", "[kv]") {
  Store a;
  a.set("k", "v", kT0);
  a.expire("k", std::chrono::seconds(3), kT0);
  Store b = std::move(a);
  CHECK(b.get("k", kT0) == "v"sv);
  CHECK(b.expire_due(kT0 + std::chrono::seconds(3)) == 1);
  CHECK(b.size() == 0);
}

TEST_CASE("key_hash is FNV-1a 64 and shard_of is stable and within range", "[kv]") {
  CHECK(coact::kv::key_hash("") == 0xcbf29ce484222325ULL);
  CHECK(coact::kv::key_hash("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(coact::kv::key_hash("foobar") == 0x85944171f73967e8ULL);
  for (const size_t shards : {size_t{1}, size_t{2}, size_t{3}, size_t{8}, size_t{16}}) {
    std::vector<size_t> counts(shards);
    for (int i = 0; i < 8000; ++i) {
      const std::string key = "key:" + std::to_string(i);
      const size_t s = coact::kv::shard_of(key, shards);
      REQUIRE(s < shards);
      REQUIRE(s == coact::kv::shard_of(key, shards));
      REQUIRE(s == coact::kv::key_hash(key) % shards);
      ++counts[s];
    }
    for (size_t c : counts) CHECK(c > 8000 / shards / 2);  // no shard starved
  }
}

TEST_CASE("command_of ignores case and arity_error gives Redis's message", "[kv]") {
  using coact::kv::arity_error;
  using coact::kv::Command;
  using coact::kv::command_of;
  CHECK(command_of("get") == Command::get);
  CHECK(command_of("GET") == Command::get);
  CHECK(command_of("gEt") == Command::get);
  CHECK(command_of("PING") == Command::ping);
  CHECK(command_of("Echo") == Command::echo);
  CHECK(command_of("SET") == Command::set);
  CHECK(command_of("del") == Command::del);
  CHECK(command_of("MGET") == Command::mget);
  CHECK(command_of("incr") == Command::incr);
  CHECK(command_of("EXPIRE") == Command::expire);
  CHECK(command_of("exists") == Command::exists);
  CHECK(command_of("CONFIG") == Command::config);
  CHECK(command_of("GETX") == Command::unknown);
  CHECK(command_of("") == Command::unknown);
  CHECK(coact::kv::command_name(Command::mget) == "mget");

  CHECK(arity_error(Command::get, 1) == "ERR wrong number of arguments for 'get' command");
  CHECK(arity_error(Command::get, 3) == "ERR wrong number of arguments for 'get' command");
  CHECK_FALSE(arity_error(Command::get, 2));
  CHECK_FALSE(arity_error(Command::ping, 1));
  CHECK_FALSE(arity_error(Command::ping, 2));
  CHECK(arity_error(Command::ping, 3) == "ERR wrong number of arguments for 'ping' command");
  CHECK(arity_error(Command::echo, 1).has_value());
  CHECK(arity_error(Command::set, 2) == "ERR wrong number of arguments for 'set' command");
  CHECK_FALSE(arity_error(Command::set, 3));
  CHECK_FALSE(arity_error(Command::set, 5));
  CHECK(arity_error(Command::del, 1).has_value());
  CHECK_FALSE(arity_error(Command::del, 10));
  CHECK(arity_error(Command::mget, 1) == "ERR wrong number of arguments for 'mget' command");
  CHECK_FALSE(arity_error(Command::mget, 3));
  CHECK(arity_error(Command::incr, 3).has_value());
  CHECK(arity_error(Command::expire, 2) == "ERR wrong number of arguments for 'expire' command");
  CHECK(arity_error(Command::expire, 4).has_value());
  CHECK_FALSE(arity_error(Command::expire, 3));
  CHECK(arity_error(Command::exists, 1).has_value());
  CHECK(arity_error(Command::config, 1).has_value());
  CHECK_FALSE(arity_error(Command::unknown, 0));
}

TEST_CASE("an unknown command's error names it and its first arguments", "[kv]") {
  CHECK(coact::kv::unknown_command_error(Request{{"foo"}}) == "ERR unknown command 'foo', with args beginning with: ");
  CHECK(coact::kv::unknown_command_error(Request{{"foo", "a", "b"}}) ==
        "ERR unknown command 'foo', with args beginning with: 'a' 'b' ");
  const std::string long_error =
      coact::kv::unknown_command_error(Request{{std::string(300, 'n'), std::string(300, 'a'), "b"}});
  CHECK(long_error == "ERR unknown command '" + std::string(128, 'n') + "', with args beginning with: '" +
                          std::string(128, 'a') + "' ");
}

TEST_CASE("SET options accept EX and PX and reject the rest as Redis does", "[kv]") {
  using coact::kv::parse_set_options;
  using coact::kv::SetOptions;
  using std::chrono::milliseconds;
  SetOptions opts;
  CHECK_FALSE(parse_set_options(Request{{"SET", "k", "v"}}, opts));
  CHECK_FALSE(opts.ttl.has_value());
  CHECK_FALSE(parse_set_options(Request{{"SET", "k", "v", "ex", "10"}}, opts));
  CHECK(opts.ttl == milliseconds(10000));
  CHECK_FALSE(parse_set_options(Request{{"SET", "k", "v", "PX", "250"}}, opts));
  CHECK(opts.ttl == milliseconds(250));
  CHECK(parse_set_options(Request{{"SET", "k", "v", "EX"}}, opts) == "ERR syntax error");
  CHECK(parse_set_options(Request{{"SET", "k", "v", "NX"}}, opts) == "ERR syntax error");
  CHECK(parse_set_options(Request{{"SET", "k", "v", "EX", "1", "PX", "1"}}, opts) == "ERR syntax error");
  CHECK(parse_set_options(Request{{"SET", "k", "v", "EX", "x"}}, opts) ==
        "ERR value is not an integer or out of range");
  CHECK(parse_set_options(Request{{"SET", "k", "v", "EX", "0"}}, opts) == "ERR invalid expire time in 'set' command");
  CHECK(parse_set_options(Request{{"SET", "k", "v", "PX", "-1"}}, opts) == "ERR invalid expire time in 'set' command");
  CHECK(parse_set_options(Request{{"SET", "k", "v", "EX", "9223372036854776"}}, opts) ==
        "ERR invalid expire time in 'set' command");
}

TEST_CASE("CONFIG GET answers save and appendonly as a server that never persists, other names empty", "[kv]") {
  std::string out;
  coact::kv::append_config_reply(out, Request{{"CONFIG", "GET", "save"}});
  coact::kv::append_config_reply(out, Request{{"config", "get", "appendonly"}});
  CHECK(out == "*2\r\n$4\r\nsave\r\n$0\r\n\r\n*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
  out.clear();
  coact::kv::append_config_reply(out, Request{{"CONFIG", "GET", "maxmemory"}});
  CHECK(out == "*0\r\n");
  out.clear();
  coact::kv::append_config_reply(out, Request{{"CONFIG", "GET"}});
  CHECK(out == "-ERR wrong number of arguments for 'config|get' command\r\n");
  out.clear();
  coact::kv::append_config_reply(out, Request{{"CONFIG", "SET", "a", "b"}});
  CHECK(out == "-ERR unknown subcommand 'SET'. Try CONFIG HELP.\r\n");
  out.clear();
  coact::kv::append_config_reply(out, Request{{"CONFIG"}});
  CHECK(out == "-ERR wrong number of arguments for 'config' command\r\n");
}
