"""The batch reward function: evaluations on the compile stage (every EvalResult field as a dict),
the hierarchical reward, program extraction from LM completions, the TRL-shaped reward function
and the prompt builder."""

import json
import re

import numpy as np
import pytest

import sparserl
from conftest import GEN, reference_program

TASK = GEN + " spmv f32"
NOT_COMPILING = "//@format csr\n//@launch k grid=1 block=32\nextern \"C\" __global__ void k(" \
                "const int* a, const int* b, const value_t* c, const value_t* x, value_t* y) " \
                "{ y[0] = undefined_name; }\n"


def test_evaluate_gives_every_field_and_the_reward(evaluator, spmv_csr):
    results = evaluator.evaluate(TASK, [spmv_csr, NOT_COMPILING, "no program here"])
    ok, bad, none = results
    raw = evaluator.evaluate_raw(TASK, [spmv_csr])[0]
    assert set(json.loads(raw.to_json())) <= set(ok)
    for key in ("stage", "error", "message", "compiled", "correct", "timed", "gpu_available",
                "compile", "check", "timing", "conversion_ms", "wall_ms", "device",
                "program_digest", "matrix_digest", "result_cached", "phases_ms", "static_reason"):
        assert key in ok, key
    assert ok["error"] == "none" and ok["compiled"] and ok["compile"]["arch"].startswith("sm_")
    assert bad["error"] == "compile_error" and "undefined_name" in bad["message"]
    assert none["error"] == "bad_program" and "//@format" in none["message"]
    if not ok["gpu_available"]:
        assert [r["reward"] for r in results] == [0.5, -0.5, -0.5]
        assert ok["reward_breakdown"]["compile_only"] is True
    assert evaluator.rewards(TASK, [spmv_csr, NOT_COMPILING]) == [r["reward"] for r in results[:2]]


def test_one_task_per_program_and_the_errors_of_a_batch(evaluator, spmv_csr):
    tasks = [TASK, sparserl.Task("gen-v1/diagonal?n=50", "spmm", "f64", 8)]
    spmm = reference_program("spmm_csr.cu")
    results = evaluator.evaluate(tasks, [spmv_csr, spmm])
    assert [r["error"] for r in results] == ["none", "none"]
    with pytest.raises(ValueError, match="tasks: 1 given for 2 programs"):
        evaluator.evaluate([TASK], [spmv_csr, spmm])
    with pytest.raises(TypeError, match=r"programs\[0\]: expected the program's text"):
        evaluator.evaluate(TASK, [b"bytes"])
    with pytest.raises(ValueError, match="unknown evaluator option 'compile_worker'"):
        sparserl.Evaluator(compile_worker=1)


def test_reward_settings(spmv_csr):
    with sparserl.Evaluator(compile_workers=1, quiet=True, compile_only=True,
                            reward={"compile_pass": 1.0, "compile_fail": -1.0}) as ev:
        assert ev.rewards(TASK, [spmv_csr, NOT_COMPILING]) == [1.0, -1.0]
        assert not ev.gpu_available()


def test_extract_program():
    program = "//@format csr\n//@launch k grid=1 block=1\n__global__ void k() {}\n"
    found = sparserl.extract_program(f"Here it is:\n```cuda\n{program}```\nDone.")
    assert found.ok and found.source == "code_block" and found.program == program
    two = sparserl.extract_program(f"```\nint helper;\n```\ntext\n```cpp\n{program}```")
    assert two.program == program
    bare = sparserl.extract_program("Sure.\n" + program)
    assert bare.source == "directives" and bare.program == program
    cut = sparserl.extract_program("```cuda\n" + program)  # a completion cut before its fence
    assert cut.program == program
    chat = sparserl.extract_program([{"role": "assistant", "content": "```\n" + program + "```"}])
    assert chat.program == program
    none = sparserl.extract_program("I cannot write this kernel.")
    assert not none.ok and "neither a fenced code block nor a //@format directive" in none.verdict
    block = sparserl.extract_program("```\nint x;\n```")
    assert not block.ok and "none has a //@format directive" in block.verdict
    check = sparserl.check_program("int x;")
    assert not check["ok"] and check["reason"] == "bad_directive"
    assert sparserl.check_program(program)["kernels"] == ["k"]


def test_the_trl_reward_function(evaluator, spmv_csr):
    logged = []
    reward = sparserl.make_reward_function(evaluator, log=logged.extend)
    completions = [f"```cuda\n{spmv_csr}```", "no idea",
                   [{"role": "assistant", "content": spmv_csr}]]
    prompts = ["p"] * 3
    values = reward(prompts=prompts, completions=completions, task=[TASK] * 3)
    assert len(values) == 3 and all(isinstance(v, float) for v in values)
    assert values[1] == -0.5 and values[0] == values[2] >= 0.5
    assert logged[1]["extraction"].startswith("no program") and logged[0]["extraction"] == "code_block"
    assert reward.__name__ == "sparserl_reward"
    with pytest.raises(KeyError, match="no 'task' column"):
        reward(prompts=prompts, completions=completions, matrix=[TASK] * 3)


def test_the_prompt_shows_the_nonzeros_the_abi_and_the_prelude(evaluator):
    prompt = sparserl.build_prompt(TASK, seed=5)
    text = prompt.text
    assert "M = 300 rows" in text and re.search(r"\(\d+,\d+\) \(\d+,\d+\)", text)
    assert 'extern "C" __global__ void spmv_csr(const int* __restrict__ row_ptr' in text
    assert "typedef float value_t;" in text and "#define M 300" in text
    assert "```cuda" in text
    every = sparserl.build_prompt(TASK, formats="all")
    assert "sell C=32 sigma=1" in every.text and "#define BSR_R 4" in every.text
    # The arrays are the environment's observation of the same episode seed.
    env = sparserl.make(matrix=GEN, evaluator=evaluator)
    obs, info = env.reset(seed=2)
    arrays = sparserl.build_prompt(TASK, seed=info["episode.seed"] % 2**64).arrays
    np.testing.assert_array_equal(arrays["rows"], obs["rows"])
    np.testing.assert_array_equal(arrays["embedding"], obs["embedding"])
    env.close()
