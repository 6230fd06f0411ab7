// kv/server.cpp: the kv server's actors (server.hpp).
#include "kv/server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <coact/causal/progress.hpp>
#include <coact/runtime/reactor.hpp>
#include <coact/runtime/tcp.hpp>

#include "kv/store.hpp"

namespace coact::kv {

// The actors and their mail live in coact::kv itself, not an anonymous
// namespace: their handlers are a causal profile's region names
// ("coact::kv::Shard::on(coact::kv::ShardBatch)").
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

struct Conn;
struct Shard;
struct Listener;

struct Shared {
  ServerOptions opt;
  std::shared_ptr<ServerStats> stats;
  std::vector<ActorRef<Shard>> shards;
};

// One request (or one key of a multi-key request) for a shard.
struct Item {
  uint64_t seq = 0;   // the request's number on its connection
  uint32_t part = 0;  // which key of a multi-key request
  Command cmd = Command::unknown;
  Request req;  // for a part: the command name and that one key
};
struct ShardBatch {
  ActorRef<Conn> to;
  std::vector<Item> items;
};
struct Answer {
  uint64_t seq = 0;
  uint32_t part = 0;
  std::string bytes;  // the RESP reply (for a DEL/EXISTS part: an integer reply)
};
struct ShardAnswers {
  std::vector<Answer> answers;
};
struct ExpireTick {};
struct Drain {};
struct IdleCheck {};
struct DrainDeadline {};
struct ConnClosed {
  uint64_t id = 0;
};

namespace {
void spin_for(std::chrono::nanoseconds d) {
  if (d.count() <= 0) return;
  const auto until = Clock::now() + d;
  while (Clock::now() < until) {
  }
}
}  // namespace

struct Shard : Actor<Shard> {
  explicit Shard(std::shared_ptr<const Shared> sh)
      : sh_(std::move(sh)), cost_(sh_->opt.fast_shard ? sh_->opt.shard_cost / 2 : sh_->opt.shard_cost) {}

  void on(ShardBatch& b) {
    const auto now = Clock::now();
    ShardAnswers out;
    out.answers.reserve(b.items.size());
    for (Item& it : b.items) {
      Answer a{it.seq, it.part, {}};
      execute(it, now, a.bytes);
      out.answers.push_back(std::move(a));
    }
    b.to.send(std::move(out));
    arm_expiry();
  }
  void on(ExpireTick) {
    armed_.reset();
    store_.expire_due(Clock::now());
    arm_expiry();
  }

 private:
  void execute(Item& it, Clock::time_point now, std::string& out) {
    const auto& a = it.req.args;
    switch (it.cmd) {
      case Command::get: {
        spin_for(cost_);
        const auto v = store_.get(a[1], now);
        if (v)
          append_bulk(out, *v);
        else
          append_null(out);
        return;
      }
      case Command::set: {
        spin_for(cost_);
        SetOptions o;
        if (auto err = parse_set_options(it.req, o)) return append_error(out, *err);
        store_.set(a[1], a[2], now);
        if (o.ttl) store_.pexpire(a[1], *o.ttl, now);
        return append_simple(out, "OK");
      }
      case Command::del:
        return append_integer(out, store_.del(a[1], now) ? 1 : 0);
      case Command::exists:
        return append_integer(out, store_.exists(a[1], now) ? 1 : 0);
      case Command::incr: {
        const IncrResult r = store_.incr(a[1], now);
        if (r.value) return append_integer(out, *r.value);
        return append_error(out, r.error);
      }
      case Command::expire: {
        const auto secs = parse_int64(a[2]);
        if (!secs) return append_error(out, kNotIntegerError);
        return append_integer(out, store_.expire(a[1], std::chrono::seconds(*secs), now) ? 1 : 0);
      }
      default:
        return append_error(out, "ERR internal: command not executed by a shard");
    }
  }
  // A wall timer at the earliest deadline (expiry is wall time; reads check
  // deadlines themselves, so the timer only reclaims memory).
  void arm_expiry() {
    const auto next = store_.next_deadline();
    if (!next || (armed_ && *armed_ <= *next)) return;
    armed_ = *next;
    runtime().send_after_wall(self(), std::max(*next - Clock::now(), Clock::duration::zero()), ExpireTick{});
  }

  std::shared_ptr<const Shared> sh_;
  std::chrono::nanoseconds cost_;  // the planted work per GET and SET
  Store store_;
  std::optional<Clock::time_point> armed_;
};

// A reply slot of a connection: requests are answered in order.
struct Slot {
  std::string bytes;
  uint32_t parts_left = 0;  // answers still expected from shards
  bool multi_bulk = false;  // MGET: bytes is the array header, parts are appended in order
  bool sum = false;         // DEL/EXISTS over several keys: the integer is the sum
  int64_t total = 0;
  std::vector<std::string> parts;
  bool request = true;  // false for a protocol error's reply (no COACT_BEGIN)
};

struct Conn : Actor<Conn> {
  Conn(int fd, uint64_t id, std::shared_ptr<const Shared> sh, ActorRef<Listener> listener)
      : fd_(fd),
        id_(id),
        sh_(std::move(sh)),
        listener_(std::move(listener)),
        watch_(self(), fd),
        last_active_(Clock::now()),
        batches_(sh_->shards.size()) {
    sh_->stats->open.fetch_add(1, std::memory_order_relaxed);
    update_interest();
    if (sh_->opt.idle_timeout.count() > 0) runtime().send_after_wall(self(), sh_->opt.idle_timeout, IdleCheck{});
  }
  ~Conn() override {
    watch_.reset();
    ::close(fd_);
    sh_->stats->open.fetch_sub(1, std::memory_order_relaxed);
  }

  void on(const IoReady& r) {
    armed_ = 0;
    read_drained_ = false;  // a report may carry input: only a read to EAGAIN drains it
    if (r.fd != fd_ || closing_) return;
    if (!flush()) return reset();
    if (want_read()) read_some();
    if (closing_) return;
    settle();
  }
  void on(ShardAnswers& a) {
    for (Answer& ans : a.answers) accept_answer(ans);
    emit();
    if (!flush()) return reset();
    // Requests read while the pipeline or the output was full wait in in_:
    // the socket may have nothing more to report, so they are parsed now.
    parse_pending();
    settle();
  }
  void on(Drain) {
    parse_pending();  // what was read is answered; nothing more is read
    draining_ = true;
    runtime().send_after_wall(self(), sh_->opt.drain_timeout, DrainDeadline{});
    settle();
  }
  void on(DrainDeadline) {
    if (!closing_) close_now();  // the peer did not read its replies in time
  }
  void on(IdleCheck) {
    if (closing_ || draining_) return;
    const auto idle = Clock::now() - last_active_;
    if (slots_.empty() && idle >= sh_->opt.idle_timeout) {
      sh_->stats->idle_closed.fetch_add(1, std::memory_order_relaxed);
      return close_now();
    }
    // Idle for less than the timeout: check again when it would expire. Busy
    // (requests unanswered) past it: check a whole timeout later.
    const auto left = sh_->opt.idle_timeout - std::chrono::duration_cast<Clock::duration>(idle);
    runtime().send_after_wall(self(), left.count() > 0 ? left : sh_->opt.idle_timeout, IdleCheck{});
  }

 private:
  // Whether more requests may be dispatched now (the pipeline and output bounds).
  bool can_parse() const {
    return !protocol_error_ && slots_.size() < sh_->opt.max_pipeline && out_.size() < sh_->opt.max_output_bytes;
  }
  bool want_read() const { return !eof_ && !draining_ && can_parse(); }

  // Dispatches the complete requests in_ holds, as far as the bounds allow.
  void parse_pending() {
    if (in_.empty() || !can_parse()) return;
    parse_all(batches_);
    send_batches(batches_);
    emit();
  }

  // Parses what in_ already holds, then reads until EAGAIN (or a short read)
  // or back-pressure, dispatching every complete request.
  void read_some() {
    char buf[16384];
    if (!in_.empty() && can_parse()) parse_all(batches_);
    read_drained_ = false;
    while (want_read()) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n > 0) {
        last_active_ = Clock::now();
        in_.append(buf, size_t(n));
        parse_all(batches_);
        // A short read drained the socket: more input arrives as a new
        // edge, which arm_drained reports, so no second read is spent on EAGAIN.
        if (size_t(n) < sizeof buf) {
          read_drained_ = true;
          break;
        }
        continue;
      }
      if (n == 0) {
        eof_ = true;  // answer what was read, then close
        break;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN) {
        send_batches(batches_);
        return reset();
      }
      read_drained_ = true;
      break;
    }
    send_batches(batches_);
    emit();
    if (in_.empty() && in_.capacity() > 65536) std::string().swap(in_);
  }

  void parse_all(std::vector<ShardBatch>& batches) {
    size_t off = 0;
    while (off < in_.size() && can_parse()) {
      Request req;
      size_t used = 0;
      std::string err;
      const ParseStatus st = parse_request(std::string_view(in_).substr(off), sh_->opt.limits, req, used, err);
      if (st == ParseStatus::incomplete) {
        off += used;  // blank lines and empty arrays before a partial request are consumed
        break;
      }
      if (st == ParseStatus::error) {
        protocol_error_ = true;  // Redis answers, then closes the connection
        sh_->stats->protocol_errors.fetch_add(1, std::memory_order_relaxed);
        Slot& s = slots_.emplace_back();
        s.request = false;
        append_error(s.bytes, "ERR " + err);
        in_.clear();
        return;
      }
      off += used;
      if (!req.args.empty()) dispatch(std::move(req), batches);
    }
    in_.erase(0, off);
  }

  void dispatch(Request&& req, std::vector<ShardBatch>& batches) {
    COACT_BEGIN("kv.request");
    sh_->stats->requests.fetch_add(1, std::memory_order_relaxed);
    const uint64_t seq = base_seq_ + slots_.size();
    Slot& s = slots_.emplace_back();
    const Command cmd = command_of(req.args[0]);
    if (cmd == Command::unknown) return append_error(s.bytes, unknown_command_error(req));
    if (auto err = arity_error(cmd, req.args.size())) return append_error(s.bytes, *err);
    switch (cmd) {
      case Command::ping:
        if (req.args.size() == 2) return append_bulk(s.bytes, req.args[1]);
        return append_simple(s.bytes, "PONG");
      case Command::echo:
        return append_bulk(s.bytes, req.args[1]);
      case Command::config:
        return append_config_reply(s.bytes, req);
      case Command::mget:
      case Command::del:
      case Command::exists: {
        const size_t keys = req.args.size() - 1;
        s.parts_left = uint32_t(keys);
        s.multi_bulk = cmd == Command::mget;
        s.sum = !s.multi_bulk;
        if (s.multi_bulk) {
          append_array_header(s.bytes, keys);
          s.parts.resize(keys);
        }
        const Command one = cmd == Command::mget ? Command::get : cmd;
        for (size_t k = 0; k < keys; ++k) {
          Item it{seq, uint32_t(k), one, {}};
          it.req.args = {std::string(command_name(one)), std::move(req.args[k + 1])};
          auto& b = batches[shard_of(it.req.args[1], batches.size())];
          b.items.push_back(std::move(it));
        }
        return;
      }
      default: {
        s.parts_left = 1;
        const size_t shard = shard_of(req.args[1], batches.size());
        batches[shard].items.push_back(Item{seq, 0, cmd, std::move(req)});
        return;
      }
    }
  }

  void send_batches(std::vector<ShardBatch>& batches) {
    for (size_t i = 0; i < batches.size(); ++i) {
      if (batches[i].items.empty()) continue;
      batches[i].to = self();
      sh_->shards[i].send(std::move(batches[i]));
      batches[i].items.clear();  // moved from: valid, made empty for the next read
    }
  }

  void accept_answer(Answer& a) {
    if (a.seq < base_seq_ || a.seq - base_seq_ >= slots_.size()) return;  // cannot happen: answers come once
    Slot& s = slots_[size_t(a.seq - base_seq_)];
    if (s.multi_bulk) {
      s.parts[a.part] = std::move(a.bytes);
    } else if (s.sum) {
      // An integer reply ":n\r\n".
      if (a.bytes.size() > 3 && a.bytes[0] == ':')
        s.total += parse_int64(std::string_view(a.bytes).substr(1, a.bytes.size() - 3)).value_or(0);
    } else {
      s.bytes = std::move(a.bytes);
    }
    if (s.parts_left > 0) --s.parts_left;
  }

  // Moves the answered requests at the head, in order, to the output.
  void emit() {
    while (!slots_.empty() && slots_.front().parts_left == 0) {
      Slot& s = slots_.front();
      if (s.sum) {
        append_integer(out_, s.total);
      } else {
        out_ += s.bytes;
        for (const std::string& p : s.parts) out_ += p;
      }
      const bool request = s.request;
      slots_.pop_front();
      ++base_seq_;
      if (request) {
        COACT_END("kv.request");
        COACT_PROGRESS("kv.replies");
      }
    }
  }

  // Writes what the socket takes; false on a write error.
  bool flush() {
    size_t done = 0;
    while (done < out_.size()) {
      const ssize_t n = ::send(fd_, out_.data() + done, out_.size() - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += size_t(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      return false;
    }
    out_.erase(0, done);
    if (out_.empty() && out_.capacity() > 65536) std::string().swap(out_);
    return true;
  }

  // After each event: close when finished, else arm for what is wanted.
  void settle() {
    if (!flush()) return reset();
    const bool finished = slots_.empty() && out_.empty();
    if (finished && (eof_ || draining_ || protocol_error_)) return close_now();
    update_interest();
  }

  void update_interest() {
    uint32_t want = 0;
    if (want_read()) want |= uint32_t(Interest::read);
    if (!out_.empty()) want |= uint32_t(Interest::write);
    if (want == 0 || want == armed_) return;
    // Output left unsent means the last send saw EAGAIN; reading may have
    // stopped with input left (back-pressure), which only arm() reports.
    if ((want & uint32_t(Interest::read)) == 0 || read_drained_) {
      watch_.arm_drained(Interest(want));
    } else {
      watch_.arm(Interest(want));
    }
    armed_ = want;
  }

  void reset() {
    sh_->stats->resets.fetch_add(1, std::memory_order_relaxed);
    close_now();
  }
  void close_now() {
    closing_ = true;
    listener_.send(ConnClosed{id_});
    stop();  // the destructor unregisters and closes the socket
  }

  int fd_;
  uint64_t id_;
  std::shared_ptr<const Shared> sh_;
  ActorRef<Listener> listener_;
  IoWatch watch_;
  std::string in_;
  std::string out_;
  std::deque<Slot> slots_;
  uint64_t base_seq_ = 0;  // the seq of slots_.front()
  uint32_t armed_ = 0;     // the interest armed and not yet reported
  bool read_drained_ = false;  // the last read saw EAGAIN or a short read: nothing left unread
  Clock::time_point last_active_;
  std::vector<ShardBatch> batches_;  // one per shard: filled by a read, sent at its end, reused
  bool eof_ = false;
  bool draining_ = false;
  bool protocol_error_ = false;
  bool closing_ = false;
};

struct Listener : Actor<Listener> {
  Listener(int fd, std::shared_ptr<const Shared> sh) : fd_(fd), sh_(std::move(sh)), watch_(self(), fd) {
    watch_.arm(Interest::read);
  }
  ~Listener() override { close_listener(); }

  void on(const IoReady& r) {
    if (r.fd != fd_ || fd_ < 0) return;
    for (;;) {
      const int fd = tcp_accept(fd_);
      if (fd < 0) break;  // EAGAIN, or out of descriptors: retried at the next report
      if (conns_.size() >= sh_->opt.max_clients) {
        static constexpr char kFull[] = "-ERR max number of clients reached\r\n";
        (void)!::send(fd, kFull, sizeof kFull - 1, MSG_NOSIGNAL);
        ::close(fd);
        sh_->stats->refused.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      sh_->stats->accepted.fetch_add(1, std::memory_order_relaxed);
      const uint64_t id = next_id_++;
      conns_.emplace(id, runtime().spawn<Conn>(fd, id, sh_, self()));
    }
    watch_.arm(Interest::read);
  }
  void on(ConnClosed c) {
    conns_.erase(c.id);
    maybe_finish();
  }
  void on(Drain) {
    draining_ = true;
    close_listener();
    for (auto& [id, c] : conns_) c.send(Drain{});
    maybe_finish();
  }

 private:
  void close_listener() {
    if (fd_ < 0) return;
    watch_.reset();
    ::close(fd_);
    fd_ = -1;
  }
  void maybe_finish() {
    if (!draining_ || !conns_.empty()) return;
    for (const auto& s : sh_->shards) s.stop();
    stop();
  }

  int fd_;
  std::shared_ptr<const Shared> sh_;
  IoWatch watch_;
  std::unordered_map<uint64_t, ActorRef<Conn>> conns_;
  uint64_t next_id_ = 1;
  bool draining_ = false;
};

Server start(Runtime& rt, const ServerOptions& options) {
  if (options.shards == 0) throw std::invalid_argument("coact-kv: --shards must be at least 1");
  auto sh = std::make_shared<Shared>();
  sh->opt = options;
  sh->stats = std::make_shared<ServerStats>();
  const int fd = tcp_listen(options.host, options.port);
  for (size_t i = 0; i < options.shards; ++i) sh->shards.push_back(rt.spawn<Shard>(sh));
  Server s;
  s.port = tcp_local_port(fd);
  s.stats = sh->stats;
  auto listener = rt.spawn<Listener>(fd, std::shared_ptr<const Shared>(sh));
  s.drain = [listener] { listener.send(Drain{}); };
  return s;
}

}  // namespace coact::kv
