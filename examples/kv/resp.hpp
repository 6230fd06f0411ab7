// kv/resp.hpp: the RESP2 request parser and reply encoders of the kv example.
//
// Provides: Limits, Request, parse_request() (an incremental parser of RESP
// arrays of bulk strings, as redis-cli and redis-benchmark send, and of
// inline commands, as telnet users type), the reply encoders append_*(), and
// parse_int64(), Redis's strict decimal integer syntax.
// The parser is stateless: it reads from the start of the caller's buffer
// each call and never allocates more than the bytes present justify, so an
// announced length costs nothing until its bytes have arrived.
// Threads: pure functions over caller memory; any thread, no locks, never
// blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coact::kv {

/// Bounds on one request. A request that would exceed them is a protocol
/// error, reported as soon as the bytes present show it.
struct Limits {
  /// Bytes of one whole request, framing included (array header, length
  /// lines, CRLFs); also the longest inline line, its newline included.
  size_t max_request_bytes = size_t{1} << 20;
  /// Arguments of one request (array elements or inline words).
  size_t max_args = size_t{1} << 16;
};

/// One command: args[0] is the command name (case-insensitive, see
/// command_of() in kv/store.hpp), the rest its arguments, binary-safe.
struct Request {
  std::vector<std::string> args;
};

enum class ParseStatus { complete, incomplete, error };

/// Parses the first request in `buf`.
///
/// Grammar: a buffer starting with '*' is a RESP2 array of bulk strings
/// (`*N\r\n` then N times `$len\r\n<len bytes>\r\n`); anything else is an
/// inline command, one line ended by "\n" or "\r\n", split on whitespace with
/// Redis's quoting ("..." with \n \r \t \b \a \\ \" \xHH escapes, '...' with
/// \' ). Length lines follow parse_int64()'s syntax. Empty requests (`*0\r\n`
/// and blank inline lines) are skipped, as Redis does.
///
/// Returns:
///  - complete: `out.args` holds the request (its strings' capacity is
///    reused); `consumed` is the number of bytes it took, counting any empty
///    requests skipped before it. Pipelining: drop `consumed` bytes and call
///    again on the rest.
///  - incomplete: more bytes are needed; `out` is untouched. `consumed` counts
///    the leading empty requests skipped (usually 0): the caller drops those
///    bytes too.
///  - error: the input is malformed or over `limits`; `error` holds a message
///    in Redis's wording without the "ERR " prefix (for example
///    "Protocol error: invalid bulk length"); `out` is untouched and
///    `consumed` is 0. Redis replies append_error(out, "ERR " + error) and
///    closes the connection; nothing after the error is parsed.
/// Errors: a type byte other than '$' inside an array; a length line that is
/// not a decimal integer, or is negative (the nulls `*-1` and `$-1` too);
/// an element count over limits.max_args; a bulk length, or the least size
/// the request can still have, over limits.max_request_bytes; a length line
/// or inline line with no newline once it is too long to be valid; bulk data
/// not followed by CRLF; unbalanced quotes in an inline line, or more than
/// limits.max_args words in it.
/// Cost: linear in the bytes of the request present, whatever the bytes
/// announced. An incomplete request is scanned again from its start by the
/// next call, so call again only once more bytes have arrived.
ParseStatus parse_request(std::string_view buf, const Limits& limits, Request& out, size_t& consumed,
                          std::string& error);

/// Parses a signed 64-bit decimal integer as Redis's string2ll does: an
/// optional '-', then digits without leading zeros ("0" alone is zero), no
/// '+', no spaces, no "-0", within [INT64_MIN, INT64_MAX]. Returns nullopt for
/// anything else.
std::optional<int64_t> parse_int64(std::string_view text);

// Reply encoders: each appends one RESP2 value to `out`.

/// `+text\r\n`. CR and LF in `text` become spaces, so a reply cannot inject
/// protocol.
void append_simple(std::string& out, std::string_view text);
/// `-message\r\n`; `message` carries its own code, e.g. "ERR unknown command".
/// CR and LF in `message` become spaces.
void append_error(std::string& out, std::string_view message);
/// `:value\r\n`.
void append_integer(std::string& out, int64_t value);
/// `$len\r\n<bytes>\r\n`, binary-safe.
void append_bulk(std::string& out, std::string_view bytes);
/// The null bulk string, `$-1\r\n`.
void append_null(std::string& out);
/// `*n\r\n`; the caller appends the n elements after it.
void append_array_header(std::string& out, size_t n);

}  // namespace coact::kv
