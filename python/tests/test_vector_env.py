"""Episodes through the vector env: Gymnasium's batched shapes, both declared auto-reset modes,
infos with their masks, and EnvPool's send / recv."""

import numpy as np
import pytest

import sparserl
from conftest import GEN


def run_program(venv, program):
    """Steps every environment through the program's tokens at once; returns the last step."""
    tokens = venv.tokenizer.encode(program) if hasattr(venv, "tokenizer") else sparserl.Tokenizer().encode(program)
    last = None
    for token in tokens:
        last = venv.step(np.full(venv.num_envs, token))
    return last


def test_next_step_autoreset(evaluator, spmv_csr):
    venv = sparserl.make_vec(2, uris=[GEN, "gen-v1/diagonal?n=64"], evaluator=evaluator)
    assert str(venv.metadata["autoreset_mode"]).lower().replace("_", "") in (
        "nextstep", "autoresetmode.nextstep")
    obs, infos = venv.reset(seed=10)
    assert obs["embedding"].shape == (2, 128, 64) and obs["action_mask"].shape == (2, 528)
    assert list(infos["env.seed"]) == [10, 11] and infos["_env.seed"].all()
    assert obs in venv.observation_space
    obs, rewards, terminated, truncated, infos = run_program(venv, spmv_csr)
    assert terminated.all() and not truncated.any()
    assert rewards.dtype == np.float64 and np.all(rewards >= 0.5)
    assert list(infos["eval.error"]) == ["none", "none"] and infos["_eval.error"].all()
    assert set(infos["task.uri"]) == {GEN, "gen-v1/diagonal?n=64"}
    # next_step: the next action is ignored and the environments reset.
    obs, rewards, terminated, truncated, infos = venv.step(np.zeros(2, dtype=np.int64))
    assert not terminated.any() and np.all(rewards == 0)
    assert np.all(obs["tokens"] == -1) and list(infos["episode.index"]) == [1, 1]
    stats = venv.stats()
    assert stats["episodes"] == 2 and stats["evaluations"] == 2
    venv.close()


def test_same_step_autoreset(evaluator, spmv_csr):
    venv = sparserl.make_vec(2, matrix=GEN, evaluator=evaluator, autoreset="same_step")
    venv.reset(seed=0)
    obs, rewards, terminated, truncated, infos = run_program(venv, spmv_csr)
    assert terminated.all() and np.all(rewards >= 0.5)
    assert np.all(obs["tokens"] == -1)  # already the next episode's first observation
    assert infos["_final_obs"].all() and infos["final_obs"][0]["action_mask"].sum() == 0
    assert list(infos["final_info"]["eval.error"]) == ["none", "none"]
    assert list(infos["episode.index"]) == [1, 1]
    venv.close()


def test_send_and_recv(evaluator, spmv_csr):
    venv = sparserl.make_vec(3, matrix=GEN, evaluator=evaluator, batch_size=1)
    venv.reset(seed=0)
    tokens = sparserl.Tokenizer().encode(spmv_csr)
    position = {i: 0 for i in range(3)}
    finished = set()
    venv.send([tokens[0]] * 3, [0, 1, 2])
    for i in range(3):
        position[i] = 1
    while len(finished) < 3:
        env_ids, obs, rewards, terminated, truncated, infos = venv.recv()
        assert len(env_ids) >= 1
        ids, actions = [], []
        for row, i in enumerate(env_ids):
            if terminated[row]:
                finished.add(int(i))
                continue
            ids.append(int(i))
            actions.append(tokens[position[int(i)]])
            position[int(i)] += 1
        if ids:
            venv.send(actions, ids)
    assert venv.stats()["evaluations"] == 3
    venv.close()


def test_bad_vector_actions(evaluator):
    venv = sparserl.make_vec(2, matrix=GEN, evaluator=evaluator)
    obs, _ = venv.reset(seed=0)
    forbidden = int(np.flatnonzero(obs["action_mask"][1] == 0)[0])
    allowed = int(np.flatnonzero(obs["action_mask"][0])[0])
    with pytest.raises(ValueError, match=f"action {forbidden} of environment 1"):
        venv.step(np.array([allowed, forbidden]))
    with pytest.raises(TypeError, match="2 integer token ids"):
        venv.step(np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match="outside Discrete"):
        venv.step(np.array([allowed, 10_000]))
    with pytest.raises(ValueError, match="autoreset: expected 'next_step' or 'same_step'"):
        sparserl.make_vec(2, matrix=GEN, evaluator=evaluator, autoreset="never")
    venv.close()
