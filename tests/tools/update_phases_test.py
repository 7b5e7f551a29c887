#!/usr/bin/env python3
"""Tests of tools/update_phases.py, where an RL run's updates spent their evaluation time: on a
trajectory log written here (two updates of three programs) each update's row - programs, tasks
and new tasks, result-cache answers, the GPU worker's stages and the calibrations summed, the
timeouts and worker crashes counted, the slowest evaluation's wall time, the largest stages - and
a log without the episodes' fields is an error naming the file. Needs h5py (Debian:
python3-h5py); the system python is used where the first python3 lacks it; skipped (77) without.
Plain unittest: `python3 tests/tools/update_phases_test.py`.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import h5py
except ImportError:
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        has = subprocess.run(["/usr/bin/python3", "-c", "import h5py"], capture_output=True)
        if has.returncode == 0:
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("update_phases_test: h5py missing: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "tools", "update_phases.py")


def result(error="none", wall_ms=100.0, **phases):
    return json.dumps({"stage": "time" if error == "none" else "run", "error": error,
                       "wall_ms": wall_ms, "phases_ms": phases})


def write_log(path, evals, uris, cached):
    with h5py.File(path, "w") as f:
        e = f.create_group("episodes")
        e.create_dataset("eval_json", data=[v.encode() for v in evals])
        e.create_dataset("task_uri", data=[u.encode() for u in uris])
        e.create_dataset("result_cached", data=cached)


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class UpdatePhasesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.log = os.path.join(self.dir.name, "trajectories.h5")

    def tearDown(self):
        self.dir.cleanup()

    def test_rows(self):
        evals = [
            result(wall_ms=1500, calibrate=1200, **{"gpu.load": 300, "gpu.timed": 100}),
            result(error="timeout", wall_ms=95000, gpu_request=94000),
            result(wall_ms=200, **{"gpu.timed": 50}),
            result(error="crash", wall_ms=4000, gpu_request=3000),
            result(error="timeout", wall_ms=12000, gpu_request=11000),
            result(wall_ms=300, **{"gpu.timed": 200}),
        ]
        write_log(self.log, evals, ["a", "a", "b", "b", "c", "c"], [0, 0, 1, 1, 0, 0])
        out = run(self.log, "--per-update", "3", "--csv")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(lines[0], "update,programs,tasks,new_tasks,result_cached,worker_s,"
                         "calibrate_s,timeouts,crashes,slowest_s,largest_stages")
        self.assertEqual(lines[1], "1,3,2,2,1,0.5,1.2,1,0,95.0,"
                         "gpu_request=94.0 calibrate=1.2 gpu.load=0.3")
        self.assertEqual(lines[2], "2,3,2,1,1,0.2,0.0,1,1,12.0,"
                         "gpu_request=14.0 gpu.timed=0.2")
        table = run(self.log, "--per-update", "3")
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertIn("| 1 | 3 | 2 | 2 | 1 | 0.5 | 1.2 | 1 | 0 | 95.0 |", table.stdout)

    def test_not_a_trajectory_log(self):
        with h5py.File(self.log, "w") as f:
            f.create_group("other")
        out = run(self.log, "--per-update", "3")
        self.assertEqual(out.returncode, 2)
        self.assertIn(self.log, out.stderr)
        self.assertIn("not a trajectory log", out.stderr)


if __name__ == "__main__":
    unittest.main()
