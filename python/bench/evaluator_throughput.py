#!/usr/bin/env python3
"""Benchmark (not a test): evaluations per second of the batch reward function from Python, on the
workload of the C++ benchmarks, so that the two figures stand side by side.

  evaluator_throughput.py [--workers 1,2] [--matrices 6] [--full] [--repeat 1]

Compile stage (default): tests/bench/compile_bench.cpp's workload - the ten reference programs of
reward/programs in f32 and f64 on `matrices` generated matrices (distinct prelude constants, so
every job is its own translation unit), compile_only, an untimed warm-up first; "uncached" with the
caches off, "cached" as a second pass over a filled cache. Each pass submits every job in one
Evaluator.evaluate_raw() call (the EvalResult objects) and, separately, one evaluate() call (every
field as a dict plus the reward), timed until the last answer. Run compile_bench with the same
arguments right after it for the C++ figure.

--full (a GPU host): the same jobs through the whole evaluation (compile, run, check, time against
cuSPARSE) with the default protocol and one GPU worker per device; "uncached" with every cache off,
"warm" as a second pass with the caches on (compiles and baselines cached). evaluator_bench
--only throughput gives the C++ evaluator's warm-task figure on its own workload.

Run from anywhere with the package importable: PYTHONPATH=build/python.
"""

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import sparserl

PROGRAMS = Path(__file__).resolve().parents[2] / "reward" / "programs"


def jobs(matrices):
    warmup, timed = [], []
    for op in ("spmv", "spmm"):
        for fmt in ("csr", "coo", "ell", "sell", "bsr"):
            text = (PROGRAMS / f"{op}_{fmt}.cu").read_text()
            for dtype in ("f32", "f64"):
                for m in range(matrices + 1):
                    uri = f"gen-v1/uniform?rows={1000 + 37 * m}&nnz_per_row={4 + m}&seed={m}"
                    task = sparserl.Task(uri, op, dtype, 8 if op == "spmm" else 1)
                    if m == 0 or (op == "spmv" and fmt == "csr" and dtype == "f32"):
                        warmup.append((task, text))
                    if m > 0:
                        timed.append((task, text))
    return warmup, timed


def timed_pass(call, batch):
    tasks, programs = [t for t, _ in batch], [p for _, p in batch]
    start = time.perf_counter()
    results = call(tasks, programs)
    seconds = time.perf_counter() - start
    errors = {r["error"] if isinstance(r, dict) else r.error for r in results}
    if errors != {"none"}:
        raise SystemExit(f"unexpected verdicts {errors}: the benchmark's programs must all pass")
    return len(batch) / seconds


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--matrices", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()
    warmup, batch = jobs(args.matrices)
    mode = "full evaluation" if args.full else "compile_only"
    print(f"evaluator_throughput (Python {platform.python_version()}): {len(batch)} distinct "
          f"programs (10 reference programs x f32/f64 x {args.matrices} matrices), {mode}")
    print(f"machine: {cpu_model()}, {os.cpu_count()} hardware threads; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("workers  uncached evals/s (raw, dicts)  cached evals/s (raw, dicts)")
    for workers in (int(w) for w in args.workers.split(",")):
        for _ in range(args.repeat):
            options = dict(compile_workers=workers, evaluation_threads=max(4, 4 * workers),
                           matrix_cache_entries=args.matrices + 2, quiet=True,
                           compile_only=not args.full)
            if not args.full:
                options["gpu_workers"] = 0
            figures = []
            for cache_entries in (0, 4096):
                with sparserl.Evaluator(cache_entries=cache_entries, **options) as ev:
                    if args.full and not ev.gpu_available():
                        raise SystemExit("--full needs a GPU: " + str(ev.gpu_info()["error"]))
                    timed_pass(ev.evaluate_raw, warmup)
                    if cache_entries:
                        timed_pass(ev.evaluate_raw, batch)  # fills the caches
                    figures.append(timed_pass(ev.evaluate_raw, batch))
                    if cache_entries == 0:
                        with sparserl.Evaluator(cache_entries=0, **options) as fresh:
                            timed_pass(fresh.evaluate_raw, warmup)
                            figures.append(timed_pass(fresh.evaluate, batch))
                    else:
                        figures.append(timed_pass(ev.evaluate, batch))
            print(f"{workers:7d}  {figures[0]:14.1f}, {figures[1]:6.1f}  "
                  f"{figures[2]:15.0f}, {figures[3]:6.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
