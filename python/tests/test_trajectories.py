"""Episodes recorded from Python to HDF5 and read back with h5py alone (docs/trajectories.md)."""

import numpy as np
import pytest

import sparserl
from conftest import GEN


def test_episodes_recorded_by_the_env_and_the_vector_env(tmp_path, evaluator, spmv_csr):
    h5py = pytest.importorskip("h5py", reason="h5py is not installed")
    tokens = sparserl.Tokenizer().encode(spmv_csr)
    single = tmp_path / "single.h5"
    env = sparserl.make(matrix=GEN, evaluator=evaluator, record=single, policy_id="test:1",
                        run_id="run-a")
    rewards = []
    for seed in (0, 1):
        env.reset(seed=seed)
        for t in tokens:
            _, reward, terminated, _, info = env.step(t)
        rewards.append(reward)
    env.close()
    with h5py.File(single, "r") as f:
        assert f.attrs["format"] == "sparserl-trajectories" and f.attrs["rows"] == 2
        assert f.attrs["run_id"] == "run-a"
        e = f["episodes"]
        np.testing.assert_array_equal(e["tokens"][0], tokens)
        np.testing.assert_array_equal(e["reward"][:], rewards)
        assert [s.decode() for s in e["policy_id"][:]] == ["test:1", "test:1"]
        assert e["task_uri"][0].decode() == GEN and list(e["env_seed"][:]) == [0, 1]
        assert "//@format csr" in e["source"][1].decode()

    vector = tmp_path / "vector.h5"
    venv = sparserl.make_vec(2, matrix=GEN, evaluator=evaluator, record=vector)
    venv.reset(seed=4)
    for t in tokens:
        venv.step(np.full(2, t))
    venv.close()
    with h5py.File(vector, "r") as f:
        assert f.attrs["rows"] == 2
        assert sorted(f["episodes"]["env_id"][:]) == [0, 1]
