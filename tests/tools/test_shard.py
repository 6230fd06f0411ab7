"""coact-profile run --shard K/N and the job engines' index variables
(ctest coact_profile_shard): each shard draws with its own seed, records its
shard and host in its startup, experiment and summary records, and writes a
profile named after it; bad values are one line and exit 2 before the
program starts.

Needs CPTEST_PROFILE_TOOL and CPTEST_SERVER (server_like.cpp); ctest sets both.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

TOOL = os.environ.get("CPTEST_PROFILE_TOOL", "")
SERVER = os.environ.get("CPTEST_SERVER", "")
ENGINE_VARS = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
               "JOB_COMPLETION_INDEX", "JOB_COMPLETION_COUNT")


@unittest.skipUnless(TOOL and SERVER, "CPTEST_PROFILE_TOOL and CPTEST_SERVER must be set (ctest does)")
class Shard(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="coact-shard-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def run_tool(self, args, env=None, program=None):
        e = {k: v for k, v in os.environ.items() if k not in ENGINE_VARS}
        e.update(env or {})
        program = program or [SERVER, "--progress", "--seconds", "3"]
        return subprocess.run([TOOL, "run", "-q", "--experiment-ms", "100", "--duration-s", "1"] + args +
                              ["--"] + program, capture_output=True, text=True, timeout=120, cwd=self.dir, env=e)

    def records(self, name):
        with open(os.path.join(self.dir, name)) as f:
            return [json.loads(x) for x in f if x.startswith("{")]

    def test_bad_shard_values_are_one_line_and_exit_2_before_the_program_runs(self):
        marker = os.path.join(self.dir, "started")
        for value in ("4/4", "x", "1/0", "-1/4", "1/4/2", "1 /4", ""):
            r = self.run_tool(["--shard", value], program=["/bin/sh", "-c", f"touch {marker}"])
            self.assertEqual(r.returncode, 2, (value, r.stderr))
            self.assertIn(f"--shard '{value}': expected K/N with 0 <= K < N", r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertFalse(os.path.exists(marker), f"the program ran with --shard '{value}'")

    def test_bad_engine_variables_are_one_line_and_exit_2(self):
        cases = [({"SLURM_ARRAY_TASK_ID": "2"}, "SLURM_ARRAY_TASK_COUNT unset"),
                 ({"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"}, "SLURM_ARRAY_TASK_ID='x'"),
                 ({"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_COUNT": "4"}, "sbatch --array=0-N"),
                 ({"JOB_COMPLETION_INDEX": "1"}, "JOB_COMPLETION_COUNT is not"),
                 ({"JOB_COMPLETION_INDEX": "5", "JOB_COMPLETION_COUNT": "2"}, "JOB_COMPLETION_INDEX='5'")]
        for env, said in cases:
            r = self.run_tool([], env=env, program=["/bin/true"])
            self.assertEqual(r.returncode, 2, (env, r.stderr))
            self.assertIn(said, r.stderr)

    def test_a_slurm_array_task_is_a_shard_with_its_own_profile_seed_and_host(self):
        # An array submitted as --array=5-7: task 6 is shard 1 of 3.
        env = {"SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_MIN": "5", "SLURM_ARRAY_TASK_COUNT": "3"}
        r = self.run_tool(["--seed", "11"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("this was shard 1 of 3 (0-based, from SLURM_ARRAY_TASK_ID", r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "profile-shard-1-of-3.coz")))
        recs = self.records("profile-shard-1-of-3.jsonl")
        start = [x for x in recs if x["type"] == "startup"][0]
        self.assertEqual((start["shard"], start["shards"]), (1, 3))
        self.assertTrue(start["host"])
        self.assertEqual(os.path.basename(SERVER), start["program"])
        self.assertEqual(start["args"], ["--progress", "--seconds", "3"])
        self.assertNotEqual(start["seed"], 11, "the shard's seed is --seed mixed with the shard")
        self.assertEqual(start["base_seed"], 11)
        exps = [x for x in recs if x["type"] == "experiment"]
        self.assertTrue(exps)
        for rec in exps + [x for x in recs if x["type"] == "summary"]:
            self.assertEqual((rec["shard"], rec["shards"], rec["host"]), (1, 3, start["host"]), rec["type"])

    def test_shards_of_one_seed_draw_differently_and_each_is_reproducible(self):
        seeds = {}
        for shard in ("0/2", "1/2"):
            for attempt in range(2):
                out = f"p{shard[0]}{attempt}.coz"
                r = self.run_tool(["--seed", "11", "--shard", shard, "-o", out])
                self.assertEqual(r.returncode, 0, r.stderr)
                start = [x for x in self.records(out.replace(".coz", ".jsonl")) if x["type"] == "startup"][0]
                seeds.setdefault(shard, set()).add(start["seed"])
        self.assertEqual(len(seeds["0/2"]), 1)
        self.assertEqual(len(seeds["1/2"]), 1)
        self.assertNotEqual(seeds["0/2"], seeds["1/2"])

    def test_shard_flag_wins_over_the_engines_and_kubernetes_index_is_read(self):
        r = self.run_tool(["--shard", "2/5"], env={"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETION_COUNT": "4"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "profile-shard-2-of-5.jsonl")))
        r = self.run_tool([], env={"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETION_COUNT": "4"})
        self.assertEqual(r.returncode, 0, r.stderr)
        start = [x for x in self.records("profile-shard-1-of-4.jsonl") if x["type"] == "startup"][0]
        self.assertEqual((start["shard"], start["shards"]), (1, 4))

    def test_unsharded_records_carry_no_shard(self):
        r = self.run_tool(["-o", "p.coz"])
        self.assertEqual(r.returncode, 0, r.stderr)
        recs = self.records("p.jsonl")
        self.assertTrue(all("shard" not in x for x in recs))
        self.assertTrue([x for x in recs if x["type"] == "startup"][0]["host"])


if __name__ == "__main__":
    unittest.main()
