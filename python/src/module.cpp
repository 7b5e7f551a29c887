// The sparserl._core extension module: the C++ libraries' Python face. Each
// library's bindings live in their own file; the Python package
// (python/sparserl/) builds the Gymnasium-shaped environment, the batch reward
// function and the dataset helpers on top of them.
#include <pybind11/stl.h>

#include "bindings.hpp"

#ifndef SPARSERL_WORKER_BUILD_PATH
#define SPARSERL_WORKER_BUILD_PATH ""
#endif
#ifndef SPARSERL_SOURCE_DIR
#define SPARSERL_SOURCE_DIR ""
#endif
#ifndef SPARSERL_VERSION
#define SPARSERL_VERSION "0"
#endif

PYBIND11_MODULE(_core, m) {
  namespace py = pybind11;
  m.doc() = "SparseRL Gym's C++ core: datasets, the evaluator and the environment.";
  m.attr("__version__") = SPARSERL_VERSION;
  // Where this build put things: the package falls back on them when it is used
  // from the build tree (an installed package carries its own worker and split
  // files).
  py::dict build;
  build["worker"] = SPARSERL_WORKER_BUILD_PATH;
  build["source_dir"] = SPARSERL_SOURCE_DIR;
  m.attr("build_info") = build;
  sparserl::python::bind_datasets(m);
  sparserl::python::bind_reward_module(m);
  sparserl::python::bind_env(m);
  sparserl::python::bind_vector_env(m);
}
