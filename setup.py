"""`pip install .` for the sparserl Python package (python/): the extension sparserl._core is built by
the project's own CMake (the same target as `tools/setup.sh build`), then copied into the package
with the sparserl-worker executable (sparserl/bin/) and the split files (sparserl/splits/), so the
installed package needs no source or build tree. Debian 12 / Ubuntu 24.04 (PEP 668), in a virtual
environment that sees the system's numpy:

    python3 -m venv --system-site-packages .venv && .venv/bin/pip install --no-build-isolation .

Environment: SPARSERL_BUILD_DIR (default build-pip/; an existing configured build, such as build/,
is reused as it is), CMAKE_ARGS (extra configure arguments), JOBS (parallel build jobs)."""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = Path(os.environ.get("SPARSERL_BUILD_DIR", ROOT / "build-pip")).resolve()
        if not (build_dir / "CMakeCache.txt").is_file():
            configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir),
                         "-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={sys.executable}",
                         "-DSPARSERL_BUILD_TESTS=OFF", "-DSPARSERL_BUILD_BENCHMARKS=OFF",
                         "-DSPARSERL_WITH_TORCH=OFF"]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
            subprocess.check_call(configure)
        jobs = os.environ.get("JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "sparserl_python",
                               "-j", jobs])
        built = sorted((build_dir / "python" / "sparserl").glob("_core*.so"))
        if not built:
            raise RuntimeError(f"the build left no sparserl/_core*.so in {build_dir}/python "
                               "(is pybind11 installed? see the configure log)")
        target = Path(self.get_ext_fullpath(ext.name))
        package = target.parent
        package.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], target)
        (package / "bin").mkdir(exist_ok=True)
        shutil.copy2(build_dir / "reward" / "sparserl-worker", package / "bin" / "sparserl-worker")
        (package / "splits").mkdir(exist_ok=True)
        for split in (ROOT / "datasets" / "splits").glob("*.split"):
            shutil.copy2(split, package / "splits" / split.name)


# setuptools' own scratch folder stays out of CMake's build/.
setup(ext_modules=[Extension("sparserl._core", sources=[])], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": "build-pip/setuptools"}})
