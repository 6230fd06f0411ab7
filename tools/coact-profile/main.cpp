// coact-profile: run a program under a causal-profiling sweep.
//
//   coact-profile run [options] -- PROGRAM ARGS...
//
// The options mirror `coz run` (and the COACT_CAUSAL_* environment of
// coact/causal/controller.hpp, which is how they reach the program): the tool
// sets COACT_CAUSAL=1 plus the options for the child (dropping any inherited
// COACT_CAUSAL_* key), fork/execs it, forwards signals, and waits.
//
// Protocol with the child (numbered steps):
//  1. Before the fork, note the JSON file's size; the child's records are the
//     ones after the last "startup" record carrying the child's pid.
//  2. Fork; the child execs PROGRAM (an exec failure comes back over a
//     close-on-exec pipe as errno: exit 127).
//  3. While the child runs: forward SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
//     SIGUSR2 when they were sent to this process by kill(2) (si_code
//     SI_USER / SI_QUEUE); a signal from the terminal already reached the
//     child, which shares our process group, and is not sent twice. If
//     stderr is a terminal, a progress line (experiments written, time left)
//     is redrawn from the JSON file every 200 ms.
//  4. After the child exits, read its records and report on stderr:
//       the child crashed or was killed (signal name) or exited non-zero:
//         say so, keep what was recorded, exit 128+signal or its status;
//       no startup record: the program never started the profiler: exit 1;
//       "error" records (no progress point reached, unknown region or
//         progress name — with the valid names from the "names" record): exit 1;
//       else: how many experiments were written, and how to plot: exit 0.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <coact/causal/controller.hpp>

extern "C" char** environ;  // POSIX

namespace {

using json = nlohmann::json;
namespace ca = coact::causal;
using steady = std::chrono::steady_clock;

// ---- signal forwarding ---------------------------------------------------------

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

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  const char* desc = ::strsignal(sig);
  return fmt::format("SIG{} ({})", abbrev != nullptr ? abbrev : std::to_string(sig).c_str(),
                     desc != nullptr ? desc : "unknown signal");
}

// ---- reading the child's records -----------------------------------------------

struct Records {
  bool startup = false;
  uint64_t experiments = 0;
  uint64_t zero_speedup = 0;
  std::optional<json> names;
  std::vector<json> errors;
  std::vector<json> warnings;
  std::optional<json> summary;
};

// Incremental reader of the JSON-lines file: only whole lines are consumed,
// and records count only after the last startup record with our child's pid.
class RecordReader {
 public:
  RecordReader(std::string path, uint64_t start) : path_(std::move(path)), pos_(start) {}

  void poll(pid_t child) {
    std::ifstream in(path_, std::ios::binary);
    if (!in) return;
    in.seekg(0, std::ios::end);
    const auto size = static_cast<uint64_t>(in.tellg());
    if (size < pos_) pos_ = 0;  // the child truncated a partial tail below our start
    in.seekg(static_cast<std::streamoff>(pos_));
    std::string chunk(size - pos_, '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<size_t>(in.gcount()));
    const size_t last_nl = chunk.rfind('\n');
    if (last_nl == std::string::npos) return;
    size_t begin = 0;
    while (begin <= last_nl) {
      const size_t nl = chunk.find('\n', begin);
      take(std::string_view(chunk).substr(begin, nl - begin), child);
      begin = nl + 1;
    }
    pos_ += last_nl + 1;
  }

  const Records& records() const { return r_; }

 private:
  void take(std::string_view line, pid_t child) {
    if (line.empty() || line.front() != '{') return;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) return;
    const std::string type = j["type"];
    if (type == "startup") {
      if (j.value("pid", -1L) == static_cast<long>(child)) {
        r_ = Records{};
        r_.startup = true;
      }
      return;
    }
    if (!r_.startup) return;
    if (type == "experiment") {
      ++r_.experiments;
      if (j.value("speedup", 1.0) == 0.0) ++r_.zero_speedup;
    } else if (type == "names") {
      r_.names = j;
    } else if (type == "error") {
      r_.errors.push_back(j);
    } else if (type == "warning") {
      r_.warnings.push_back(j);
    } else if (type == "summary") {
      r_.summary = j;
    }
  }

  std::string path_;
  uint64_t pos_;
  Records r_;
};

uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

void list_names(const Records& r, const std::string& what) {
  if (!r.names) {
    std::fprintf(stderr, "  (the program wrote no list of names)\n");
    return;
  }
  const bool regions = what != "unknown_progress";
  const auto& list = (*r.names)[regions ? "regions" : "progress"];
  std::fprintf(stderr, "  valid %s names (%zu):\n", regions ? "region" : "progress point", list.size());
  for (const auto& n : list) {
    if (what == "unknown_handler" && n.value("kind", "") != "handler") continue;
    if (!regions && n.value("handler", false)) continue;
    std::fprintf(stderr, "    %s  [%s, %llu visits]\n", n.value("name", "?").c_str(), n.value("kind", "?").c_str(),
                 static_cast<unsigned long long>(n.value("visits", 0ULL)));
  }
}

// ---- the run subcommand ----------------------------------------------------------

struct RunArgs {
  ca::Options o;
  bool json_given = false;
  bool quiet = false;
  std::vector<std::string> command;
};

int run(RunArgs& a) {
  ca::Options& o = a.o;
  if (!a.json_given) o.json_output = o.output.empty() ? std::string() : ca::default_json_output(o.output);
  if (o.json_output.empty()) {
    std::fprintf(stderr, "coact-profile: --json-output must not be empty: the tool reads it to report on the run\n");
    return 2;
  }
  // The child's environment: ours without COACT_CAUSAL*, plus the options.
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.starts_with("COACT_CAUSAL=") || kv.starts_with("COACT_CAUSAL_")) {
      std::fprintf(stderr, "coact-profile: ignoring inherited %.*s (the options come from the command line)\n",
                   static_cast<int>(kv.find('=')), kv.data());
      continue;
    }
    env.emplace_back(kv);
  }
  for (const auto& [k, v] : ca::to_env(o)) env.push_back(k + "=" + v);
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

  // Step 2.
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
    ::execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    (void)!::write(exec_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(exec_pipe[1]);
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
  const bool bar = !a.quiet && ::isatty(STDERR_FILENO) == 1;
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      std::fprintf(stderr, "coact-profile: waitpid: %s\n", std::strerror(errno));
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (bar) {
      reader.poll(pid);
      const auto& r = reader.records();
      const double elapsed = std::chrono::duration<double>(steady::now() - t0).count();
      std::string left;
      if (o.max_experiments != 0) {
        left += fmt::format(", {} to go", o.max_experiments > r.experiments ? o.max_experiments - r.experiments : 0);
      }
      if (o.duration.count() != 0) {
        left += fmt::format(", {:.0f} s left", std::max(0.0, static_cast<double>(o.duration.count()) - elapsed));
      }
      std::fprintf(stderr, "\r\033[K[coact-profile] %llu experiment%s (%llu at speedup 0)%s, %.0f s",
                   static_cast<unsigned long long>(r.experiments), r.experiments == 1 ? "" : "s",
                   static_cast<unsigned long long>(r.zero_speedup), left.c_str(), elapsed);
      std::fflush(stderr);
    }
  }
  if (bar) std::fprintf(stderr, "\r\033[K");
  for (int sig : kForwarded) ::signal(sig, SIG_DFL);

  // Step 4.
  reader.poll(pid);
  const Records& r = reader.records();
  const std::string prog = a.command[0];
  const std::string files = fmt::format("{}{}{}", o.output, o.output.empty() ? "" : " and ", o.json_output);
  int rc = 0;
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "coact-profile: %s was killed by %s; the %llu finished experiment(s) are kept in %s\n",
                 prog.c_str(), signal_name(WTERMSIG(status)).c_str(), static_cast<unsigned long long>(r.experiments),
                 files.c_str());
    rc = 128 + WTERMSIG(status);
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "coact-profile: %s exited with status %d%s; the %llu finished experiment(s) are kept in %s\n",
                 prog.c_str(), WEXITSTATUS(status), r.summary ? "" : " before the sweep ended",
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
  for (const auto& e : r.errors) {
    const std::string what = e.value("what", "");
    std::fprintf(stderr, "coact-profile: %s\n", e.value("message", what).c_str());
    if (what.starts_with("unknown_")) list_names(r, what);
    if (rc == 0) rc = 1;
  }
  if (!r.summary && r.errors.empty()) {
    for (const auto& w : r.warnings) {  // a killed run: its early warnings are all we have
      const std::string what = w.value("what", "");
      std::fprintf(stderr, "coact-profile: %s\n", w.value("message", what).c_str());
      if (what.starts_with("unknown_")) list_names(r, what);
    }
  }
  if (r.experiments == 0 && r.errors.empty() && rc == 0) {
    std::fprintf(stderr, "coact-profile: no experiment was recorded\n");
    rc = 1;
  }
  if (r.experiments > 0) {
    std::fprintf(stderr,
                 "coact-profile: %llu experiment(s) (%llu at speedup 0) in %s\n"
                 "  plot: /usr/bin/python3 reports/coact_plot.py profile %s\n",
                 static_cast<unsigned long long>(r.experiments), static_cast<unsigned long long>(r.zero_speedup),
                 files.c_str(), o.json_output.c_str());
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  // Everything after the first "--" is the program and its arguments.
  std::vector<std::string> head;
  RunArgs a;
  bool after = false;
  for (int i = 1; i < argc; ++i) {
    if (!after && std::strcmp(argv[i], "--") == 0) {
      after = true;
    } else if (after) {
      a.command.emplace_back(argv[i]);
    } else {
      head.emplace_back(argv[i]);
    }
  }

  CLI::App app{"coact-profile: causal profiling of coact programs (Coz-style virtual speedup experiments)"};
  app.require_subcommand(1);
  CLI::App* run_cmd = app.add_subcommand("run", "Run PROGRAM under a sweep: coact-profile run [options] -- PROGRAM ARGS...");
  ca::Options& o = a.o;
  uint64_t experiment_ms = static_cast<uint64_t>(o.experiment.count());
  uint64_t max_experiment_ms = 0;
  uint64_t cooldown_ms = static_cast<uint64_t>(o.cooldown.count());
  uint64_t duration_s = 0;
  uint32_t fixed_speedup = 0;
  run_cmd->add_option("-p,--progress", o.progress,
                      "Record only progress points whose name contains NAME (repeatable; default: all)");
  run_cmd->add_option("--progress-handler", o.progress_handlers,
                      "Count completions of handler regions whose name contains NAME as a progress point (repeatable)");
  run_cmd->add_option("--region-filter", o.region_filter,
                      "Select only regions whose name contains SUBSTRING (repeatable; default: all)");
  run_cmd->add_option("--fixed-region", o.fixed_region, "Always select this region (exact name or unique substring)");
  auto* fs = run_cmd->add_option("--fixed-speedup", fixed_speedup, "Always use this speedup, percent")
                 ->check(CLI::Range(0u, 100u));
  run_cmd->add_option("--experiment-ms", experiment_ms, "Initial experiment window, ms")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{3'600'000}));
  run_cmd->add_option("--max-experiment-ms", max_experiment_ms, "Cap of the adaptive window, ms (default 16 x window)");
  run_cmd->add_option("--cooldown-ms", cooldown_ms, "Pause after each experiment, ms")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{600'000}));
  auto* dur = run_cmd->add_option("--duration-s", duration_s, "Stop starting experiments after this long, s");
  run_cmd->add_option("--experiments", o.max_experiments, "Stop after this many experiments")->excludes(dur);
  run_cmd->add_option("--min-delta", o.min_delta, "Target visits per progress point per experiment")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000}));
  run_cmd->add_option("--seed", o.seed, "Seed of the region and speedup draws (0: from the clock)");
  run_cmd->add_option("-o,--output", o.output, "profile.coz path (appended)")->capture_default_str();
  run_cmd->add_option("--json-output", o.json_output, "JSON-lines path (appended; default: OUTPUT with .jsonl)");
  run_cmd->add_flag("-q,--quiet", a.quiet, "No progress line on stderr");
  run_cmd->footer(
      "Examples:\n"
      "  coact-profile run -p requests -- ./server --port 8080\n"
      "  coact-profile run --progress-handler 'Sink::on' --experiments 200 -- ./pipeline in.dat\n"
      "Exit status: the program's status if it failed (128+N if killed by signal N); 1 if no progress point was\n"
      "reached, a name matched nothing, or nothing was recorded; 2 on a usage error; 127 if PROGRAM cannot run.");

  try {
    std::vector<std::string> rev(head.rbegin(), head.rend());
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0; any usage error: 2
  }
  if (a.command.empty()) {
    std::fprintf(stderr, "coact-profile: no program given\nusage: coact-profile run [options] -- PROGRAM ARGS...\n");
    return 2;
  }
  if (fs->count() > 0) o.fixed_speedup_pct = fixed_speedup;
  o.experiment = std::chrono::milliseconds(experiment_ms);
  o.max_experiment = std::chrono::milliseconds(max_experiment_ms);
  o.cooldown = std::chrono::milliseconds(cooldown_ms);
  o.duration = std::chrono::seconds(duration_s);
  a.json_given = run_cmd->count("--json-output") > 0;
  return run(a);
}
