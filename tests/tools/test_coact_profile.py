"""coact-profile run, end to end (ctest coact_profile_cli).

Needs CPTEST_PROFILE_TOOL (the tool) and CPTEST_SERVER (server_like.cpp) in the
environment; ctest sets both. Each test states the behaviour it pins down.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

TOOL = os.environ.get("CPTEST_PROFILE_TOOL", "")
SERVER = os.environ.get("CPTEST_SERVER", "")


def run(args, timeout=120, **kw):
    return subprocess.run([TOOL] + args, capture_output=True, text=True, timeout=timeout, **kw)


@unittest.skipUnless(TOOL and SERVER, "CPTEST_PROFILE_TOOL and CPTEST_SERVER must be set (ctest does)")
class CoactProfileRun(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="coact-profile-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, name):
        return os.path.join(self.dir, name)

    # ---- outputs are checked before the program starts --------------------------

    def test_missing_output_directory_is_refused_before_launch(self):
        marker = self.path("started")
        r = run(["run", "-o", "/nonexistent/dir/p.coz", "--", "/bin/sh", "-c", f"touch {marker}"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("'/nonexistent/dir' does not exist", r.stderr)
        self.assertFalse(os.path.exists(marker), "the program ran although the output cannot be written")
        self.assertNotIn("kept in", r.stderr)

    def test_output_on_a_file_system_that_refuses_files_is_refused_before_launch(self):
        # As root, access(W_OK) says /sys is writable; creating a file there
        # fails. The program used to start and abort (exit 134) at the writer.
        marker = self.path("started")
        r = run(["run", "-o", "/sys/coact-test.coz", "--", "/bin/sh", "-c", f"touch {marker}"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("-o '/sys/coact-test.coz': cannot create a file in '/sys'", r.stderr)
        self.assertFalse(os.path.exists(marker), "the program ran although the output cannot be written")
        self.assertFalse(os.path.exists("/sys/coact-test.coz"))

    def test_existing_profile_needs_append(self):
        out = self.path("p.coz")
        with open(out, "w") as f:
            f.write("startup\ttime=1\n")
        marker = self.path("started")
        r = run(["run", "-o", out, "--", "/bin/sh", "-c", f"touch {marker}"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--append", r.stderr)
        self.assertFalse(os.path.exists(marker))
        # With --append the run goes ahead and adds a second startup record.
        r = run(["run", "-q", "--append", "-o", out, "--experiment-ms", "100", "--", SERVER, "--progress",
                 "--seconds", "2"])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            self.assertEqual(sum(1 for line in f if line.startswith("startup")), 2)

    # ---- what a finished run reports ---------------------------------------------

    def test_full_run_reports_regions_and_plot_hint_and_writes_valid_jsonl(self):
        out = self.path("p.coz")
        r = run(["run", "-q", "-o", out, "--experiment-ms", "100", "--duration-s", "2", "--", SERVER,
                 "--progress", "--seconds", "4"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("experiments per region:", r.stderr)
        self.assertIn("Worker::on(", r.stderr)
        self.assertIn("plot: ", r.stderr)
        self.assertIn("program speedup = ", r.stderr)
        # Every line of the JSON-lines profile is one JSON object (no blank padding lines).
        with open(self.path("p.jsonl")) as f:
            lines = f.read().split("\n")
        self.assertEqual(lines[-1], "")
        types = [json.loads(line)["type"] for line in lines[:-1]]
        self.assertIn("experiment", types)
        self.assertEqual(types[-1], "summary")

    def test_program_exiting_before_the_duration_is_an_error_with_what_was_kept(self):
        r = run(["run", "-q", "-o", self.path("p.coz"), "--experiment-ms", "100", "--duration-s", "30", "--",
                 SERVER, "--progress", "--seconds", "2"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, r"exited on its own after [0-9.]+ s, [0-9.]+ s before the end of its "
                                   r"--duration-s 30: the sweep is shorter than asked")
        self.assertRegex(r.stderr, r"[0-9]+ experiment\(s\) \([0-9]+ at speedup 0\) in [0-9.]+ s of sweep")
        self.assertIn("experiments per region:", r.stderr)
        self.assertIn("The profile is kept", r.stderr)

    def test_program_failure_status_is_passed_on(self):
        r = run(["run", "-q", "-o", self.path("p.coz"), "--experiment-ms", "100", "--", SERVER, "--progress",
                 "--seconds", "1", "--exit-status", "3"])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("exited with status 3", r.stderr)

    # ---- a server that never reaches progress -------------------------------------

    def watch(self, args, until, limit_s):
        """Starts the tool, collects stderr lines with their arrival time (s since
        start) until a line contains `until` or limit_s passes; then SIGTERMs the
        tool (forwarded to the program). Returns (lines, still_running_at_end, rc)."""
        t0 = time.monotonic()
        p = subprocess.Popen([TOOL] + args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        lines = []
        done = threading.Event()

        def reader():
            for line in p.stderr:
                lines.append((time.monotonic() - t0, line.rstrip("\n")))
                if until in line:
                    done.set()
            done.set()
        th = threading.Thread(target=reader, daemon=True)
        th.start()
        done.wait(limit_s)
        time.sleep(0.5)
        running = p.poll() is None
        p.send_signal(signal.SIGTERM)
        rc = p.wait(30)
        th.join(5)
        p.stderr.close()
        return lines, running, rc

    def first(self, lines, text):
        for t, line in lines:
            if text in line:
                return t
        self.fail(f"no stderr line contains {text!r}:\n" + "\n".join(l for _, l in lines))

    def test_region_filter_matching_nothing_is_reported_early_and_the_sweep_gives_up(self):
        # Defaults: 500 ms windows, so the warning comes after 3 windows (1.5 s)
        # and the sweep stops experimenting after max(5 s, 2 x 8 s) = 16 s.
        lines, running, rc = self.watch(
            ["run", "-q", "-o", self.path("p.coz"), "--region-filter", "NoSuchRegion", "--", SERVER, "--progress",
             "--seconds", "60"],
            until="the sweep has ended with the error above", limit_s=40)
        warned = self.first(lines, "no region matches 'NoSuchRegion'")
        print(f"\nregion filter: warning after {warned:.2f} s")
        self.assertLessEqual(warned, 2.0, "the warning must reach stderr within 2 s")
        stopped = self.first(lines, "the sweep has ended with the error above")
        print(f"region filter: sweep stopped after {stopped:.2f} s")
        self.assertGreaterEqual(stopped, 15.0)
        self.assertLessEqual(stopped, 25.0)
        # A name that matches nothing: the run can record nothing, so the tool ends the program
        # (it would otherwise run its whole length) and exits 2, a usage error.
        self.first(lines, "stopping")
        self.assertFalse(running, "the program is stopped once the sweep ended on a name that matches nothing")
        self.assertEqual(rc, 2, "\n".join(l for _, l in lines))
        # The valid names are listed once, with the early warning, not again with the error.
        self.assertEqual(sum("valid region names" in l for _, l in lines), 1, "\n".join(l for _, l in lines))
        # Each note is printed by the tool alone (the program's own copy is off: COACT_CAUSAL_PRINT_NOTES=0),
        # naming the flag the user typed rather than the environment key behind it.
        notes = [l for _, l in lines if "no region matches 'NoSuchRegion'" in l]
        self.assertTrue(notes)
        for line in notes:
            self.assertTrue(line.startswith("coact-profile: --region-filter: "), line)
        self.assertFalse([l for _, l in lines if l.startswith("coact causal:")], "\n".join(l for _, l in lines))

    def test_misspelt_region_name_gets_did_you_mean(self):
        lines, _, _ = self.watch(
            ["run", "-q", "-o", self.path("p.coz"), "--region-filter", "Wroker::on(", "--", SERVER, "--progress",
             "--seconds", "30"],
            until="did you mean", limit_s=20)
        self.first(lines, "no region matches 'Wroker::on('")
        hint = [l for _, l in lines if "did you mean" in l]
        self.assertEqual(len(hint), 1, "\n".join(l for _, l in lines))
        self.assertIn("Worker::on(", hint[0])

    def test_progress_point_never_reached_is_reported_early_and_the_sweep_gives_up(self):
        # 100 ms windows: warning after 0.3 s, give-up after max(5 s, 2 x 1.6 s) = 5 s.
        lines, running, rc = self.watch(
            ["run", "-q", "-o", self.path("p.coz"), "--experiment-ms", "100", "--", SERVER, "--seconds", "60"],
            until="the sweep has ended with the error above", limit_s=30)
        warned = self.first(lines, "no progress point has been reached")
        print(f"\nno progress: warning after {warned:.2f} s")
        self.assertLessEqual(warned, 2.0)
        stopped = self.first(lines, "the sweep has ended with the error above")
        print(f"no progress: sweep stopped after {stopped:.2f} s")
        self.assertGreaterEqual(stopped, 4.9)
        self.assertLessEqual(stopped, 12.0)
        self.assertTrue(running)
        self.assertNotEqual(rc, 0)

    # ---- sampling knobs and --profile-only --------------------------------------------

    def records(self, name):
        with open(self.path(name)) as f:
            return [json.loads(line) for line in f if line.strip().startswith("{")]

    def test_line_experiment_period_reaches_the_line_sampler(self):
        r = run(["run", "-q", "-o", self.path("p.coz"), "--experiment-ms", "100", "--duration-s", "1", "--sampling",
                 "--line-experiment-period-us", "300", "--", SERVER, "--progress", "--seconds", "2"])
        self.assertEqual(r.returncode, 0, r.stderr)
        recs = self.records("p.jsonl")
        startup = next(x for x in recs if x["type"] == "startup")
        self.assertEqual(startup["options"]["line_experiment_period_us"], 300)
        sampler = next(x for x in recs if x["type"] == "sampler")
        # What the drainer and the begin-experiment hook use, not just what was parsed.
        self.assertEqual(sampler["experiment_period_ns"], 300000)
        self.assertEqual(sampler["samples"], sampler["samples_cpu_timer"] + sampler["samples_perf_event"])

    def test_line_experiment_period_bad_values_are_one_line_and_exit_2(self):
        marker = self.path("started")
        for bad in ("5", "abc", "-1", "1000001", "1e3", ""):
            r = run(["run", "--sampling", "--line-experiment-period-us", bad, "--", "/bin/sh", "-c",
                     f"touch {marker}"])
            self.assertEqual(r.returncode, 2, (bad, r.stderr))
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, (bad, r.stderr))
            self.assertIn("--line-experiment-period-us", r.stderr)
            self.assertFalse(os.path.exists(marker), bad)

    def test_sample_signal_reaches_the_sampler_and_bad_values_exit_2(self):
        # The default: a real-time signal, named in the sampler record. The
        # base mode's CPU-clock timer is checked at the kernel's tick, and the
        # server works ~10 % of one CPU: 2 s of sweep expect dozens of samples
        # even on a loaded machine.
        r = run(["run", "-q", "-o", self.path("p.coz"), "--experiment-ms", "100", "--duration-s", "2", "--sampling",
                 "--", SERVER, "--progress", "--seconds", "3"])
        self.assertEqual(r.returncode, 0, r.stderr)
        recs = self.records("p.jsonl")
        self.assertEqual(next(x for x in recs if x["type"] == "startup")["options"]["sample_signal"], "rt")
        sampler = next(x for x in recs if x["type"] == "sampler")
        self.assertTrue(sampler["signal"].startswith("SIGRTMIN+"), sampler["signal"])
        self.assertFalse(sampler["foreign_handler"])
        self.assertFalse(sampler["handler_replaced"])
        self.assertGreater(sampler["samples"], 0, sampler)
        # --sample-signal prof: SIGPROF, as Coz.
        r = run(["run", "-q", "-o", self.path("q.coz"), "--experiment-ms", "100", "--duration-s", "1", "--sampling",
                 "--sample-signal", "prof", "--", SERVER, "--progress", "--seconds", "2"])
        self.assertEqual(r.returncode, 0, r.stderr)
        recs = self.records("q.jsonl")
        self.assertEqual(next(x for x in recs if x["type"] == "startup")["options"]["sample_signal"], "prof")
        self.assertEqual(next(x for x in recs if x["type"] == "sampler")["signal"], "SIGPROF")
        marker = self.path("started")
        for bad in ("usr1", "rtmin+", "rtmin+99", "SIGPROF", ""):
            r = run(["run", "--sampling", "--sample-signal", bad, "--", "/bin/sh", "-c", f"touch {marker}"])
            self.assertEqual(r.returncode, 2, (bad, r.stderr))
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, (bad, r.stderr))
            self.assertIn("--sample-signal", r.stderr)
            self.assertFalse(os.path.exists(marker), bad)

    def test_profile_only_records_where_the_time_goes_without_experiments(self):
        r = run(["run", "-o", self.path("p.coz"), "--profile-only", "--sampling", "--", SERVER, "--progress",
                 "--seconds", "2"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("profile only (no experiments)", r.stderr)
        self.assertIn("Worker::on(", r.stderr)
        recs = self.records("p.jsonl")
        types = [x["type"] for x in recs]
        self.assertNotIn("experiment", types)
        self.assertNotIn("error", types)
        self.assertEqual(types[-1], "summary")
        self.assertTrue(next(x for x in recs if x["type"] == "startup")["options"]["profile_only"])
        profile = next(x for x in recs if x["type"] == "profile")
        handlers = [x for x in profile["regions"] if x["kind"] == "handler"]
        self.assertTrue(handlers, profile)
        self.assertTrue(all(x["visits"] > 0 for x in profile["regions"]))
        times = [x["time_ns"] for x in profile["regions"]]
        self.assertEqual(times, sorted(times, reverse=True))
        sampler = next(x for x in recs if x["type"] == "sampler")
        self.assertGreater(sampler["samples"], 0)
        self.assertEqual(sampler["samples_perf_event"], 0)  # no line experiment: the POSIX timer only
        with open(self.path("p.coz")) as f:
            coz = f.read()
        self.assertIn("samples\tlocation=", coz)
        self.assertNotIn("experiment\t", coz)
        # It excludes what only experiments use.
        r = run(["run", "--profile-only", "--fixed-speedup", "0", "--", "true"])
        self.assertEqual(r.returncode, 2, r.stderr)

    # ---- --trace and --trace-window -----------------------------------------------

    def test_trace_window_records_only_mails_inside_it(self):
        """--trace-window 0.6+0.4: the trace holds only mail sent in [0.6 s,
        1.0 s] after the runtime booted (times in the file are since boot), and
        the file is written when the window closes."""
        out, trace = self.path("p.coz"), self.path("t.json")
        r = run(["run", "-q", "-o", out, "--experiment-ms", "100", "--duration-s", "2", "--trace", trace,
                 "--trace-window", "0.6+0.4", "--", SERVER, "--progress", "--seconds", "2.5"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("trace (window 0.6+0.4 s) in " + trace, r.stderr)
        with open(trace) as f:
            doc = json.load(f)
        mails = [e for e in doc["traceEvents"]
                 if e.get("ph") == "X" and e.get("cat") == "handler" and "t_sent" in e.get("args", {})]
        self.assertGreater(len(mails), 0)
        for e in mails:
            a = e["args"]
            self.assertGreaterEqual(a["t_sent"], 600000.0, e)
            # The window closes at 1.0 s; a worker that read its gate just
            # before may still enter that handler (preemption on a loaded
            # machine: 100 ms of slack; the run goes on to 2.5 s).
            self.assertLessEqual(a["t_sent"], 1100000.0, e)
            self.assertLessEqual(a["t_received"], 1100000.0, e)

    def test_trace_window_bad_values_are_one_line_and_exit_2(self):
        marker = self.path("started")
        for bad in ("5", "a+1", "1+0", "-1+2", "1+", "+1", "1+1e3", "1+2+3", "700000+1"):
            r = run(["run", "--trace", self.path("t.json"), "--trace-window", bad, "--", "/bin/sh", "-c",
                     f"touch {marker}"])
            self.assertEqual(r.returncode, 2, (bad, r.stderr))
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, (bad, r.stderr))
            self.assertIn(f"--trace-window '{bad}'", r.stderr)
            self.assertIn("START+DURATION", r.stderr)
            self.assertFalse(os.path.exists(marker), bad)
        r = run(["run", "--trace-window", "1+1", "--", "/bin/sh", "-c", f"touch {marker}"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--trace", r.stderr)
        r = run(["run", "--trace", "/nonexistent/dir/t.json", "--", "/bin/sh", "-c", f"touch {marker}"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("'/nonexistent/dir' does not exist", r.stderr)
        self.assertFalse(os.path.exists(marker))

    # ---- usage errors name the fix --------------------------------------------------

    def test_stop_program_ends_a_program_that_runs_on_once_the_sweep_is_over(self):
        t0 = time.monotonic()
        r = run(["run", "-q", "-o", self.path("p.coz"), "--experiment-ms", "100", "--duration-s", "2",
                 "--stop-program", "--", SERVER, "--progress", "--seconds", "60"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertLess(time.monotonic() - t0, 30, "the program was not stopped after the sweep")
        with open(self.path("p.jsonl")) as f:
            recs = [json.loads(line) for line in f]
        self.assertEqual(recs[-1]["type"], "summary")
        self.assertEqual(recs[-1]["reason"], "duration")
        self.assertIn("estimates", {x["type"] for x in recs})
        self.assertIn("the sweep's ranking", r.stderr)

    def test_status_line_never_runs_into_the_programs_output(self):
        # On a terminal the tool redraws a status line; the program's own
        # lines must each start on a clean line (after the status line was
        # erased with \r ESC[K), never after status text.
        import pty
        master, slave = pty.openpty()
        script = ("(for i in 1 2 3 4 5 6 7 8; do echo program-line-$i; sleep 0.4; done) & "
                  f"exec {SERVER} --progress --seconds 4")
        proc = subprocess.Popen([TOOL, "run", "-o", self.path("p.coz"), "--experiment-ms", "100",
                                 "--duration-s", "3", "--", "/bin/sh", "-c", script],
                                stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        self.assertEqual(proc.wait(timeout=60), 0, out.decode(errors="replace"))
        os.close(master)
        text = out.decode(errors="replace")
        self.assertIn("[coact-profile]", text)   # the status line was drawn
        for i in range(1, 9):
            at = text.find(f"program-line-{i}")
            self.assertGreaterEqual(at, 0, f"program-line-{i} missing")
            before = text[max(0, at - 3):at]
            self.assertTrue(at == 0 or before.endswith("\n") or before.endswith("\x1b[K"),
                            f"program-line-{i} follows {text[max(0, at - 40):at]!r}")

    def test_sampling_without_line_regions_is_said_on_stderr(self):
        # Regression: --sampling that found no line (a Release build, or a
        # --source-scope matching nothing) exited 0 and said nothing.
        r = run(["run", "-q", "-o", self.path("p.coz"), "--experiment-ms", "100", "--duration-s", "2",
                 "--sampling", "--source-scope", "%no-such-source-file%", "--", SERVER, "--progress",
                 "--seconds", "4"])
        self.assertIn("--sampling found no source line to make a region of", r.stderr)
        self.assertIn("RelWithDebInfo", r.stderr)

    def test_version(self):
        r = run(["--version"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout.strip(), r"^coact-profile [0-9]+\.[0-9]+\.[0-9]+$")

    def test_usage_errors_name_the_fix(self):
        r = run(["run", "--duration", "5", "--", "true"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("did you mean --duration-s?", r.stderr)
        # The program without `--`: the corrected line keeps the options typed
        # before it and the program's own options after it.
        r = run(["run", "-o", "x.coz", "--duration-s", "3", "./prog", "a", "--flag", "b"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("coact-profile run -o x.coz --duration-s 3 -- ./prog a --flag b", r.stderr)
        # With `--` given, a typo's value is not mistaken for the program.
        r = run(["run", "--durration-s", "3", "--", "./prog"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("did you mean --duration-s?", r.stderr)
        r = run(["rn"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("did you mean run?", r.stderr)
        r = run(["validate", "--sweep", "3"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("did you mean --sweep-s?", r.stderr)
        for args in (["--help"], ["run", "--help"], ["validate", "--help"]):
            r = run(args)
            self.assertEqual(r.returncode, 0, args)
            self.assertIn("Usage", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
