#!/usr/bin/env python3
"""Tests of tools/study_answers.py, how far each learned run's greedy answers moved from a reference
run's: on a made-up table (two runs' benches of two parts, the template search beside them), the
count of matrices answered with the reference's program, the distinct programs, and the geometric
mean speedup ratio over the matrices answered differently, a failed answer counting as 1; a missing
reference, a run without an answer for a matrix and a correct answer without a speedup are errors
naming the table or the file and line. Plain unittest: `python3 tests/tools/study_answers_test.py`.
"""

import contextlib
import io
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import study_answers  # noqa: E402

HEADER = "matrix,agent,correct,speedup,program\n"


class StudyAnswersTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.table = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def bench(self, part, name, rows):
        folder = os.path.join(self.table, f"bench-{part}", name, "study-bench__1__20261129T000000Z")
        os.makedirs(folder)
        with open(os.path.join(folder, "results.csv"), "w") as f:
            f.write(HEADER + "".join(f"{m},{a},{c},{s},{p}\n" for m, a, c, s, p in rows))

    def run_tool(self, *args):
        out = io.StringIO()
        argv = sys.argv
        sys.argv = ["study_answers.py", self.table, *args]
        try:
            with contextlib.redirect_stdout(out):
                study_answers.main()
        finally:
            sys.argv = argv
        return out.getvalue()

    def test_counts_and_ratio(self):
        self.bench("val", "agents", [("a", "template", 1, 2.0, "t1"), ("b", "template", 1, 2.0, "t2")])
        self.bench("val", "sft-s1", [("a", "sft-s1", 1, 1.0, "p1"), ("b", "sft-s1", 1, 0.5, "p1"),
                                     ("c", "sft-s1", 1, 0.8, "p2")])
        # grpo-s1: the same program on a, another on b (4x faster) and c (failed: counts as 1).
        self.bench("val", "grpo-s1", [("a", "grpo-s1", 1, 1.1, "p1"), ("b", "grpo-s1", 1, 2.0, "p3"),
                                      ("c", "grpo-s1", 0, "", "p4")])
        out = self.run_tool("--part", "val")
        self.assertIn("val: greedy answers against sft-s1's, 3 matrices", out)
        # ratios 4 and 1 / 0.8 = 1.25: geomean sqrt(5) = 2.236
        self.assertIn("| grpo-s1 | 1 / 3 | 3 | 2.236 over 2 |", out)
        self.assertIn("| sft-s1 | 3 / 3 | 2 | - |", out)
        self.assertNotIn("template", out)
        self.assertNotIn("test:", out)

    def test_reference_option(self):
        self.bench("test", "sft-s1", [("a", "sft-s1", 1, 1.0, "p1")])
        self.bench("test", "sft-s2", [("a", "sft-s2", 1, 0.5, "p2")])
        out = self.run_tool("--part", "test", "--reference", "sft-s2")
        self.assertIn("| sft-s1 | 0 / 1 | 1 | 2.000 over 1 |", out)

    def errors(self, *args):
        with self.assertRaises(SystemExit) as caught, contextlib.redirect_stdout(io.StringIO()):
            self.run_tool(*args)
        return str(caught.exception.code)

    def test_missing_reference(self):
        self.bench("val", "grpo-s1", [("a", "grpo-s1", 1, 1.0, "p1")])
        message = self.errors("--part", "val")
        self.assertIn("no bench of the reference sft-s1", message)
        self.assertIn("grpo-s1", message)

    def test_missing_answer(self):
        self.bench("val", "sft-s1", [("a", "sft-s1", 1, 1.0, "p1"), ("b", "sft-s1", 1, 1.0, "p1")])
        self.bench("val", "ppo-s1", [("a", "ppo-s1", 1, 1.0, "p1")])
        self.assertIn("ppo-s1 has no answer for b", self.errors("--part", "val"))

    def test_correct_answer_without_speedup(self):
        self.bench("val", "sft-s1", [("a", "sft-s1", 1, "", "p1")])
        message = self.errors("--part", "val")
        self.assertIn("results.csv:2:", message)
        self.assertIn("speedup", message)

    def test_no_bench(self):
        self.assertIn("no policy bench of the val part", self.errors("--part", "val"))


if __name__ == "__main__":
    unittest.main()
