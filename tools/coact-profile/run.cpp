// `coact-profile run [options] -- PROGRAM ARGS...`: run a program under a
// causal-profiling sweep and report what was recorded.
//
// The options mirror `coz run` (and the COACT_CAUSAL_* environment of
// coact/causal/controller.hpp, which is how they reach the program): the tool
// sets COACT_CAUSAL=1 plus the options for the child (dropping any inherited
// COACT_CAUSAL_* key), fork/execs it, forwards signals, and waits.
//
// Protocol with the child (numbered steps):
//  0. Before anything runs, check the outputs: each profile file's directory
//     exists and is writable, the file (if it exists) is writable, and an
//     existing non-empty profile is only added to with --append (pooling two
//     different runs silently would mislead the plot): else exit 2.
//  1. Note the JSON file's size; the child's records are the ones after the
//     last "startup" record carrying the child's pid.
//  2. Fork; the child execs PROGRAM (an exec failure comes back over a
//     close-on-exec pipe as errno: exit 127).
//  3. While the child runs: forward SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
//     SIGUSR2 when they were sent to this process by kill(2) (si_code
//     SI_USER / SI_QUEUE); a signal from the terminal already reached the
//     child, which shares our process group, and is not sent twice. Every
//     200 ms read the new records: a warning or error record (a name that
//     matches nothing, no progress point reached so far, a sweep that gave
//     up) is printed on stderr at once, so a server that never exits still
//     tells its user (a name's valid names and the closest one, "did you
//     mean", once per kind); if stderr is a terminal, a progress line
//     (experiments written, time left) is redrawn. When the sweep ends with
//     a name that matches nothing, the program is sent SIGTERM: its run can
//     record nothing.
//  4. After the child exits, read its records and report on stderr:
//       the child crashed or was killed (signal name) or exited non-zero:
//         say so, keep what was recorded, exit 128+signal or its status;
//       no startup record: the program never started the profiler: exit 1;
//       "error" records: an unknown region or progress name (with the valid
//         names from the "names" record): exit 2; others (no progress point
//         reached): exit 1;
//       the program exited before --duration-s or --experiments was reached:
//         say how long it ran and how many experiments each region got: exit 1
//         (the profile is kept and can be plotted);
//       else: how long the sweep ran, the experiments per region, and the
//         command that plots the profile (a shard of a sharded sweep: also
//         which shard and the command that merges the shards): exit 0.
//     With --profile-only (no experiments): the heaviest regions of the
//     "profile" record; exit 1 only if the run failed or wrote no such record.
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <coact/causal/option_fields.hpp>

#include "profile_reader.hpp"
#include "run_report.hpp"
#include "tool.hpp"

namespace coact::profile_tool {

namespace {

using json = nlohmann::json;
namespace ca = coact::causal;
using steady = std::chrono::steady_clock;

// The child's pid, for the handler. Written before the handlers are installed
// (and never again), read in the handler: a lock-free atomic is async-signal-safe.
volatile sig_atomic_t g_child = 0;
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

void forward(int sig, siginfo_t* info, void*) {
  const int saved = errno;
  if (g_child > 0 && info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE)) {
    ::kill(static_cast<pid_t>(g_child), sig);
  }
  errno = saved;
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Step 0 for one output: "" if fine, else the one-line complaint.
std::string check_output(const std::string& flag, const std::string& path, bool append) {
  if (path.empty()) return {};
  const std::string dir = dir_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return fmt::format("{} '{}': the directory '{}' does not exist (create it first)", flag, path, dir);
  }
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return fmt::format("{} '{}': is a directory, expected a file path", flag, path);
    if (::access(path.c_str(), W_OK) != 0) {
      return fmt::format("{} '{}': not writable: {}", flag, path, std::strerror(errno));
    }
    if (st.st_size > 0 && !append) {
      return fmt::format(
          "{} '{}' already holds a profile ({} bytes from an earlier run); pass --append to add this run's "
          "experiments to it (the plot pools them), or remove it, or choose another path",
          flag, path, static_cast<long long>(st.st_size));
    }
  } else {
    // access(W_OK) says yes to root almost everywhere (a read-only or
    // pseudo file system such as /sys included): create the file to know.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      return fmt::format("{} '{}': cannot create a file in '{}': {}", flag, path, dir, std::strerror(errno));
    }
    ::close(fd);
    ::unlink(path.c_str());
  }
  return {};
}

// Adds the trace knobs for --trace / --trace-window to the child's
// environment (replacing inherited ones; an inherited sampling rate in
// COACT_TRACE is kept). "" if fine, else the one-line complaint.
std::string add_trace_env(const RunArgs& a, std::vector<std::string>& env) {
  if (a.trace.empty()) return {};
  const std::string problem = check_output("--trace", a.trace, /*append=*/true);
  if (!problem.empty()) return problem;
  uint64_t start_ms = 0, duration_ms = 0;
  if (!a.trace_window.empty()) {
    const std::string bad = parse_trace_window(a.trace_window, start_ms, duration_ms);
    if (!bad.empty()) return bad;
  }
  std::string rate = "on";
  std::vector<std::string> kept;
  for (auto& kv : env) {
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "COACT_TRACE") {
      const std::string v = kv.substr(key.size() + 1);
      if (!v.empty() && v != "off" && v != "0" && v != "false" && v != "no") rate = v;
      continue;
    }
    if (key == "COACT_TRACE_OUTPUT" || key == "COACT_TRACE_START_MS" || key == "COACT_TRACE_DURATION_MS") continue;
    kept.push_back(std::move(kv));
  }
  env = std::move(kept);
  env.push_back("COACT_TRACE=" + rate);
  env.push_back("COACT_TRACE_OUTPUT=" + a.trace);
  env.push_back("COACT_TRACE_START_MS=" + std::to_string(start_ms));
  env.push_back("COACT_TRACE_DURATION_MS=" + std::to_string(duration_ms));
  return {};
}

// Copies what is readable on `from` to `to` (non-blocking reads). Returns
// false at end of file. `last` gets the last byte copied.
bool pass_through(int from, int to, char& last) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(from, buf, sizeof buf);
    if (n > 0) {
      for (ssize_t off = 0; off < n;) {
        const ssize_t w = ::write(to, buf + off, static_cast<size_t>(n - off));
        if (w <= 0) break;
        off += w;
      }
      last = buf[n - 1];
      continue;
    }
    if (n == 0) return false;
    return errno == EAGAIN || errno == EINTR;
  }
}

}  // namespace

int run(RunArgs& a) {
  ca::Options& o = a.o;
  if (!a.json_given) o.json_output = o.output.empty() ? std::string() : ca::default_json_output(o.output);
  if (o.json_output.empty()) {
    std::fprintf(stderr, "coact-profile: --json-output must not be empty: the tool reads it to report on the run\n");
    return 2;
  }
  // Step 0.
  for (const auto& [flag, path] :
       {std::pair<std::string, std::string>{"-o", o.output}, {"--json-output", o.json_output}}) {
    const std::string problem = check_output(flag, path, a.append);
    if (!problem.empty()) {
      std::fprintf(stderr, "coact-profile: %s\n", problem.c_str());
      return 2;
    }
  }
  // The child's environment: ours without COACT_CAUSAL*, plus the options.
  // The child does not print its warning and error records: print_note does,
  // naming this tool's flags.
  o.print_notes = false;
  std::vector<std::string> env = child_env(ca::to_env(o), /*say_dropped=*/true);
  if (const std::string bad = add_trace_env(a, env); !bad.empty()) {
    std::fprintf(stderr, "coact-profile: %s\n", bad.c_str());
    return 2;
  }
  {  // the same validation the child will do, so errors surface here
    std::vector<const char*> check;
    for (const auto& s : env) check.push_back(s.c_str());
    check.push_back(nullptr);
    try {
      (void)ca::options_from_env(check.data());
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "coact-profile: %s\n", e.what());
      return 2;
    }
  }
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (auto& s : a.command) argv.push_back(s.data());
  argv.push_back(nullptr);

  // Step 1.
  RecordReader reader(o.json_output, file_size(o.json_output));

  // Step 2. With the status line on (stderr is a terminal), the child's
  // stdout and stderr come through pipes, so the line is cleared before
  // the program's own output and redrawn after it, never mixed into it.
  const bool bar = !a.quiet && ::isatty(STDERR_FILENO) == 1;
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (bar && (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
    std::fprintf(stderr, "coact-profile: pipe: %s\n", std::strerror(errno));
    return 1;
  }
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "coact-profile: pipe: %s\n", std::strerror(errno));
    return 1;
  }
  const auto t0 = steady::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::fprintf(stderr, "coact-profile: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (pid == 0) {
    ::close(exec_pipe[0]);
    if (bar) {
      ::dup2(out_pipe[1], STDOUT_FILENO);  // dup2 clears close-on-exec on the copies
      ::dup2(err_pipe[1], STDERR_FILENO);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    (void)!::write(exec_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(exec_pipe[1]);
  if (bar) {
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    ::fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
    ::fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
  }
  int exec_errno = 0;
  ssize_t n;
  while ((n = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  ::close(exec_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    ::waitpid(pid, nullptr, 0);
    std::fprintf(stderr, "coact-profile: cannot run '%s': %s\n", a.command[0].c_str(), std::strerror(exec_errno));
    return 127;
  }

  // Step 3.
  g_child = pid;
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : kForwarded) ::sigaction(sig, &sa, nullptr);
  const std::string prog = a.command[0];
  bool line_open = false;  // the program's output ended without a newline: do not draw over it
  bool drawn = false;      // the status line is on the screen
  bool out_open = bar, err_open = bar;
  // Waits up to 200 ms for the program's output and passes it on, clearing
  // the status line first.
  auto pump_output = [&](int timeout_ms) {
    if (!out_open && !err_open) {
      std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
      return;
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0}, {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    if (::poll(fds, 2, timeout_ms) <= 0) return;
    if (drawn) {
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
      drawn = false;
    }
    char last = '\n';
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP)) != 0) {
      out_open = pass_through(out_pipe[0], STDOUT_FILENO, last);
      line_open = last != '\n';
    }
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      err_open = pass_through(err_pipe[0], STDERR_FILENO, last);
      line_open = last != '\n';
    }
  };
  int status = 0;
  size_t shown_warnings = 0, shown_errors = 0;
  bool said_stopped = false;
  bool sent_term = false;           // SIGTERM sent after the sweep's end (--stop-program, or a naming error)
  std::vector<std::string> listed;  // kinds of note whose valid names were listed
  auto show_new_notes = [&](const Records& r) {
    const bool any = shown_warnings < r.warnings.size() || shown_errors < r.errors.size();
    if (any && drawn) {
      std::fprintf(stderr, "\r\033[K");
      drawn = false;
    }
    for (; shown_warnings < r.warnings.size(); ++shown_warnings) print_note(r, r.warnings[shown_warnings], listed);
    for (; shown_errors < r.errors.size(); ++shown_errors) print_note(r, r.errors[shown_errors], listed);
  };
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      std::fprintf(stderr, "coact-profile: waitpid: %s\n", std::strerror(errno));
      return 1;
    }
    pump_output(200);
    reader.poll(pid);
    const auto& r = reader.records();
    show_new_notes(r);
    if (r.summary && !said_stopped) {
      said_stopped = true;
      if (a.stop_program && r.errors.empty()) {
        ::kill(pid, SIGTERM);  // the sweep is over: so is the run (--stop-program)
        sent_term = true;
      } else if (naming_error(r)) {
        // A name that matches nothing: the run can record nothing useful, so
        // it ends now rather than after the program's own length.
        std::fprintf(stderr, "coact-profile: the sweep has ended with the error above; stopping %s (SIGTERM)\n",
                     prog.c_str());
        ::kill(pid, SIGTERM);
        sent_term = true;
      } else if (!r.errors.empty()) {
        if (::waitpid(pid, &status, WNOHANG) == pid) break;  // the program ended with the sweep: nothing runs on
        std::fprintf(stderr,
                     "coact-profile: the sweep has ended with the error above (it stopped on: %s); %s runs on "
                     "without it (end it with Ctrl-C if it does not exit by itself)\n",
                     r.summary->value("reason", std::string("?")).c_str(), prog.c_str());
      }
    }
    if (bar && !line_open) {
      const double elapsed = std::chrono::duration<double>(steady::now() - t0).count();
      std::string left;
      if (o.max_experiments != 0) {
        left += fmt::format(", {} to go", o.max_experiments > r.experiments ? o.max_experiments - r.experiments : 0);
      }
      if (o.duration.count() != 0) {
        left += fmt::format(", {:.0f} s left", std::max(0.0, static_cast<double>(o.duration.count()) - elapsed));
      }
      const std::string ranking = ranking_status(r, false);
      std::string line =
          fmt::format("[coact-profile] {} experiment{} ({} at speedup 0){}{}{}, {:.0f} s{}", r.experiments,
                      r.experiments == 1 ? "" : "s", r.zero_speedup, ranking.empty() ? "" : ", ", ranking, left,
                      elapsed, r.summary ? " (sweep ended)" : "");
      // One terminal line: a wrapped line could not be cleared with \r.
      winsize ws{};
      const size_t cols = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10 ? ws.ws_col : 80;
      if (line.size() >= cols) line = line.substr(0, cols - 4) + "...";
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
      std::fflush(stderr);
      drawn = true;
    }
  }
  const double elapsed = std::chrono::duration<double>(steady::now() - t0).count();
  if (drawn) std::fprintf(stderr, "\r\033[K");
  // What the program (or a child it left behind) still had in the pipes.
  for (int i = 0; i < 50 && (out_open || err_open); ++i) pump_output(20);
  if (bar) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
  }
  for (int sig : kForwarded) ::signal(sig, SIG_DFL);

  // Step 4.
  reader.poll(pid);
  const Records& r = reader.records();
  const std::string files = fmt::format("{}{}{}", o.output, o.output.empty() ? "" : " and ", o.json_output);
  int rc = 0;
  if (WIFSIGNALED(status) && sent_term && WTERMSIG(status) == SIGTERM) {
    // The program ended by the SIGTERM --stop-program sent: a normal end.
  } else if (WIFSIGNALED(status)) {
    std::fprintf(stderr,
                 "coact-profile: %s was killed by %s after %.1f s; the %llu finished experiment(s) are kept in %s\n",
                 prog.c_str(), signal_name(WTERMSIG(status)).c_str(), elapsed,
                 static_cast<unsigned long long>(r.experiments), files.c_str());
    rc = 128 + WTERMSIG(status);
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    std::fprintf(
        stderr,
        "coact-profile: %s exited with status %d after %.1f s%s; the %llu finished experiment(s) are kept in %s\n",
        prog.c_str(), WEXITSTATUS(status), elapsed, r.summary ? "" : " before the sweep ended",
        static_cast<unsigned long long>(r.experiments), files.c_str());
    rc = WEXITSTATUS(status);
  }
  if (!r.startup) {
    std::fprintf(stderr,
                 "coact-profile: %s never started the causal profiler (no startup record in %s): is it a coact "
                 "program built with COACT_CAUSAL=ON that boots a coact::Runtime or calls "
                 "coact::causal::Controller::start_from_env()?\n",
                 prog.c_str(), o.json_output.c_str());
    return rc != 0 ? rc : 1;
  }
  if (!r.summary && rc == 0) {
    std::fprintf(stderr,
                 "coact-profile: %s ended without stopping the profiler (no summary record: _exit, quick_exit or "
                 "exec?); the %llu finished experiment(s) are kept\n",
                 prog.c_str(), static_cast<unsigned long long>(r.experiments));
    rc = 1;
  }
  show_new_notes(r);
  if (!r.errors.empty() && rc == 0) rc = naming_error(r) ? 2 : 1;
  // --sampling that found no line: say why here (the reason is otherwise only
  // in the profile), most often a build without debug information.
  if (o.sampling && r.sampler && r.sampler->value("line_regions", 0) == 0) {
    const std::string why = r.sampler->value("symbolizer_error", std::string());
    std::fprintf(stderr,
                 "coact-profile: warning: --sampling found no source line to make a region of%s%s; line regions need "
                 "debug information (build RelWithDebInfo, or add -g) and, with --source-scope, a pattern that "
                 "matches the sources' full paths\n",
                 why.empty() ? "" : ": ", why.c_str());
  }
  if (o.profile_only) {
    if (rc == 0 && !r.profile) {
      std::fprintf(stderr,
                   "coact-profile: no profile record was written (the program ended without stopping the "
                   "profiler?)\n");
      rc = 1;
    }
    if (r.profile) print_profile(*r.profile, files);
    return rc;
  }
  if (r.experiments == 0 && r.errors.empty() && rc == 0) {
    std::fprintf(stderr, "coact-profile: no experiment was recorded\n");
    rc = 1;
  }
  // An early end: the program exited on its own before the sweep's limit.
  const std::string reason = r.summary ? r.summary->value("reason", std::string()) : std::string();
  const bool asked_duration = o.duration.count() != 0, asked_count = o.max_experiments != 0;
  if (rc == 0 && reason == "stopped" && (asked_duration || asked_count)) {
    const bool short_time = asked_duration && elapsed < static_cast<double>(o.duration.count());
    const bool short_count = asked_count && r.experiments < o.max_experiments;
    if (short_time || short_count) {
      const std::string what = short_time
                                   ? fmt::format("{:.1f} s before the end of its --duration-s {}",
                                                 static_cast<double>(o.duration.count()) - elapsed, o.duration.count())
                                   : fmt::format("after {} of its --experiments {}", r.experiments, o.max_experiments);
      std::fprintf(stderr,
                   "coact-profile: %s exited on its own after %.1f s, %s: the sweep is shorter than asked (exit "
                   "status 1). The profile is kept and can be plotted; for the sweep you asked for, let the "
                   "program run longer or lower %s\n",
                   prog.c_str(), elapsed, what.c_str(), short_time ? "--duration-s" : "--experiments");
      rc = 1;
    }
  }
  if (!a.trace.empty()) {
    struct stat st {};
    if (::stat(a.trace.c_str(), &st) == 0) {
      std::fprintf(stderr,
                   "coact-profile: trace (%s) in %s; open it in https://ui.perfetto.dev or summarize it: "
                   "coact-trace summary %s\n",
                   a.trace_window.empty() ? "the whole run" : ("window " + a.trace_window + " s").c_str(),
                   a.trace.c_str(), a.trace.c_str());
    } else {
      std::fprintf(stderr,
                   "coact-profile: no trace was written to %s: the program booted no coact runtime, or gave it a "
                   "SchedulerTuning of its own (coact::resolve_tuning() reads the COACT_TRACE* knobs)\n",
                   a.trace.c_str());
      if (rc == 0) rc = 1;
    }
  }
  if (r.experiments > 0) {
    const std::string plot = plot_command();
    std::fprintf(stderr,
                 "coact-profile: %llu experiment(s) (%llu at speedup 0) in %.1f s of sweep (%.1f s of experiment "
                 "windows), kept in %s; experiments per region:%s\n"
                 "  plot: %s profile %s -o curves.png\n"
                 "  (program speedup = the fall in time per progress visit, as in Coz; a speedup x is a rate "
                 "gain of 1/(1-x) - 1, e.g. 33%% less time = 50%% more visits per second)\n",
                 static_cast<unsigned long long>(r.experiments), static_cast<unsigned long long>(r.zero_speedup),
                 elapsed, static_cast<double>(r.experiment_ns) / 1e9, files.c_str(), per_region_text(r).c_str(),
                 plot.c_str(), o.json_output.c_str());
    if (o.shards != 0) {
      std::fprintf(stderr,
                   "coact-profile: this was shard %u of %u (0-based, from %s; seed %s); merge the shards' profiles: "
                   "%s profile DIR-OR-FILES... -o curves.png\n",
                   o.shard, o.shards, a.shard_source.c_str(),
                   r.startup_record.contains("seed") ? r.startup_record["seed"].dump().c_str() : "?", plot.c_str());
    }
    const std::string ranking = ranking_status(r, true);
    if (!ranking.empty()) {
      const bool settled = r.estimates->value("settled", false);
      std::fprintf(stderr, "coact-profile: the sweep's ranking %s: %s%s\n", settled ? "has settled" : "has not settled",
                   ranking.c_str(),
                   settled ? ""
                   : o.until_settled
                       ? " (the --duration-s / --experiments bound came first: run longer for a settled ranking)"
                       : " (run longer, or pass --until-settled with a --duration-s as the bound)");
    }
  }
  return rc;
}

}  // namespace coact::profile_tool
