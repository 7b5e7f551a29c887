#!/usr/bin/env python3
"""tools/update_phases.py: where an RL run's updates spent their evaluation time.

Reads a training run's trajectories.h5 (episodes/eval_json's `phases_ms`, task_uri,
result_cached; docs/evaluator.md names the phases) and prints one row per update: its programs,
its tasks and how many of them the run had not met before, the programs answered from the result
cache, the GPU worker's own stages summed over the update's programs (`gpu.*`: loading the matrix,
converting and uploading formats, choosing the cuSPARSE path, the checks and timed runs), the
deadline calibrations' waiting (`calibrate`, a new task's first GPU work), the evaluations that
ended in a timeout (a hung kernel: its worker killed and replaced, caches and all) or a worker
crash, the slowest evaluation's wall time (eval_json's `wall_ms`; the evaluator's queue included)
and the three largest stages by name. The phases are per program and summed: programs evaluated
side by side overlap, so a sum is work done, not wall time (metrics.jsonl's perf/evaluation_seconds
is the wall time).
Usage: tools/update_phases.py RUN_DIR|TRAJECTORIES_H5 [--per-update N] [--csv]
  --per-update N: programs per update (default: train.tasks_per_update x train.samples_per_task
  of the run's config.resolved.toml beside the file).
Needs h5py (Debian: python3-h5py; tools/setup.sh installs it).
"""
import argparse
import collections
import json
import sys
import tomllib
from pathlib import Path


def fail(message):
    print(f"update_phases.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def programs_per_update(run_dir):
    """train.tasks_per_update x train.samples_per_task of the run's resolved config (None where
    absent)."""
    config = run_dir / "config.resolved.toml"
    if not config.is_file():
        return None
    try:
        train = tomllib.loads(config.read_text()).get("train", {})
    except tomllib.TOMLDecodeError as e:
        fail(f"{config}: not TOML ({e})")
    tasks, samples = train.get("tasks_per_update"), train.get("samples_per_task")
    return tasks * samples if isinstance(tasks, int) and isinstance(samples, int) else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a training run directory or its trajectories.h5")
    parser.add_argument("--per-update", type=int, default=0)
    parser.add_argument("--csv", action="store_true", help="comma-separated, no table rules")
    args = parser.parse_args()
    path = Path(args.run)
    h5_path = path / "trajectories.h5" if path.is_dir() else path
    if not h5_path.is_file():
        fail(f"{h5_path}: no such file (a training run directory holds trajectories.h5)")
    per = args.per_update or programs_per_update(h5_path.parent)
    if not per or per < 1:
        fail(f"{h5_path.parent / 'config.resolved.toml'}: no train.tasks_per_update / "
             "train.samples_per_task to count programs per update; give --per-update N")
    try:
        import h5py
    except ImportError:
        fail("h5py is missing (Debian: apt-get install python3-h5py)")
    try:
        episodes = h5py.File(h5_path, "r")["episodes"]
        evals = episodes["eval_json"][:]
        uris = episodes["task_uri"][:]
        cached = episodes["result_cached"][:]
    except (OSError, KeyError) as e:
        fail(f"{h5_path}: not a trajectory log with episodes/eval_json, task_uri and "
             f"result_cached ({e})")
    text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
    header = ["update", "programs", "tasks", "new_tasks", "result_cached", "worker_s",
              "calibrate_s", "timeouts", "crashes", "slowest_s", "largest_stages"]
    rows, seen = [], set()
    for start in range(0, len(evals), per):
        stop = min(len(evals), start + per)
        stages, errors = collections.Counter(), collections.Counter()
        slowest = 0.0
        for i in range(start, stop):
            try:
                result = json.loads(text(evals[i]))
            except json.JSONDecodeError as e:
                fail(f"{h5_path}: episode {i}'s eval_json is not JSON ({e})")
            for name, ms in result.get("phases_ms", {}).items():
                stages[name] += float(ms)
            errors[result.get("error", "none")] += 1
            slowest = max(slowest, float(result.get("wall_ms", 0.0)))
        tasks = {text(u) for u in uris[start:stop]}
        new = len(tasks - seen)
        seen |= tasks
        worker = sum(ms for name, ms in stages.items() if name.startswith("gpu."))
        largest = " ".join(f"{name}={ms / 1000:.1f}" for name, ms in stages.most_common(3))
        rows.append([start // per + 1, stop - start, len(tasks), new,
                     int(sum(1 for c in cached[start:stop] if c)), f"{worker / 1000:.1f}",
                     f"{stages.get('calibrate', 0.0) / 1000:.1f}", errors["timeout"], errors["crash"],
                     f"{slowest / 1000:.1f}", largest])
    if args.csv:
        print(",".join(header))
        for row in rows:
            print(",".join(str(v) for v in row))
        return
    print(f"{h5_path}: {len(evals)} programs, {per} an update, {len(rows)} updates, "
          f"{len(seen)} tasks")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
