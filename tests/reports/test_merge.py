"""Merging the profiles of a sharded sweep (profile.py "Several profiles",
estimate.py's per-group baselines): each shard's experiments are normalised
by that shard's own speedup-0 baseline before they are pooled; profiles of
different programs or progress points are refused, naming both files."""

import io
import json
import os
import random
import unittest
from contextlib import redirect_stderr, redirect_stdout

from support import TempDirCase

import coact_plot as cp

POINT = "known_answer.iteration"
R = "ping_pong::A::on(ping_pong::Ball)"
SLOPE = 2 / 3          # the true curve: y = SLOPE * s


def shard_lines(shard, shards, host, period_ns, rng, program="coact-known-answer",
                args=("--workload", "ping_pong"), point=POINT, n=60, noise=0.01, fields=True):
    """A coact JSON-lines profile of one shard on a machine whose time per
    visit at speedup 0 is period_ns: experiments of R at Coz's speedups, a
    third of them at 0, each with `noise` relative jitter."""
    start = {"type": "startup", "time_ns": 1, "tsc_hz": 1, "pid": 100 + shard, "seed": shard, "options": {},
             "host": host, "program": program, "args": list(args)}
    tag = {"shard": shard, "shards": shards, "host": host} if fields else {}
    if fields:
        start.update(shard=shard, shards=shards)
    lines = [json.dumps(start)]
    levels = [0.0] * 3 + [x / 20 for x in range(1, 11)]
    for i in range(n):
        s = levels[i % len(levels)]
        period = period_ns * (1 - SLOPE * s) * (1 + rng.gauss(0, noise))
        dur = 500_000_000
        rec = {"type": "experiment", "index": i, "region": R, "speedup": s, "duration_ns": dur,
               "delay_ns": 0, "effective_ns": dur, "visits": 10, "region_ns": 1,
               "progress": {point: int(round(dur / period))}, "latency": {}}
        rec.update(tag)
        lines.append(json.dumps(rec))
    return "\n".join(lines) + "\n"


class MergeCase(TempDirCase):
    def shards(self, periods, sub="sweep", **kw):
        rng = random.Random(7)
        return [self.write(f"{sub}/profile-shard-{k}-of-{len(periods)}.jsonl",
                           shard_lines(k, len(periods), f"node{k}", p, rng, **kw))
                for k, p in enumerate(periods)]

    def curve(self, paths):
        res = cp.analyze(cp.load_profiles(paths), min_points=3)
        return [c for r in res for c in r.curves if c.region == R][0]


class PerShardBaselineTest(MergeCase):
    def test_machines_of_different_speed_give_the_true_slope(self):
        # Shards on machines 1x and 2x as slow: each normalised by its own
        # baseline, the pooled curve is the truth (y = 2s/3).
        paths = self.shards([1_000_000, 2_000_000, 1_000_000, 2_000_000])
        c = self.curve(paths)
        self.assertAlmostEqual(c.slope, SLOPE, delta=0.02)
        lo, hi = c.slope_ci
        self.assertLess(lo, SLOPE)
        self.assertGreater(hi, SLOPE)
        self.assertEqual(c.baseline_experiments, 4 * 15)  # 15 of each shard's 60 are at speedup 0

    def test_one_baseline_for_all_would_be_wrong(self):
        # The same experiments without their shard and host fields are one
        # group: one baseline over both machines, and the curve is far off.
        # (What the per-shard rule above corrects; this keeps that test able to fail.)
        paths = self.shards([1_000_000, 2_000_000, 1_000_000, 2_000_000], fields=False,
                            program="p", args=())
        for p in paths:  # no host either
            with open(p) as f:
                text = f.read().replace('"host": "node', '"nohost": "node')
            with open(p, "w") as f:
                f.write(text)
        c = self.curve(paths)
        self.assertGreater(abs(c.slope - SLOPE), 0.1)

    def test_a_directory_is_its_profiles(self):
        paths = self.shards([1_000_000, 1_500_000])
        a = self.curve(paths)
        b = self.curve([os.path.dirname(paths[0])])
        self.assertEqual(a.slope, b.slope)
        self.assertEqual(a.predict(0.25), b.predict(0.25))

    def test_one_shard_is_the_single_profile_rule(self):
        # One group: exactly the unsharded estimator (same numbers as the file
        # without shard and host fields).
        rng = random.Random(3)
        sharded = self.write("a.jsonl", shard_lines(0, 1, "node0", 1_000_000, rng))
        rng = random.Random(3)
        plain = self.write("b.jsonl", shard_lines(0, 1, "node0", 1_000_000, rng, fields=False)
                           .replace('"host": "node0", ', ""))
        a, b = self.curve([sharded]), self.curve([plain])
        self.assertEqual(a.predict(0.25), b.predict(0.25))
        self.assertEqual(a.baseline, b.baseline)

    def test_a_shard_without_a_baseline_is_left_out_and_said(self):
        paths = self.shards([1_000_000, 1_000_000])
        rng = random.Random(5)
        lines = [x for x in shard_lines(2, 3, "node2", 3_000_000, rng).splitlines()
                 if '"speedup": 0.0' not in x]
        paths.append(self.write("sweep/profile-shard-2-of-3.jsonl", "\n".join(lines) + "\n"))
        with self.assertWarnsRegex(cp.ProfileWarning, "shard 2/3 on node2 @ " + POINT):
            c = self.curve(paths)
        self.assertAlmostEqual(c.slope, SLOPE, delta=0.02)  # the slow machine's points, unnormalised, are not in it

    def test_groups_come_from_the_records(self):
        exps = cp.parse_profile(self.shards([1_000_000, 1_000_000])[1])
        self.assertEqual({e.group for e in exps}, {"shard 1/2 on node1"})


class RefuseDifferentSweepsTest(MergeCase):
    def run_cli(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = cp.main(list(argv))
        return rc, err.getvalue()

    def test_different_programs_are_refused_naming_both(self):
        a = self.shards([1_000_000], sub="one")[0]
        b = self.shards([1_000_000], sub="two", args=("--workload", "fork_join"))[0]
        rc, err = self.run_cli("profile", a, b)
        self.assertEqual(rc, 1)
        self.assertIn("different programs", err)
        self.assertIn(a, err)
        self.assertIn(b, err)
        self.assertIn("'coact-known-answer --workload ping_pong'", err)
        self.assertIn("'coact-known-answer --workload fork_join'", err)

    def test_different_progress_points_are_refused_naming_both(self):
        a = self.shards([1_000_000], sub="one")[0]
        b = self.shards([1_000_000], sub="two", point="requests")[0]
        rc, err = self.run_cli("estimate", a, b)
        self.assertEqual(rc, 1)
        self.assertIn("different progress points", err)
        self.assertIn(f"{a} measured '{POINT}'", err)
        self.assertIn(f"{b} measured 'requests'", err)

    def test_shards_of_one_sweep_merge(self):
        paths = self.shards([1_000_000, 1_000_000])
        rc, err = self.run_cli("profile", os.path.dirname(paths[0]))
        self.assertEqual(rc, 0, err)

    def test_a_directory_without_profiles_is_an_error(self):
        os.makedirs(os.path.join(self.tmp, "empty"))
        rc, err = self.run_cli("profile", os.path.join(self.tmp, "empty"))
        self.assertEqual(rc, 1)
        self.assertIn("holds no profile", err)


if __name__ == "__main__":
    unittest.main()
