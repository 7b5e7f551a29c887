"""The evaluator as a batch reward function for LM trainers. An Evaluator starts the sandboxed
worker pool once (compile workers running NVRTC, GPU workers running, checking and timing against
cuSPARSE) and then scores batches: evaluate() gives every EvalResult field as a dict, rewards() the
hierarchical reward of each, and the *_completions variants first extract the program from an LM's
completion (sparserl.text.extract_program). Every program of a batch is submitted before any is
waited for, so the pool works on all of them at once; the GIL is released while it does. Without a
GPU (or with compile_only=True) the evaluation stops after the compile stage and the reward is the
compile stage alone, as in the C++ trainer."""

import json

from . import _core, _paths
from .datasets import task as _task
from .text import extract_program


def _as_list(value, n, what):
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{what}: {len(value)} given for {n} programs")
        return list(value)
    return [value] * n


class Evaluator:
    """Evaluates programs on tasks with the project's evaluator.

    Keyword arguments: compile_only (stop after NVRTC even with a GPU), data_dir and index_dirs
    (where suitesparse-v1 matrices are found; default $SPARSERL_DATA_DIR or ./data, and the shared
    index folders), reward (the [reward] keys: compile_pass, compile_fail, test_pass, test_fail,
    r_eff, r_pen, shape, tier_speedups, tier_values, clip_min, clip_max), protocol (the GPU
    protocol: baseline, check.seed, check.random_inputs, timing.enabled, timing.warmup,
    timing.repetitions, timing.flush_l2), sandbox (core_bytes, cpu_seconds, ...), quiet (keep the
    pool's notices off stderr; notices() has them), and any [evaluator] key of docs/config.md:
    compile_workers, gpu_workers, compile_timeout_s, gpu_timeout_s, cache_entries, cache_dir, arch,
    worker, ... A wrong key, type or value is a ValueError or TypeError naming it.
    """

    def __init__(self, *, compile_only=False, data_dir=None, index_dirs=None, reward=None,
                 protocol=None, sandbox=None, quiet=False, **options):
        if "worker" not in options:
            options["worker"] = str(_paths.worker_path())
        if index_dirs is None:
            index_dirs = _paths.default_index_dirs()
        self._core = _core.Evaluator(options, protocol or {}, sandbox or {},
                                     None if data_dir is None else str(data_dir),
                                     [str(d) for d in index_dirs], compile_only, quiet)
        self.reward_function = _core.HierarchicalReward(reward or {})

    # --- programs --------------------------------------------------------------------------------
    def evaluate_raw(self, tasks, programs, *, compile_only=None):
        """The EvalResult objects (stage, error, message, ok, to_json()) of each program."""
        programs = list(programs)
        tasks = [_task(t) for t in _as_list(tasks, len(programs), "tasks")]
        for i, program in enumerate(programs):
            if not isinstance(program, str):
                raise TypeError(f"programs[{i}]: expected the program's text (str), got "
                                f"{type(program).__name__}")
        return self._core.evaluate(tasks, programs, compile_only)

    def evaluate(self, tasks, programs, *, compile_only=None):
        """One dict per program with every EvalResult field (docs/reward.md; nested compile,
        check and timing dicts), plus "reward" (the hierarchical reward) and "reward_breakdown".
        `tasks` is one task for all programs or one per program: a Task, a task's text
        ("suitesparse-v1/HB/west0067 spmv f32") or a matrix URI (SpMV, f32)."""
        return [self._result(r) for r in self.evaluate_raw(tasks, programs,
                                                            compile_only=compile_only)]

    def rewards(self, tasks, programs, *, compile_only=None):
        """The hierarchical reward of each program, as floats."""
        return [self.reward_function(r) for r in self.evaluate_raw(tasks, programs,
                                                                   compile_only=compile_only)]

    # --- completions of a language model ---------------------------------------------------------
    def evaluate_completions(self, tasks, completions, *, compile_only=None):
        """evaluate() on the programs extracted from LM completions. Each dict also has
        "extraction": how the program was found ("code_block", "directives") or, when none was,
        the verdict - and then the completion is evaluated as it is, which the parser answers
        bad_program (reward: the compile stage's failure value)."""
        extractions = [extract_program(c) for c in completions]
        programs = [e.program if e.program is not None else e.completion for e in extractions]
        results = self.evaluate(tasks, programs, compile_only=compile_only)
        for result, extraction in zip(results, extractions):
            result["extraction"] = extraction.source if extraction.ok else extraction.verdict
        return results

    def rewards_from_completions(self, tasks, completions, *, compile_only=None):
        """The hierarchical reward of each completion's program (see evaluate_completions)."""
        return [r["reward"] for r in self.evaluate_completions(tasks, completions,
                                                               compile_only=compile_only)]

    def _result(self, raw):
        result = json.loads(raw.to_json())
        breakdown = self.reward_function.breakdown(raw)
        result["reward"] = breakdown["total"]
        result["reward_breakdown"] = breakdown
        return result

    # --- the pool --------------------------------------------------------------------------------
    def gpu_available(self):
        """Whether the GPU stages run (a GPU is present and compile_only is off)."""
        return self._core.gpu_available()

    def gpu_info(self):
        return self._core.gpu_info()

    def arch(self):
        return self._core.arch()

    def stats(self):
        return self._core.stats()

    def notices(self):
        """The pool's notices so far (no GPU, worker restarts), one line each."""
        return self._core.notices()

    @property
    def compile_only(self):
        return self._core.compile_only

    @property
    def core(self):
        """The _core.Evaluator an environment shares (sparserl.make(..., evaluator=this))."""
        return self._core

    def close(self):
        """Stops the worker pool once no environment uses it any more; idempotent."""
        self._core.close()

    def __enter__(self):
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        # One pool, however often a config holding it is copied (gymnasium.make copies kwargs).
        return self

    def __exit__(self, *exc):
        self.close()
