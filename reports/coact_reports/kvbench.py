"""coact-kv (examples/kv) against redis-server 7 under redis-benchmark, side
by side in one run: requests per second, p50 and p99 latency and the
servers' CPU time, per test (SET, GET) and pipeline depth.

How: each server is started once, on a free port (coact-kv with --port 0,
its port read from its "listening on" line; redis-server with --save ""
--appendonly no on a port picked by binding a socket and closing it), and
waited for until `redis-cli ping` answers PONG. Both get one unrecorded
warm-up. Then, for each pipeline depth, T trials per server, alternating
the servers in ABBA order (coact first in even trials, redis first in odd
ones). A trial is one `redis-benchmark -t TEST -n N -c C -P D --csv` per
test, so each test's CPU time (user + sys of the server process, from
/proc/PID/stat around the invocation) is its own. Two more figures per
trial say what limited it:
  - client_cpu_share: redis-benchmark's own user + sys time per second of
    its run (getrusage of the waited-for child). Its one thread at 1.0
    never waited for a reply: neither server kept the client waiting, so
    requests/s then differ by the CPU time each request costs the client
    (its reads, writes and wakes, and the kernel work they do for the
    server) and what the server's threads take from the client's core,
    not by how fast a server answers.
  - runq_s_per_100k: the time the server's threads spent runnable but
    waiting for a CPU (the second field of /proc/PID/task/*/schedstat, a
    thread's run-queue wait), per 100k requests: threads contending for
    the cores with each other and with the client. null where the kernel
    keeps no schedstat.
At the end both servers get SIGTERM; coact-kv must exit 0 within 10 s (it
drains). Servers are stopped on every exit path (errors, SIGINT, SIGTERM).

Output: one JSON object per (test, depth) with every trial and its
min/median/max per server, the ratios of the medians and the per-pair
ratios, then a summary object (versions, load average, exit statuses).
The JSON shape is documented in scripts/bench.sh's header (group kv).

  python3 -m coact_reports.kvbench --coact-kv PATH [--quick] [options]
  scripts/bench.sh kv [--quick] [-- options]

Exit status: 0 done; 1 a server or redis-benchmark failed (one line naming
it); 2 usage.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import resource
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import IO, Any

SERVERS = ("coact", "redis")
FIGURES = ("rps", "p50_ms", "p99_ms", "cpu_s_per_100k", "client_cpu_share", "runq_s_per_100k")
# A client whose median CPU share is at least this was not kept waiting by
# either server (row_object's client_bound).
CLIENT_BOUND_SHARE = 0.9
LOAD_WARN = 0.3


class BenchError(Exception):
    pass


def parse_csv(text: str) -> dict[str, dict[str, float]]:
    """redis-benchmark --csv output -> {test in lower case: {"rps", "avg_ms",
    "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"}}. Lines before the
    header (warnings) are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"test"')), None)
    if start is None:
        raise BenchError("redis-benchmark printed no CSV header")
    out: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        try:
            out[row["test"].lower()] = {
                "rps": float(row["rps"]),
                **{f"{k}_ms": float(row[f"{k}_latency_ms"]) for k in ("avg", "min", "p50", "p95", "p99", "max")}}
        except (KeyError, TypeError, ValueError) as e:
            raise BenchError(f"redis-benchmark CSV row {row!r} does not parse: {e}") from None
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def runq_wait_seconds(pid: int) -> float | None:
    """Run-queue wait of a process's threads (each thread's schedstat: on-CPU
    ns, run-queue wait ns, timeslices), summed; None without schedstat. A
    thread that ended between two reads drops out of the sum: the servers
    here keep theirs."""
    total, read = 0, 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[1])
                read += 1
            except FileNotFoundError:  # the thread ended since listdir, or no schedstat
                continue
    except (OSError, IndexError, ValueError):
        return None
    return total / 1e9 if read else None


def children_cpu_seconds() -> float:
    """User + system CPU time of this process's waited-for children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, name: str, cmd: list[str], log: IO[bytes], port: int | None = None):
        self.name, self.cmd, self.log, self.port = name, cmd, log, port
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                     start_new_session=True)  # our signals, not the terminal's

    def log_tail(self) -> str:
        self.log.flush()
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace").strip().splitlines()[-3:]
        return " | ".join(tail) or "(empty)"

    def died(self, when: str) -> BenchError:
        return BenchError(f"{self.name} ({self.cmd[0]}) exited with status {self.proc.returncode} {when}; "
                          f"its stderr: {self.log_tail()}")

    def read_port(self, timeout: float) -> None:
        """coact-kv prints "coact-kv: listening on HOST:PORT" once it accepts."""
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sel.select(max(0.0, deadline - time.monotonic())):
                line = self.proc.stdout.readline().decode(errors="replace")
                if not line:
                    self.proc.wait(5)
                    raise self.died("before printing its port")
                m = re.search(r"listening on \S+:(\d+)\s*$", line)
                if m:
                    self.port = int(m.group(1))
                    return
        raise BenchError(f"{self.name} printed no 'listening on HOST:PORT' line within {timeout:.0f} s")

    def wait_ping(self, cli: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise self.died("before answering PING")
            try:
                p = subprocess.run([cli, "-p", str(self.port), "ping"], capture_output=True, text=True, timeout=2)
                if p.stdout.strip() == "PONG":
                    return
            except subprocess.TimeoutExpired:
                pass
            time.sleep(0.05)
        raise BenchError(f"{self.name} ({self.cmd[0]}, port {self.port}) did not answer PING within {timeout:.0f} s")

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, then the exit status; None if it had to be killed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        if self.proc.stdout:
            self.proc.stdout.close()
        return self.proc.returncode


def run_test(srv: Server, a: argparse.Namespace, test: str, pipeline: int, requests: int) -> dict[str, float]:
    cmd = [a.redis_benchmark, "-h", "127.0.0.1", "-p", str(srv.port), "-t", test, "-n", str(requests),
           "-c", str(a.clients), "-P", str(pipeline), "--csv"]
    c0, q0 = cpu_seconds(srv.proc.pid), runq_wait_seconds(srv.proc.pid)
    k0, t0 = children_cpu_seconds(), time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout_s)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{srv.name}: {' '.join(cmd)} did not finish within {a.timeout_s} s") from None
    wall, k1 = time.monotonic() - t0, children_cpu_seconds()
    if srv.proc.poll() is not None:
        raise srv.died(f"during {test} at pipeline {pipeline}")
    c1, q1 = cpu_seconds(srv.proc.pid), runq_wait_seconds(srv.proc.pid)
    if p.returncode != 0:
        raise BenchError(f"{srv.name}: {' '.join(cmd)} failed (exit {p.returncode}): {p.stderr.strip()[-300:]}")
    rows = parse_csv(p.stdout)
    row = rows.get(test.lower()) or (next(iter(rows.values())) if len(rows) == 1 else None)
    if row is None or row["rps"] <= 0:
        raise BenchError(f"{srv.name}: redis-benchmark gave no {test} figure: {p.stdout.strip()[-300:]}")
    return {"rps": row["rps"], "p50_ms": row["p50_ms"], "p99_ms": row["p99_ms"],
            "cpu_s_per_100k": round((c1 - c0) / requests * 1e5, 4),
            "client_cpu_share": round((k1 - k0) / wall, 3) if wall > 0 else None,
            "runq_s_per_100k": round((q1 - q0) / requests * 1e5, 4) if q0 is not None and q1 is not None else None}


def dist(xs: list[float | None]) -> dict[str, Any] | None:
    """Median, min, max and the trials; None when a trial has no figure."""
    if not xs or any(x is None for x in xs):
        return None
    return {"median": round(statistics.median(xs), 4), "min": min(xs), "max": max(xs), "trials": xs}


def ratio(x: float, y: float) -> float | None:
    return round(x / y, 4) if y else None


def row_object(a: argparse.Namespace, test: str, pipeline: int, trials: dict[str, list[dict[str, float]]]) -> dict:
    side = {s: {f: dist([t.get(f) for t in trials[s]]) for f in FIGURES} for s in SERVERS}
    rps = ratio(side["coact"]["rps"]["median"], side["redis"]["rps"]["median"])
    p99 = ratio(side["coact"]["p99_ms"]["median"], side["redis"]["p99_ms"]["median"])
    at_least, no_worse = rps is not None and rps >= 1, p99 is not None and p99 <= 1
    ahead = rps is not None and rps > 1
    shares = [(side[s]["client_cpu_share"] or {}).get("median") for s in SERVERS]
    client_bound = all(x is not None and x >= CLIENT_BOUND_SHARE for x in shares)
    return {"group": "kv", "workload": test, "pipeline": pipeline, "clients": a.clients, "requests": a.requests,
            "workers": a.workers, "shards": a.shards, "trials": a.trials, "quick": a.quick, **side,
            "coact_over_redis_rps": rps, "p99_coact_over_redis": p99,
            "pairs": [ratio(c["rps"], r["rps"]) for c, r in zip(trials["coact"], trials["redis"])],
            # Neither server kept the client waiting (CLIENT_BOUND_SHARE): the requests/s ratio is
            # then the client's cost per request under each server, not how fast each answers.
            "client_bound": client_bound,
            # The goal: at -P 1 at least redis-server's throughput and no worse p99; ahead when pipelined.
            "target": {"rps_at_least_redis": at_least, "p99_no_worse": no_worse, "rps_ahead": ahead,
                       "met": (at_least and no_worse) if pipeline == 1 else ahead}}


def version(cmd: list[str], pattern: str) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(pattern, out)
    return m.group(1) if m else None


def int_list(text: str) -> list[int]:
    try:
        xs = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': want comma-separated integers") from None
    if not xs or min(xs) < 1:
        raise argparse.ArgumentTypeError(f"'{text}': want integers >= 1")
    return xs


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m coact_reports.kvbench", description=__doc__.split("\n\n")[0])
    p.add_argument("--coact-kv", required=True, help="the coact-kv binary")
    p.add_argument("--redis-server", default="/usr/bin/redis-server")
    p.add_argument("--redis-benchmark", default="/usr/bin/redis-benchmark")
    p.add_argument("--redis-cli", default="/usr/bin/redis-cli")
    p.add_argument("--workers", type=int, default=2, help="coact-kv's --coact-workers (default 2)")
    p.add_argument("--shards", type=int, help="coact-kv's --shards (default: --workers)")
    p.add_argument("--requests", type=int, help="redis-benchmark -n (default 1000000; --quick 20000)")
    p.add_argument("--clients", type=int, default=50, help="redis-benchmark -c (default 50)")
    p.add_argument("--pipelines", type=int_list, default=[1, 16], help="depths, redis-benchmark -P (default 1,16)")
    p.add_argument("--tests", default="set,get", help="redis-benchmark tests (default set,get)")
    p.add_argument("--trials", type=int, help="trials per server and depth (default 5; --quick 2)")
    p.add_argument("--quick", action="store_true", help="20000 requests, 2 trials (a smoke run)")
    p.add_argument("--timeout-s", type=float, default=300, help="limit on one redis-benchmark run (default 300)")
    p.add_argument("--out", help="also write the JSON lines to this file")
    a = p.parse_args(argv)
    a.requests = a.requests or (20000 if a.quick else 1000000)
    a.trials = a.trials or (2 if a.quick else 5)
    a.shards = a.shards or a.workers
    a.tests = [t.strip().lower() for t in a.tests.split(",") if t.strip()]
    for name, v in (("--workers", a.workers), ("--requests", a.requests), ("--clients", a.clients),
                    ("--trials", a.trials), ("--shards", a.shards)):
        if v < 1:
            p.error(f"{name} {v}: want an integer >= 1")
    if not a.tests:
        p.error("--tests: no test given")
    for path in (a.coact_kv, a.redis_server, a.redis_benchmark, a.redis_cli):
        if not os.access(path, os.X_OK):
            p.error(f"'{path}' is not an executable")
    return a


def run(a: argparse.Namespace, argv: list[str], emit: Any, logdir: str) -> int:
    load = os.getloadavg()
    if load[0] > LOAD_WARN:
        print(f"kvbench: warning: load average {load[0]:.2f} > {LOAD_WARN} at the start; the figures are noisy",
              file=sys.stderr)
    servers: dict[str, Server] = {}
    status: dict[str, int | None] = {}
    try:
        servers["coact"] = Server("coact-kv", [a.coact_kv, "--port", "0", "--shards", str(a.shards),
                                               f"--coact-workers={a.workers}"], open(f"{logdir}/coact.err", "w+b"))
        servers["coact"].read_port(10)
        port = free_port()
        servers["redis"] = Server("redis-server", [a.redis_server, "--port", str(port), "--save", "", "--appendonly",
                                                  "no", "--daemonize", "no", "--bind", "127.0.0.1"],
                                  open(f"{logdir}/redis.err", "w+b"), port)
        for s in SERVERS:
            servers[s].wait_ping(a.redis_cli, 10)
            print(f"kvbench: started {servers[s].name} pid {servers[s].proc.pid} port {servers[s].port}",
                  file=sys.stderr)
            for test in a.tests:  # warm-up, not recorded
                run_test(servers[s], a, test, 1, min(a.requests, 10000))
        for depth in a.pipelines:
            trials: dict[str, dict[str, list[dict[str, float]]]] = {t: {s: [] for s in SERVERS} for t in a.tests}
            for i in range(a.trials):
                for s in (SERVERS if i % 2 == 0 else SERVERS[::-1]):  # ABBA
                    for test in a.tests:
                        r = run_test(servers[s], a, test, depth, a.requests)
                        trials[test][s].append(r)
                        print(f"kvbench: -P {depth} trial {i + 1}/{a.trials} {s} {test}: {r['rps']:.0f} rps, "
                              f"p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms", file=sys.stderr)
            for test in a.tests:
                emit(row_object(a, test, depth, trials[test]))
    finally:
        for s in reversed(SERVERS):
            if s in servers:
                status[s] = servers[s].stop(10)
    emit({"group": "kv", "workload": "summary", "command": "python3 -m coact_reports.kvbench " + " ".join(argv),
          "versions": {"redis_server": version([a.redis_server, "--version"], r"\bv=(\S+)"),
                       "redis_benchmark": version([a.redis_benchmark, "--version"], r"(\d+\.\d+\.\d+)")},
          "coact_kv": a.coact_kv, "loadavg": [round(x, 2) for x in load], "loadavg_warning": load[0] > LOAD_WARN,
          "order": "ABBA (coact first in even trials)", "exit_status": status,
          "pids": {s: srv.proc.pid for s, srv in servers.items()},
          "warmup_requests": min(a.requests, 10000)})
    failed = status.get("coact") != 0 and servers["coact"].log_tail()
    for srv in servers.values():
        srv.log.close()
    if failed:
        raise BenchError(f"coact-kv did not exit 0 within 10 s of SIGTERM (status {status.get('coact')}); "
                         f"its stderr: {failed}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    a = parse_args(argv)
    out = open(a.out, "w") if a.out else None

    def emit(obj: dict) -> None:
        line = json.dumps(obj, separators=(",", ":"))
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    def on_term(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the stops in run's finally go on
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term)  # so the servers are stopped on SIGTERM too
    try:
        with tempfile.TemporaryDirectory(prefix="kvbench.") as logdir:
            return run(a, argv, emit, logdir)
    except BenchError as e:
        print(f"kvbench: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kvbench: interrupted; servers stopped", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, old)
        if out:
            out.close()


if __name__ == "__main__":
    sys.exit(main())
