"""Datasets from Python: splits and parts, matrices as arrays and as scipy matrices, and the
errors that name what is wrong."""

import numpy as np
import pytest

import sparserl
from conftest import GEN


def test_splits_and_parts_are_listed():
    assert {"shared-v1", "bench-v2"} <= set(sparserl.splits())
    parts = sparserl.datasets.parts("shared-v1")
    assert parts == {"train": 32, "val": 11, "test": 10}
    uris = sparserl.datasets.uris("shared-v1", "val")
    assert len(uris) == 11 and all(u.startswith("suitesparse-v1/") for u in uris)
    split = sparserl.read_split("bench-v2")
    assert split["version"] == 2
    assert split["parts"]["train"][0]["regime"] in ("small", "medium", "large")


def test_an_unknown_split_names_itself_and_the_known_ones():
    with pytest.raises(sparserl.SplitError, match=r"unknown split 'no-such-split' \(known: .*shared-v1"):
        sparserl.read_split("no-such-split")
    with pytest.raises(ValueError, match="unknown part 'training'"):
        sparserl.datasets.uris("shared-v1", "training")


def test_a_generated_matrix_as_arrays():
    m = sparserl.load_matrix(GEN)
    assert m.shape == (300, 300) and m.uri == GEN
    assert m.row_ptr.dtype == np.int32 and m.col_idx.dtype == np.int32
    assert m.values.dtype == np.float64
    assert len(m.row_ptr) == m.rows + 1 and m.row_ptr[-1] == m.nnz == len(m.col_idx)
    assert not m.values.flags.writeable  # a view of the C++ matrix
    arrays = sparserl.datasets.matrix_arrays(GEN)
    assert len(arrays["rows"]) == m.nnz and np.all(np.diff(arrays["rows"]) >= 0)
    assert m.features()["nnz"] == m.nnz


def test_a_matrix_as_a_scipy_matrix_computes_the_same_product():
    scipy_sparse = pytest.importorskip("scipy.sparse", reason="scipy is not installed")
    m = sparserl.load_matrix(GEN)
    a = sparserl.to_scipy(m)
    assert isinstance(a, scipy_sparse.csr_matrix) and a.shape == m.shape and a.nnz == m.nnz
    x = np.linspace(-1, 1, m.cols)
    by_hand = np.array([m.values[m.row_ptr[i]:m.row_ptr[i + 1]] @ x[m.col_idx[m.row_ptr[i]:m.row_ptr[i + 1]]]
                        for i in range(m.rows)])
    np.testing.assert_allclose(a @ x, by_hand)


def test_a_matrix_market_file_by_path(tmp_path):
    path = tmp_path / "small.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 2.5\n2 4 -1\n3 2 7\n")
    m = sparserl.load_matrix(path)
    assert m.uri.startswith("file:") and m.shape == (3, 4)
    np.testing.assert_array_equal(m.row_ptr, [0, 1, 2, 3])
    np.testing.assert_array_equal(m.col_idx, [0, 3, 1])
    np.testing.assert_array_equal(m.values, [2.5, -1.0, 7.0])


def test_a_malformed_file_and_a_missing_matrix_are_named(tmp_path):
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n")
    with pytest.raises(sparserl.MatrixMarketError, match="bad.mtx"):
        sparserl.load_matrix(bad)
    with pytest.raises(sparserl.MatrixNotFound, match="suitesparse-v1/NoGroup/no_matrix"):
        sparserl.load_matrix("suitesparse-v1/NoGroup/no_matrix", index_dirs=[])
    with pytest.raises(ValueError, match="gen-v1"):
        sparserl.load_matrix("gen-v1/no_such_generator?n=3")


def test_a_shared_matrix_loads(shared_matrices):
    m = sparserl.load_matrix("suitesparse-v1/HB/west0067", index_dirs=[shared_matrices])
    assert m.shape == (67, 67) and m.nnz == 294


def test_tasks_from_text_and_parts():
    t = sparserl.datasets.task("gen-v1/diagonal?n=50 spmm f64 k=8")
    assert (t.uri, t.op, t.dtype, t.k) == ("gen-v1/diagonal?n=50", "spmm", "f64", 8)
    assert sparserl.Task(GEN).k == 1 and str(sparserl.Task(GEN)) == GEN + " spmv f32"
    with pytest.raises(ValueError, match="op: expected 'spmv' or 'spmm', got 'spgemm'"):
        sparserl.Task(GEN, op="spgemm")
