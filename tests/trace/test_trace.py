"""tests/trace/test_trace.py: traces of the archiver and the four peer
workloads are valid trace-event JSON (check_trace_format.py), with burst
dispatch off and on; a sweep's experiments are on the counter track as in
profile.coz; the checker rejects broken documents; coact-trace
summary reads a trace (table and --json) and names a bad file in one line
with exit status 2.

Environment (set by tests/trace/CMakeLists.txt): TRTEST_PEERS, TRTEST_DEDUP
(optional), TRTEST_TRACE_TOOL, TRTEST_SOURCE_DIR.
"""

import json
import os
import subprocess
import tempfile
import unittest

import check_trace_format as ctf  # beside this file: ctest runs it from here

PEERS = os.environ.get("TRTEST_PEERS", "")
DEDUP = os.environ.get("TRTEST_DEDUP", "")
TOOL = os.environ.get("TRTEST_TRACE_TOOL", "")
SOURCE = os.environ.get("TRTEST_SOURCE_DIR", "")
WORKLOADS = {"ping_pong": 2000, "fan_out": 100, "thread_ring": 5000, "skynet": 1000}


def env_with(**kv):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COACT_")}
    env.update(kv)
    return env


def load(path):
    with open(path) as f:
        return json.load(f)


class Traces(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="coact-trace-test-")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def assert_valid(self, path, what):
        doc = load(path)
        errs = ctf.check(doc)
        self.assertEqual(errs, [], f"{what}: {errs[:5]}")
        od = doc["otherData"]
        self.assertGreater(od["flows"], 0, what)
        handlers = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "handler"]
        self.assertGreater(len(handlers), 0, what)
        # Every handler slice of a traced mail is named like a causal region.
        for e in handlers[:1000]:
            self.assertIn("::on(", e["name"], what)
        return doc

    @unittest.skipUnless(PEERS, "coact-peers not built")
    def test_peer_workloads_burst_off_and_on(self):
        for burst in ("off", "on"):
            for w, n in WORKLOADS.items():
                out = os.path.join(self.dir, f"{w}-{burst}.json")
                r = subprocess.run([PEERS, "--workload", w, "--n", str(n), "--workers", "2"],
                                   env=env_with(COACT_TRACE="on", COACT_TRACE_OUTPUT=out, COACT_BURST=burst),
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(r.returncode, 0, f"{w} burst {burst}: {r.stderr}")
                doc = self.assert_valid(out, f"{w} burst {burst}")
                self.assertEqual(doc["otherData"]["burst"], burst == "on")
                self.assertEqual(doc["otherData"]["dropped"], 0, f"{w} burst {burst}")

    @unittest.skipUnless(PEERS, "coact-peers not built")
    def test_unwritable_output_is_a_boot_error_and_dropped_events_are_said(self):
        # A trace path that cannot be written: one line at boot, exit 2, nothing run.
        bad = os.path.join(self.dir, "no-such-dir", "t.json")
        r = subprocess.run([PEERS, "--workload", "ping_pong", "--n", "1000", "--workers", "2"],
                           env=env_with(COACT_TRACE="on", COACT_TRACE_OUTPUT=bad),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"COACT_TRACE_OUTPUT={bad}: cannot write", r.stderr)
        self.assertEqual(r.stdout, "", "the workload must not run")
        # The smallest ring on a run that sends far more: the file says how many were
        # dropped, and so does stderr, with the knobs to turn.
        out = os.path.join(self.dir, "small.json")
        r = subprocess.run([PEERS, "--workload", "ping_pong", "--n", "20000", "--workers", "2"],
                           env=env_with(COACT_TRACE="on", COACT_TRACE_OUTPUT=out, COACT_TRACE_BUFFER="1024"),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        dropped = load(out)["otherData"]["dropped"]
        self.assertGreater(dropped, 0)
        self.assertIn(f"coact: trace: {dropped} events were dropped", r.stderr)
        self.assertIn("COACT_TRACE_BUFFER", r.stderr)

    @unittest.skipUnless(DEDUP and SOURCE, "coact-dedup not built")
    def test_archiver(self):
        for burst in ("off", "on"):
            out = os.path.join(self.dir, f"dedup-{burst}.json")
            archive = os.path.join(self.dir, f"a-{burst}.cdar")
            r = subprocess.run([DEDUP, "archive", os.path.join(SOURCE, "runtime"), "-o", archive, "--passes", "1",
                                "--workers", "2", "-q"],
                               env=env_with(COACT_TRACE="on", COACT_TRACE_OUTPUT=out, COACT_BURST=burst),
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assert_valid(out, f"archiver burst {burst}")

    @unittest.skipUnless(PEERS, "coact-peers not built")
    def test_causal_experiments_counter_track(self):
        """A sweep with tracing on: the counter track "causal experiment"
        (speedup_pct) and its instants (region name) follow the experiments of
        profile.coz, in order. The trace may show more selections than the
        profile has experiments (an experiment in which no progress point
        moved, or one cut by the end of the run, is not written), never fewer
        or different ones."""
        out = os.path.join(self.dir, "sweep.json")
        coz = os.path.join(self.dir, "profile.coz")
        r = subprocess.run([PEERS, "--workload", "ping_pong", "--n", "300000", "--workers", "2"],
                           env=env_with(COACT_TRACE="0.01", COACT_TRACE_OUTPUT=out, COACT_CAUSAL="1",
                                        COACT_CAUSAL_PROGRESS_HANDLER="pong_msg", COACT_CAUSAL_OUTPUT=coz,
                                        COACT_CAUSAL_EXPERIMENT_MS="20", COACT_CAUSAL_COOLDOWN_MS="5",
                                        COACT_CAUSAL_EXPERIMENTS="6", COACT_CAUSAL_SEED="7"),
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        written = []
        with open(coz) as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if fields[0] != "experiment":
                    continue
                kv = dict(x.split("=", 1) for x in fields[1:])
                written.append((kv["selected"], round(float(kv["speedup"]) * 100)))
        self.assertGreaterEqual(len(written), 2, "the sweep wrote too few experiments to compare")
        doc = self.assert_valid(out, "ping_pong under a sweep")
        self.assertEqual(doc["otherData"]["dropped"], 0)
        causal = sorted((e for e in doc["traceEvents"] if e.get("cat") == "causal"), key=lambda e: e["ts"])
        counters = [e for e in causal if e["ph"] == "C"]
        instants = [e for e in causal if e["ph"] == "i"]
        self.assertEqual(len(counters), len(instants))
        for c, i in zip(counters, instants):  # one counter sample per selection change, same time and speedup
            self.assertEqual(c["name"], "causal experiment")
            self.assertEqual(c["ts"], i["ts"])
            self.assertEqual(c["args"]["speedup_pct"], i["args"]["speedup_pct"])
            self.assertEqual(c["args"]["region"] == 0, i["name"] == "experiment end")
        shown = [(i["args"]["region"], i["args"]["speedup_pct"]) for i in instants if i["name"] != "experiment end"]
        for i in instants:
            if i["name"] != "experiment end":
                self.assertEqual(i["name"], "experiment: " + i["args"]["region"])
        # profile.coz's experiments are a subsequence of the selections shown.
        at = 0
        for exp in written:
            while at < len(shown) and shown[at] != exp:
                at += 1
            self.assertLess(at, len(shown), f"experiment {exp} of profile.coz is not on the counter track "
                                            f"(in order); track: {shown}; profile: {written}")
            at += 1

    @unittest.skipUnless(PEERS and TOOL, "coact-peers or coact-trace not built")
    def test_summary_table_and_json(self):
        out = os.path.join(self.dir, "pp.json")
        subprocess.run([PEERS, "--workload", "fan_out", "--n", "50", "--workers", "2"],
                       env=env_with(COACT_TRACE="on", COACT_TRACE_OUTPUT=out, COACT_BURST="on"),
                       check=True, capture_output=True, timeout=120)
        r = subprocess.run([TOOL, "summary", out], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("construct", r.stdout)
        self.assertIn("::on(", r.stdout)
        r = subprocess.run([TOOL, "summary", out, "--json"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = json.loads(r.stdout)
        doc = load(out)
        traced = sum(1 for e in doc["traceEvents"]
                     if e.get("ph") == "X" and e.get("cat") == "handler" and "t_sent" in e.get("args", {}))
        self.assertEqual(s["mails"], traced)
        self.assertEqual(sum(k["mails"] for k in s["kinds"]), traced)
        for k in s["kinds"]:
            for span in ("construct_us", "queued_us", "drain_us", "handler_us", "depth"):
                p = k[span]
                self.assertLessEqual(p["p50"], p["p90"])
                self.assertLessEqual(p["p90"], p["p99"])
                self.assertLessEqual(p["p99"], p["max"])
        # fan_out's master sends 64 requests per round in one flush (burst
        # on): recruitment decisions are recorded.
        self.assertGreater(sum(r["decisions"] for r in s["recruit"]), 0)

    @unittest.skipUnless(TOOL, "coact-trace not built")
    def test_summary_bad_input(self):
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            f.write('{"nope": 1}')
        for path, needle in ((bad, "traceEvents"), (os.path.join(self.dir, "missing.json"), "cannot read")):
            r = subprocess.run([TOOL, "summary", path], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2)
            self.assertIn(path, r.stderr)
            self.assertIn(needle, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        r = subprocess.run([TOOL], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)


class Checker(unittest.TestCase):
    def base(self):
        return {"traceEvents": [
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "w"}},
            {"name": "a", "ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
            {"name": "b", "ph": "X", "pid": 1, "tid": 1, "ts": 2, "dur": 3},
            {"name": "c", "ph": "X", "pid": 1, "tid": 2, "ts": 20, "dur": 3},
            {"name": "mail", "cat": "mail", "ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 3},
            {"name": "mail", "cat": "mail", "ph": "f", "bp": "e", "id": 7, "pid": 1, "tid": 2, "ts": 20},
        ]}

    def test_valid(self):
        self.assertEqual(ctf.check(self.base()), [])

    def test_rejects(self):
        cases = {
            "overlaps": {"name": "x", "ph": "X", "pid": 1, "tid": 1, "ts": 5, "dur": 10},
            "unknown ph": {"name": "x", "ph": "Q", "pid": 1, "tid": 1, "ts": 5},
            "dur": {"name": "x", "ph": "X", "pid": 1, "tid": 1, "ts": 50, "dur": -1},
            "no s": {"name": "mail", "cat": "mail", "ph": "f", "bp": "e", "id": 8, "pid": 1, "tid": 2, "ts": 21},
            "ts must": {"name": "x", "ph": "i", "pid": 1, "tid": 1},
            "counter": {"name": "x", "ph": "C", "pid": 1, "ts": 1, "args": {"v": "high"}},
            "out of order": {"name": "T::on(M)", "cat": "handler", "ph": "X", "pid": 1, "tid": 3, "ts": 1, "dur": 1,
                             "args": {"t_construct_start": 0, "t_sent": 5, "t_enqueue": 2, "t_received": 1,
                                      "t_finished": 2, "queued_us": 0, "drain_us": 0}},
        }
        for needle, ev in cases.items():
            doc = self.base()
            doc["traceEvents"].append(ev)
            errs = ctf.check(doc)
            self.assertTrue(any(needle in e for e in errs), f"{needle}: {errs}")
        self.assertTrue(ctf.check({"events": []}))


if __name__ == "__main__":
    unittest.main()
