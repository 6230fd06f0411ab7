// coact-kv: a Redis-protocol (RESP2) in-memory key-value server on coact
// actors (kv/server.hpp): PING, ECHO, GET, SET [EX|PX], DEL, EXISTS, MGET,
// INCR, EXPIRE, CONFIG GET, and pipelining; drive it with redis-cli or
// redis-benchmark (Debian's redis-tools).
//
//   coact-kv [--host A] [--port P] [--shards N] [--max-request BYTES]
//            [--max-output BYTES] [--max-clients N] [--idle-timeout S]
//            [--shard-cost-ns NS] [--fast-shard]
//
// Prints "coact-kv: listening on HOST:PORT" on stdout once it accepts.
// SIGINT or SIGTERM drains: it stops accepting, answers every request it
// has read, closes the connections and exits 0. Progress points: latency
// "kv.request", throughput "kv.replies" (server.hpp). Runtime knobs come
// from --coact-* arguments, COACT_* and COACT_CONFIG as for every coact
// program; COACT_SPIN_WINDOW_US defaults to 0 here (idle workers park at
// once: a server's clients may share its cores).
// Exit status: 0 after a drain, 1 error (the port in use), 2 for a bad
// option.
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <thread>

#include <CLI/CLI.hpp>
#include <coact/runtime/runtime.hpp>

#include "kv/server.hpp"

namespace {

// As many descriptors as the hard limit allows: one per client.
void raise_fd_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const coact::options::Values options = coact::options::init(argc, argv);  // a bad option: one line, exit 2
  CLI::App app{"coact-kv: a Redis-protocol key-value server on coact actors"};
  coact::kv::ServerOptions opt;
  uint32_t idle_s = 0;
  uint64_t cost_ns = 0;
  app.add_option("--host", opt.host, "numeric IPv4 address to listen on")->capture_default_str();
  app.add_option("--port", opt.port, "TCP port (0: any free port)")->capture_default_str();
  app.add_option("--shards", opt.shards, "shard actors the keys are spread over")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-request", opt.limits.max_request_bytes, "largest request in bytes (larger ones are refused)")
      ->capture_default_str()
      ->check(CLI::Range(64, 1 << 30));
  app.add_option("--max-output", opt.max_output_bytes, "unsent reply bytes at which a client stops being read")
      ->capture_default_str()
      ->check(CLI::Range(1024, 1 << 30));
  app.add_option("--max-clients", opt.max_clients, "clients served at once (more are refused)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--idle-timeout", idle_s, "close clients idle this many seconds (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("--shard-cost-ns", cost_ns,
                 "planted work per GET and SET in the shards (a stage for a causal sweep to find; 0 in normal use)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1'000'000'000));
  app.add_flag("--fast-shard", opt.fast_shard,
               "really-faster shards: half the planted work (the variant coact-profile validate measures)");
  CLI11_PARSE(app, argc, argv);
  opt.idle_timeout = std::chrono::seconds(idle_s);
  opt.shard_cost = std::chrono::nanoseconds(cost_ns);
  raise_fd_limit();
  // SIGINT/SIGTERM are taken by one thread (sigwait), so every thread the
  // runtime starts inherits them blocked.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    coact::SchedulerTuning tuning = coact::tuning_from(options);
    // A server waits on the network: an idle worker that spins only takes
    // the CPU from other processes on the machine (its clients, when they
    // share the cores), so unless the user chose a spin window, idle
    // workers park at once.
    if (!options.is_set("COACT_SPIN_WINDOW_US")) tuning.spin_window_us = 0;
    coact::Runtime rt(tuning);
    const coact::kv::Server server = coact::kv::start(rt, opt);
    std::printf("coact-kv: listening on %s:%u\n", opt.host.c_str(), unsigned(server.port));
    std::fflush(stdout);
    std::thread signals([&] {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      if (sig != 0) server.drain();
    });
    rt.run();  // returns once the drain has stopped every actor
    // The signal thread has drained (run() returned after it); a second
    // signal is no longer waited for.
    signals.join();
    const auto& st = *server.stats;
    std::fprintf(
        stderr, "coact-kv: drained: %llu clients, %llu requests, %llu protocol errors, %llu resets\n",
        static_cast<unsigned long long>(st.accepted.load()), static_cast<unsigned long long>(st.requests.load()),
        static_cast<unsigned long long>(st.protocol_errors.load()), static_cast<unsigned long long>(st.resets.load()));
  } catch (const coact::options::option_error& e) {
    coact::options::exit_with(argv[0], e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coact-kv: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
