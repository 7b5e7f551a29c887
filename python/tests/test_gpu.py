"""The full reward from Python on a GPU host (label gpu): reference programs are compiled, run,
checked and timed against cuSPARSE; a program that leaves its output unwritten fails the test
stage; an environment's episode gets the same reward. Each test skips, saying why, without a GPU."""

import numpy as np
import pytest

import sparserl
from conftest import GEN, reference_program

pytestmark = pytest.mark.gpu
TASK = GEN + " spmv f32"
UNWRITTEN = ("//@format csr\n//@launch k grid=1 block=32\nextern \"C\" __global__ void k("
             "const int* a, const int* b, const value_t* c, const value_t* x, value_t* y) {}\n")


def test_reference_programs_get_the_full_reward(gpu_evaluator):
    tasks = [TASK, sparserl.Task(GEN, "spmv", "f64"), sparserl.Task(GEN, "spmm", "f32", 8)]
    programs = [reference_program("spmv_csr.cu"), reference_program("spmv_ell.cu"),
                reference_program("spmm_csr.cu")]
    for r in gpu_evaluator.evaluate(tasks, programs):
        assert r["error"] == "none", r["message"]
        assert r["correct"] and r["timed"] and r["gpu_available"]
        assert r["timing"]["speedup"] > 0 and r["timing"]["baseline_algorithm"]
        b = r["reward_breakdown"]
        assert b["tested"] and not b["compile_only"]
        assert r["reward"] == pytest.approx(min(3.0, 1.0 + 0.2 * (r["timing"]["speedup"] - 1)))


def test_an_unwritten_output_fails_the_test_stage(gpu_evaluator):
    r = gpu_evaluator.evaluate(TASK, [UNWRITTEN])[0]
    assert r["error"] == "unwritten_output" and r["compiled"] and not r["correct"]
    assert r["reward"] == 0.0  # +0.5 compiled, -0.5 failed the test


def test_an_episode_with_the_full_reward(gpu_evaluator):
    env = sparserl.make(matrix=GEN, evaluator=gpu_evaluator)
    env.reset(seed=0)
    for token in env.tokenizer.encode(reference_program("spmv_csr.cu")):
        obs, reward, terminated, truncated, info = env.step(token)
    assert terminated and info["eval.timed"] and info["eval.correct"]
    assert reward == info["reward.total"] and not info["reward.compile_only"]
    venv = sparserl.make_vec(2, matrix=GEN, evaluator=gpu_evaluator)
    venv.reset(seed=0)
    for token in env.tokenizer.encode(reference_program("spmv_csr.cu")):
        obs, rewards, terminated, truncated, infos = venv.step(np.full(2, token))
    assert terminated.all() and infos["eval.timed"].all()
    venv.close()
    env.close()
