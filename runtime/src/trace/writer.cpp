// runtime/src/trace/writer.cpp: the process's trace writer thread
// (recorder.hpp register_session): writes every live session's trace file on
// SIGINT/SIGTERM and on request_stop, off the signalled or stopping thread.
//
// The signal handler only writes one byte to a pipe (async-signal-safe). The
// writer thread reads it, writes the sessions (each streamed to PATH.partial,
// then renamed; for a signal within COACT_TRACE_EXPORT_DEADLINE_MS of reading
// the byte, the rest dropped and counted), then for a signal restores the
// disposition the program had before the first session (default, ignore or
// its own handler) and raises the signal again, so the program ends (or
// handles it) as it would have without tracing. A program that installs its
// own SIGINT/SIGTERM handler after the runtime booted replaces ours: its
// trace is then written at shutdown (or request_stop) only.
// Threads: register/unregister from any thread (a mutex); the writer thread
// (blocked in read()) and the signal handlers live while a session with an
// output file does: the last one's unregister restores the program's
// dispositions, closes the pipe and joins the thread, so a process that is
// done tracing has no thread of ours left (found: a forked child under TSan,
// "starting new threads after multi-threaded fork", failed the panic test
// after any traced runtime had run in the same process).
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "../detail/sync.hpp"
#include "recorder.hpp"

namespace coact::detail::trace {
namespace {

std::mutex g_mu;
std::vector<Session*> g_sessions;  // guarded by g_mu
int g_read_fd = -1;                // guarded by g_mu: the pipe's read end (the writer thread has a copy)
std::atomic<int> g_write_fd{-1};   // read by the signal handler and request_writes
struct sigaction g_old_int {
}, g_old_term{};
bool g_started = false;  // guarded by g_mu
std::thread g_thread;    // guarded by g_mu: the writer thread while started

extern "C" void on_trace_signal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = ::write(g_write_fd.load(std::memory_order_relaxed), &b, 1);
  errno = saved;
}

void writer_main(int read_fd) {
  for (;;) {
    unsigned char b = 0;
    const ssize_t n = ::read(read_fd, &b, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    const bool signalled = b == SIGINT || b == SIGTERM;
    const uint64_t since = sync::now_ns();  // the deadline of a signal's write runs from here
    {
      std::lock_guard lk(g_mu);
      for (Session* s : g_sessions) s->write_output(signalled, since);
    }
    if (b == SIGINT || b == SIGTERM) {
      // The program's own disposition, then the signal again.
      ::sigaction(b, b == SIGINT ? &g_old_int : &g_old_term, nullptr);
      ::raise(b);
    }
  }
}

// A forked child has none of the parent's threads: forget the writer thread
// (and the parent's sessions), so the child's first session starts its own.
void forget_in_child() {
  g_started = false;
  if (g_thread.joinable()) g_thread.detach();  // the parent's thread does not exist here
  g_sessions.clear();
  if (g_read_fd >= 0) ::close(g_read_fd);
  const int w = g_write_fd.exchange(-1);
  if (w >= 0) ::close(w);
  g_read_fd = -1;
}

void start_locked() {
  if (g_started) return;
  static bool atfork = false;
  if (!atfork) {
    atfork = true;
    ::pthread_atfork(nullptr, nullptr, forget_in_child);
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  g_started = true;
  g_read_fd = fds[0];
  g_write_fd.store(fds[1], std::memory_order_release);
  struct sigaction sa {};
  sa.sa_handler = on_trace_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
  g_thread = std::thread(writer_main, fds[0]);
}

// Under g_mu, the last session gone: the program's own dispositions back, the
// pipe's write end closed (the writer's read() then returns 0). Returns the
// thread to join outside g_mu (the writer takes g_mu for each byte it reads).
std::thread stop_locked() {
  if (!g_started) return {};
  g_started = false;
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  const int w = g_write_fd.exchange(-1);
  if (w >= 0) ::close(w);
  return std::move(g_thread);
}

}  // namespace

void register_session(Session* s) {
  std::lock_guard lk(g_mu);
  g_sessions.push_back(s);
  if (!s->output().empty()) start_locked();
}

void unregister_session(Session* s) noexcept {
  std::thread done;
  int read_fd = -1;
  {
    std::lock_guard lk(g_mu);
    g_sessions.erase(std::remove(g_sessions.begin(), g_sessions.end(), s), g_sessions.end());
    bool any_output = false;
    for (Session* x : g_sessions) any_output |= !x->output().empty();
    if (!any_output) {
      done = stop_locked();
      read_fd = std::exchange(g_read_fd, -1);
    }
  }
  if (done.joinable()) {
    // On the writer thread itself (a program's own signal handler, re-raised
    // there, ended the process and a static runtime unregisters): no self-join.
    if (done.get_id() == std::this_thread::get_id()) {
      done.detach();
    } else {
      done.join();  // read() saw the closed write end
    }
  }
  if (read_fd >= 0) ::close(read_fd);
}

void request_writes() noexcept {
  const int fd = g_write_fd.load(std::memory_order_acquire);
  if (fd < 0) return;
  const unsigned char b = 0;
  [[maybe_unused]] ssize_t n = ::write(fd, &b, 1);
}

}  // namespace coact::detail::trace
