// tests/support/child.hpp: run a function in a forked child, or a program,
// and capture its output and exit status (death tests for fail-fast, entry
// points' exit codes). A forked child starts with only the forking thread, so
// it may build its own Runtime. Thread: the test's thread; blocks until the
// child exits.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern "C" char** environ;  // POSIX

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

struct ProgramResult {
  int status = 0;    // raw waitpid status
  std::string out;   // stdout
  std::string err;   // stderr
  bool exited(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
  /// "exit 2", "signal 6" (for messages).
  std::string describe() const {
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
    return "status " + std::to_string(status);
  }
};

/// Runs `argv[0]` (a path) with `argv` and this process's environment minus
/// every COACT_* variable, plus `env` ("KEY=VALUE"); no core dumps. Returns
/// its stdout, stderr and status.
inline ProgramResult run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  std::vector<std::string> envs;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::string(*e).rfind("COACT_", 0) != 0) envs.emplace_back(*e);
  }
  for (const auto& e : env) envs.push_back(e);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    close(out[1]);
    close(err[1]);
    ::execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  ProgramResult r;
  // Both pipes are drained at once (stderr on a helper thread), so a child
  // that fills one while we read the other cannot deadlock.
  auto drain = [](int fd, std::string& to) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) to.append(buf, size_t(n));
    close(fd);
  };
  std::string err_text;
  std::thread err_reader([&] { drain(err[0], err_text); });
  drain(out[0], r.out);
  err_reader.join();
  r.err = std::move(err_text);
  waitpid(pid, &r.status, 0);
  return r;
}

}  // namespace coact::test
