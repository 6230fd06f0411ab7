// tests/support/loopback.hpp: blocking loopback TCP clients for tests of
// servers written on the reactor (reactor_test.cpp, the kv example's tests).
// connect_loopback(port) connects to 127.0.0.1:port with a receive timeout,
// so a missing reply fails instead of hanging; send_all and read_exact loop
// over partial transfers. No Catch assertion is made here (Catch's are not
// thread-safe, and client threads call these): failures are return values
// for the caller to check on the test's thread.
// Thread: any thread; every call blocks.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace coact::test {

/// A blocking socket connected to 127.0.0.1:`port`, reads timing out after
/// `recv_timeout_s` seconds (0: never); -1 if it cannot connect.
inline int connect_loopback(uint16_t port, int recv_timeout_s = 10) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  if (recv_timeout_s > 0) {
    timeval tv{recv_timeout_s, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  return fd;
}

/// Writes all of `n` bytes; false if the peer is gone (or a send timeout hit).
inline bool send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
  }
  return true;
}
inline bool send_all(int fd, const std::string& s) { return send_all(fd, s.data(), s.size()); }

/// Reads exactly `n` bytes; false on EOF, an error or the receive timeout.
inline bool read_exact(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::read(fd, p, n);
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
  }
  return true;
}

}  // namespace coact::test
