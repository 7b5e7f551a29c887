// EvaluatorBackend (evaluator_backend.hpp): parallel compile-only pass, then ordered GPU pass.
#include "sparserl/kernels/evaluator_backend.hpp"

#include <future>

namespace sparserl::kernels {

bool EvaluatorBackend::gpu_available() {
  return evaluator_.config().gpu_workers != 0 && !evaluator_.gpu_info().devices.empty();
}

std::string EvaluatorBackend::device() {
  const reward::GpuInfo info = evaluator_.gpu_info();
  return info.devices.empty() ? std::string() : info.devices.front().name;
}

std::vector<reward::EvalResult> EvaluatorBackend::evaluate(const datasets::Task& task,
                                                           const std::vector<std::string>& programs,
                                                           const reward::GpuProtocol& protocol) {
  reward::EvaluateOptions compile_only;
  compile_only.compile_only = true;
  if (!parallel_compile_) {
    reward::EvaluateOptions timed;
    timed.protocol = protocol;
    std::vector<reward::EvalResult> results;
    for (const std::string& program : programs) {
      results.push_back(evaluator_.evaluate(task, program, gpu_available() ? timed : compile_only));
    }
    return results;
  }
  std::vector<std::future<reward::EvalResult>> compiling;
  compiling.reserve(programs.size());
  for (const std::string& program : programs) {
    compiling.push_back(evaluator_.submit(task, program, compile_only));
  }
  std::vector<reward::EvalResult> results;
  results.reserve(programs.size());
  for (auto& f : compiling) results.push_back(f.get());
  if (!gpu_available()) return results;
  reward::EvaluateOptions timed;
  timed.protocol = protocol;
  for (std::size_t i = 0; i < programs.size(); ++i) {
    // Programs refused before the GPU keep their compile-stage verdict.
    if (!results[i].compiled || results[i].error != reward::ErrorKind::none) continue;
    results[i] = evaluator_.evaluate(task, programs[i], timed);
  }
  return results;
}

}  // namespace sparserl::kernels
