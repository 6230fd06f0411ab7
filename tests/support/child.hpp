// tests/support/child.hpp: run a function in a forked child and capture its
// stderr and exit status (death tests for fail-fast). The child starts with
// only the forking thread, so it may build its own Runtime.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <functional>
#include <string>

namespace coact::test {

struct ChildResult {
  int status = 0;       // raw waitpid status
  std::string err;      // everything the child wrote to stderr
  bool signaled(int sig) const { return WIFSIGNALED(status) && WTERMSIG(status) == sig; }
};

inline ChildResult run_in_child(const std::function<void()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    // The test framework's own fatal-signal handlers must not report the
    // child's expected abort as a test failure.
    for (int sig : {SIGABRT, SIGSEGV, SIGILL, SIGFPE, SIGBUS, SIGTERM}) ::signal(sig, SIG_DFL);
    fn();
    _exit(0);
  }
  close(fds[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) r.err.append(buf, size_t(n));
  close(fds[0]);
  waitpid(pid, &r.status, 0);
  return r;
}

}  // namespace coact::test
