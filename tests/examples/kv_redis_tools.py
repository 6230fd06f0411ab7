#!/usr/bin/python3
"""coact-kv under the real Redis client tools (Debian's redis-tools): redis-cli
gets Redis's answers for every command the server knows, a pipelined
redis-benchmark run completes with every request answered, and SIGTERM
drains the server: exit 0 and the drained line. Then the load harness that
coact-profile validate runs the server under (examples/kv/kv_under_load.py)
ends on time and exits 0 when started with SIGINT ignored, as a shell starts
a background job.

Usage: kv_redis_tools.py COACT_KV
Exit status 0 when every check holds, 1 otherwise; 77 (skipped) when
redis-cli or redis-benchmark is not installed (scripts/bootstrap.sh installs
redis-tools).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time


def fail(msg: str) -> None:
    print(f"kv_redis_tools: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def start(kv: str) -> tuple:
    proc = subprocess.Popen([kv, "--port", "0", "--coact-workers=2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on [0-9.]+:(\d+)", line)
    if not m:
        proc.kill()
        fail(f"coact-kv did not say where it listens: {line!r}")
    return proc, int(m.group(1))


def cli(port: int, *args: str) -> str:
    r = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        fail(f"redis-cli {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout.rstrip("\n")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if not shutil.which("redis-cli") or not shutil.which("redis-benchmark"):
        print("kv_redis_tools: redis-tools not installed (scripts/bootstrap.sh): skipped")
        return 77
    proc, port = start(sys.argv[1])
    try:
        expect = [
            (("PING",), "PONG"),
            (("ECHO", "hi there"), "hi there"),
            (("SET", "k", "v1"), "OK"),
            (("GET", "k"), "v1"),
            (("GET", "absent"), ""),
            (("INCR", "n"), "1"),
            (("INCR", "n"), "2"),
            (("INCR", "k"), "ERR value is not an integer or out of range"),
            (("MGET", "k", "absent", "n"), "v1\n\n2"),
            (("EXISTS", "k", "n", "absent"), "2"),
            (("DEL", "k", "absent"), "1"),
            (("EXPIRE", "n", "100"), "1"),
            (("EXPIRE", "absent", "100"), "0"),
            (("SET", "t", "x", "PX", "200"), "OK"),
            (("GET",), "ERR wrong number of arguments for 'get' command"),
            (("NOSUCH", "a"), "ERR unknown command 'NOSUCH', with args beginning with: 'a' "),
        ]
        for args, want in expect:
            got = cli(port, *args)
            if got != want:
                fail(f"redis-cli {' '.join(args)}: {got!r}, expected {want!r}")
        time.sleep(0.4)
        if cli(port, "GET", "t") != "":
            fail("a key set with PX 200 was still there after 400 ms")
        # Binary-safe values through redis-cli's -x (value from stdin).
        value = bytes(range(256)) * 4
        r = subprocess.run(["redis-cli", "-p", str(port), "-x", "SET", "bin"], input=value, capture_output=True,
                           timeout=30)
        if r.stdout.strip() != b"OK":
            fail(f"SET of a binary value: {r.stdout!r}")
        r = subprocess.run(["redis-cli", "-p", str(port), "GET", "bin"], capture_output=True, timeout=30)
        if r.stdout.rstrip(b"\n") != value:
            fail("GET of a binary value did not return its bytes")
        # A pipelined benchmark: every request answered.
        r = subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set,get", "-n", "20000", "-c", "20", "-P", "16",
                            "--csv"], capture_output=True, text=True, timeout=120)
        if r.returncode != 0 or "WARNING" in r.stderr:
            fail(f"redis-benchmark exited {r.returncode}: {r.stderr.strip()}")
        rows = [line for line in r.stdout.splitlines() if line.startswith('"SET"') or line.startswith('"GET"')]
        if len(rows) != 2:
            fail(f"redis-benchmark printed {r.stdout!r}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail("coact-kv did not exit within 20 s of SIGTERM")
    if proc.returncode != 0:
        fail(f"coact-kv exited {proc.returncode} after SIGTERM: {err.strip()}")
    if "coact-kv: drained:" not in err:
        fail(f"coact-kv did not report its drain: {err.strip()!r}")
    # kv_under_load.py ends its client's last round itself; a client that
    # inherited an ignored SIGINT must not outlive the load time.
    harness = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "kv",
                           "kv_under_load.py")
    started = time.monotonic()
    r = subprocess.run([sys.executable, harness, "--kv", sys.argv[1], "--seconds", "2"], capture_output=True,
                       text=True, timeout=60, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    took = time.monotonic() - started
    if r.returncode != 0:
        fail(f"kv_under_load.py with SIGINT ignored exited {r.returncode}: {r.stderr.strip()[-500:]}")
    if took > 8:
        fail(f"kv_under_load.py --seconds 2 with SIGINT ignored took {took:.1f} s")
    print("kv_redis_tools: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
