"""SparseRL Gym from Python: the environment in Gymnasium's shape, the sandboxed evaluator as a
batch reward function for LM trainers, and the datasets - over the project's C++ libraries
(the sparserl._core extension). docs/python.md is the guide.

    import sparserl
    env = sparserl.make(split="shared-v1", part="train")          # gymnasium-shaped
    obs, info = env.reset(seed=0)
    ev = sparserl.Evaluator()                                      # workers started once
    ev.rewards("suitesparse-v1/HB/west0067 spmv f32", [program_text])
"""

from . import _core
from . import datasets
from ._core import (EvalResult, HierarchicalReward, MatrixMarketError, MatrixNotFound,
                    SplitError, Task, Tokenizer, TrajectoryError, TrajectoryWriter, check_program,
                    feature_names)
from .datasets import load_matrix, load_scipy, read_split, splits, to_scipy
from .env import (ENV_ID, GYMNASIUM, SparseRLEnv, SparseRLVectorEnv, make, make_vec,
                  register_envs)
from .evaluator import Evaluator
from .text import ExtractedProgram, Prompt, build_prompt, extract_program
from .trl import make_reward_function

__version__ = _core.__version__

register_envs()

__all__ = [
    "ENV_ID", "GYMNASIUM", "EvalResult", "Evaluator", "ExtractedProgram", "HierarchicalReward",
    "MatrixMarketError", "MatrixNotFound", "Prompt", "SparseRLEnv", "SparseRLVectorEnv",
    "SplitError", "Task", "Tokenizer", "TrajectoryError", "TrajectoryWriter", "build_prompt",
    "check_program", "datasets", "extract_program", "feature_names", "load_matrix", "load_scipy",
    "make", "make_reward_function", "make_vec", "read_split", "register_envs", "splits",
    "to_scipy",
]
