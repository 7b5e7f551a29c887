"""A reward function in the shape TRL's GRPOTrainer (reward_funcs) and similar trainers call:
f(prompts, completions, **columns) -> list of floats, one per completion. The task of each sample
comes from a dataset column (by default "task": a task's text such as
"suitesparse-v1/HB/west0067 spmv f32", or a matrix URI). Completions may be plain text or TRL's
conversational form (a list of {"role", "content"} messages; the last one is read). Each
completion's program is extracted (sparserl.text.extract_program) and evaluated by one shared
Evaluator; the reward is the hierarchical reward (compile, correctness, speed over cuSPARSE)."""

from .evaluator import Evaluator


def make_reward_function(evaluator=None, *, task_column="task", name="sparserl_reward",
                         log=None, **evaluator_options):
    """The reward function. evaluator: an Evaluator to use (else one is started with
    evaluator_options). log: an optional callable given each batch's result dicts (every
    EvalResult field, the breakdown, the extraction verdict) - for metrics or debugging."""
    evaluator = evaluator if evaluator is not None else Evaluator(**evaluator_options)

    def reward(prompts=None, completions=None, **columns):
        if completions is None:
            raise TypeError(f"{name}: called without completions")
        if task_column not in columns:
            raise KeyError(f"{name}: the dataset has no '{task_column}' column (the task of each "
                           f"sample: 'URI spmv f32' or a matrix URI); columns given: "
                           f"{', '.join(sorted(columns)) or 'none'}")
        tasks = list(columns[task_column])
        results = evaluator.evaluate_completions(tasks, list(completions))
        if log is not None:
            log(results)
        return [r["reward"] for r in results]

    reward.__name__ = name
    reward.evaluator = evaluator
    return reward
