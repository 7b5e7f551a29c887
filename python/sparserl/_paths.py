"""Where the package finds what it needs beside its extension: the sparserl-worker executable, the
split files and the SuiteSparse index folders. An installed package carries the worker and the
splits inside itself; used from a build tree it falls back on that build's worker and the source
tree's datasets/splits and ../shared/matrices. Environment variables override both:
SPARSERL_WORKER, SPARSERL_SPLITS_DIR, SPARSERL_INDEX_DIRS (os.pathsep-separated) and
SPARSERL_DATA_DIR (read by the C++ store)."""

import os
from pathlib import Path

from . import _core

PACKAGE_DIR = Path(__file__).resolve().parent


def _source_dir():
    source = _core.build_info.get("source_dir", "")
    return Path(source) if source else None


def worker_path():
    """The sparserl-worker executable the evaluator starts."""
    env = os.environ.get("SPARSERL_WORKER")
    if env:
        return Path(env)
    bundled = PACKAGE_DIR / "bin" / "sparserl-worker"
    if bundled.is_file():
        return bundled
    built = _core.build_info.get("worker", "")
    if built and Path(built).is_file():
        return Path(built)
    raise FileNotFoundError(
        "cannot find the sparserl-worker executable: set SPARSERL_WORKER, or install the package "
        f"(pip install .), or build it (looked in {bundled} and {built or 'no build tree'})")


def splits_dir():
    """The folder holding the versioned split files (NAME.split)."""
    env = os.environ.get("SPARSERL_SPLITS_DIR")
    if env:
        return Path(env)
    bundled = PACKAGE_DIR / "splits"
    if bundled.is_dir():
        return bundled
    source = _source_dir()
    if source is not None and (source / "datasets" / "splits").is_dir():
        return source / "datasets" / "splits"
    return bundled


def default_index_dirs():
    """SuiteSparse index folders searched for suitesparse-v1 matrices: SPARSERL_INDEX_DIRS, else
    the project's ../shared/matrices when it exists (as the experiment configs default to)."""
    env = os.environ.get("SPARSERL_INDEX_DIRS")
    if env is not None:
        return [part for part in env.split(os.pathsep) if part]
    source = _source_dir()
    if source is not None:
        shared = (source / ".." / "shared" / "matrices").resolve()
        if (shared / "INDEX.csv").is_file():
            return [str(shared)]
    return []
