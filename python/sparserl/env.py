"""The environment in Gymnasium's shape over the C++ SparseCudaEnv and VectorEnv.

SparseRLEnv: reset(seed=None, options=None) -> (obs, info); step(action) -> (obs, reward,
terminated, truncated, info); action_space Discrete(V); observation_space a Dict of
  rows, cols          [K] int32    sampled nonzeros, sorted row-major; -1 past `count`
  embedding           [K, D] float32  [PE(row) | PE(col)], zeros for padding
  features            [F] float32  the pattern features and the task (sparserl.feature_names())
  count               Discrete(K + 1)  sampled entries
  tokens              [max_tokens] int32  the actions so far, -1 after them
  remaining_tokens    Discrete(max_tokens + 1)
  action_mask         MultiBinary(V) int8  1 = allowed next (all 0 once the episode ended)
render() returns the program text the tokens so far decode to; close() stops what the env started.
Seeds follow the C++ env (docs/environment.md): reset(seed) reseeds, reset() continues, and the
first reset() without a seed uses the `seed` option (default 0).

Gymnasium lets an agent send any action of its action space. An action the syntax mask forbids
therefore ends the episode (invalid_action="terminate", the default): terminated, the truncation
reward (R_compile's failure value, as a program that cannot compile), info["invalid_action"] and
the mask's reason; such an episode is not evaluated or recorded. invalid_action="raise" keeps the
C++ contract instead: ValueError naming the token. An action outside Discrete(V) is a ValueError and
a non-integer action a TypeError either way.

SparseRLVectorEnv: N environments batched, Gymnasium's vector API (observations stacked, rewards
and flags as arrays, infos as a dict of arrays with "_key" masks), the auto-reset mode declared in
metadata["autoreset_mode"] (next_step, Gymnasium's default, or same_step with final_obs /
final_info). Evaluations of finished episodes run in the evaluator's pool while the other
environments step; send() / recv() expose EnvPool's asynchronous mode.

When the gymnasium package is importable the classes subclass gymnasium.Env / gymnasium.vector.
VectorEnv, use gymnasium.spaces, and "sparserl/SparseRL-v0" is registered; otherwise the same
classes run on sparserl._spaces.
"""

import os
import time

import numpy as np

from . import _core, _paths
from . import datasets as _datasets
from .evaluator import Evaluator

try:
    import gymnasium as _gym
    from gymnasium import spaces as _spaces_module
    from gymnasium.vector.utils import batch_space as _batch_space
except ImportError:  # the package works without Gymnasium; see the module docstring
    _gym = None
    from . import _spaces as _spaces_module
    from ._spaces import batch_space as _batch_space

spaces = _spaces_module
GYMNASIUM = _gym is not None
_EnvBase = _gym.Env if GYMNASIUM else object
_VectorEnvBase = _gym.vector.VectorEnv if GYMNASIUM else object
ENV_ID = "sparserl/SparseRL-v0"

_INT32_MAX = 2**31 - 1
_MAKE_KEYS = ("split", "part", "op", "dtype", "k", "matrix", "uris", "order")


def _tasks(split=None, part="train", op="spmv", dtype="f32", k=1, matrix=None, uris=None,
           order=None):
    """The TaskSource of make()'s arguments: a split's part, one matrix, or a list of URIs."""
    given = [name for name, value in (("split", split), ("matrix", matrix), ("uris", uris))
             if value is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of split=, matrix= or uris= (got "
                         + (", ".join(given) or "none") + ")")
    if split is not None:
        if part not in _datasets.PARTS:
            raise ValueError(f"unknown part '{part}' (expected one of: "
                             f"{', '.join(_datasets.PARTS)})")
        return _core.TaskSource.from_split(str(_datasets.split_file(split)), part, op, dtype, k,
                                           order or "shuffled")
    if matrix is not None:
        uris = [matrix]
    if isinstance(uris, (str, os.PathLike)):
        uris = [uris]
    return _core.TaskSource.from_uris([_datasets.canonical_uri(u) for u in uris], op, dtype, k,
                                      order or "sequential")


def _observation_space(s):
    k, d, f, t, v = (s["nnz_samples"], s["embedding_dim"], s["feature_dim"], s["max_tokens"],
                     s["actions"])
    return spaces.Dict({
        "rows": spaces.Box(-1, _INT32_MAX, (k,), np.int32),
        "cols": spaces.Box(-1, _INT32_MAX, (k,), np.int32),
        "embedding": spaces.Box(-1.0, 1.0, (k, d), np.float32),
        # log1p of counts (at most log1p(2^62) ~ 43), density's log10 / 12 (>= -1), shares.
        "features": spaces.Box(-1.0, 64.0, (f,), np.float32),
        "count": spaces.Discrete(k + 1),
        "tokens": spaces.Box(-1, v - 1, (t,), np.int32),
        "remaining_tokens": spaces.Discrete(t + 1),
        "action_mask": spaces.MultiBinary(v),
    })


def _action(action, vocab):
    """An action as a Python int; TypeError for anything that is not an integer."""
    if isinstance(action, np.ndarray) and action.shape == () or isinstance(action, np.generic):
        if np.issubdtype(np.asarray(action).dtype, np.integer):
            return int(action)
    elif isinstance(action, int) and not isinstance(action, bool):
        return action
    raise TypeError(f"action must be an integer token id in [0, {vocab}), got "
                    f"{type(action).__name__} {action!r}")


class _Resources:
    """The evaluator, store and recorder an environment uses, and which of them it must close."""

    def __init__(self, evaluator, compile_only, data_dir, index_dirs, record, run_id, quiet,
                 evaluator_options):
        self.own_evaluator = evaluator is None
        if evaluator is None:
            evaluator = Evaluator(compile_only=compile_only, data_dir=data_dir,
                                  index_dirs=index_dirs, quiet=quiet, **(evaluator_options or {}))
        elif evaluator_options:
            raise ValueError("evaluator_options are for the env's own evaluator: not with evaluator=")
        self.evaluator = evaluator
        self.store = _datasets.store(data_dir, index_dirs)
        self.writer = None
        if record is not None:
            run_id = run_id or f"python-{os.getpid()}-{int(time.time())}"
            self.writer = _core.TrajectoryWriter(str(record), run_id, "", "sparserl (Python)")

    def close(self):
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.own_evaluator and self.evaluator is not None:
            self.evaluator.close()
        self.evaluator = None


def _evaluator_core(evaluator):
    return evaluator.core if isinstance(evaluator, Evaluator) else evaluator


class SparseRLEnv(_EnvBase):
    """One environment: an agent writes a CUDA kernel for a sparse matrix, token by token.

    make()'s arguments choose the tasks (split= and part=, or matrix=, or uris=; op, dtype, k,
    order). Keyword arguments: seed (the first unseeded reset's, default 0); evaluator (an
    Evaluator to share; otherwise the env starts its own with compile_only=, data_dir=,
    index_dirs=, quiet= and evaluator_options={...}: Evaluator's other keywords);
    reward (a dict of [reward] keys); render_mode (None or "ansi"); invalid_action ("terminate" or
    "raise"); record (an HDF5 path: every finished episode is appended, docs/trajectories.md) with
    policy_id and run_id; and the env's own keys - max_tokens, mask ("syntax" or "none"),
    nnz_samples, embedding_dim, index_scaling, index_scale, stratification, truncation_reward.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, split=None, part="train", op="spmv", dtype="f32", k=1, *, matrix=None,
                 uris=None, order=None, seed=0, evaluator=None, compile_only=False,
                 data_dir=None, index_dirs=None, reward=None, render_mode=None,
                 invalid_action="terminate", record=None, policy_id="python", run_id=None,
                 quiet=False, evaluator_options=None, **env_options):
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode: expected None or 'ansi', got {render_mode!r}")
        if invalid_action not in ("terminate", "raise"):
            raise ValueError(f"invalid_action: expected 'terminate' or 'raise', got "
                             f"{invalid_action!r}")
        tasks = _tasks(split, part, op, dtype, k, matrix, uris, order)
        self._resources = _Resources(evaluator, compile_only, data_dir, index_dirs, record,
                                     run_id, quiet, evaluator_options)
        try:
            self._core = _core.EnvCore(tasks, self._resources.store,
                                       _evaluator_core(self._resources.evaluator), env_options,
                                       reward or {}, seed, 0)
        except BaseException:
            self._resources.close()
            raise
        if self._resources.writer is not None:
            self._core.record(self._resources.writer, policy_id)
        self.render_mode = render_mode
        self.invalid_action = invalid_action
        self.tokenizer = _core.Tokenizer()
        self._spaces = self._core.spaces()
        self.action_space = spaces.Discrete(self._spaces["actions"])
        self.observation_space = _observation_space(self._spaces)
        self._obs = None
        self._ended = True

    # --- Gymnasium's API -------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        if GYMNASIUM:
            super().reset(seed=seed)
        options = dict(options or {})
        task = options.pop("task", None)
        if options:
            raise ValueError(f"unknown reset option(s): {', '.join(map(str, options))} (known: task)")
        if seed is not None and (not isinstance(seed, (int, np.integer)) or seed < 0):
            raise TypeError(f"seed must be a non-negative integer or None, got {seed!r}")
        obs, info = self._core.reset(None if seed is None else int(seed),
                                     None if task is None else _datasets.task(task))
        self._obs, self._ended = obs, False
        return obs, info

    def step(self, action):
        action = _action(action, self._spaces["actions"])
        if self._ended:
            raise RuntimeError("step() without an active episode: call reset() first (after the "
                               "episode ended, too)")
        try:
            obs, reward, terminated, truncated, info = self._core.step(action)
        except ValueError as e:
            if self.invalid_action == "raise" or "outside Discrete" in str(e):
                raise
            return self._end_invalid(action, str(e))
        self._obs, self._ended = obs, terminated or truncated
        return obs, reward, terminated, truncated, info

    def render(self):
        """The program the tokens so far decode to (render_mode "ansi")."""
        return self._core.text() if self._core is not None else ""

    def close(self):
        if getattr(self, "_resources", None) is not None:
            self._core = None
            self._resources.close()
            self._resources = None

    # --- beyond Gymnasium ------------------------------------------------------------------------
    @property
    def evaluator(self):
        return self._resources.evaluator

    def state(self):
        """The episode's identity: task, env seed, episode index and seed, tokens, active."""
        return self._core.state()

    def last_episode(self):
        """The episode that ended with the last step (tokens, source, reward, the EvalResult's
        JSON), or None."""
        return self._core.last_episode()

    def config(self):
        """The resolved env and reward settings."""
        return self._core.config()

    def action_masks(self):
        """The mask of the next action (sb3-contrib's MaskablePPO reads this method)."""
        return self._obs["action_mask"].astype(bool)

    def _end_invalid(self, action, reason):
        obs = dict(self._obs)
        obs["action_mask"] = np.zeros_like(obs["action_mask"])
        self._obs, self._ended = obs, True
        reward = self._core.truncation_reward
        info = {"invalid_action": action, "invalid_action.reason": reason, "reward.total": reward}
        return obs, reward, True, False, info

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


def _add_info(infos, info, i, n):
    """Gymnasium's vector info layout: infos[key] an array over the envs, infos["_key"] a mask."""
    for key, value in info.items():
        if key != "final_obs" and isinstance(value, dict):
            array = _add_info(infos.get(key, {}), value, i, n)
        elif key == "final_obs" or not isinstance(value, (bool, int, float, np.number, np.ndarray)):
            array = infos.get(key, np.full(n, None, dtype=object))
            array[i] = value
        else:
            if key not in infos:
                if isinstance(value, np.ndarray):
                    infos[key] = np.zeros((n, *value.shape), dtype=value.dtype)
                else:
                    infos[key] = np.zeros(n, dtype=type(value))
            array = infos[key]
            array[i] = value
        mask = infos.get(f"_{key}", np.zeros(n, dtype=bool))
        mask[i] = True
        infos[key], infos[f"_{key}"] = array, mask
    return infos


class SparseRLVectorEnv(_VectorEnvBase):
    """num_envs environments batched (the C++ VectorEnv); make()'s arguments and options, plus
    autoreset ("next_step" or "same_step") and batch_size (for recv(): results returned at once;
    0 = num_envs). Environment i is reset with seed + i; sequential task lists are sharded."""

    metadata = {"render_modes": ["ansi"], "autoreset_mode": "next_step"}

    def __init__(self, num_envs=1, split=None, part="train", op="spmv", dtype="f32", k=1, *,
                 matrix=None, uris=None, order=None, seed=0, autoreset="next_step", batch_size=0,
                 evaluator=None, compile_only=False, data_dir=None, index_dirs=None, reward=None,
                 render_mode=None, record=None, policy_id="python", run_id=None, quiet=False,
                 evaluator_options=None, **env_options):
        tasks = _tasks(split, part, op, dtype, k, matrix, uris, order)
        self._resources = _Resources(evaluator, compile_only, data_dir, index_dirs, record,
                                     run_id, quiet, evaluator_options)
        try:
            self._core = _core.VectorEnvCore(tasks, self._resources.store,
                                             _evaluator_core(self._resources.evaluator),
                                             env_options, reward or {}, seed, num_envs, autoreset,
                                             batch_size)
        except BaseException:
            self._resources.close()
            raise
        if self._resources.writer is not None:
            self._core.record(self._resources.writer, policy_id)
        self.num_envs = num_envs
        self.render_mode = render_mode
        self.autoreset = autoreset
        mode = autoreset
        if GYMNASIUM and hasattr(_gym.vector, "AutoresetMode"):
            mode = {"next_step": _gym.vector.AutoresetMode.NEXT_STEP,
                    "same_step": _gym.vector.AutoresetMode.SAME_STEP}[autoreset]
        self.metadata = dict(self.metadata, autoreset_mode=mode)
        self._spaces = self._core.spaces()
        self.single_action_space = spaces.Discrete(self._spaces["actions"])
        self.single_observation_space = _observation_space(self._spaces)
        self.action_space = _batch_space(self.single_action_space, num_envs)
        self.observation_space = _batch_space(self.single_observation_space, num_envs)
        self._masks = None
        self._needs_reset = np.zeros(num_envs, dtype=bool)
        self.closed = False

    def reset(self, *, seed=None, options=None):
        if options:
            raise ValueError(f"unknown reset option(s): {', '.join(map(str, options))}")
        if isinstance(seed, (list, tuple)):
            if any(s != seed[0] + i for i, s in enumerate(seed)):
                raise ValueError("seed: environment i is seeded with seed + i; give one integer")
            seed = seed[0]
        if GYMNASIUM and seed is not None:
            from gymnasium.utils import seeding

            self._np_random, self._np_random_seed = seeding.np_random(seed)
        out = self._core.reset(None if seed is None else int(seed))
        self._masks = out["observations"]["action_mask"]
        self._needs_reset[:] = False
        return out["observations"], self._infos(out)

    def step(self, actions):
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or not np.issubdtype(actions.dtype, np.integer):
            raise TypeError(f"actions must be {self.num_envs} integer token ids, got "
                            f"{actions.dtype} array of shape {actions.shape}")
        for i, a in enumerate(actions):
            if self._needs_reset[i] or not 0 <= a < self._spaces["actions"]:
                continue  # next_step: ignored (the env resets); out of range: the core says so
            if not self._masks[i, a]:
                raise ValueError(f"action {a} of environment {i} "
                                 f"({self.render_token(a)}) is not allowed by the syntax mask "
                                 "here; nothing was sent")
        out = self._core.step(actions.astype(np.int64).tolist())
        return self._result(out)

    def send(self, actions, env_ids):
        """EnvPool's asynchronous step: one action per listed environment, returning at once."""
        self._core.send([int(a) for a in actions], [int(i) for i in env_ids])

    def recv(self):
        """At least batch_size results: (env_ids, obs, rewards, terminated, truncated, infos)."""
        out = self._core.recv()
        obs, rewards, terminated, truncated, infos = self._result(out, partial=True)
        return out["env_ids"], obs, rewards, terminated, truncated, infos

    def render(self):
        return tuple(self._core.text(i) for i in range(self.num_envs))

    def render_token(self, token):
        return _core.Tokenizer().describe(int(token))

    def stats(self):
        """steps, episodes, evaluations and the most evaluations in flight at once."""
        return self._core.stats()

    def close(self, **kwargs):
        if not getattr(self, "closed", True):
            self._core = None
            self._resources.close()
            self.closed = True

    def _result(self, out, partial=False):
        obs = out["observations"]
        ended = out["terminated"] | out["truncated"]
        if partial:
            for row, i in enumerate(out["env_ids"]):
                self._masks[i] = obs["action_mask"][row]
                self._needs_reset[i] = ended[row] and self.autoreset == "next_step"
        else:
            self._masks = obs["action_mask"]
            self._needs_reset = ended & (self.autoreset == "next_step")
        return obs, out["rewards"], out["terminated"], out["truncated"], self._infos(out)

    def _infos(self, out):
        n = len(out["env_ids"])
        infos = {}
        for row in range(n):
            info = dict(out["infos"][row])
            if out["final_observations"][row] is not None:
                info["final_obs"] = out["final_observations"][row]
                info["final_info"] = out["final_infos"][row]
            _add_info(infos, info, row, n)
        return infos

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def make(split=None, part="train", op="spmv", dtype="f32", k=1, **kwargs):
    """A SparseRLEnv (see its docstring): sparserl.make(split="shared-v1", part="train") or
    sparserl.make(matrix="suitesparse-v1/HB/west0067", op="spmm", k=8)."""
    return SparseRLEnv(split, part, op, dtype, k, **kwargs)


def make_vec(num_envs, split=None, part="train", op="spmv", dtype="f32", k=1, **kwargs):
    """A SparseRLVectorEnv of num_envs environments."""
    return SparseRLVectorEnv(num_envs, split, part, op, dtype, k, **kwargs)


def register_envs():
    """Registers ENV_ID with Gymnasium (done on import when gymnasium is importable):
    gymnasium.make("sparserl/SparseRL-v0", split="shared-v1", ...) and gymnasium.make_vec."""
    if not GYMNASIUM:
        return False
    if ENV_ID not in _gym.registry:
        try:
            _gym.register(id=ENV_ID, entry_point="sparserl.env:SparseRLEnv",
                          vector_entry_point="sparserl.env:SparseRLVectorEnv")
        except TypeError:  # Gymnasium before 1.0 has no vector entry points
            _gym.register(id=ENV_ID, entry_point="sparserl.env:SparseRLEnv")
    return True
