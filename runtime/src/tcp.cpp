// runtime/src/tcp.cpp: non-blocking TCP descriptors (coact/runtime/tcp.hpp).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include <coact/runtime/tcp.hpp>

namespace coact {

namespace {

sockaddr_in ipv4(const std::string& host, uint16_t port, const char* what) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
    throw std::system_error(EINVAL, std::generic_category(),
                            std::string(what) + ": '" + host + "' is not a numeric IPv4 address");
  return a;
}

[[noreturn]] void fail(int fd, const char* what, const std::string& host, uint16_t port) {
  const int e = errno;
  if (fd >= 0) ::close(fd);
  throw std::system_error(e, std::generic_category(), std::string(what) + " " + host + ":" + std::to_string(port));
}

}  // namespace

int tcp_listen(const std::string& host, uint16_t port, int backlog) {
  const sockaddr_in a = ipv4(host, port, "coact::tcp_listen");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail(-1, "coact::tcp_listen: socket", host, port);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) fail(fd, "coact::tcp_listen: bind", host, port);
  if (::listen(fd, backlog) != 0) fail(fd, "coact::tcp_listen: listen", host, port);
  return fd;
}

int tcp_accept(int listen_fd) noexcept {
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

uint16_t tcp_local_port(int fd) noexcept {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  return ntohs(a.sin_port);
}

int tcp_connect(const std::string& host, uint16_t port) {
  const sockaddr_in a = ipv4(host, port, "coact::tcp_connect");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail(-1, "coact::tcp_connect: socket", host, port);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS)
    fail(fd, "coact::tcp_connect: connect", host, port);
  return fd;
}

}  // namespace coact
