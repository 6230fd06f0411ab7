// coact-profile: run a program under a causal-profiling sweep, and validate
// the profiler's predictions against programs that really are faster.
//
//   coact-profile run [options] -- PROGRAM ARGS...
//   coact-profile validate [--json] [options]   (protocol: above validate())
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

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
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


// ---- the validate subcommand -------------------------------------------------------
//
// Protocol (numbered steps; README.md "validate" says why each is so):
//  1. Find the programs: coact-known-answer (--known-answer, else next to
//     this tool's build tree, bench/causal/, else PATH) and coact-dedup
//     (--dedup, else examples/dedup/ of the build tree); ask coact-known-answer
//     --list for each workload's stages, regions and ideal curves.
//  2. For each workload, `chunks` rounds, so that a change in the machine's
//     load during the run falls on both sides of the comparison:
//       a. a sweep chunk: the program under COACT_CAUSAL=1 for sweep_s/chunks
//          seconds, default draws (Coz's speedup draw, uniform over regions)
//          restricted by a region filter to the workload's stages, appending
//          to one JSON-lines profile;
//       b. the real programs: baseline, then each row's actually-faster
//          program (--speed STAGE=r), then baseline again, actual_s each.
//  3. Predicted speedup at r for a stage: every experiment of its region gets
//     y = 1 − rate0 / rate, rate = progress visits / effective time and rate0
//     the mean rate of the (up to) 4 speedup-0 experiments nearest in time in
//     the same chunk (any region: a 0-speedup experiment is the unperturbed
//     program); prediction = local linear fit of y against s at r with a
//     triangular kernel of half-width 0.10 (so the levels r − 5 %, r, r + 5 %
//     weigh 1/2, 1, 1/2), widened while it does not cover r, with one pass
//     of outlier rejection (local_fit says how).
//  4. Actual speedup = 1 − period(fast) / period(baseline), each fast run
//     against the mean of its chunk's two baseline runs, averaged over chunks.
//     A chunk whose baselines (real runs, or the median speedup-0
//     experiment) are slower than --contended-factor x the workload's ideal
//     period had a core taken by another process: its experiments and runs
//     are dropped and the chunk redone, up to --retries times (then kept,
//     and the rows say so).
//  5. The archiver (coact-dedup), if found: the real change is a faster zstd
//     level (--dedup-fast-level, default 1, against the archiver's default
//     3). a. Interleaved runs at the default level, the fast level and the
//     default level again, each under a fixed-speedup-0 sweep of the
//     Compressor's per-chunk handler (--dedup-region) with 1 s windows,
//     measure chunks per second (actual speedup, as in 4) and the mean
//     handler time per chunk at each level: r = 1 − t_fast / t_default.
//     b. The prediction at s = r: interleaved runs at the default level under
//     fixed-region sweeps at speedup 0, round(100 r) %, 0 (--dedup-sweep-s in
//     all), y = 1 − rate(0) / rate(r), averaged. Fixed speedups, not a
//     default sweep: the archiver's progress rate swings with the phase of
//     each pass (walk, chunking, the Writer's metadata at the end), so a
//     default sweep's handful of windows near s = r is far noisier than the
//     same seconds spent at s = r.
//  6. Print the table (workload, region, s, predicted, actual, error in
//     points) and the mean and maximum absolute error; --json prints one JSON
//     object instead. Exit 0, or 1 if a program failed.

struct ValidateArgs {
  std::vector<std::string> workloads;
  double sweep_s = 60;
  double actual_s = 2;
  int chunks = 3;
  int64_t unit_us = 500;
  std::string known_answer;
  std::string dedup;
  std::string dedup_dir = "/usr/share/doc";
  int dedup_fast_level = 1;
  std::string dedup_region = "dedup::Compressor::on(coact::dedup::NewChunk)";
  double dedup_sweep_s = 60;
  bool no_dedup = false;
  int retries = 2;
  double contended_factor = 1.15;
  std::string out_dir;
  bool json_out = false;
  bool verbose = false;
  bool reanalyze = false;  // recompute the table from --out's files, run nothing
};

struct ChildResult {
  int status = -1;
  std::string out;
};

// Runs argv with `env`, stdout captured, stderr appended to `log` (or
// inherited when empty). Blocks until it exits.
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

// Our environment without COACT_CAUSAL*, plus `extra`.
std::vector<std::string> child_env(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.starts_with("COACT_CAUSAL=") || kv.starts_with("COACT_CAUSAL_")) continue;
    env.emplace_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

std::string self_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

bool is_executable(const std::string& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0; }

// --given, else <build tree>/rel (this tool lives in <build>/tools/coact-profile), else PATH.
std::string find_program(const std::string& given, const std::string& rel, const std::string& name) {
  if (!given.empty()) return given;
  const std::string tree = self_dir() + "/../../" + rel;
  if (is_executable(tree)) return tree;
  if (const char* path = std::getenv("PATH")) {
    std::string_view ps(path);
    size_t pos = 0;
    while (pos <= ps.size()) {
      size_t c = ps.find(':', pos);
      if (c == std::string_view::npos) c = ps.size();
      const std::string cand = std::string(ps.substr(pos, c - pos)) + "/" + name;
      if (c > pos && is_executable(cand)) return cand;
      pos = c + 1;
    }
  }
  return {};
}

// One experiment of a sweep profile.
struct Exp {
  int chunk = 0;       // which sweep child wrote it
  size_t order = 0;    // position in the file
  std::string region;
  double s = 0;        // speedup
  double rate = 0;     // progress visits per effective second
  uint64_t visits = 0;      // region visits
  uint64_t region_ns = 0;   // region exclusive time
};

// Reads every experiment of `path`; a new "startup" record starts a new chunk.
std::vector<Exp> read_experiments(const std::string& path) {
  std::vector<Exp> out;
  std::ifstream in(path);
  std::string line;
  int chunk = -1;
  size_t order = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line.front() != '{') continue;
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    const std::string type = j.value("type", "");
    if (type == "startup") {
      ++chunk;
      continue;
    }
    if (type != "experiment" || chunk < 0) continue;
    Exp e;
    e.chunk = chunk;
    e.order = order++;
    e.region = j.value("region", "");
    e.s = j.value("speedup", 0.0);
    uint64_t progress = 0;
    if (j.contains("progress") && j["progress"].is_object()) {
      for (const auto& [k, v] : j["progress"].items()) progress += v.get<uint64_t>();
    }
    const double eff = static_cast<double>(j.value("effective_ns", uint64_t{0})) / 1e9;
    e.rate = eff > 0 ? static_cast<double>(progress) / eff : 0;
    e.visits = j.value("visits", uint64_t{0});
    e.region_ns = j.value("region_ns", uint64_t{0});
    out.push_back(std::move(e));
  }
  return out;
}

// Step 3: per-experiment speedups against a local baseline.
struct Point {
  double s;
  double y;
};
std::vector<Point> region_points(const std::vector<Exp>& ex, const std::string& region) {
  std::vector<Point> pts;
  for (size_t i = 0; i < ex.size(); ++i) {
    const Exp& e = ex[i];
    if (e.region != region || e.s == 0 || e.rate <= 0) continue;
    std::vector<std::pair<size_t, double>> zeros;  // distance, rate
    for (size_t k = 0; k < ex.size(); ++k) {
      if (ex[k].chunk == e.chunk && ex[k].s == 0 && ex[k].rate > 0) {
        zeros.emplace_back(k > i ? k - i : i - k, ex[k].rate);
      }
    }
    if (zeros.empty()) continue;
    std::sort(zeros.begin(), zeros.end());
    const size_t n = std::min<size_t>(4, zeros.size());
    double base = 0;
    for (size_t k = 0; k < n; ++k) base += zeros[k].second;
    base /= static_cast<double>(n);
    pts.push_back({e.s, 1.0 - base / e.rate});
  }
  return pts;
}

struct Estimate {
  double value = std::nan("");
  int n = 0;  // experiments with non-zero weight in the final fit
  double h = 0;  // kernel half-width used
};
// Weighted local linear fit at r with a triangular kernel of half-width h:
// the fitted value at r, or NaN if the points do not span a line (then the
// weighted mean with `one_level` set).
double fit_at(const std::vector<Point>& pts, const std::vector<double>& w, double r, bool& one_level, int& n) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  n = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (w[i] <= 0) continue;
    const double d = pts[i].s - r;
    ++n;
    sw += w[i];
    sx += w[i] * d;
    sy += w[i] * pts[i].y;
    sxx += w[i] * d * d;
    sxy += w[i] * d * pts[i].y;
  }
  one_level = false;
  if (sw == 0) return std::nan("");
  const double mx = sx / sw, my = sy / sw;
  const double vxx = sxx / sw - mx * mx;
  if (vxx < 1e-6) {
    one_level = true;
    return my;
  }
  return my - (sxy / sw - mx * my) / vxx * mx;  // the line at d = 0
}

// Step 3: local linear fit at r, triangular kernel of half-width 0.10,
// widened by 0.05 at a time (to 0.30) until the points weighted in it cover
// r from both sides or at r itself (a default sweep leaves some speedup
// levels empty; the mean of one neighbouring level alone is biased by the
// slope); then one pass of outlier rejection (a window that another
// process disturbed): points whose residual exceeds max(3 x 1.4826 x MAD,
// 3 points) are dropped and the fit redone.
Estimate local_fit(const std::vector<Point>& pts, double r) {
  Estimate est;
  std::vector<double> w(pts.size(), 0.0);
  for (double h = 0.10; h <= 0.30 + 1e-9; h += 0.05) {
    bool below = false, above = false, at = false;
    for (size_t i = 0; i < pts.size(); ++i) {
      const double d = pts[i].s - r;
      w[i] = std::max(0.0, 1.0 - std::abs(d) / h);
      if (w[i] <= 0) continue;
      if (std::abs(d) < 1e-6) at = true;
      if (d < -1e-6) below = true;
      if (d > 1e-6) above = true;
    }
    est.h = h;
    if (at || (below && above)) break;
  }
  bool one = false;
  int n = 0;
  double v = fit_at(pts, w, r, one, n);
  if (std::isnan(v)) return est;
  if (n >= 4) {
    // Residuals against the fitted line (slope from the same weighted fit).
    std::vector<double> res;
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < pts.size(); ++i) {
      if (w[i] <= 0) continue;
      const double d = pts[i].s - r;
      sw += w[i];
      sx += w[i] * d;
      sy += w[i] * pts[i].y;
      sxx += w[i] * d * d;
      sxy += w[i] * d * pts[i].y;
    }
    const double mx = sx / sw, my = sy / sw, vxx = sxx / sw - mx * mx;
    const double slope = vxx < 1e-6 ? 0.0 : (sxy / sw - mx * my) / vxx;
    auto resid = [&](size_t i) { return pts[i].y - (v + slope * (pts[i].s - r)); };
    for (size_t i = 0; i < pts.size(); ++i) {
      if (w[i] > 0) res.push_back(std::abs(resid(i)));
    }
    std::sort(res.begin(), res.end());
    const double mad = res[res.size() / 2];
    const double cut = std::max(3 * 1.4826 * mad, 0.03);
    bool dropped = false;
    for (size_t i = 0; i < pts.size(); ++i) {
      if (w[i] > 0 && std::abs(resid(i)) > cut) {
        w[i] = 0;
        dropped = true;
      }
    }
    if (dropped) v = fit_at(pts, w, r, one, n);
  }
  est.value = v;
  est.n = n;
  return est;
}

struct Row {
  std::string workload, stage, region;
  std::string region_kind = "handler";  // handler | scope | line
  double s = 0, predicted = std::nan(""), actual = std::nan(""), ideal = std::nan("");
  int experiments = 0;
  int actual_runs = 0;
  std::string note;
};

std::string fmt_num(double v, int prec = 3) { return std::isnan(v) ? std::string("-") : fmt::format("{:.{}f}", v, prec); }
json json_num(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

// Parses a known-answer run's JSON line; period in µs (0 on failure).
double period_of(const ChildResult& r) {
  std::string last;  // the last line that is a JSON object
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.front() == '{') last = line;
  }
  const json j = json::parse(last, nullptr, false);
  return j.is_object() ? j.value("period_us", 0.0) : 0.0;
}

std::string make_out_dir(const std::string& given) {
  if (!given.empty()) {
    ::mkdir(given.c_str(), 0755);
    return given;
  }
  char tmpl[] = "/tmp/coact-validate-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  return d != nullptr ? std::string(d) : std::string("/tmp");
}

struct Stopwatch {
  steady::time_point t0 = steady::now();
  double s() const { return std::chrono::duration<double>(steady::now() - t0).count(); }
};

int validate(ValidateArgs& a) {
  const std::string out_dir = make_out_dir(a.out_dir);
  const std::string log = out_dir + "/children.log";
  auto say = [&](const std::string& m) {
    if (!a.json_out || a.verbose) std::fprintf(stderr, "[validate] %s\n", m.c_str());
  };
  std::vector<Row> rows;
  json skipped = json::array();
  json timing = json::object();
  bool failed = false;

  // Step 1.
  const std::string ka = find_program(a.known_answer, "bench/causal/coact-known-answer", "coact-known-answer");
  json list;
  if (ka.empty()) {
    const std::string why =
        "coact-known-answer not found (configure with -DCOACT_BUILD_BENCH=ON, or pass --known-answer PATH)";
    std::fprintf(stderr, "coact-profile: %s\n", why.c_str());
    skipped.push_back({{"what", "known-answer workloads"}, {"why", why}});
  } else {
    const ChildResult r = run_child({ka, "--list"}, child_env({}), log);
    list = json::parse(r.out, nullptr, false);
    if (!exited_ok(r) || !list.is_object()) {
      std::fprintf(stderr, "coact-profile: %s --list failed (see %s)\n", ka.c_str(), log.c_str());
      return 1;
    }
  }
  const std::string progress = list.is_object() ? list.value("progress", "known_answer.iteration") : "";
  const int chunks = std::max(1, a.chunks);
  if (list.is_object()) {  // -w NAME must name a workload (else the run would silently skip it)
    std::vector<std::string> names;
    for (const auto& w : list["workloads"]) names.push_back(w.value("name", ""));
    for (const auto& want : a.workloads) {
      if (std::find(names.begin(), names.end(), want) != names.end()) continue;
      std::string valid;
      for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
      std::fprintf(stderr, "coact-profile: validate --workload '%s': no such known-answer workload (expected one of: %s)\n",
                   want.c_str(), valid.c_str());
      return 2;
    }
  }

  // Steps 2-4 per workload.
  for (const auto& w : list.is_object() ? list["workloads"] : json::array()) {
    const std::string name = w.value("name", "");
    if (!a.workloads.empty() && std::find(a.workloads.begin(), a.workloads.end(), name) == a.workloads.end()) continue;
    Stopwatch sw;
    // The rows: the first (bottleneck) stage at 0.25, 0.5, 0.75; every other stage at 0.5.
    std::vector<Row> wrows;
    bool first = true;
    std::vector<std::string> filter;
    for (const auto& st : w["stages"]) {
      filter.push_back(st.value("region", ""));
      const std::vector<double> ss = first ? std::vector<double>{0.25, 0.5, 0.75} : std::vector<double>{0.5};
      for (double s : ss) {
        Row r;
        r.workload = name;
        r.stage = st.value("stage", "");
        r.region = st.value("region", "");
        r.region_kind = st.value("region_kind", "handler");
        r.s = s;
        const auto& ideal = st["ideal"];
        r.ideal = ideal.at(static_cast<size_t>(std::lround(s * 20))).get<double>();
        wrows.push_back(r);
      }
      first = false;
    }
    ca::Options o;
    o.progress = {progress};
    o.region_filter = filter;
    o.time_weighted = false;  // every stage its share of experiments (a stage of 1/64 unit is still a row)
    o.sampling = w.value("sampling", false);  // line stages: sampled-line regions
    o.output = out_dir + "/" + name + ".coz";
    o.json_output = out_dir + "/" + name + ".jsonl";
    if (!a.reanalyze) {
      std::remove(o.output.c_str());
      std::remove(o.json_output.c_str());
    }
    const double chunk_s = a.sweep_s / chunks;
    o.duration = std::chrono::seconds(static_cast<int64_t>(std::ceil(chunk_s)));
    std::vector<double> sum_speedup(wrows.size(), 0.0);
    std::vector<int> n_speedup(wrows.size(), 0);
    const std::string unit = std::to_string(a.unit_us);
    auto actual_run = [&](const std::string& speed) {
      std::vector<std::string> argv{ka, "--workload", name, "--seconds", fmt::format("{}", a.actual_s), "--unit-us", unit};
      if (!speed.empty()) {
        argv.push_back("--speed");
        argv.push_back(speed);
      }
      const ChildResult r = run_child(argv, child_env({}), log);
      if (!exited_ok(r)) failed = true;
      return period_of(r);
    };
    // A chunk is contended when its baselines (the real baseline runs, and
    // the median of its speedup-0 experiments) run more than
    // contended_factor x the ideal period: another process took one of the
    // two cores, and the known answers (and the program's curve) changed
    // under the measurement. Such a chunk is redone, up to `retries` times.
    const double ideal_us = w.value("ideal_period_units", 2.0) * static_cast<double>(a.unit_us);
    const double limit_us = a.contended_factor * ideal_us;
    double sweep_wall = 0;
    int chunk_index = -1;  // startup records seen so far in the profile
    std::vector<int> dropped;
    int contended_kept = 0, redone = 0;
    const std::string actual_path = out_dir + "/" + name + ".actual.json";
    if (a.reanalyze) {  // the real runs' results and dropped chunks of an earlier run
      std::ifstream in(actual_path);
      const json j = json::parse(in, nullptr, false);
      if (j.is_object()) {
        sum_speedup = j.value("sum_speedup", sum_speedup);
        n_speedup = j.value("n_speedup", n_speedup);
        dropped = j.value("dropped", dropped);
        redone = j.value("redone", 0);
        contended_kept = j.value("contended", 0);
      }
    }
    for (int c = 0; c < (a.reanalyze ? 0 : chunks); ++c) {
      for (int attempt = 0; attempt <= a.retries; ++attempt) {
        say(fmt::format("{}: sweep chunk {}/{}{} ({:.0f} s)", name, c + 1, chunks,
                        attempt > 0 ? fmt::format(", retry {}", attempt) : "", std::ceil(chunk_s)));
        Stopwatch sws;
        const ChildResult sr = run_child(
            {ka, "--workload", name, "--seconds", fmt::format("{}", std::ceil(chunk_s) + 0.5), "--unit-us", unit},
            child_env(ca::to_env(o)), log);
        sweep_wall += sws.s();
        ++chunk_index;
        if (!exited_ok(sr)) {
          std::fprintf(stderr, "coact-profile: the sweep of %s failed (see %s)\n", name.c_str(), log.c_str());
          failed = true;
        }
        say(fmt::format("{}: real runs {}/{} ({} x {:.1f} s)", name, c + 1, chunks, wrows.size() + 2, a.actual_s));
        const double base0 = actual_run("");
        std::vector<double> fast(wrows.size(), 0.0);
        for (size_t i = 0; i < wrows.size(); ++i) fast[i] = actual_run(fmt::format("{}={}", wrows[i].stage, wrows[i].s));
        const double base1 = actual_run("");
        std::vector<double> zero_periods;
        for (const Exp& e : read_experiments(o.json_output)) {
          if (e.chunk == chunk_index && e.s == 0 && e.rate > 0) zero_periods.push_back(1e6 / e.rate);
        }
        std::sort(zero_periods.begin(), zero_periods.end());
        const double zero_median = zero_periods.empty() ? 0 : zero_periods[zero_periods.size() / 2];
        const bool contended = base0 > limit_us || base1 > limit_us || zero_median > limit_us;
        if (contended && attempt < a.retries) {
          say(fmt::format("{}: chunk contended (baseline periods {:.0f}, {:.0f}, sweep {:.0f} us; ideal {:.0f} us): redo",
                          name, base0, base1, zero_median, ideal_us));
          dropped.push_back(chunk_index);
          ++redone;
          continue;
        }
        if (contended) ++contended_kept;
        const double base = (base0 > 0 && base1 > 0) ? (base0 + base1) / 2 : std::max(base0, base1);
        for (size_t i = 0; i < wrows.size(); ++i) {
          if (base > 0 && fast[i] > 0) {
            sum_speedup[i] += 1.0 - fast[i] / base;
            ++n_speedup[i];
          }
        }
        break;
      }
    }
    if (!a.reanalyze) {
      std::ofstream(actual_path) << json{{"sum_speedup", sum_speedup},
                                         {"n_speedup", n_speedup},
                                         {"dropped", dropped},
                                         {"redone", redone},
                                         {"contended", contended_kept}}
                                        .dump()
                                 << "\n";
    }
    std::vector<Exp> ex = read_experiments(o.json_output);
    std::erase_if(ex, [&](const Exp& e) { return std::find(dropped.begin(), dropped.end(), e.chunk) != dropped.end(); });
    for (size_t i = 0; i < wrows.size(); ++i) {
      Row& r = wrows[i];
      const Estimate e = local_fit(region_points(ex, r.region), r.s);
      r.predicted = e.value;
      r.experiments = e.n;
      r.actual_runs = n_speedup[i];
      if (n_speedup[i] > 0) r.actual = sum_speedup[i] / n_speedup[i];
      rows.push_back(r);
    }
    for (Row& r : rows) {
      if (r.workload == name && contended_kept > 0) {
        r.note = fmt::format("{} chunk(s) contended even after {} retries", contended_kept, a.retries);
      }
    }
    timing[name] = {{"sweep_s", sweep_wall},        {"total_s", sw.s()},
                    {"experiments", ex.size()},      {"chunks_redone", redone},
                    {"chunks_contended", contended_kept}};
  }

  // Step 5: the archiver.
  const std::string dd = a.no_dedup || a.reanalyze ? std::string() : find_program(a.dedup, "examples/dedup/coact-dedup", "coact-dedup");
  if (a.no_dedup || a.reanalyze) {
    skipped.push_back({{"what", "dedup"}, {"why", a.reanalyze ? "--reanalyze" : "--no-dedup"}});
  } else if (dd.empty()) {
    const std::string why = "coact-dedup not found (build examples/dedup, or pass --dedup PATH)";
    say("skipping the archiver: " + why);
    skipped.push_back({{"what", "dedup"}, {"why", why}});
  } else {
    Stopwatch sw;
    // The archive goes to tmpfs when there is one: rewriting ~55 MB per pass
    // to a disk makes writeback stalls part of the archiver's timing.
    const std::string archive =
        (::access("/dev/shm", W_OK) == 0 ? fmt::format("/dev/shm/coact-validate-{}", ::getpid()) : out_dir + "/dedup") +
        ".cdar";
    auto dedup_argv = [&](int level, double secs) {
      std::vector<std::string> v{dd, "archive", a.dedup_dir, "-o", archive, "-q", "--seconds", fmt::format("{}", secs)};
      if (level >= -100) {
        v.push_back("--level");
        v.push_back(std::to_string(level));
      }
      return v;
    };
    // Runs the archiver for `secs` under a sweep of the Compressor region
    // with a fixed speedup, 1 s windows; returns the chunks per effective
    // second and the mean Compressor handler time per visit (ns).
    struct Measured {
      double rate = 0, handler_ns = 0;
      std::string region;
    };
    constexpr int kDefaultLevel = -1000;  // "use the archiver's default"
    int runs = 0;
    auto measure = [&](int level, double secs, uint32_t pct) {
      ca::Options m;
      m.progress = {"chunks"};
      m.fixed_region = a.dedup_region;
      m.fixed_speedup_pct = pct;
      m.experiment = std::chrono::milliseconds(1000);
      m.max_experiment = m.experiment;
      m.output = "";
      m.json_output = out_dir + fmt::format("/dedup-{}.jsonl", runs++);
      const ChildResult r = run_child(dedup_argv(level, secs), child_env(ca::to_env(m)), log);
      if (!exited_ok(r)) failed = true;
      double visits = 0, eff = 0;
      uint64_t rv = 0, rns = 0;
      Measured out;
      std::ifstream in(m.json_output);
      std::string line;
      while (std::getline(in, line)) {
        const json j = json::parse(line, nullptr, false);
        if (!j.is_object() || j.value("type", "") != "experiment") continue;
        out.region = j.value("region", "");
        if (j.contains("progress")) {
          for (const auto& [k, v] : j["progress"].items()) visits += v.get<double>();
        }
        eff += static_cast<double>(j.value("effective_ns", uint64_t{0})) / 1e9;
        rv += j.value("visits", uint64_t{0});
        rns += j.value("region_ns", uint64_t{0});
      }
      out.rate = eff > 0 ? visits / eff : 0;
      out.handler_ns = rv > 0 ? static_cast<double>(rns) / static_cast<double>(rv) : 0;
      return out;
    };
    // 5a. The real change: default level vs the fast level, interleaved.
    double t0 = 0, t1 = 0, rate0 = 0, rate1 = 0, speedup_sum = 0;
    int nrun = 0;
    std::string region;
    const double real_s = 2 * a.actual_s;
    for (int c = 0; c < chunks; ++c) {
      say(fmt::format("dedup: real runs {}/{} (default level, level {}, default level; {:.0f} s each)", c + 1, chunks,
                      a.dedup_fast_level, real_s));
      const Measured b0 = measure(kDefaultLevel, real_s, 0);
      const Measured f = measure(a.dedup_fast_level, real_s, 0);
      const Measured b1 = measure(kDefaultLevel, real_s, 0);
      if (!b0.region.empty()) region = b0.region;
      const double rb = (b0.rate + b1.rate) / 2;
      if (rb > 0 && f.rate > 0) {
        speedup_sum += 1.0 - rb / f.rate;
        rate0 += rb;
        rate1 += f.rate;
        t0 += (b0.handler_ns + b1.handler_ns) / 2;
        t1 += f.handler_ns;
        ++nrun;
      }
    }
    Row r;
    r.workload = "dedup";
    r.stage = fmt::format("zstd level {}", a.dedup_fast_level);
    r.region = region.empty() ? "Compressor::on(NewChunk)" : region;
    r.actual_runs = nrun;
    if (nrun > 0 && t0 > 0) {
      r.actual = speedup_sum / nrun;
      r.s = std::clamp(1.0 - t1 / t0, 0.0, 1.0);
      // 5b. The prediction at s = r: the default level under fixed-speedup
      // sweeps of the Compressor region, 0 and round(100 r) %, interleaved.
      const uint32_t pct = static_cast<uint32_t>(std::lround(r.s * 100));
      const double each = std::max(2.0, a.dedup_sweep_s / (3.0 * chunks));
      double ysum = 0;
      int ny = 0;
      for (int c = 0; c < chunks; ++c) {
        say(fmt::format("dedup: sweep {}/{} at 0 %, {} %, 0 % ({:.0f} s each)", c + 1, chunks, pct, each));
        const Measured z0 = measure(kDefaultLevel, each, 0);
        const Measured v = measure(kDefaultLevel, each, pct);
        const Measured z1 = measure(kDefaultLevel, each, 0);
        const double rz = (z0.rate + z1.rate) / 2;
        if (rz > 0 && v.rate > 0) {
          ysum += 1.0 - rz / v.rate;
          ++ny;
        }
      }
      if (ny > 0) r.predicted = ysum / ny;
      r.experiments = ny;
      r.note = fmt::format("level {} vs default: Compressor handler {:.1f} -> {:.1f} us per chunk (r = {:.3f}, "
                           "virtual speedup {} %); {:.0f} -> {:.0f} chunks/s",
                           a.dedup_fast_level, t0 / nrun / 1e3, t1 / nrun / 1e3, r.s, pct, rate0 / nrun,
                           rate1 / nrun);
    } else {
      r.note = "the archiver's runs measured nothing (see " + log + ")";
    }
    rows.push_back(r);
    std::remove(archive.c_str());
    timing["dedup"] = {{"total_s", sw.s()}};
  }

  // Step 6.
  double sum_abs = 0, max_abs = 0;
  int n = 0;
  for (const Row& r : rows) {
    if (std::isnan(r.predicted) || std::isnan(r.actual)) continue;
    const double e = std::abs(r.predicted - r.actual) * 100;
    sum_abs += e;
    max_abs = std::max(max_abs, e);
    ++n;
  }
  const double mean_abs = n > 0 ? sum_abs / n : std::nan("");
  if (a.json_out) {
    json j;
    j["rows"] = json::array();
    for (const Row& r : rows) {
      j["rows"].push_back({{"workload", r.workload},
                           {"stage", r.stage},
                           {"region", r.region},
                           {"region_kind", r.region_kind},
                           {"s", json_num(r.s)},
                           {"predicted", json_num(r.predicted)},
                           {"actual", json_num(r.actual)},
                           {"error_pts", json_num((r.predicted - r.actual) * 100)},
                           {"ideal", json_num(r.ideal)},
                           {"experiments", r.experiments},
                           {"actual_runs", r.actual_runs},
                           {"note", r.note}});
    }
    j["mean_abs_error_pts"] = json_num(mean_abs);
    j["max_abs_error_pts"] = json_num(n > 0 ? max_abs : std::nan(""));
    j["rows_compared"] = n;
    j["sweep_s"] = a.sweep_s;
    j["chunks"] = chunks;
    j["actual_s"] = a.actual_s;
    j["timing"] = timing;
    j["skipped"] = skipped;
    j["profiles"] = out_dir;
    std::printf("%s\n", j.dump().c_str());
  } else {
    size_t wr = 6;
    for (const Row& r : rows) wr = std::max(wr, r.region.size());
    std::printf("%-12s %-*s %6s %10s %8s %11s %7s %5s\n", "workload", static_cast<int>(wr), "region", "s", "predicted",
                "actual", "error(pts)", "ideal", "exps");
    for (const Row& r : rows) {
      std::printf("%-12s %-*s %6s %10s %8s %11s %7s %5d\n", r.workload.c_str(), static_cast<int>(wr), r.region.c_str(),
                  fmt_num(r.s, 3).c_str(), fmt_num(r.predicted).c_str(), fmt_num(r.actual).c_str(),
                  fmt_num((r.predicted - r.actual) * 100, 1).c_str(), fmt_num(r.ideal).c_str(), r.experiments);
      if (!r.note.empty()) std::printf("%-12s %s\n", "", r.note.c_str());
    }
    std::printf("mean |error| %s pts, max %s pts over %d rows; sweep %.0f s per workload in %d chunks; profiles in %s\n",
                fmt_num(mean_abs, 1).c_str(), fmt_num(n > 0 ? max_abs : std::nan(""), 1).c_str(), n, a.sweep_s,
                chunks, out_dir.c_str());
    for (const auto& s : skipped) std::printf("skipped %s: %s\n", s.value("what", "").c_str(), s.value("why", "").c_str());
  }
  return failed ? 1 : 0;
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
  std::string region_weight = "time";
  run_cmd
      ->add_option("--region-weight", region_weight,
                   "How a region is drawn among those that ran: time (proportional to running time, as Coz) or "
                   "uniform")
      ->capture_default_str()
      ->check(CLI::IsMember({"time", "uniform"}));
  run_cmd->add_flag("--sampling", o.sampling,
                    "Sample CPU time on every worker so source lines become regions ('file:line' and "
                    "'Handler @ file:line')");
  uint64_t sample_period_us = 1000;
  run_cmd->add_option("--sample-period-us", sample_period_us, "CPU time between samples, us (with --sampling)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{10}, uint64_t{1'000'000}));
  run_cmd->add_option("--source-scope", o.source_scope,
                      "Source files whose lines can be regions: Coz patterns, '%' = any characters, on full paths "
                      "(repeatable; default: the program's own sources)");
  run_cmd->add_option("-o,--output", o.output, "profile.coz path (appended)")->capture_default_str();
  run_cmd->add_option("--json-output", o.json_output, "JSON-lines path (appended; default: OUTPUT with .jsonl)");
  run_cmd->add_flag("-q,--quiet", a.quiet, "No progress line on stderr");
  CLI::App* val_cmd = app.add_subcommand(
      "validate",
      "Compare predicted speedups with measured ones: the known-answer workloads (bench/causal) and the archiver "
      "(examples/dedup)");
  ValidateArgs v;
  val_cmd->add_option("-w,--workload", v.workloads, "Only this known-answer workload (repeatable; default: all)");
  val_cmd->add_option("--sweep-s", v.sweep_s, "Sweep seconds per workload (split into --chunks)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  val_cmd->add_option("--actual-s", v.actual_s, "Seconds of each real (baseline or actually-faster) run")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  val_cmd->add_option("--chunks", v.chunks, "Sweep chunks interleaved with the real runs")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  val_cmd->add_option("--unit-us", v.unit_us, "Known-answer unit of stage cost, microseconds")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{10}, int64_t{1'000'000}));
  val_cmd->add_option("--known-answer", v.known_answer, "Path of coact-known-answer (default: the build tree, PATH)");
  val_cmd->add_option("--dedup", v.dedup, "Path of coact-dedup (default: the build tree, PATH)");
  val_cmd->add_option("--dedup-dir", v.dedup_dir, "Directory the archiver archives")->capture_default_str();
  val_cmd->add_option("--dedup-fast-level", v.dedup_fast_level, "The archiver's faster zstd level (the real change)")
      ->capture_default_str();
  val_cmd->add_option("--dedup-region", v.dedup_region, "The archiver's region that the real change speeds up")
      ->capture_default_str();
  val_cmd->add_option("--dedup-sweep-s", v.dedup_sweep_s, "Sweep seconds for the archiver")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  val_cmd->add_flag("--no-dedup", v.no_dedup, "Skip the archiver");
  val_cmd->add_option("--retries", v.retries, "Redo a contended known-answer chunk up to this many times")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  val_cmd->add_option("--contended-factor", v.contended_factor,
                      "A chunk whose baseline period exceeds this x the ideal is contended")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 100.0));
  val_cmd->add_option("--out", v.out_dir, "Directory for the profiles and the children's log (default: a new /tmp dir)");
  val_cmd->add_flag("--json", v.json_out, "Print one JSON object instead of the table");
  val_cmd->add_flag("--reanalyze", v.reanalyze,
                    "Recompute the known-answer rows from the profiles and results an earlier run left in --out");
  val_cmd->add_flag("-v,--verbose", v.verbose, "Progress on stderr also with --json");

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
  if (val_cmd->parsed()) {
    if (!a.command.empty()) {
      std::fprintf(stderr, "coact-profile: validate takes no program\n");
      return 2;
    }
    return validate(v);
  }
  if (a.command.empty()) {
    std::fprintf(stderr, "coact-profile: no program given\nusage: coact-profile run [options] -- PROGRAM ARGS...\n");
    return 2;
  }
  if (fs->count() > 0) o.fixed_speedup_pct = fixed_speedup;
  o.time_weighted = region_weight == "time";
  o.experiment = std::chrono::milliseconds(experiment_ms);
  o.sample_period = std::chrono::microseconds(sample_period_us);
  o.max_experiment = std::chrono::milliseconds(max_experiment_ms);
  o.cooldown = std::chrono::milliseconds(cooldown_ms);
  o.duration = std::chrono::seconds(duration_s);
  a.json_given = run_cmd->count("--json-output") > 0;
  return run(a);
}
