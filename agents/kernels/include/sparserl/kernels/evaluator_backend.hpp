// EvaluatorBackend: the template search's CandidateEvaluator on the project's Evaluator
// (reward/evaluator.hpp). A batch is evaluated in two passes: first every program is compiled at
// once on the evaluator's threads (compile-only evaluations fill its compile cache, so all compile
// workers work), then, where a GPU is present, the programs are run, checked and timed one after
// another in the order given - the search groups them by storage format, so the GPU worker converts
// and uploads the matrix once per format instead of once per program.
#pragma once

#include <string>
#include <vector>

#include "sparserl/kernels/template_search.hpp"
#include "sparserl/reward/evaluator.hpp"

namespace sparserl::kernels {

class EvaluatorBackend : public CandidateEvaluator {
 public:
  // parallel_compile = false evaluates one program at a time (no concurrent submissions).
  explicit EvaluatorBackend(reward::Evaluator& evaluator, bool parallel_compile = true)
      : evaluator_(evaluator), parallel_compile_(parallel_compile) {}

  bool gpu_available() override;
  std::string device() override;
  std::vector<reward::EvalResult> evaluate(const datasets::Task& task,
                                           const std::vector<std::string>& programs,
                                           const reward::GpuProtocol& protocol) override;

 private:
  reward::Evaluator& evaluator_;
  bool parallel_compile_ = true;
};

}  // namespace sparserl::kernels
