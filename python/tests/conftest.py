"""Fixtures of the Python package's tests: one compile-stage evaluator for the whole session (its
workers start once), a small generated matrix every machine has, and the shared SuiteSparse
matrices where they exist (tests that need them skip, saying so, where they do not)."""

import os
from pathlib import Path

import pytest

import sparserl

GEN = "gen-v1/banded?bandwidth=3&n=300"
SHARED = Path(os.environ.get("SPARSERL_TEST_SHARED_DIR",
                             Path(__file__).resolve().parents[2] / ".." / "shared")).resolve()
REFERENCE = Path(__file__).resolve().parents[2] / "reward" / "programs"


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (the full reward)")


@pytest.fixture(scope="session")
def evaluator():
    ev = sparserl.Evaluator(compile_workers=1, quiet=True)
    yield ev
    ev.close()


@pytest.fixture(scope="session")
def gpu_evaluator():
    ev = sparserl.Evaluator(quiet=True)
    if not ev.gpu_available():
        reason = ev.gpu_info().get("error") or "no device"
        ev.close()
        pytest.skip(f"no GPU: {reason}")
    yield ev
    ev.close()


@pytest.fixture(scope="session")
def shared_matrices():
    folder = SHARED / "matrices"
    if not (folder / "INDEX.csv").is_file():
        pytest.skip(f"the shared SuiteSparse matrices are absent ({folder})")
    return folder


def reference_program(name="spmv_csr.cu"):
    return (REFERENCE / name).read_text()


@pytest.fixture
def spmv_csr():
    return reference_program("spmv_csr.cu")
