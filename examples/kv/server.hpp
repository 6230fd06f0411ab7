// kv/server.hpp: the kv example's server: a Redis-protocol (RESP2) key-value
// service on coact actors, its sockets watched by the reactor
// (coact/runtime/reactor.hpp; docs/services.md).
//
// Actors:
//   - Listener: accepts (one IoWatch on the listening socket), spawns a
//     Conn per client, refuses clients over max_clients with Redis's error;
//     on drain() it stops accepting, drains every Conn, then stops the shards
//     and itself, so Runtime::run() returns.
//   - Conn: one per client. Reads what the socket has, parses every complete
//     request (pipelining), answers PING/ECHO/CONFIG itself and sends the
//     others to the shards owning their keys, one batch per shard per read;
//     writes the replies in request order. Back-pressure: it stops reading
//     while max_output_bytes of replies are unsent or max_pipeline requests
//     are unanswered. A protocol error is answered with -ERR and the
//     connection closed; a reset peer closes it.
//   - Shard: owns the keys with shard_of(key) == its index (store.hpp);
//     executes batches and replies with one batch; a wall timer at the
//     earliest expiry deadline erases expired keys.
// Progress points: latency "kv.request" (COACT_BEGIN when a request is
// parsed, COACT_END when its reply is queued for the socket: the time a
// request spends in the server) and throughput "kv.replies" (one per reply
// queued). Under a closed-loop client (redis-benchmark: C connections, each
// waiting for its reply) the client's latency is C / throughput, so
// kv.replies is the point a sweep predicts the client's latency from.
// Memory per connection: the actor, its IoWatch slot and two buffers that
// are released when empty, so an idle connection holds a few hundred bytes
// of user memory plus the kernel's socket buffers. A busy one holds at most
// max_request_bytes + one read (16 KiB) of input, and max_output_bytes plus
// max_pipeline replies of output: requests are parsed only while less than
// max_output_bytes is unsent and fewer than max_pipeline are unanswered.
// Threads: start() and the returned Server's members from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <coact/runtime/runtime.hpp>

#include "kv/resp.hpp"

namespace coact::kv {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 6380;  ///< 0: the kernel picks one (Server::port says which)
  size_t shards = 4;
  Limits limits;                              ///< one request's size and argument count
  size_t max_output_bytes = size_t{1} << 20;  ///< unsent replies at which a connection stops reading
  size_t max_pipeline = 1024;                 ///< unanswered requests at which a connection stops reading
  size_t max_clients = 10000;
  std::chrono::seconds idle_timeout{0};   ///< close clients idle this long; 0: never (Redis's default)
  std::chrono::seconds drain_timeout{5};  ///< how long a draining connection may wait for its peer to read
  /// Planted work per GET/SET executed by a shard (the stage a causal sweep
  /// should name): spins this long. 0 in normal use.
  std::chrono::nanoseconds shard_cost{0};
  /// The really-faster shard: half the planted work (coact-profile
  /// validate's row compares a sweep's prediction with it).
  bool fast_shard = false;
};

/// Counters of a running server. Relaxed atomics, exact once it stopped.
struct ServerStats {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused{0};  ///< clients over max_clients
  std::atomic<uint64_t> open{0};     ///< connections open now
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> resets{0};  ///< connections closed by a read or write error
  std::atomic<uint64_t> idle_closed{0};
};

/// A started server.
struct Server {
  uint16_t port = 0;  ///< the bound port
  std::shared_ptr<ServerStats> stats;
  std::function<void()> drain;  ///< stop accepting, answer what was read, close; then every actor stops
};

/// Binds the listening socket and spawns the listener and the shards in
/// `rt`. Throws std::system_error naming the address if it cannot bind, and
/// std::invalid_argument for shards == 0.
Server start(Runtime& rt, const ServerOptions& options);

}  // namespace coact::kv
