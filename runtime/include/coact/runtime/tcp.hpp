// coact/runtime/tcp.hpp: non-blocking TCP descriptors for actors that watch
// them with coact::IoWatch (reactor.hpp; docs/services.md). Plain functions
// over POSIX sockets: they never block, and any thread may call them.
// Descriptors are returned close-on-exec and non-blocking; the caller owns
// them (close after the IoWatch on them is gone).
#pragma once

#include <cstdint>
#include <string>

namespace coact {

/// A listening TCP socket bound to `host` (a numeric IPv4 address;
/// "0.0.0.0" for every interface) and `port` (0: the kernel picks one, read
/// it with tcp_local_port), with SO_REUSEADDR and the given backlog. Throws
/// std::system_error naming the address (bad address, port in use).
int tcp_listen(const std::string& host, uint16_t port, int backlog = 1024);

/// Accepts one pending connection of `listen_fd`: the new descriptor
/// (non-blocking, close-on-exec, TCP_NODELAY), or -1 with errno set (EAGAIN
/// when none is pending; EMFILE and ENFILE when out of descriptors, which the
/// caller should survive by retrying later).
int tcp_accept(int listen_fd) noexcept;

/// The local port of a bound socket; 0 on error.
uint16_t tcp_local_port(int fd) noexcept;

/// A connected, non-blocking client socket to `host`:`port` (IPv4,
/// TCP_NODELAY); the connect may still be in progress (arm for write to learn
/// when it completes). Throws std::system_error naming the address.
int tcp_connect(const std::string& host, uint16_t port);

}  // namespace coact
