#!/usr/bin/python3
"""Runs coact-kv under redis-benchmark load for a fixed time: a service as a
program that ends, for `coact-profile validate` (and any sweep) to run like
the other real programs.

Usage: kv_under_load.py --kv PATH --seconds S [--clients C] [--pipeline D]
                        [--test get|set] [COACT-KV OPTIONS...]

Starts PATH --port 0 with the remaining options (it inherits the
environment: a sweep's COACT_CAUSAL_* reach the server, not the client),
waits for its "listening on" line, runs `redis-benchmark -t TEST -c C -P D`
rounds against it until S seconds have passed (the round then running is
ended with SIGTERM), then sends the server SIGTERM (it drains) and exits
with the server's status. The client's own
output is discarded; a client that cannot run is an error (exit 1). Needs
Debian's redis-tools (redis-benchmark).
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time


def main() -> int:
    p = argparse.ArgumentParser(prog="kv_under_load.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--kv", required=True, help="path of coact-kv")
    p.add_argument("--seconds", type=float, required=True, help="how long the load runs")
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--pipeline", type=int, default=1)
    p.add_argument("--test", default="get", choices=["get", "set"])
    a, server_args = p.parse_known_args()
    if a.seconds <= 0 or a.clients < 1 or a.pipeline < 1:
        p.error("--seconds must be > 0, --clients and --pipeline >= 1")
    bench = shutil.which("redis-benchmark")
    if bench is None:
        print("kv_under_load.py: redis-benchmark not found (apt-get install redis-tools; scripts/bootstrap.sh)",
              file=sys.stderr)
        return 1
    server = subprocess.Popen([a.kv, "--port", "0", *server_args], stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    m = re.search(r"listening on [0-9.]+:(\d+)", line)
    if not m:
        server.kill()
        server.wait()
        print(f"kv_under_load.py: {a.kv} did not start: {line.strip()!r}", file=sys.stderr)
        return 1
    port = m.group(1)
    end = time.monotonic() + a.seconds
    status = 0
    try:
        while time.monotonic() < end and server.poll() is None:
            client = subprocess.Popen([bench, "-p", port, "-t", a.test, "-n", "100000000", "-c", str(a.clients),
                                       "-P", str(a.pipeline), "-r", "100000", "-q"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                client.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                # SIGTERM, not SIGINT: a shell starts a background job with
                # SIGINT ignored, and the client inherits that; a client that
                # still has not exited after 10 s is killed.
                client.terminate()
                try:
                    client.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    client.kill()
                    client.wait()
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        try:
            status = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            status = server.wait()
            print("kv_under_load.py: coact-kv did not exit within 30 s of SIGTERM", file=sys.stderr)
            return 1
        server.stdout.close()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
