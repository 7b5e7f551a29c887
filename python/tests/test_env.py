"""The environment in Gymnasium's shape: spaces, seeded resets, whole episodes through step(), the
info of the last step, render(), masked and bad actions, bad options - and Gymnasium's own checker
where gymnasium is installed."""

import numpy as np
import pytest

import sparserl
from conftest import GEN


@pytest.fixture
def env(evaluator):
    e = sparserl.make(matrix=GEN, evaluator=evaluator)
    yield e
    e.close()


def play(env, program):
    """Steps the program's tokens; returns the last step."""
    last = None
    for token in env.tokenizer.encode(program):
        last = env.step(token)
    return last


def test_spaces_and_observations(env):
    obs, info = env.reset(seed=3)
    assert env.action_space.n == env.tokenizer.vocab_size
    assert obs in env.observation_space
    assert obs["embedding"].shape == (128, 64) and obs["embedding"].dtype == np.float32
    assert obs["rows"].dtype == np.int32 and obs["count"] == 128
    assert np.all(obs["tokens"] == -1) and obs["remaining_tokens"] == 4096
    assert obs["action_mask"].dtype == np.int8 and obs["action_mask"].sum() > 0
    assert info["task"] == GEN + " spmv f32" and info["env.seed"] == 3
    assert len(obs["features"]) == len(sparserl.feature_names())


def test_seeded_resets_repeat_and_unseeded_ones_continue(env):
    first, _ = env.reset(seed=7)
    second, info2 = env.reset()
    again, _ = env.reset(seed=7)
    assert np.array_equal(first["rows"], again["rows"])
    assert info2["episode.index"] == 1
    assert not np.array_equal(first["rows"], second["rows"])


def test_an_episode_ends_with_the_compile_stage_reward(env, spmv_csr):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = play(env, spmv_csr)
    assert terminated and not truncated
    assert info["eval.error"] == "none" and info["eval.compiled"] is True
    assert info["eval.gpu_available"] is False or reward > 0.5
    if not info["eval.gpu_available"]:
        assert reward == 0.5 and info["reward.compile_only"] is True
    for key in ("eval.stage", "eval.compile.arch", "eval.check.inputs", "eval.timing.speedup",
                "eval.program_digest", "reward.total", "episode.source", "episode.length"):
        assert key in info, key
    assert obs["action_mask"].sum() == 0
    assert "//@format csr" in env.render()
    assert env.last_episode()["source"] == info["episode.source"]
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


def test_a_masked_action_ends_the_episode_or_raises(evaluator):
    env = sparserl.make(matrix=GEN, evaluator=evaluator)
    obs, _ = env.reset(seed=0)
    forbidden = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    obs, reward, terminated, truncated, info = env.step(forbidden)
    assert terminated and not truncated and reward == -0.5
    assert info["invalid_action"] == forbidden and "mask" in info["invalid_action.reason"]
    assert obs["action_mask"].sum() == 0
    env.close()
    strict = sparserl.make(matrix=GEN, evaluator=evaluator, invalid_action="raise")
    strict.reset(seed=0)
    with pytest.raises(ValueError, match=str(forbidden)):
        strict.step(forbidden)
    strict.close()


def test_bad_actions_raise_naming_the_problem(env):
    env.reset(seed=0)
    with pytest.raises(TypeError, match=r"action must be an integer token id in \[0, 528\), got float 1.5"):
        env.step(1.5)
    with pytest.raises(TypeError, match="got str"):
        env.step("1")
    with pytest.raises(TypeError, match="got bool"):
        env.step(True)
    with pytest.raises(ValueError, match=r"action 9999 is outside Discrete\(528\)"):
        env.step(9999)
    allowed = int(np.flatnonzero(env.action_masks())[0])
    env.step(np.int64(allowed))  # numpy integers are integers


def test_bad_options_raise_naming_the_key(evaluator):
    with pytest.raises(ValueError, match=r"unknown env option 'max_token' \(known: max_tokens"):
        sparserl.make(matrix=GEN, evaluator=evaluator, max_token=10)
    with pytest.raises(ValueError, match="env option max_tokens: value 0 is outside"):
        sparserl.make(matrix=GEN, evaluator=evaluator, max_tokens=0)
    with pytest.raises(TypeError, match="env option 'nnz_samples': expected an integer, got str"):
        sparserl.make(matrix=GEN, evaluator=evaluator, nnz_samples="64")
    with pytest.raises(ValueError, match="embedding_dim: value 6 is not a multiple of 4"):
        sparserl.make(matrix=GEN, evaluator=evaluator, embedding_dim=6)
    with pytest.raises(ValueError, match="unknown reward option 'r_efff'"):
        sparserl.make(matrix=GEN, evaluator=evaluator, reward={"r_efff": 1})
    with pytest.raises(sparserl.SplitError, match="unknown split 'shared-v9'"):
        sparserl.make(split="shared-v9", evaluator=evaluator)
    with pytest.raises(ValueError, match="give exactly one of split=, matrix= or uris="):
        sparserl.make(evaluator=evaluator)
    with pytest.raises(ValueError, match="unknown reset option"):
        sparserl.make(matrix=GEN, evaluator=evaluator).reset(options={"tsk": 1})


def test_an_env_with_its_own_evaluator():
    env = sparserl.make(matrix=GEN, compile_only=True, quiet=True,
                        evaluator_options={"compile_workers": 1})
    assert env.evaluator.compile_only and env.reset(seed=0)[1]["task.uri"] == GEN
    env.close()
    with pytest.raises(ValueError, match="unknown evaluator option 'compile_worker'"):
        sparserl.make(matrix=GEN, quiet=True, evaluator_options={"compile_worker": 1})


def test_options_reach_the_environment(evaluator):
    env = sparserl.make(matrix=GEN, evaluator=evaluator, nnz_samples=16, embedding_dim=8,
                        max_tokens=600, reward={"compile_pass": 1.0}, seed=5)
    obs, info = env.reset()
    assert obs["embedding"].shape == (16, 8) and obs["tokens"].shape == (600,)
    assert info["env.seed"] == 5
    assert env.config()["reward"]["compile_pass"] == 1.0
    env.close()
    env.close()  # twice is allowed


def test_a_split_part_and_a_task_option(evaluator, shared_matrices):
    env = sparserl.make(split="shared-v1", part="val", evaluator=evaluator,
                        index_dirs=[shared_matrices])
    _, info = env.reset(seed=1)
    assert info["task.uri"] in sparserl.datasets.uris("shared-v1", "val")
    _, info = env.reset(options={"task": GEN + " spmm f64 k=8"})
    assert info["task"] == GEN + " spmm f64 k=8"
    env.close()


def test_gymnasium_check_env(evaluator):
    gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed: check_env not run")
    from gymnasium.utils.env_checker import check_env

    env = gym.make(sparserl.ENV_ID, matrix=GEN, evaluator=evaluator, nnz_samples=16,
                   max_tokens=256)
    check_env(env.unwrapped)
    env.close()
