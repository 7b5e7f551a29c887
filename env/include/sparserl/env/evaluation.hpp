// Where the environment sends finished programs: an EvaluationBackend turns (task, program text)
// into a future EvalResult. The environment never waits on one in VectorEnv's asynchronous mode,
// and never lets one throw into the training loop: a backend whose future throws is answered
// internal_error. The real backend is the evaluator's sandboxed worker pool
// (evaluator_backend.hpp); tests plug in backends that answer without a compiler.
#pragma once

#include <future>
#include <string>

#include "sparserl/datasets/task.hpp"
#include "sparserl/reward/eval_result.hpp"

namespace sparserl::env {

class EvaluationBackend {
 public:
  virtual ~EvaluationBackend() = default;
  // Starts the evaluation of `program` (the decoded source) on `task`. Must be thread-safe.
  virtual std::future<reward::EvalResult> submit(const datasets::Task& task,
                                                 std::string program) = 0;
  // One line for logs: "evaluator: 2 compile workers, no GPU (compile only)".
  [[nodiscard]] virtual std::string describe() const = 0;
};

// The result of a future, or an internal_error EvalResult naming the exception it threw.
reward::EvalResult take_result(std::future<reward::EvalResult>& future);

}  // namespace sparserl::env
