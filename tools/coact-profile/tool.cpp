// Child-process and path helpers of coact-profile (tool.hpp).
#include "tool.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

extern "C" char** environ;  // POSIX

#ifndef COACT_SOURCE_DIR
#define COACT_SOURCE_DIR ""
#endif

namespace coact::profile_tool {

ChildResult run_child(const std::vector<std::string>& args, const std::vector<std::string>& env,
                      const std::string& log) {
  ChildResult r;
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return r;
  std::vector<std::string> a = args, e = env;
  std::vector<char*> argv, envp;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : e) envp.push_back(s.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return r;
  if (pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    if (!log.empty()) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) ::dup2(fd, STDERR_FILENO);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "coact-profile: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out_pipe[0], buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    r.out.append(buf, static_cast<size_t>(n));
  }
  ::close(out_pipe[0]);
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

bool exited_ok(const ChildResult& r) { return WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0; }

std::vector<std::string> child_env(const std::vector<std::pair<std::string, std::string>>& extra, bool say_dropped) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.starts_with("COACT_CAUSAL=") || kv.starts_with("COACT_CAUSAL_")) {
      if (say_dropped) {
        std::fprintf(stderr, "coact-profile: ignoring inherited %.*s (the options come from the command line)\n",
                     static_cast<int>(kv.find('=')), kv.data());
      }
      continue;
    }
    env.emplace_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

std::string parse_trace_window(const std::string& text, uint64_t& start_ms, uint64_t& duration_ms) {
  const auto complaint = [&] {
    return fmt::format(
        "--trace-window '{}': expected START+DURATION in seconds, START >= 0 and DURATION > 0 "
        "(e.g. 2+0.5)",
        text);
  };
  const auto plus = text.find('+');
  if (plus == std::string::npos || plus == 0 || plus + 1 == text.size()) return complaint();
  const auto number = [](const std::string& s, double& out) {
    if (s.find_first_not_of("0123456789.") != std::string::npos) return false;  // no sign, no exponent
    char* end = nullptr;
    errno = 0;
    out = std::strtod(s.c_str(), &end);
    return errno == 0 && end != nullptr && *end == '\0' && std::isfinite(out);
  };
  double start = 0, duration = 0;
  if (!number(text.substr(0, plus), start) || !number(text.substr(plus + 1), duration)) return complaint();
  if (duration <= 0) return complaint();
  if (start > 604800 || duration > 604800) return complaint() + ", each at most 604800 (a week)";
  start_ms = static_cast<uint64_t>(std::llround(start * 1000));
  duration_ms = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(duration * 1000)));
  return {};
}

std::string self_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

namespace {
bool is_executable(const std::string& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0; }
bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::string_view ps(path);
  size_t pos = 0;
  while (pos <= ps.size()) {
    size_t c = ps.find(':', pos);
    if (c == std::string_view::npos) c = ps.size();
    const std::string cand = std::string(ps.substr(pos, c - pos)) + "/" + name;
    if (c > pos && is_executable(cand)) return cand;
    pos = c + 1;
  }
  return {};
}

bool in_build_tree() {
  // A build tree has CMakeCache.txt two levels up (<build>/tools/coact-profile).
  return is_file(self_dir() + "/../../CMakeCache.txt");
}

std::string source_dir() {
  const std::string src = COACT_SOURCE_DIR;
  if (!in_build_tree() || src.empty() || !is_file(src + "/reports/coact_plot.py")) return {};
  return src;
}

std::string find_program(const std::string& given, const std::string& rel, const std::string& name) {
  if (!given.empty()) return given;
  if (in_build_tree()) {
    const std::string tree = self_dir() + "/../../" + rel;
    if (is_executable(tree)) return tree;
  }
  const std::string beside = self_dir() + "/" + name;
  if (is_executable(beside)) return beside;
  return on_path(name);
}

std::string plot_command() {
  if (!in_build_tree()) {
    const std::string beside = self_dir() + "/coact-plot";
    if (is_executable(beside)) {
      // The short name when PATH finds this very command.
      char a[4096], b[4096];
      const std::string found = on_path("coact-plot");
      if (!found.empty() && ::realpath(found.c_str(), a) != nullptr && ::realpath(beside.c_str(), b) != nullptr &&
          std::string(a) == b) {
        return "coact-plot";
      }
      return beside;
    }
  }
  const std::string src = source_dir();
  if (!src.empty()) return "/usr/bin/python3 " + src + "/reports/coact_plot.py";
  if (!on_path("coact-plot").empty()) return "coact-plot";
  return "coact-plot";  // not found: still the name the installed package provides
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  const char* desc = ::strsignal(sig);
  return fmt::format("SIG{} ({})", abbrev != nullptr ? abbrev : std::to_string(sig).c_str(),
                     desc != nullptr ? desc : "unknown signal");
}

}  // namespace coact::profile_tool
