// kv/resp.cpp: RESP2 request parsing and reply encoding, see resp.hpp.
// Error wording follows Redis's networking.c (processMultibulkBuffer,
// processInlineBuffer); inline splitting follows sds.c's sdssplitargs().
// Threads: pure functions; any thread.
#include "kv/resp.hpp"

#include <charconv>
#include <limits>

namespace coact::kv {
namespace {

/// The least bytes one more array element can take: `$0\r\n\r\n`.
constexpr size_t kMinBulkBytes = 6;
/// The longest valid length line body: '-' and 19 digits (INT64_MIN).
constexpr size_t kMaxLengthChars = 20;

constexpr std::string_view kInvalidMultibulk = "Protocol error: invalid multibulk length";
constexpr std::string_view kInvalidBulk = "Protocol error: invalid bulk length";
constexpr std::string_view kTooBigMultibulkLine = "Protocol error: too big mbulk count string";
constexpr std::string_view kTooBigBulkLine = "Protocol error: too big bulk count string";
constexpr std::string_view kTooBigRequest = "Protocol error: too big request";
constexpr std::string_view kTooBigInline = "Protocol error: too big inline request";
constexpr std::string_view kMissingCrlf = "Protocol error: expected CRLF after bulk data";
constexpr std::string_view kUnbalancedQuotes = "Protocol error: unbalanced quotes in request";
constexpr std::string_view kTooManyInlineArgs = "Protocol error: too many arguments in inline request";

enum class LengthLine { count, bulk };

ParseStatus fail(std::string& error, std::string_view message) {
  error.assign(message);
  return ParseStatus::error;
}

/// Reads a length line's body from buf[pos] through its CRLF; on complete,
/// `value` holds the number and `pos` points past the CRLF. A byte that no
/// integer may hold is an error at once, even before the CRLF arrives, and so
/// is a body longer than any valid integer.
ParseStatus read_length(std::string_view buf, size_t& pos, LengthLine kind, int64_t& value, std::string& error) {
  const std::string_view invalid = kind == LengthLine::count ? kInvalidMultibulk : kInvalidBulk;
  size_t i = pos;
  for (; i < buf.size() && buf[i] != '\r'; ++i) {
    const char c = buf[i];
    if (c != '-' && (c < '0' || c > '9')) return fail(error, invalid);
    if (i - pos >= kMaxLengthChars) {
      return fail(error, kind == LengthLine::count ? kTooBigMultibulkLine : kTooBigBulkLine);
    }
  }
  if (i + 1 >= buf.size()) return ParseStatus::incomplete;
  if (buf[i + 1] != '\n') return fail(error, invalid);
  const std::optional<int64_t> parsed = parse_int64(buf.substr(pos, i - pos));
  if (!parsed) return fail(error, invalid);
  value = *parsed;
  pos = i + 2;
  return ParseStatus::complete;
}

/// A byte as it appears in an error message: printable ASCII as itself,
/// anything else as \xHH.
std::string describe_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string(1, c);
  constexpr char kHex[] = "0123456789abcdef";
  return std::string{'\\', 'x', kHex[u >> 4], kHex[u & 0xf]};
}

/// Parses one array request at the start of `buf` (buf[0] == '*'). `empty`
/// is set for `*0\r\n`, which carries no command.
ParseStatus parse_array(std::string_view buf, const Limits& limits, Request& out, size_t& size, bool& empty,
                        std::string& error) {
  size_t pos = 1;
  int64_t count = 0;
  if (const ParseStatus s = read_length(buf, pos, LengthLine::count, count, error); s != ParseStatus::complete) {
    return s;
  }
  if (count < 0 || static_cast<uint64_t>(count) > limits.max_args) return fail(error, kInvalidMultibulk);
  if (count == 0) {
    empty = true;
    size = pos;
    return ParseStatus::complete;
  }
  const auto n = static_cast<size_t>(count);
  if (pos > limits.max_request_bytes || n > (limits.max_request_bytes - pos) / kMinBulkBytes) {
    return fail(error, kTooBigRequest);
  }
  // Views into `buf`; grows only with elements whose bytes are all present.
  std::vector<std::string_view> views;
  for (size_t i = 0; i < n; ++i) {
    if (pos == buf.size()) return ParseStatus::incomplete;
    if (buf[pos] != '$') {
      return fail(error, "Protocol error: expected '$', got '" + describe_byte(buf[pos]) + "'");
    }
    ++pos;
    int64_t length = 0;
    if (const ParseStatus s = read_length(buf, pos, LengthLine::bulk, length, error); s != ParseStatus::complete) {
      return s;
    }
    if (length < 0 || static_cast<uint64_t>(length) > limits.max_request_bytes) return fail(error, kInvalidBulk);
    const auto bytes = static_cast<size_t>(length);
    // pos <= buf.size() and the earlier check bound the remaining elements'
    // share by max_request_bytes, so this sum cannot overflow.
    const size_t least = pos + bytes + 2 + (n - i - 1) * kMinBulkBytes;
    if (least > limits.max_request_bytes) return fail(error, kTooBigRequest);
    const size_t available = buf.size() - pos;
    if ((available > bytes && buf[pos + bytes] != '\r') || (available > bytes + 1 && buf[pos + bytes + 1] != '\n')) {
      return fail(error, kMissingCrlf);
    }
    if (available < bytes + 2) return ParseStatus::incomplete;
    views.push_back(buf.substr(pos, bytes));
    pos += bytes + 2;
  }
  out.args.resize(n);
  for (size_t i = 0; i < n; ++i) out.args[i].assign(views[i]);
  empty = false;
  size = pos;
  return ParseStatus::complete;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char unescape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'b':
      return '\b';
    case 'a':
      return '\a';
    default:
      return c;
  }
}

enum class SplitStatus { ok, unbalanced, too_many };

/// Splits an inline line into words as sdssplitargs() does: whitespace
/// separates words; "..." and '...' quote (a closing quote must end the
/// word); quotes may start mid-word and join what follows.
SplitStatus split_inline(std::string_view line, size_t max_args, std::vector<std::string>& args) {
  const size_t n = line.size();
  size_t i = 0;
  for (;;) {
    while (i < n && is_space(line[i])) ++i;
    if (i == n) return SplitStatus::ok;
    if (args.size() == max_args) return SplitStatus::too_many;
    std::string word;
    bool in_double = false;
    bool in_single = false;
    for (;;) {
      if (in_double || in_single) {
        if (i == n) return SplitStatus::unbalanced;
        const char c = line[i];
        const char quote = in_double ? '"' : '\'';
        if (in_double && c == '\\' && i + 3 < n && line[i + 1] == 'x' && hex_value(line[i + 2]) >= 0 &&
            hex_value(line[i + 3]) >= 0) {
          word.push_back(static_cast<char>(hex_value(line[i + 2]) * 16 + hex_value(line[i + 3])));
          i += 4;
        } else if (in_double && c == '\\' && i + 1 < n) {
          word.push_back(unescape(line[i + 1]));
          i += 2;
        } else if (in_single && c == '\\' && i + 1 < n && line[i + 1] == '\'') {
          word.push_back('\'');
          i += 2;
        } else if (c == quote) {
          ++i;
          if (i < n && !is_space(line[i])) return SplitStatus::unbalanced;
          break;
        } else {
          word.push_back(c);
          ++i;
        }
      } else {
        if (i == n || is_space(line[i])) break;
        const char c = line[i++];
        if (c == '"') {
          in_double = true;
        } else if (c == '\'') {
          in_single = true;
        } else {
          word.push_back(c);
        }
      }
    }
    args.push_back(std::move(word));
  }
}

/// Parses one inline request at the start of `buf`; `empty` is set for a
/// blank line.
ParseStatus parse_inline(std::string_view buf, const Limits& limits, Request& out, size_t& size, bool& empty,
                         std::string& error) {
  const size_t newline = buf.find('\n');
  if (newline == std::string_view::npos) {
    // With its newline still to come, the line will exceed the limit.
    if (buf.size() >= limits.max_request_bytes) return fail(error, kTooBigInline);
    return ParseStatus::incomplete;
  }
  if (newline + 1 > limits.max_request_bytes) return fail(error, kTooBigInline);
  std::string_view line = buf.substr(0, newline);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string> args;
  switch (split_inline(line, limits.max_args, args)) {
    case SplitStatus::unbalanced:
      return fail(error, kUnbalancedQuotes);
    case SplitStatus::too_many:
      return fail(error, kTooManyInlineArgs);
    case SplitStatus::ok:
      break;
  }
  empty = args.empty();
  if (!empty) out.args.swap(args);
  size = newline + 1;
  return ParseStatus::complete;
}

void append_line(std::string& out, char type, std::string_view text, bool sanitize) {
  out.push_back(type);
  const size_t start = out.size();
  out.append(text);
  if (sanitize) {
    for (size_t i = start; i < out.size(); ++i) {
      if (out[i] == '\r' || out[i] == '\n') out[i] = ' ';
    }
  }
  out.append("\r\n");
}

template <class Int>
void append_number_line(std::string& out, char type, Int value) {
  char digits[24];
  const auto result = std::to_chars(digits, digits + sizeof digits, value);
  append_line(out, type, std::string_view(digits, static_cast<size_t>(result.ptr - digits)), false);
}

}  // namespace

ParseStatus parse_request(std::string_view buf, const Limits& limits, Request& out, size_t& consumed,
                          std::string& error) {
  consumed = 0;
  size_t skipped = 0;  // bytes of empty requests before the one being parsed
  for (;;) {
    const std::string_view rest = buf.substr(skipped);
    if (rest.empty()) {
      consumed = skipped;
      return ParseStatus::incomplete;
    }
    size_t size = 0;
    bool empty = false;
    const ParseStatus s = rest.front() == '*' ? parse_array(rest, limits, out, size, empty, error)
                                              : parse_inline(rest, limits, out, size, empty, error);
    if (s == ParseStatus::error) return s;
    if (s == ParseStatus::incomplete) {
      consumed = skipped;
      return s;
    }
    skipped += size;
    if (!empty) {
      consumed = skipped;
      return ParseStatus::complete;
    }
  }
}

std::optional<int64_t> parse_int64(std::string_view text) {
  if (text.empty() || text.size() > kMaxLengthChars) return std::nullopt;
  if (text == "0") return 0;
  const bool negative = text.front() == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty() || digits.front() < '1' || digits.front() > '9') return std::nullopt;
  // Accumulate the magnitude unsigned so that INT64_MIN's is representable.
  constexpr uint64_t kMaxMagnitude = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const uint64_t limit = negative ? kMaxMagnitude + 1 : kMaxMagnitude;
  uint64_t magnitude = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<uint64_t>(c - '0');
    if (magnitude > (limit - digit) / 10) return std::nullopt;
    magnitude = magnitude * 10 + digit;
  }
  if (!negative) return static_cast<int64_t>(magnitude);
  if (magnitude == kMaxMagnitude + 1) return std::numeric_limits<int64_t>::min();
  return -static_cast<int64_t>(magnitude);
}

void append_simple(std::string& out, std::string_view text) { append_line(out, '+', text, true); }

void append_error(std::string& out, std::string_view message) { append_line(out, '-', message, true); }

void append_integer(std::string& out, int64_t value) { append_number_line(out, ':', value); }

void append_bulk(std::string& out, std::string_view bytes) {
  append_number_line(out, '$', bytes.size());
  out.append(bytes);
  out.append("\r\n");
}

void append_null(std::string& out) { out.append("$-1\r\n"); }

void append_array_header(std::string& out, size_t n) { append_number_line(out, '*', n); }

}  // namespace coact::kv
