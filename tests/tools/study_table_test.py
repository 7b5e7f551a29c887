#!/usr/bin/env python3
"""Tests of tools/study_table.py, the study's summary table from the val and test compare.csv files:
on made-up tables (three agents, two regimes) the row of each agent in the right order with the
large regime's figures, intervals where they are not points, percentages, the reference's cell and
P(agent > reference) on both parts, and the second table's pass@8, greedy compile rate and
novel share, and the aims' verdicts; a part's missing table, an agent in one part only, a file that
is no compare.csv and two references are errors that name the file or the agent; and the committed
examples folder's tables read. Plain unittest: `python3 tests/tools/study_table_test.py`.
"""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import study_table  # noqa: E402

HEADER = "agent,regime,metric,point,low,high,runs,matrices,versus,paired\n"


def rows(agent, runs, speedup, low, high, pass1, versus=None, p=None, correct=1.0):
    """compare.csv lines of one agent in regimes large (the given figures) and all (others)."""
    out = []
    for regime, scale in (("large", 1.0), ("all", 2.0)):
        figures = {"speedup_iqm": (speedup * scale, low * scale, high * scale),
                   "speedup_geomean": (0.9, 0.9, 0.9), "oracle_fraction_iqm": (0.95, 0.94, 0.96),
                   "pass@1": (pass1, pass1, pass1), "slow_share": (0.05, 0.0, 0.1),
                   "pass@8": (1.0, 1.0, 1.0), "compile_rate": (0.95, 0.95, 0.95),
                   "correct_rate": (correct, correct, correct),
                   "novel_correct_share": (0.025, 0.0, 0.05)}
        for metric, (point, lo, hi) in figures.items():
            out.append(f"{agent},{regime},{metric},{point},{lo},{hi},{runs},20,,\n")
        if versus:
            out.append(f"{agent},{regime},probability_of_improvement,{p},{p - 0.1},{p + 0.1},{runs},20,"
                       f"{versus},no\n")
    return "".join(out)


class StudyTableTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.tables = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, part, text, table="spmv-f32"):
        folder = os.path.join(self.tables, f"{table}-{part}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "compare.csv"), "w") as f:
            f.write(text)

    def standard(self, part, extra=""):
        self.write(part, HEADER + rows("grpo", 3, 1.0, 0.98, 1.02, 0.9, "sft", 0.7)
                   + rows("template", 1, 1.02, 1.02, 1.02, 1.0, "sft", 0.6)
                   + rows("sft", 2, 0.97, 0.95, 0.99, 0.925) + extra)

    def test_rows(self):
        self.standard("val")
        self.standard("test")
        lines = study_table.table(self.tables, "spmv-f32", "large").splitlines()
        self.assertEqual(lines[0].split(" | ")[-1], "P(agent > sft) val / test |")
        self.assertEqual([l.split(" | ")[0][2:] for l in lines[2:]], ["template", "sft", "grpo"])
        self.assertEqual(lines[3], "| sft | 2 | 0.970 [0.950, 0.990] | 0.900 | 0.950 [0.940, 0.960] | "
                         "92.5% | 5.0% [0.0%, 10.0%] | 0.970 [0.950, 0.990] | 0.900 | 0.950 [0.940, 0.960] | "
                         "92.5% | 5.0% [0.0%, 10.0%] | (reference) |")
        self.assertTrue(lines[2].startswith("| template | 1 | 1.020 | 0.900 |"))
        self.assertTrue(lines[4].endswith("| 0.700 [0.600, 0.800] / 0.700 [0.600, 0.800] |"))
        # The second table: pass@8, the greedy compile rate, novelty; no P column.
        outcomes = study_table.outcomes_table(self.tables, "spmv-f32", "large").splitlines()
        self.assertEqual(outcomes[0], "| agent | runs | val pass@8 | val greedy compile | "
                         "val novel correct answers | test pass@8 | test greedy compile | "
                         "test novel correct answers |")
        self.assertEqual([l.split(" | ")[0][2:] for l in outcomes[2:]], ["template", "sft", "grpo"])
        self.assertEqual(outcomes[4], "| grpo | 3 | 100.0% | 95.0% | 2.5% [0.0%, 5.0%] | 100.0% | "
                         "95.0% | 2.5% [0.0%, 5.0%] |")
        # The all regime's figures when asked.
        self.assertIn("| grpo | 3 | 2.000 [1.960, 2.040] |",
                      study_table.table(self.tables, "spmv-f32", "all"))

    def test_aims(self):
        # grpo: P 0.7 [0.6, 0.8], met; ppo: P 0.55 [0.45, 0.65], missed, its answers 90% correct.
        for part in ("val", "test"):
            self.standard(part, rows("ppo", 2, 0.98, 0.96, 1.0, 0.9, "sft", 0.55, correct=0.9))
        lines = study_table.aims(self.tables, "spmv-f32", "large").splitlines()
        self.assertEqual(lines[0], "Aims on the test part (large regime):")
        self.assertEqual(lines[1], "- greedy correctness >= 95% for every learned agent: missed "
                         "(sft 100.0%, grpo 100.0%, ppo 90.0%)")
        self.assertEqual(lines[2], "- the best learned agent >= 0.90 of the oracle (IQM oracle "
                         "fraction): met (sft 0.950)")
        self.assertIn("- grpo ahead of sft beyond its interval", lines[3])
        self.assertTrue(lines[3].endswith(": met (0.700 [0.600, 0.800])"))
        self.assertTrue(lines[4].endswith(": missed (0.550 [0.450, 0.650])"))
        self.assertEqual(len(lines), 5)  # template is no learned agent, sft no RL one

    def test_errors(self):
        self.standard("val")
        with self.assertRaisesRegex(FileNotFoundError, "spmv-f32-test/compare.csv: no such table"):
            study_table.table(self.tables, "spmv-f32", "large")
        self.standard("test", rows("ppo", 1, 0.9, 0.9, 0.9, 0.9, "sft", 0.4))
        with self.assertRaisesRegex(ValueError, "ppo is in the test table but not in the val table"):
            study_table.table(self.tables, "spmv-f32", "large")
        self.standard("test", rows("ppo", 1, 0.9, 0.9, 0.9, 0.9, "grpo", 0.4))
        with self.assertRaisesRegex(ValueError, r"compare.csv:\d+: two references, sft and grpo"):
            study_table.table(self.tables, "spmv-f32", "large")
        self.write("test", "agent,metric\nsft,speedup_iqm\n")
        with self.assertRaisesRegex(ValueError, "not a compare.csv"):
            study_table.table(self.tables, "spmv-f32", "large")
        self.assertEqual(study_table.main([self.tables]), 2)

    def test_committed_examples(self):
        tables = os.path.join(ROOT, "docs", "examples", "study-cut2-h200", "tables")
        text = study_table.table(tables, "spmv-f32", "large")
        self.assertIn("| sft | 2 |", text)
        self.assertIn("(reference)", text)
        self.assertIn("| sft | 2 | 100.0% |", study_table.outcomes_table(tables, "spmv-f32", "large"))


if __name__ == "__main__":
    unittest.main()
