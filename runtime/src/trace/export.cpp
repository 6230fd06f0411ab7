// runtime/src/trace/export.cpp: the recorded events streamed out as a Chrome
// trace-event JSON document ("Trace Event Format", the JSON Object Format that
// chrome://tracing, Perfetto's UI and trace_processor read).
//
// Layout: pid 1 is the runtime; tid i+1 is worker i, tid workers+1 every
// other thread (roots: mail sent from outside the pool). Per traced mail:
// the recipient's handler slice (ph X, named like the causal region,
// "Type::on(Msg)"), carrying the five timestamps and the four spans in its
// args, and a flow arrow (ph s at the send, in the sender's flush slice;
// ph f with bp "e" at the handler's start). Parks are "parked" slices with
// "park" / "wake" instants, timer fires and burst recruitment instants, and
// the causal controller's selection a counter track ("causal experiment":
// speedup_pct, region). otherData, after the events, holds the session (rate,
// burst, workers, events, dropped, flows, written, export_cut). Timestamps:
// microseconds since the runtime booted, written from integer ns (exact).
//
// Streaming: `{"displayTimeUnit":"ns","traceEvents":[` and one event per
// line, each line after the first starting with ",", then `],"otherData":…}`.
// Events are formatted into a fixed buffer that is written out only after a
// whole event line, so a file cut short (the process killed while writing)
// ends after a complete event and loads once "]}" is appended. The events of
// the rings are merged by the time they were recorded (their last stamp), so
// a cut file, or one stopped by its deadline, covers every thread up to one
// point in time. No event is copied: the rings are read in place. A deadline
// (a signal's write) is checked while the index is built (which may take half
// of it, else the events are written unjoined) and every 256 events written;
// past it, the rest is counted (export_cut), not written.
//
// Memory: the send index (24 bytes a send: mail key, t_sent, position, depth)
// for the whole write, and while the depths are computed 32 bytes a handled
// mail plus an 8-byte heap entry (recorder.hpp kExportBytesPerEvent).
#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <queue>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <coact/causal/region.hpp>
#include <coact/runtime/message_kind.hpp>

#include "../detail/sync.hpp"
#include "recorder.hpp"

namespace coact::detail::trace {
namespace {

using nlohmann::json;

/// `s` as a JSON string literal (quotes included; bytes that are not UTF-8 replaced).
std::string quoted(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

const char* timer_reason(uint32_t r) {
  switch (r) {
    case 0:
      return "sleep";  // TimerReason (detail/timer_heap.hpp)
    case 1:
      return "wait_timeout";
    case 2:
      return "send";
    default:
      return "?";
  }
}

/// The output: a fixed-size buffer of whole event lines, written to the fd
/// when it holds kFlushAt bytes or more (after an event) and at the end.
class Out {
 public:
  static constexpr size_t kFlushAt = 32 * 1024;
  explicit Out(int fd) : fd_(fd) { buf_.reserve(kFlushAt + 4096); }

  Out& raw(std::string_view s) {
    buf_.append(s);
    return *this;
  }
  Out& u(uint64_t v) {
    char t[24];
    const auto r = std::to_chars(t, t + sizeof t, v);
    buf_.append(t, r.ptr);
    return *this;
  }
  /// Signed ns as µs with three decimals ("-12.345"): exact, no floating point.
  Out& us(int64_t ns) {
    uint64_t a = ns < 0 ? uint64_t(-(ns + 1)) + 1 : uint64_t(ns);
    if (ns < 0) buf_.push_back('-');
    u(a / 1000);
    const unsigned f = unsigned(a % 1000);
    const char d[4] = {'.', char('0' + f / 100), char('0' + f / 10 % 10), char('0' + f % 10)};
    buf_.append(d, 4);
    return *this;
  }
  /// Starts an event line (the separator of every line but the first).
  Out& begin() {
    buf_.append(first_ ? "\n" : ",\n");
    first_ = false;
    return *this;
  }
  /// Ends an event line: written out if the buffer is full enough.
  void end() {
    if (buf_.size() >= kFlushAt) flush();
  }
  /// Writes the buffer out (whole lines only). False once a write failed.
  bool flush() {
    size_t off = 0;
    while (ok_ && off < buf_.size()) {
      const ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        err_ = n < 0 ? errno : EIO;
        ok_ = false;
        break;
      }
      off += size_t(n);
    }
    buf_.clear();
    return ok_;
  }
  bool ok() const noexcept { return ok_; }
  int error() const noexcept { return err_; }

 private:
  int fd_;
  std::string buf_;
  bool first_ = true;
  bool ok_ = true;
  int err_ = 0;
};

// Index entries (the file comment's memory figure).
struct SendEntry {
  uint64_t key;     // mail key (hooks.hpp mail_key)
  uint64_t t_sent;  // the send's t1
  uint32_t pos;     // global position (ring base + slot): the mail id is pos + 1
  uint32_t depth;   // mails ahead at deposit; kUnhandled until a handler matched it
};
static_assert(sizeof(SendEntry) == 24);
constexpr uint32_t kUnhandled = UINT32_MAX;

struct MailEntry {
  uint64_t recipient, t_sent, t_received;
  uint32_t send;  // index into the send index
  uint32_t pos;   // the send's global position (ties on t_sent: send order)
};
static_assert(sizeof(MailEntry) == 32);

}  // namespace

ExportResult export_json(int fd, const std::vector<const Ring*>& rings, const SessionInfo& info, uint64_t boot_ns,
                         uint64_t dropped, uint64_t deadline_at_ns) {
  ExportResult res;
  Out out(fd);
  const auto past_deadline = [&] { return deadline_at_ns != 0 && sync::now_ns() >= deadline_at_ns; };
  // The index may take half the time left: its passes look at the clock
  // every 64Ki slots (only its sorts run unchecked). Once late, the index is
  // dropped and the events are written without it: handler slices without
  // their send's stamps, no flows, no depths ("joined": false).
  const uint64_t index_deadline_ns = deadline_at_ns == 0 ? 0 : [&] {
    const uint64_t now = sync::now_ns();
    return now >= deadline_at_ns ? now : now + (deadline_at_ns - now) / 2;
  }();
  bool late = false;
  const auto check = [&](uint64_t i) {
    if ((i & 0xffff) == 0 && !late) late = index_deadline_ns != 0 && sync::now_ns() >= index_deadline_ns;
    return !late;
  };

  // The header first: a file cut from here on holds at least the track names.
  out.raw(R"({"displayTimeUnit":"ns","traceEvents":[)");
  out.begin().raw(
      json{{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", "coact runtime"}}}}
          .dump());
  for (uint32_t r = 0; r < rings.size(); ++r) {
    const std::string track = r < info.workers ? "worker " + std::to_string(r) : std::string("other threads (roots)");
    out.begin().raw(
        json{{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", int(r) + 1}, {"args", {{"name", track}}}}
            .dump());
    out.begin().raw(json{
        {"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", int(r) + 1}, {"args", {{"sort_index", int(r)}}}}
                        .dump());
  }
  if (!out.flush()) {
    errno = out.error();
    return res;
  }

  // The rings' extent now (later appends are not seen) and their bases in the
  // global position numbering.
  std::vector<uint64_t> n(rings.size()), base(rings.size());
  uint64_t sends = 0, handlers = 0;
  for (size_t r = 0; r < rings.size(); ++r) {
    n[r] = rings[r]->published();
    base[r] = r == 0 ? 0 : base[r - 1] + n[r - 1];
    for (uint64_t i = 0; i < n[r]; ++i) {
      const Event* e = rings[r]->at(i);
      if (e == nullptr) continue;
      ++res.recorded;
      sends += e->type == EventType::send && e->id != 0;
      handlers += e->type == EventType::handler && e->id != 0;
    }
  }
  const auto locate = [&](uint32_t pos) -> const Event* {
    const size_t r = size_t(std::upper_bound(base.begin(), base.end(), uint64_t(pos)) - base.begin()) - 1;
    return rings[r]->at(pos - base[r]);
  };

  // Mail ids: send and handler events carry the mail's key (hooks.hpp
  // mail_key: the envelope's address and trace tag). An envelope is reused
  // only after its mail was consumed, so a handler's send is the latest send
  // of the same key at or before its t_received; its id is the send's
  // position + 1. A handler whose send was dropped (full ring) has none.
  std::vector<SendEntry> index;
  index.reserve(size_t(sends));
  for (size_t r = 0; r < rings.size(); ++r) {
    for (uint64_t i = 0; i < n[r] && check(i); ++i) {
      const Event* e = rings[r]->at(i);
      if (e != nullptr && e->type == EventType::send && e->id != 0 && index.size() < sends) {
        index.push_back({e->id, e->t1, uint32_t(base[r] + i), kUnhandled});
      }
    }
  }
  if (late) index = {};
  std::sort(index.begin(), index.end(), [](const SendEntry& a, const SendEntry& b) {
    return a.key != b.key ? a.key < b.key : a.t_sent != b.t_sent ? a.t_sent < b.t_sent : a.pos < b.pos;
  });
  const auto send_of = [&](const Event& h) -> SendEntry* {  // h: a handler event
    if (h.id == 0) return nullptr;
    auto it = std::upper_bound(index.begin(), index.end(), std::make_pair(h.id, h.t1),
                               [](const std::pair<uint64_t, uint64_t>& k, const SendEntry& s) {
                                 return k.first != s.key ? k.first < s.key : k.second < s.t_sent;
                               });
    if (it == index.begin() || std::prev(it)->key != h.id) return nullptr;
    return &*std::prev(it);
  };

  // Enqueue depth at deposit: per recipient, traced mail sent before this one
  // (t_sent, then send order) and not yet received at this one's t_sent. The
  // first handler of a mail (in ring order) gives its t_received.
  if (!late) {
    std::vector<MailEntry> mails;
    mails.reserve(size_t(handlers));
    for (size_t r = 0; r < rings.size(); ++r) {
      for (uint64_t i = 0; i < n[r] && check(i + 1); ++i) {
        const Event* e = rings[r]->at(i);
        if (e == nullptr || e->type != EventType::handler) continue;
        SendEntry* s = send_of(*e);
        if (s == nullptr || s->depth != kUnhandled || mails.size() >= handlers) continue;
        s->depth = 0;
        mails.push_back({locate(s->pos)->a, s->t_sent, e->t1, uint32_t(s - index.data()), s->pos});
      }
    }
    if (late) {
      mails = {};
      index = {};
    }
    std::sort(mails.begin(), mails.end(), [](const MailEntry& a, const MailEntry& b) {
      return a.recipient != b.recipient ? a.recipient < b.recipient
             : a.t_sent != b.t_sent     ? a.t_sent < b.t_sent
                                        : a.pos < b.pos;
    });
    std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> pending;  // t_received
    for (size_t i = 0; i < mails.size(); ++i) {
      if (i == 0 || mails[i].recipient != mails[i - 1].recipient) pending = {};
      while (!pending.empty() && pending.top() <= mails[i].t_sent) pending.pop();
      index[mails[i].send].depth = uint32_t(pending.size());
      pending.push(mails[i].t_received);
    }
  }

  // Names, JSON-quoted once each.
  std::map<std::pair<const void*, uint32_t>, std::string> regions;
  const auto region = [&](const void* ti, uint32_t kind) -> const std::string& {
    auto [it, fresh] = regions.try_emplace({ti, kind});
    if (fresh) {
      const std::string type = ti == nullptr ? "?" : demangle(*static_cast<const std::type_info*>(ti));
      it->second = quoted(type + "::on(" + kind_name(kind) + ")");
    }
    return it->second;
  };
  std::map<uint32_t, std::string> kinds;
  const auto kind = [&](uint32_t k) -> const std::string& {
    auto [it, fresh] = kinds.try_emplace(k);
    if (fresh) it->second = quoted(kind_name(k));
    return it->second;
  };
  const auto ts = [&](uint64_t t) { return int64_t(t - boot_ns); };  // ns since boot (two's complement: may be < 0)
  const auto span = [](uint64_t from, uint64_t to) { return int64_t(to - from); };
  const auto pid_text = [&](uint64_t a) -> Out& {  // an actor pid, "high.low" 32-bit halves
    return out.raw("\"").u(a >> 32).raw(".").u(a & 0xffffffffu).raw("\"");
  };
  const auto head = [&](std::string_view name_json, std::string_view cat, std::string_view ph, uint16_t ring) -> Out& {
    return out.begin()
        .raw(R"({"name":)")
        .raw(name_json)
        .raw(R"(,"cat":")")
        .raw(cat)
        .raw(R"(","ph":")")
        .raw(ph)
        .raw(R"(","pid":1,"tid":)")
        .u(uint64_t(ring) + 1);
  };

  uint64_t flows = 0;
  const auto emit = [&](const Event& e) {
    switch (e.type) {
      case EventType::handler: {
        const SendEntry* si = send_of(e);
        const Event* s = si == nullptr ? nullptr : locate(si->pos);
        if (s != nullptr) {
          const uint64_t id = uint64_t(si->pos) + 1;
          const uint64_t enq = std::max(e.t0, s->t1);
          head(R"("mail")", "mail", "s", s->ring).raw(R"(,"id":)").u(id).raw(R"(,"ts":)").us(ts(s->t1)).raw("}");
          head(R"("mail")", "mail", "f", e.ring).raw(R"(,"bp":"e","id":)").u(id).raw(R"(,"ts":)").us(ts(e.t1)).raw("}");
          ++flows;
          head(region(e.type_info, e.kind), "handler", "X", e.ring)
              .raw(R"(,"ts":)")
              .us(ts(e.t1))
              .raw(R"(,"dur":)")
              .us(span(e.t1, e.t2))
              .raw(R"(,"args":{"actor":)");
          pid_text(e.a);
          if (e.flags & 1) out.raw(R"(,"resume":true)");
          out.raw(R"(,"mail":)").u(id).raw(R"(,"from":)");
          out.raw(s->type_info == nullptr ? std::string_view(R"("root")") : region(s->type_info, s->kind2));
          out.raw(R"(,"t_construct_start":)").us(ts(s->t0));
          out.raw(R"(,"t_sent":)").us(ts(s->t1));
          out.raw(R"(,"t_enqueue":)").us(ts(enq));
          out.raw(R"(,"t_received":)").us(ts(e.t1));
          out.raw(R"(,"t_finished":)").us(ts(e.t2));
          out.raw(R"(,"construct_us":)").us(span(s->t0, s->t1));
          out.raw(R"(,"queued_us":)").us(span(s->t1, enq));
          out.raw(R"(,"drain_us":)").us(e.t1 >= enq ? span(enq, e.t1) : 0);
          out.raw(R"(,"handler_us":)").us(span(e.t1, e.t2));
          out.raw(R"(,"depth":)").u(si->depth == kUnhandled ? 0 : si->depth).raw("}}");
        } else {
          head(region(e.type_info, e.kind), "handler", "X", e.ring)
              .raw(R"(,"ts":)")
              .us(ts(e.t1))
              .raw(R"(,"dur":)")
              .us(span(e.t1, e.t2))
              .raw(R"(,"args":{"actor":)");
          pid_text(e.a);
          if (e.flags & 1) out.raw(R"(,"resume":true)");
          out.raw(R"(,"t_received":)").us(ts(e.t1));
          out.raw(R"(,"t_finished":)").us(ts(e.t2));
          out.raw(R"(,"handler_us":)").us(span(e.t1, e.t2)).raw("}}");
        }
        break;
      }
      case EventType::flush:
        head(R"("flush")", "send", "X", e.ring)
            .raw(R"(,"ts":)")
            .us(ts(e.t1))
            .raw(R"(,"dur":)")
            .us(span(e.t1, e.t2))
            .raw(R"(,"args":{"from":)")
            .raw(e.type_info == nullptr ? std::string_view(R"("?")") : region(e.type_info, e.kind))
            .raw(R"(,"actor":)");
        pid_text(e.a).raw(R"(,"mails":)").u(e.count).raw(R"(,"construct_us":)").us(span(e.t0, e.t1)).raw("}}");
        break;
      case EventType::send:
        if (e.t2 != 0) {  // a root send (or a send outside a handler): its own slice
          head(R"("send")", "send", "X", e.ring)
              .raw(R"(,"ts":)")
              .us(ts(e.t1))
              .raw(R"(,"dur":)")
              .us(span(e.t1, e.t2))
              .raw(R"(,"args":{"to":)");
          pid_text(e.a).raw(R"(,"message":)").raw(kind(e.kind)).raw("}}");
        }
        break;
      case EventType::park: {
        const std::string_view timed_out = (e.flags & 1) ? "true" : "false";
        head(R"("parked")", "idle", "X", e.ring)
            .raw(R"(,"ts":)")
            .us(ts(e.t0))
            .raw(R"(,"dur":)")
            .us(span(e.t0, e.t1))
            .raw(R"(,"args":{"timed_out":)")
            .raw(timed_out)
            .raw(R"(,"timekeeper":)")
            .raw((e.flags & 2) ? "true" : "false")
            .raw("}}");
        head(R"("park")", "idle", "i", e.ring).raw(R"(,"s":"t","ts":)").us(ts(e.t0)).raw("}");
        head(R"("wake")", "idle", "i", e.ring)
            .raw(R"(,"s":"t","ts":)")
            .us(ts(e.t1))
            .raw(R"(,"args":{"timed_out":)")
            .raw(timed_out)
            .raw("}}");
        break;
      }
      case EventType::timer:
        head(std::string("\"timer fire (") + timer_reason(e.kind) + ")\"", "timer", "i", e.ring)
            .raw(R"(,"s":"t","ts":)")
            .us(ts(e.t0))
            .raw(R"(,"args":{"late_us":)")
            .us(e.t0 >= e.t1 ? span(e.t1, e.t0) : 0)
            .raw("}}");
        break;
      case EventType::recruit:
        head(R"("recruit")", "burst", "i", e.ring)
            .raw(R"(,"s":"t","ts":)")
            .us(ts(e.t0))
            .raw(R"(,"args":{"from":)")
            .raw(e.type_info == nullptr ? std::string_view(R"("?")") : region(e.type_info, e.kind))
            .raw(R"(,"groups":)")
            .u(e.kind2)
            .raw(R"(,"recruited":)")
            .u(e.count)
            .raw(R"(,"gate":)")
            .raw((e.flags & 1) ? R"("width")" : R"("cost")")
            .raw("}}");
        break;
      case EventType::experiment: {
        const std::string name = e.id == 0 ? std::string("(none)") : causal::region_name(uint32_t(e.id));
        out.begin()
            .raw(R"({"name":"causal experiment","cat":"causal","ph":"C","pid":1,"ts":)")
            .us(ts(e.t0))
            .raw(R"(,"args":{"speedup_pct":)")
            .u(e.count)
            .raw(R"(,"region":)")
            .u(e.id)
            .raw("}}");
        out.begin()
            .raw(R"({"name":)")
            .raw(quoted(e.id == 0 ? std::string("experiment end") : "experiment: " + name))
            .raw(R"(,"cat":"causal","ph":"i","s":"g","pid":1,"tid":0,"ts":)")
            .us(ts(e.t0))
            .raw(R"(,"args":{"region":)")
            .raw(quoted(name))
            .raw(R"(,"speedup_pct":)")
            .u(e.count)
            .raw("}}");
        break;
      }
    }
    out.end();
  };

  // Merge the rings by the time each event was recorded (its last stamp).
  const auto stamp = [](const Event& e) { return std::max({e.t0, e.t1, e.t2}); };
  std::vector<uint64_t> cursor(rings.size(), 0);
  const auto advance = [&](size_t r) {  // to the next published slot (or n[r])
    while (cursor[r] < n[r] && rings[r]->at(cursor[r]) == nullptr) ++cursor[r];
  };
  using Head = std::pair<uint64_t, size_t>;  // (stamp, ring)
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
  for (size_t r = 0; r < rings.size(); ++r) {
    advance(r);
    if (cursor[r] < n[r]) heads.emplace(stamp(*rings[r]->at(cursor[r])), r);
  }
  bool cut = past_deadline();
  while (!cut && !heads.empty() && out.ok()) {
    const size_t r = heads.top().second;
    heads.pop();
    emit(*rings[r]->at(cursor[r]));
    ++res.written;
    ++cursor[r];
    advance(r);
    if (cursor[r] < n[r]) heads.emplace(stamp(*rings[r]->at(cursor[r])), r);
    if ((res.written & 255) == 0) cut = past_deadline();
  }
  res.cut = res.recorded - res.written;

  out.raw("\n],\"otherData\":")
      .raw(json{{"coact_trace", 1},
                {"rate", info.rate},
                {"burst", info.burst},
                {"workers", info.workers},
                {"events", res.recorded},
                {"dropped", dropped},
                {"flows", flows},
                {"written", res.written},
                {"export_cut", res.cut},
                {"joined", !late},
                {"export_deadline_ms", deadline_at_ns == 0 ? 0 : info.export_deadline_ns / 1'000'000}}
               .dump())
      .raw("}\n");
  res.ok = out.flush();
  if (!res.ok) errno = out.error();
  return res;
}

}  // namespace coact::detail::trace
