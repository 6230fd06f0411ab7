"""coact-profile validate predicts with the one estimator the plots use
(reports/coact_reports/estimate.py): on a fixture profile, validate's
prediction for every row equals the estimator's (and its 95% interval the
estimator's "ci"), also when a contended chunk is dropped; the archiver's
rows are "real" rows with the options of their really-faster variant
(ctest coact_profile_validate_estimator).

Needs CPTEST_PROFILE_TOOL and CPTEST_KNOWN_ANSWER in the environment (ctest sets them);
the real programs' tests also CPTEST_DEDUP, CPTEST_ANALYTICS and CPTEST_KV (set when examples/ is built).
"""
import json
import os
import random
import shutil
import subprocess
import tempfile
import unittest

TOOL = os.environ.get("CPTEST_PROFILE_TOOL", "")
KA = os.environ.get("CPTEST_KNOWN_ANSWER", "")
DEDUP = os.environ.get("CPTEST_DEDUP", "")
ANALYTICS = os.environ.get("CPTEST_ANALYTICS", "")
KV = os.environ.get("CPTEST_KV", "")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORKLOAD = "pipeline"


def experiment(region, s, period_us, rng):
    duration = 500_000_000
    visits = int(duration / 1000 / period_us * rng.uniform(0.97, 1.03))
    return {"type": "experiment", "index": 0, "region": region, "speedup": s, "duration_ns": duration,
            "delay_ns": 0, "effective_ns": duration, "visits": visits, "region_ns": duration // 3,
            "progress": {"known_answer.iteration": visits}, "latency": {}}


@unittest.skipUnless(TOOL and KA, "CPTEST_PROFILE_TOOL and CPTEST_KNOWN_ANSWER must be set (ctest does)")
class ValidateUsesTheEstimator(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="coact-validate-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        listing = json.loads(subprocess.run([KA, "--list"], capture_output=True, text=True, check=True).stdout)
        w = next(w for w in listing["workloads"] if w["name"] == WORKLOAD)
        self.regions = [st["region"] for st in w["stages"]]
        # Rows as validate makes them: the first stage at 0.25/0.5/0.75, the others at 0.5.
        self.rows = [(self.regions[0], s) for s in (0.25, 0.5, 0.75)] + [(r, 0.5) for r in self.regions[1:]]

    def write_profile(self, chunks):
        """chunks: list of lists of experiment records, each after its own startup record."""
        lines = []
        for i, exps in enumerate(chunks):
            lines.append({"type": "startup", "time_ns": i, "tsc_hz": 1, "pid": 1000 + i, "seed": 1, "options": {}})
            lines.extend(exps)
            lines.append({"type": "pad"})  # page padding records are skipped by every reader
        path = os.path.join(self.dir, f"{WORKLOAD}.jsonl")
        with open(path, "w") as f:
            for rec in lines:
                f.write(json.dumps(rec) + "\n")
        return path

    def planted(self, rng, bottleneck_gain=0.8):
        exps = []
        speedups = [0.0] * 4 + [0.05 * k for k in range(1, 21)]
        for region in self.regions:
            gain = bottleneck_gain if region == self.regions[0] else 0.05
            for s in speedups:
                for _ in range(2):
                    exps.append(experiment(region, round(s, 2), 1000.0 * (1 - gain * s * 0.5), rng))
        return exps

    def write_actual(self, dropped, per_chunk=None):
        with open(os.path.join(self.dir, f"{WORKLOAD}.actual.json"), "w") as f:
            n = len(self.rows)
            json.dump({"per_chunk": per_chunk or [[0.1]] * n, "dropped": dropped, "redone": len(dropped),
                       "contended": 0}, f)

    def validate_rows(self):
        r = subprocess.run([TOOL, "validate", "--reanalyze", "--out", self.dir, "-w", WORKLOAD, "--no-dedup",
                            "--json", "--known-answer", KA], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["rows"]

    def estimator(self, profile, field="program_speedup"):
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "reports"))
        args = ["/usr/bin/python3", "-m", "coact_reports.estimate", profile, "--json",
                "-p", "known_answer.iteration"]
        for s in (0.25, 0.5, 0.75):
            args += ["--at", str(s)]
        r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, check=True)
        out = {}
        for reg in json.loads(r.stdout)["regions"]:
            for p in reg["predictions"]:
                out[(reg["region"], round(p["s"], 6))] = p[field]
        return out

    def check_equal(self, rows, want):
        self.assertEqual(len(rows), len(self.rows))
        for row in rows:
            key = (row["region"], round(row["s"], 6))
            self.assertIn(key, want)
            self.assertIsNotNone(row["predicted"], key)
            self.assertAlmostEqual(row["predicted"], want[key], places=12, msg=str(key))

    def test_prediction_equals_the_estimators(self):
        rng = random.Random(7)
        path = self.write_profile([self.planted(rng)])
        self.write_actual(dropped=[])
        rows = self.validate_rows()
        want = self.estimator(path)
        self.check_equal(rows, want)
        # The planted bottleneck: program speedup about 0.4 s at s (not a constant).
        first = {round(r["s"], 2): r["predicted"] for r in rows if r["region"] == self.regions[0]}
        self.assertGreater(first[0.75], first[0.25] + 0.1)

    def test_rows_carry_the_estimators_interval_and_their_program(self):
        rng = random.Random(9)
        path = self.write_profile([self.planted(rng)])
        self.write_actual(dropped=[])
        rows = self.validate_rows()
        want = self.estimator(path, "ci")
        self.assertEqual(len(rows), len(self.rows))
        for row in rows:
            key = (row["region"], round(row["s"], 6))
            self.assertEqual(row["program"], "known_answer")
            lo, hi = row["predicted_ci"]
            self.assertIsNotNone(lo, key)
            self.assertAlmostEqual(lo, want[key][0], places=12, msg=str(key))
            self.assertAlmostEqual(hi, want[key][1], places=12, msg=str(key))
            self.assertLess(lo, row["predicted"])
            self.assertGreater(hi, row["predicted"])

    def test_three_chunks_get_the_run_jackknife(self):
        # Each chunk is a process; one that ran its bottleneck 10% slower
        # moves its own experiments together, and the interval says so.
        rng = random.Random(11)
        path = self.write_profile([self.planted(rng, gain) for gain in (0.8, 0.72, 0.8)])
        self.write_actual(dropped=[], per_chunk=[[0.1, 0.1, 0.1]] * len(self.rows))
        rows = self.validate_rows()
        want = self.estimator(path, "ci")
        for row in rows:
            key = (row["region"], round(row["s"], 6))
            self.assertEqual(row["predicted_interval"],
                             "estimator at s: fit and runs (3 runs), with the profiler's own error (2 %)", key)
            self.assertEqual(row["predicted_systematic"], 0.02, key)
            self.assertAlmostEqual(row["predicted_ci"][0], want[key][0], places=12, msg=str(key))
            self.assertAlmostEqual(row["predicted_ci"][1], want[key][1], places=12, msg=str(key))
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "reports"))
        fit = json.loads(subprocess.run(
            ["/usr/bin/python3", "-m", "coact_reports.estimate", path, "--json", "-p", "known_answer.iteration",
             "--interval", "fit", "--at", "0.5"], capture_output=True, text=True, env=env, timeout=120,
            check=True).stdout)
        first = next(r for r in fit["regions"] if r["region"] == self.regions[0])
        lo_fit, hi_fit = next(p["ci"] for p in first["predictions"] if abs(p["s"] - 0.5) < 1e-9)
        row = next(r for r in rows if r["region"] == self.regions[0] and abs(r["s"] - 0.5) < 1e-9)
        self.assertGreater(row["predicted_ci"][1] - row["predicted_ci"][0], 2 * (hi_fit - lo_fit))

    def test_dropped_chunk_is_left_out(self):
        rng = random.Random(11)
        good = self.planted(rng)
        bad = self.planted(rng, bottleneck_gain=-1.5)   # a contended chunk: wildly different
        path = self.write_profile([good, bad])
        self.write_actual(dropped=[1])
        rows = self.validate_rows()
        kept = os.path.join(self.dir, "kept-by-hand.jsonl")
        with open(path) as f, open(kept, "w") as out:
            chunk = -1
            for line in f:
                rec = json.loads(line)
                chunk += rec["type"] == "startup"
                if rec["type"] == "experiment" and chunk == 1:
                    continue
                out.write(line)
        self.check_equal(rows, self.estimator(kept))
        with_bad = self.estimator(path)
        self.assertNotAlmostEqual(with_bad[(self.regions[0], 0.75)],
                                  next(r["predicted"] for r in rows
                                       if r["region"] == self.regions[0] and r["s"] == 0.75), places=3)

    def test_actual_is_the_median_over_chunks(self):
        # One slow really-faster run (0.417 among 0.499 / 0.500, as timer_stage A at 0.75 measured
        # once) moves the median not at all; the mean would be 0.472.
        rng = random.Random(5)
        self.write_profile([self.planted(rng)])
        n = len(self.rows)
        per_chunk = [[0.499, 0.417, 0.500]] + [[0.3, 0.1]] + [[0.2]] * (n - 2)
        self.write_actual(dropped=[], per_chunk=per_chunk)
        rows = self.validate_rows()
        self.assertEqual(len(rows), n)
        self.assertAlmostEqual(rows[0]["actual"], 0.499, places=12)
        self.assertEqual(rows[0]["actual_chunks"], [0.499, 0.417, 0.500])
        self.assertEqual(rows[0]["actual_runs"], 3)
        self.assertAlmostEqual(rows[1]["actual"], 0.2, places=12)  # an even count: the middle two's mean
        self.assertAlmostEqual(rows[2]["actual"], 0.2, places=12)
        # The truth's own interval: Student t (2 degrees of freedom: 4.303) around the chunks'
        # mean; none from one chunk.
        mean = (0.499 + 0.417 + 0.500) / 3
        sd = (sum((x - mean) ** 2 for x in [0.499, 0.417, 0.500]) / 2) ** 0.5
        lo, hi = rows[0]["actual_ci"]
        self.assertAlmostEqual((lo + hi) / 2, mean, places=9)
        self.assertAlmostEqual((hi - lo) / 2, 4.302653 * sd / 3 ** 0.5, places=4)
        self.assertEqual(rows[2]["actual_ci"], [None, None])

    def test_reanalyze_without_an_earlier_run_is_a_usage_error(self):
        # No --out, or an --out without the workload's profile: one line naming it, exit 2
        # (it printed a table of nulls and exited 0).
        empty = os.path.join(self.dir, "empty")
        os.makedirs(empty)
        r = subprocess.run([TOOL, "validate", "--reanalyze", "-w", WORKLOAD, "--known-answer", KA, "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("validate --reanalyze: expected --out DIR", r.stderr)
        r = subprocess.run([TOOL, "validate", "--reanalyze", "--out", empty, "-w", WORKLOAD, "--known-answer", KA,
                            "--json"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"no profile of workload {WORKLOAD} there (expected {empty}/{WORKLOAD}.jsonl", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_actual_written_before_the_median_is_read(self):
        rng = random.Random(6)
        self.write_profile([self.planted(rng)])
        n = len(self.rows)
        with open(os.path.join(self.dir, f"{WORKLOAD}.actual.json"), "w") as f:
            json.dump({"sum_speedup": [0.9] * n, "n_speedup": [3] * n, "dropped": [], "redone": 0,
                       "contended": 0}, f)
        rows = self.validate_rows()
        for row in rows:
            self.assertAlmostEqual(row["actual"], 0.3, places=12)
            self.assertEqual(row["actual_runs"], 1)


@unittest.skipUnless(TOOL and DEDUP, "CPTEST_PROFILE_TOOL and CPTEST_DEDUP must be set (ctest does)")
class ArchiverRows(unittest.TestCase):
    def test_unknown_archiver_stage_is_a_usage_error(self):
        r = subprocess.run([TOOL, "validate", "--no-known-answer", "--dedup", DEDUP, "--dedup-stage", "Sorter"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("validate --dedup-stage 'Sorter': no such archiver stage (expected one of: Compressor, "
                      "Reader, Chunker, Fingerprinter, Index, Writer)", r.stderr)

    def test_summary_json_is_whole_passes_and_a_bad_path_is_named(self):
        out = tempfile.mkdtemp(prefix="coact-dedup-summary-")
        self.addCleanup(shutil.rmtree, out, True)
        tree = os.path.join(out, "tree")
        os.makedirs(tree)
        with open(os.path.join(tree, "f"), "w") as f:
            f.write("coact " * 50000)
        path = os.path.join(out, "s.json")
        r = subprocess.run([DEDUP, "archive", tree, "-o", os.path.join(out, "a.cdar"), "-q", "--passes", "3",
                            "--summary-json", path], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path) as f:
            doc = json.load(f)
        self.assertEqual(doc["passes"], 3)
        self.assertGreater(doc["chunks_per_pass"], 0)
        self.assertGreater(doc["later_pass_seconds"], 0)
        self.assertLessEqual(doc["later_pass_seconds"] * 2, doc["total_seconds"] + 1e-9)
        bad = os.path.join(out, "no-such-dir", "s.json")
        r = subprocess.run([DEDUP, "archive", tree, "-o", os.path.join(out, "b.cdar"), "-q", "--summary-json", bad],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"cannot write --summary-json '{bad}'", r.stderr)

    def test_alternate_splits_passes_and_region_counters_by_arm(self):
        out = tempfile.mkdtemp(prefix="coact-dedup-alternate-")
        self.addCleanup(shutil.rmtree, out, True)
        tree = os.path.join(out, "tree")
        os.makedirs(tree)
        rng = random.Random(5)
        # About 450 chunks a pass: enough Index visits for the sampled handler timing
        # (one run in 64-191 timed per thread) to time some in each arm.
        with open(os.path.join(tree, "f"), "w") as f:
            f.write(" ".join(rng.choice(["actor", "chunk", "index"]) for _ in range(600000)))
        # Nothing to alternate with: a usage error naming what is expected.
        r = subprocess.run([DEDUP, "archive", tree, "-o", os.path.join(out, "a.cdar"), "-q", "--alternate"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--alternate: expected a stage variant", r.stderr)
        # Nine passes: the first in neither arm, then A B B A A B B A.
        path = os.path.join(out, "s.json")
        env = dict(os.environ, COACT_CAUSAL="1", COACT_CAUSAL_FIXED_REGION="coact::dedup::Index::on(coact::dedup::HashedChunk)",
                   COACT_CAUSAL_FIXED_SPEEDUP="0", COACT_CAUSAL_PROGRESS="chunks", COACT_CAUSAL_OUTPUT="",
                   COACT_CAUSAL_JSON_OUTPUT=os.path.join(out, "p.jsonl"))
        r = subprocess.run([DEDUP, "archive", tree, "-o", os.path.join(out, "a.cdar"), "-q", "--passes", "9",
                            "--fast-index", "--alternate", "--summary-json", path],
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path) as f:
            doc = json.load(f)
        arms = doc["alternate"]
        self.assertEqual(arms["order"], "ABBA")
        self.assertEqual(arms["unit"], "pass")
        chunks = doc["chunks_per_pass"]
        self.assertGreater(chunks, 0)
        self.assertEqual(arms["progress_per_unit"], chunks)
        for name in ("baseline", "variant"):
            arm = arms[name]
            self.assertEqual(len(arm["seconds"]), 4, name)
            self.assertTrue(all(s > 0 for s in arm["seconds"]), name)
            # The region counters, split at pass boundaries: one Index visit per chunk per pass,
            # and the time of the sampled (timed) ones, weighted by the runs each stands for.
            index = arm["regions"]["coact::dedup::Index::on(coact::dedup::HashedChunk)"]
            self.assertEqual(index["visits"], 4 * chunks, name)
            self.assertGreater(index["ns"], 0, name)
        # Without a sweep the region counters do not run: the arms carry pass times only.
        r = subprocess.run([DEDUP, "archive", tree, "-o", os.path.join(out, "a.cdar"), "-q", "--passes", "4",
                            "--level", "1", "--alternate", "--summary-json", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path) as f:
            arms = json.load(f)["alternate"]
        self.assertEqual(len(arms["baseline"]["seconds"]), 1)  # pass 1
        self.assertEqual(len(arms["variant"]["seconds"]), 2)   # passes 2 and 3
        self.assertEqual(arms["baseline"]["regions"], {})

    def test_a_stage_row_is_real_and_names_its_change(self):
        # A short run of one archiver row on a small tree: only its shape is checked (the
        # numbers need the full-length run).
        out = tempfile.mkdtemp(prefix="coact-validate-dedup-")
        self.addCleanup(shutil.rmtree, out, True)
        tree = os.path.join(out, "tree")
        rng = random.Random(3)
        for i in range(30):
            os.makedirs(os.path.join(tree, f"d{i % 3}"), exist_ok=True)
            with open(os.path.join(tree, f"d{i % 3}", f"f{i}"), "w") as f:
                f.write(" ".join(rng.choice(["actor", "chunk", "index", "dedup"]) for _ in range(20000)))
        r = subprocess.run([TOOL, "validate", "--no-known-answer", "--no-analytics", "--no-kv", "--dedup", DEDUP,
                            "--dedup-dir", tree,
                            "--dedup-stage", "Index", "--real-chunks", "2", "--real-max-rounds", "2", "--real-run-s", "3",
                            "--real-experiment-ms", "1000", "--dedup-sweep-s", "6",
                            "--json", "--out", os.path.join(out, "v")],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(len(doc["rows"]), 1)
        row = doc["rows"][0]
        self.assertEqual(row["program"], "real")
        self.assertEqual(row["workload"], "dedup")
        self.assertEqual(row["stage"], "Index")
        self.assertEqual(row["change"], "--fast-index")
        self.assertEqual(row["region"], "coact::dedup::Index::on(coact::dedup::HashedChunk)")
        self.assertEqual(len(row["predicted_ci"]), 2)
        self.assertIn("Index handler", row["note"])
        # The sweep's runs pool as one program's (identical command lines): a prediction
        # wherever the variant was measurably faster (a missing one also exits 1, above).
        # The prediction is measured over whole runs, as the truth is: the mean of the rounds'
        # predictions with a Student-t interval around it; the per-window fit is reported beside it.
        # The sweep's level is r rounded to a whole percent; where that is 0 (the variant was
        # not measurably faster per visit, as on a loaded machine) the row says so and predicts
        # nothing.
        if int(row["s"] * 100 + 0.5) > 0:  # lround, as the tool rounds it
            self.assertIsNotNone(row["predicted"], row["note"])
            self.assertEqual(len(row["predicted_rounds"]), 2)
            self.assertAlmostEqual(row["predicted"], sum(row["predicted_rounds"]) / 2, places=12)
            plo, phi = row["predicted_ci"]
            self.assertAlmostEqual(phi - row["predicted"], row["predicted"] - plo, places=12)
            self.assertLess(plo, phi)
            self.assertIsNotNone(row["window_predicted"], row["note"])
        else:
            self.assertIsNone(row["predicted"], row["note"])
            self.assertEqual(row["predicted_rounds"], [])
            self.assertIn("not faster per visit, so no virtual speedup to predict", row["note"])
        # The archiver alternates baseline and variant passes in one run (--alternate), so its
        # truth is their pass times, and two rounds give the measured speedup a Student-t
        # interval around their mean.
        self.assertEqual(row["actual_measure"], "alternating")
        self.assertEqual(row["actual_runs"], 2)
        lo, hi = row["actual_ci"]
        self.assertAlmostEqual(row["actual"], sum(row["actual_chunks"]) / 2, places=12)
        self.assertLess(lo, row["actual"])
        self.assertGreater(hi, row["actual"])
        self.assertAlmostEqual(hi - row["actual"], row["actual"] - lo, places=12)
        self.assertIn("agree_within_noise", doc)
        self.assertEqual(doc["skipped"], [{"what": "known-answer workloads", "why": "--no-known-answer"},
                                          {"what": "analytics", "why": "--no-analytics"},
                                          {"what": "kv", "why": "--no-kv"}])


@unittest.skipUnless(TOOL and ANALYTICS, "CPTEST_PROFILE_TOOL and CPTEST_ANALYTICS must be set (ctest does)")
class AnalyticsRow(unittest.TestCase):
    def test_the_worker_row_is_real_and_faster(self):
        # A short run: the shape, and that --fast-parse really makes the Workers' handler faster
        # (string_view parsing against std::istringstream: several times; the numbers need the
        # full-length run).
        out = tempfile.mkdtemp(prefix="coact-validate-analytics-")
        self.addCleanup(shutil.rmtree, out, True)
        # --real-se-pts 0: a standard error no rounds reach, so both sides run
        # --real-max-rounds rounds.
        r = subprocess.run([TOOL, "validate", "--no-known-answer", "--no-dedup", "--no-kv", "--analytics", ANALYTICS,
                            "--real-chunks", "2", "--real-max-rounds", "3", "--real-se-pts", "0",
                            "--real-run-s", "3", "--real-experiment-ms", "1000",
                            "--dedup-sweep-s", "6", "--json",
                            "--out", os.path.join(out, "v")], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(len(doc["rows"]), 1)
        row = doc["rows"][0]
        self.assertEqual(row["program"], "real")
        self.assertEqual(row["workload"], "analytics")
        self.assertEqual(row["stage"], "Worker")
        self.assertEqual(row["change"], "--fast-parse")
        self.assertEqual(row["region"], "coact::analytics::Worker::on(coact::analytics::Batch)")
        self.assertGreater(row["s"], 0.3, row["note"])
        self.assertGreater(row["actual"], 0.2, row["note"])
        # Blocks of jobs alternate the two parsers in one run (--alternate).
        self.assertEqual(row["actual_measure"], "alternating")
        # Each round predicts from its own runs at 0 % and round(100 r) %.
        self.assertEqual((len(row["actual_chunks"]), len(row["predicted_rounds"])), (3, 3))
        self.assertEqual(doc["real_rounds"], {"min": 2, "max": 3, "se_pts": 0, "run_s": 3})
        self.assertGreater(row["predicted"], 0.2, row["note"])



@unittest.skipUnless(TOOL and KV and shutil.which("redis-benchmark"),
                     "CPTEST_PROFILE_TOOL, CPTEST_KV (ctest sets them) and redis-benchmark (redis-tools) needed")
class KvRow(unittest.TestCase):
    def test_the_shard_row_is_real_and_faster(self):
        # A short run of the service under redis-benchmark: the shape, and that --fast-shard
        # halves the shards' handler (the numbers need the full-length run).
        out = tempfile.mkdtemp(prefix="coact-validate-kv-")
        self.addCleanup(shutil.rmtree, out, True)
        # --real-se-pts 100: any two rounds are enough, so each side stops at
        # --real-chunks although --real-max-rounds allows 15.
        r = subprocess.run([TOOL, "validate", "--no-known-answer", "--no-dedup", "--no-analytics", "--kv", KV,
                            "--real-chunks", "2", "--real-max-rounds", "15", "--real-se-pts", "100",
                            "--real-run-s", "3", "--real-experiment-ms", "1000",
                            "--dedup-sweep-s", "6", "--json",
                            "--out", os.path.join(out, "v")], capture_output=True, text=True, timeout=180)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(len(doc["rows"]), 1)
        row = doc["rows"][0]
        self.assertEqual(row["program"], "real")
        self.assertEqual(row["workload"], "kv")
        self.assertEqual(row["stage"], "Shard")
        self.assertEqual(row["change"], "--fast-shard")
        self.assertEqual(row["region"], "coact::kv::Shard::on(coact::kv::ShardBatch)")
        self.assertGreater(row["s"], 0.35, row["note"])  # half of the planted work, plus the handler's own
        self.assertGreater(row["actual"], 0.15, row["note"])
        self.assertEqual(row["actual_measure"], "window_rate")
        self.assertEqual((len(row["actual_chunks"]), len(row["predicted_rounds"])), (2, 2))
        self.assertGreater(row["predicted"], 0.15, row["note"])


if __name__ == "__main__":
    unittest.main()
