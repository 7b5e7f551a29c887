#!/usr/bin/env bash
# Sets up SparseRL Gym on a fresh Debian 12 or Ubuntu 24.04 machine and runs one of its jobs:
#
#   tools/setup.sh run      install what is missing, build, run the main job (the quickstart)
#   tools/setup.sh test     install what is missing, build, run the test suite (CPU tests; GPU tests
#                           report themselves skipped on a machine without a GPU)
#   tools/setup.sh build    install what is missing and build only
#
# It is idempotent: packages already present are left alone and it says which ones it installs. The
# CUDA toolkit is not a Debian package we can install for you; if it is absent the script says where
# to get it and stops. Environment: BUILD_DIR (default build), JOBS (default: all cores),
# SPARSERL_NO_INSTALL=1 (never call apt-get; fail with the list of what is missing instead),
# SPARSERL_PYTHON (the interpreter the Python package is built for; default: the first python3 with
# numpy). The build lays the package out in BUILD_DIR/python (PYTHONPATH=BUILD_DIR/python).
set -euo pipefail

mode=${1:-build}
case "$mode" in
  run | test | build) ;;
  -h | --help)
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "usage: tools/setup.sh run|test|build" >&2
    exit 2
    ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

say() { printf 'setup: %s\n' "$*"; }

# --- the CUDA toolkit -----------------------------------------------------------------------------
cuda_root=${CUDAToolkit_ROOT:-${CUDA_HOME:-/usr/local/cuda}}
if [ ! -x "$cuda_root/bin/nvcc" ] && ! command -v nvcc >/dev/null 2>&1; then
  cat >&2 <<EOF
setup: the CUDA toolkit is not installed (looked for $cuda_root/bin/nvcc and nvcc on PATH).
setup: SparseRL Gym compiles candidate kernels with NVRTC and times them against cuSPARSE, both part
setup: of the toolkit (12.0 or newer; 13.0 is what we test). It needs no GPU to install. Get it from
setup:   https://developer.nvidia.com/cuda-downloads  (Linux > x86_64 > Debian 12 or Ubuntu 24.04)
setup: then run this script again (or set CUDAToolkit_ROOT to where it lives).
EOF
  exit 1
fi
[ -x "$cuda_root/bin/nvcc" ] || cuda_root=$(dirname "$(dirname "$(command -v nvcc)")")
say "CUDA toolkit: $cuda_root ($("$cuda_root/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"

# --- system packages --------------------------------------------------------------------------------
# PyTorch's own LibTorch (a pip-installed torch) is used when present, as on the GPU hosts; otherwise
# the distribution's CPU LibTorch.
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
# The Python package (python/) needs pybind11 and Python's headers; its tests numpy, pytest, scipy
# and h5py - all Debian packages of the system python3.
packages=(cmake ninja-build g++ pkg-config zlib1g-dev libcurl4-openssl-dev libboost-dev
  libboost-filesystem-dev libhdf5-dev hdf5-tools libtomlplusplus-dev nlohmann-json3-dev libcli11-dev
  libpcre2-dev catch2 gnuplot-nox python3-dev pybind11-dev python3-numpy python3-pytest
  python3-scipy python3-h5py)
# libgloo-dev: the gloo headers of Debian's LibTorch, for data-parallel ranks on CPUs (tests).
[ -n "$torch_prefix" ] || packages+=(libtorch-dev libgloo-dev)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  say "all ${#packages[@]} system packages are present"
else
  say "installing ${#missing[@]} missing packages: ${missing[*]}"
  if [ -n "${SPARSERL_NO_INSTALL:-}" ]; then
    echo "setup: SPARSERL_NO_INSTALL is set; install them yourself and run again" >&2
    exit 1
  fi
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup: need root or sudo to run apt-get" >&2; exit 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- the Python the package is built for ---------------------------------------------------------
# SPARSERL_PYTHON when set; else the first python3 (on PATH, then the system's) that has numpy, so
# that a python3 of another installation (pyenv, a bare venv) does not hide the one the packages
# above went to.
python=${SPARSERL_PYTHON:-}
if [ -z "$python" ]; then
  for candidate in "$(command -v python3 || true)" /usr/bin/python3; do
    if [ -n "$candidate" ] && "$candidate" -c 'import numpy' >/dev/null 2>&1; then
      python=$candidate
      break
    fi
  done
  python=${python:-/usr/bin/python3}
fi
say "Python package for $python"

# --- configure and build ----------------------------------------------------------------------------
cmake_args=(-S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}"
  -DCUDAToolkit_ROOT="$cuda_root" -DPython3_EXECUTABLE="$python")
[ -z "$torch_prefix" ] || cmake_args+=(-DCMAKE_PREFIX_PATH="$torch_prefix")
say "configuring into $build_dir"
cmake "${cmake_args[@]}" >"$build_dir.configure.log" 2>&1 || {
  tail -40 "$build_dir.configure.log" >&2
  echo "setup: configuration failed; the whole log is $build_dir.configure.log" >&2
  exit 1
}
grep '^-- sparserl:' "$build_dir.configure.log" | sed 's/^-- /setup: /' || true
say "building with $jobs jobs"
cmake --build "$build_dir" -j "$jobs"

# --- the job ---------------------------------------------------------------------------------------
case "$mode" in
  build)
    say "built: $build_dir/tools/sparserl"
    say "Python: PYTHONPATH=$build_dir/python $python -c 'import sparserl' (or pip install .)"
    ;;
  test)
    say "running the tests"
    cd "$build_dir"
    ctest --output-on-failure -j "$jobs" --timeout 600
    ;;
  run)
    say "running the main job"
    exec "$build_dir/tools/sparserl" quickstart --root "$root"
    ;;
esac
