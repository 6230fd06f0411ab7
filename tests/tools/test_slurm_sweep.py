"""scripts/slurm-sweep.sh against a real one-node Slurm (slurm_local.py):
a 4-shard sweep of a known-answer workload with a linear truth (ping_pong:
making A a fraction s faster makes the program 2s/3 faster) is submitted as
a job array, waited for, merged and plotted; the merged prediction for A at
s = 25% must be within 2 points of the truth (16.7%), every shard must have
recorded its own shard, seed and host, and after the daemons are stopped
nothing this test started may still run.

Environment: CPTEST_PROFILE_TOOL (coact-profile), CPTEST_KNOWN_ANSWER
(coact-known-answer). Needs root and Debian's slurmctld, slurmd,
slurm-client and munge (scripts/bootstrap.sh); without them the run exits
77 (ctest: skipped) saying what is missing. Its time: 4 shards of
SLURM_TEST_SHARD_S seconds (default 12), one after another on the one node
(each shard holds the whole node, as slurm-sweep.sh asks by default)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

from slurm_local import LocalSlurm, _gone  # beside this file: ctest runs it from here

SCRIPT = os.path.join(ROOT, "scripts", "slurm-sweep.sh")
REGION = "ping_pong::A::on(ping_pong::Ball)"
AT = 0.25
TRUTH = 2 * AT / 3
SHARDS = 4


def _ours(tmp):
    """Processes whose working directory is under `tmp` (the shards run there)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd.startswith(tmp) and not _gone(int(pid)):
            found.append(pid)
    return found


class SlurmSweepTest(unittest.TestCase):
    def test_four_shard_sweep_predicts_the_known_answer(self):
        tool = os.environ["CPTEST_PROFILE_TOOL"]
        ka = os.environ["CPTEST_KNOWN_ANSWER"]
        shard_s = int(os.environ.get("SLURM_TEST_SHARD_S", "12"))
        tmp = tempfile.mkdtemp(prefix="coact-slurm-sweep-")
        out = os.path.join(tmp, "sweep")
        slurm = LocalSlurm()
        try:
            t0 = time.monotonic()
            slurm.start()
            r = subprocess.run(
                ["bash", SCRIPT, "--shards", str(SHARDS), "--duration-s", str(shard_s), "--out", out,
                 "--profile-tool", tool, "--at", str(AT), "--wait-s", "400",
                 # the experiments go to the stage whose curve is checked
                 "--profile-arg=--region-filter=ping_pong::A",
                 "--", ka, "--workload", "ping_pong", "--seconds", "3600"],
                env=slurm.env, capture_output=True, text=True, timeout=600)
            took = time.monotonic() - t0
            self.assertEqual(r.returncode, 0, f"slurm-sweep.sh failed:\n{r.stdout}\n{r.stderr}\n"
                                              f"{slurm.log_tail()}")
            # Every shard: its own profile, shard, seed and host.
            seeds = set()
            for k in range(SHARDS):
                path = os.path.join(out, f"profile-shard-{k}-of-{SHARDS}.jsonl")
                with open(path) as f:
                    recs = [json.loads(x) for x in f if x.startswith("{")]
                start = [x for x in recs if x["type"] == "startup"]
                exps = [x for x in recs if x["type"] == "experiment"]
                self.assertEqual(len(start), 1, path)
                self.assertEqual((start[0]["shard"], start[0]["shards"]), (k, SHARDS), path)
                self.assertTrue(start[0]["host"], path)
                seeds.add(start[0]["seed"])
                self.assertGreater(len(exps), 5, path)
                self.assertTrue(all(x["shard"] == k and x["host"] == start[0]["host"] for x in exps), path)
            self.assertEqual(len(seeds), SHARDS, "the shards drew with the same seed")
            # The merged prediction against the truth.
            with open(os.path.join(out, "estimates.json")) as f:
                est = json.load(f)
            rows = [x for x in est["regions"] if x["region"] == REGION]
            self.assertEqual(len(rows), 1, json.dumps(est)[:2000])
            at = [p for p in rows[0]["predictions"] if abs(p["s"] - AT) < 1e-9][0]
            pred, ci = at["program_speedup"], at["ci"]
            # No interval: too few experiments at AT to bound it (the estimator leaves it out rather than guess).
            ci_text = "no interval" if ci is None or None in ci else f"[{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}]"
            print(f"slurm sweep: {SHARDS} shards x {shard_s} s in {took:.0f} s; {REGION} @ {AT:g}: "
                  f"predicted {pred * 100:+.1f}% {ci_text} from "
                  f"{rows[0]['experiments']} experiments (baseline {rows[0]['baseline_experiments']}), "
                  f"truth {TRUTH * 100:+.1f}%", file=sys.stderr)
            self.assertLessEqual(abs(pred - TRUTH), 0.02, f"predicted {pred:.3f}, truth {TRUTH:.3f}")
            self.assertNotEqual(ci_text, "no interval", f"the merged sweep's prediction at {AT:g} has no interval")
            self.assertTrue(os.path.getsize(os.path.join(out, "curves.png")) > 0)
        finally:
            left = slurm.stop()
            # The shards' programs ran under slurmd: none may outlive it.
            deadline = time.monotonic() + 10
            while _ours(tmp) and time.monotonic() < deadline:
                time.sleep(0.2)
            stray = _ours(tmp)
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(left, [], "Slurm daemons still running after stop")
        self.assertEqual(stray, [], "processes of the sweep still running after Slurm stopped")


if __name__ == "__main__":
    missing = LocalSlurm.missing()
    if missing:
        print(f"test_slurm_sweep: SKIPPED: cannot start a local Slurm here: missing {', '.join(missing)} "
              "(scripts/bootstrap.sh installs slurmctld, slurmd, slurm-client and munge; run as root)",
              file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
