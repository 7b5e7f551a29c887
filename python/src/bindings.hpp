// The parts of the sparserl._core extension module, one function per library it
// binds, and the handles Python holds on to: a matrix with its URI, and the
// evaluator (shared by environments and the batch reward function, so that one
// worker pool serves them all).
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/reward/evaluator.hpp"

namespace sparserl::python {

namespace py = pybind11;

struct MatrixHandle {
  std::shared_ptr<const datasets::SparseMatrix> matrix;
  std::string uri;  // canonical
};

struct EvaluatorHandle {
  std::shared_ptr<reward::Evaluator> evaluator;  // empty once closed
  bool compile_only = false;
  std::function<std::vector<std::string>()> notices;  // the pool's notices so far
  // The evaluator, or ValueError when it was closed.
  reward::Evaluator& get();
};

void bind_datasets(py::module_& m);
void bind_reward_module(py::module_& m);
void bind_env(py::module_& m);
void bind_vector_env(py::module_& m);

}  // namespace sparserl::python
