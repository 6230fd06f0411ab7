#!/usr/bin/python3
"""scripts/bench.sh's peers group on a stand-in build directory (a CMakeCache
and a fake coact-peers, COACT_BENCH_NO_BUILD=1): a coact-only run needs no
CAF or tokio program, and a SIGTERM sent to the script's pid (as `kill PID`
or a CI timeout sends it) ends the trials, leaving no program running."""

import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BENCH = os.path.join(ROOT, "scripts", "bench.sh")

# A stand-in coact-peers: one JSON row after SLEEP_S seconds, its pid
# appended to PIDS first.
FAKE_PEERS = """\
#!/usr/bin/python3
import argparse, json, os, time
p = argparse.ArgumentParser()
for o in ("--workload", "--n", "--workers", "--watchdog-s"):
    p.add_argument(o)
a = p.parse_args()
with open({pids!r}, "a") as f:
    f.write(f"{{os.getpid()}}\\n")
time.sleep({sleep_s})
n = int(a.n)
print(json.dumps({{"runtime": "coact", "workload": a.workload, "n": n, "msgs": 2 * n,
                  "msgs_per_s": 1000.0, "unit": "msgs", "seconds": 0.1}}))
"""


def alive(pid):
    """Whether pid runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class BenchShPeersTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        d = self.tmp.name
        self.build = os.path.join(d, "build")
        os.makedirs(os.path.join(self.build, "bench", "peers"))
        with open(os.path.join(self.build, "CMakeCache.txt"), "w") as f:
            f.write("CMAKE_BUILD_TYPE:STRING=Release\n")
        self.pids = os.path.join(d, "pids")

    def fake(self, sleep_s):
        path = os.path.join(self.build, "bench", "peers", "coact-peers")
        with open(path, "w") as f:
            f.write(FAKE_PEERS.format(pids=self.pids, sleep_s=sleep_s))
        os.chmod(path, 0o755)

    def env(self, **kv):
        e = {k: v for k, v in os.environ.items() if not k.startswith("COACT_")}
        e.update(COACT_BENCH_BUILD_DIR=self.build, COACT_BENCH_NO_BUILD="1", COACT_BENCH_RUNTIMES="coact",
                 COACT_BENCH_WORKLOADS="ping_pong", **kv)
        return e

    def test_a_coact_only_run_needs_no_caf_or_tokio_program(self):
        self.fake(0)
        p = subprocess.run([BENCH, "peers", "--quick"], env=self.env(), capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [json.loads(x) for x in p.stdout.splitlines()]
        self.assertEqual([r["workload"] for r in rows], ["ping_pong"])
        self.assertEqual(rows[0]["coact_msgs_per_s"], 1000.0)
        self.assertIsNone(rows[0]["caf_msgs_per_s"])
        self.assertIsNone(rows[0]["tokio_msgs_per_s"])

    def test_sigterm_to_the_script_ends_its_trials(self):
        self.fake(30)
        # CAF's and tokio's programs present (never run), so this test does not
        # depend on the one above.
        for rel in ("bench/peers/caf-peers", "bench/tokio/tokio-peers"):
            path = os.path.join(self.build, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("#!/bin/sh\nexit 1\n")
            os.chmod(path, 0o755)
        p = subprocess.Popen([BENCH, "peers"], env=self.env(COACT_BENCH_TRIALS="50"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not (os.path.exists(self.pids) and os.path.getsize(self.pids)):
            self.assertLess(time.monotonic(), deadline, "no trial started")
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)  # the script's pid only, not its group
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            with open(self.pids) as f:
                for pid in f.read().split():
                    if alive(int(pid)):
                        os.kill(int(pid), signal.SIGKILL)
            self.fail("bench.sh still ran 60 s after SIGTERM")
        self.assertNotEqual(p.returncode, 0, err)
        time.sleep(0.5)  # let a trial that would wrongly start next get under way
        with open(self.pids) as f:
            pids = [int(x) for x in f.read().split()]
        self.assertEqual(len(pids), 1, f"trials went on after SIGTERM: {pids}\n{err}")
        self.assertFalse(alive(pids[0]), f"the trial's program {pids[0]} outlived the script")


if __name__ == "__main__":
    unittest.main()
