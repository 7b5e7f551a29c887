// A task written out as text, the way the method's public code feeds a matrix to a language model:
// the operation, the matrix's shape and the row and column indices of its sampled nonzeros - the
// same sample the observation's sinusoidal embedding encodes. Optionally what a model that was
// never fine-tuned on this project's kernel ABI must be told: how to answer (the directives, one
// code block) and, per format, the kernel signature and the prelude the evaluator prepends.
//
// One rendering for every consumer: observe_matrix() puts the short form (no format, no
// instructions) into MatrixObservation::text, the prompt of a policy in the text-only prompt form
// (agents' [agent.model] prompt = "text"), and the Python package's build_prompt() renders its
// prompts with the same function (sparserl._core.prompt_text).
//
//   Task: SpMV, y = A x (x has N entries, y has M), values f32.
//
//   Matrix gen-v1/diagonal?n=48: M = 48 rows, N = 48 columns, NNZ = 48 nonzeros.
//
//   Nonzero indices (row,col), 8 of them, sampled across the matrix:
//
//   (0,0) (6,6) (12,12) ...
#pragma once

#include <string>
#include <vector>

#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/env/observation.hpp"
#include "sparserl/reward/abi.hpp"

namespace sparserl::env {

struct PromptTextOptions {
  // The formats whose kernel signature and prelude (for this matrix) the text shows, in order.
  std::vector<reward::FormatSpec> formats;
  // What to write and how to answer: the directives' syntax and one ```cuda code block.
  bool instructions = false;
};

// The text of `task` on `matrix` whose sampled nonzeros are `observation`'s (the first `count`).
// std::invalid_argument for a format spec that does not validate.
std::string prompt_text(const datasets::SparseMatrix& matrix, const datasets::Task& task,
                        const MatrixObservation& observation,
                        const PromptTextOptions& options = {});

}  // namespace sparserl::env
