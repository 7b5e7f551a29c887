#!/usr/bin/env python3
"""How far each learned run's greedy answers moved from a reference run's (issue 26's study).

Reads the benches of a study's table (TABLE/bench-PART/NAME/RUN/results.csv, as tools/study.sh and
the committed examples folder lay them out) and prints, per part and per run, on how many matrices
its greedy program is the reference run's program (the results' `program` digest), how many
distinct programs it answers with, and, over the matrices where it answers differently, the
geometric mean of its speedup over the reference's (a failed answer counts as speedup 1, as
`sparserl compare` counts it). The template search and random are left out: their programs are
design points and token walks, never a policy's answer.

Usage: tools/study_answers.py TABLE_DIR [--reference sft-s1] [--part val] [--part test]
"""
import argparse
import csv
import glob
import math
import os
import sys

NOT_POLICIES = ("template", "random")


def speedup(row):
    """The answer's speedup over cuSPARSE's best path, 1 for a failed answer."""
    if row.get("correct") != "1":
        return 1.0
    try:
        value = float(row["speedup"])
    except ValueError:
        value = math.nan
    if not value > 0:
        raise ValueError(f"speedup {row['speedup']!r} of a correct answer on {row['matrix']}")
    return value


def read_part(table_dir, part):
    """{run name: {matrix: (program, speedup)}} of every policy bench of PART."""
    answers = {}
    for path in sorted(glob.glob(os.path.join(table_dir, f"bench-{part}", "*", "*", "results.csv"))):
        with open(path, newline="") as f:
            for line, row in enumerate(csv.DictReader(f), start=2):
                if row["agent"] in NOT_POLICIES:
                    continue
                try:
                    answers.setdefault(row["agent"], {})[row["matrix"]] = (row["program"], speedup(row))
                except (KeyError, ValueError) as e:
                    sys.exit(f"{path}:{line}: {e}")
    return answers


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table_dir", help="the table's folder, e.g. runs/study-cut2/spmv-f32")
    ap.add_argument("--reference", default="sft-s1", help="the run answers are compared with")
    ap.add_argument("--part", action="append", help="val and / or test (default both)")
    args = ap.parse_args()
    if not os.path.isdir(args.table_dir):
        sys.exit(f"{args.table_dir}: no such folder")
    for part in args.part or ["val", "test"]:
        answers = read_part(args.table_dir, part)
        if not answers:
            sys.exit(f"{args.table_dir}: no policy bench of the {part} part (bench-{part}/NAME/RUN/results.csv)")
        if args.reference not in answers:
            sys.exit(f"{args.table_dir}, {part}: no bench of the reference {args.reference} (runs: {', '.join(sorted(answers))})")
        ref = answers[args.reference]
        print(f"{part}: greedy answers against {args.reference}'s, {len(ref)} matrices")
        print("| run | same program | distinct programs | geomean speedup ratio where different |")
        print("|---|---|---|---|")
        for name in sorted(answers):
            mine = answers[name]
            missing = sorted(set(ref) - set(mine))
            if missing:
                sys.exit(f"{args.table_dir}, {part}: {name} has no answer for {missing[0]}")
            different = [m for m in ref if mine[m][0] != ref[m][0]]
            ratio = "-"
            if different:
                log_sum = sum(math.log(mine[m][1] / ref[m][1]) for m in different)
                ratio = f"{math.exp(log_sum / len(different)):.3f} over {len(different)}"
            same = len(ref) - len(different)
            distinct = len({mine[m][0] for m in ref})
            print(f"| {name} | {same} / {len(ref)} | {distinct} | {ratio} |")
        print()


if __name__ == "__main__":
    main()
