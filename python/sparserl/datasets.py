"""Datasets from Python: the versioned splits and their parts, task URIs, and matrices as numpy
arrays (CSR with fp64 values) or as scipy.sparse.csr_matrix when scipy is importable. Matrices come
from the same MatrixStore the environment and the evaluator read (datasets/matrix_store.hpp):
suitesparse-v1/GROUP/NAME URIs from the data folder and the index folders, gen-v1/... URIs
generated, file: URIs and plain paths read directly."""

from functools import lru_cache
from pathlib import Path

from . import _core, _paths

Task = _core.Task
Matrix = _core.Matrix
SplitError = _core.SplitError
MatrixNotFound = _core.MatrixNotFound

PARTS = ("train", "val", "test")


def splits():
    """The names of the split files shipped with the project, sorted ("bench-v2", "shared-v1")."""
    folder = _paths.splits_dir()
    return sorted(p.stem for p in folder.glob("*.split")) if folder.is_dir() else []


def split_file(split):
    """The file of a split given by name ("shared-v1") or by path; SplitError naming the known
    splits when it is neither."""
    path = Path(split)
    if path.suffix == ".split" or path.is_file():
        if not path.is_file():
            raise SplitError(f"split file {path} does not exist")
        return path
    candidate = _paths.splits_dir() / f"{split}.split"
    if candidate.is_file():
        return candidate
    known = ", ".join(splits()) or "none found in " + str(_paths.splits_dir())
    raise SplitError(f"unknown split '{split}' (known: {known}; or give a .split file's path)")


def read_split(split):
    """A split as a dict: name, version, seed, digest and parts {train, val, test: [entry]}, each
    entry a dict of uri, family, nnz, regime (None in version-1 files) and source."""
    return _core.read_split(str(split_file(split)))


def parts(split):
    """The number of matrices in each part: {"train": n, "val": n, "test": n}."""
    return {part: len(entries) for part, entries in read_split(split)["parts"].items()}


def uris(split, part="train"):
    """The matrix URIs of one part of a split, in file order."""
    if part not in PARTS:
        raise ValueError(f"unknown part '{part}' (expected one of: {', '.join(PARTS)})")
    return [entry["uri"] for entry in read_split(split)["parts"][part]]


@lru_cache(maxsize=8)
def _store(data_dir, index_dirs):
    return _core.MatrixStore(data_dir, list(index_dirs), 8)


def store(data_dir=None, index_dirs=None):
    """A MatrixStore over `data_dir` ($SPARSERL_DATA_DIR or ./data when None) and `index_dirs`
    (the default index folders when None); stores are shared by equal arguments."""
    dirs = _paths.default_index_dirs() if index_dirs is None else [str(d) for d in index_dirs]
    return _store(None if data_dir is None else str(data_dir), tuple(dirs))


def load_matrix(uri, data_dir=None, index_dirs=None):
    """The matrix of a URI or a path: a Matrix with shape, nnz and read-only numpy arrays row_ptr
    (int32), col_idx (int32) and values (float64). MatrixNotFound names every place looked."""
    return store(data_dir, index_dirs).load(str(uri))


def matrix_arrays(uri, data_dir=None, index_dirs=None):
    """The matrix as plain arrays: shape, row_ptr, col_idx, values and the COO rows."""
    import numpy as np

    m = load_matrix(uri, data_dir, index_dirs)
    rows = np.repeat(np.arange(m.rows, dtype=np.int32), np.diff(m.row_ptr))
    return {"shape": m.shape, "row_ptr": m.row_ptr, "col_idx": m.col_idx, "values": m.values,
            "rows": rows, "uri": m.uri}


def to_scipy(matrix):
    """A Matrix as scipy.sparse.csr_matrix (a copy; float64). ImportError when scipy is absent."""
    try:
        import scipy.sparse
    except ImportError as e:
        raise ImportError("to_scipy needs scipy (Debian: python3-scipy; pip: scipy)") from e
    return scipy.sparse.csr_matrix(
        (matrix.values.copy(), matrix.col_idx.copy(), matrix.row_ptr.copy()), shape=matrix.shape)


def load_scipy(uri, data_dir=None, index_dirs=None):
    """load_matrix(...) as a scipy.sparse.csr_matrix."""
    return to_scipy(load_matrix(uri, data_dir, index_dirs))


def canonical_uri(text):
    """The canonical URI of a matrix URI, a file: URI or the path of an existing file."""
    return _core.canonical_uri(str(text))


def task(spec, op="spmv", dtype="f32", k=1):
    """A Task from a Task, its text ("URI spmm f64 k=32"), or a URI / path with op, dtype and k."""
    if isinstance(spec, Task):
        return spec
    text = str(spec)
    if " " in text.strip():
        return Task.parse(text)
    return Task(text, op, dtype, k)
