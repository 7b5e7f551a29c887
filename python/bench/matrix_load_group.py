#!/usr/bin/env python3
"""Benchmark (not a test): what a large matrix costs a group of evaluations submitted at once.

  matrix_load_group.py [--rows 800000] [--nnz-per-row 10] [--seeds 11,12,13] [--revisits 1]
                       [--matrix-cache-entries 1] [--full]

An RL update submits the G completions of a task together. For each seed, 8 reference programs
(SpMV CSR, COO, ELL, SELL, twice each) are evaluated in one Evaluator.evaluate_raw() call on a
generated uniform matrix the evaluator has not seen, and the script prints the group's wall time
and the mean and largest `checks` phase (EvalResult phases_ms: static checks, loading or generating
the matrix, its digest, the ABI constants) - the phase that coalesced matrix loads shorten. Then
(--revisits passes) the same groups again, one seed after another: the evaluator has seen each task,
but with the store holding one matrix (--matrix-cache-entries; the default is 8) each revisit finds
its matrix gone from the store, as RL over more large matrices than the store holds does. Compile
stage only unless --full (a GPU host). Run with the package importable: PYTHONPATH=build/python.
"""

import argparse
import json
import time
from pathlib import Path

from sparserl.evaluator import Evaluator

PROGRAMS = Path(__file__).resolve().parents[2] / "reward" / "programs"


def group(evaluator, uri, programs, label):
    start = time.perf_counter()
    results = evaluator.evaluate_raw(uri, programs)
    wall = time.perf_counter() - start
    checks = [json.loads(r.to_json())["phases_ms"].get("checks", float("nan")) for r in results]
    failed = [r.message for r in results if r.error != "none"]
    print(f"{label}: group wall {wall:.2f} s, checks mean {sum(checks) / len(checks):.1f} ms, "
          f"max {max(checks):.1f} ms" + (f", {len(failed)} failed: {failed[0]}" if failed else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=800_000)
    parser.add_argument("--nnz-per-row", type=int, default=10)
    parser.add_argument("--seeds", default="11,12,13")
    parser.add_argument("--revisits", type=int, default=1, help="passes over the seen groups")
    parser.add_argument("--matrix-cache-entries", type=int, default=1)
    parser.add_argument("--full", action="store_true", help="the whole evaluation (needs a GPU)")
    args = parser.parse_args()
    programs = [(PROGRAMS / f"spmv_{f}.cu").read_text() for f in ("csr", "coo", "ell", "sell")] * 2
    evaluator = Evaluator(compile_only=not args.full, quiet=True,
                          matrix_cache_entries=args.matrix_cache_entries)
    print(f"{len(programs)} evaluations a group, {args.rows} rows x {args.nnz_per_row} nonzeros, "
          f"{'full evaluation' if args.full else 'compile stage'}, "
          f"{args.matrix_cache_entries} matrices in the store")
    seeds = [int(s) for s in args.seeds.split(",")]
    uri = f"gen-v1/uniform?nnz_per_row={args.nnz_per_row}&rows={args.rows}&seed={{}}"
    for seed in seeds:
        group(evaluator, uri.format(seed), programs, f"seed {seed}")
    for n in range(args.revisits):
        for seed in seeds:
            group(evaluator, uri.format(seed), programs, f"revisit {n + 1} seed {seed}")
    stats = evaluator.stats()
    print(f"matrix loads coalesced: {stats['matrix_loads_coalesced']}, "
          f"matrix loads: {stats.get('matrix_loads', 'not counted by this build')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
