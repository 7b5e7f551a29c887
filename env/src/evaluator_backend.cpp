// The adapter from env's EvaluationBackend to reward::Evaluator: options mapped one to one, and
// compile-only runs start no GPU worker at all.
#include "sparserl/env/evaluator_backend.hpp"

#include <algorithm>
#include <thread>

namespace sparserl::env {

EvaluatorBackend::EvaluatorBackend(std::shared_ptr<reward::Evaluator> evaluator, bool compile_only)
    : evaluator_(std::move(evaluator)), compile_only_(compile_only) {
  if (!evaluator_) throw std::invalid_argument("EvaluatorBackend needs an Evaluator");
}

std::future<reward::EvalResult> EvaluatorBackend::submit(const datasets::Task& task,
                                                         std::string program) {
  reward::EvaluateOptions options;
  options.compile_only = compile_only_;
  return evaluator_->submit(task, std::move(program), options);
}

bool EvaluatorBackend::gpu_available() {
  return !compile_only_ && evaluator_->config().gpu_workers != 0 &&
         !evaluator_->gpu_info().devices.empty();
}

std::string EvaluatorBackend::describe() const {
  auto& self = const_cast<EvaluatorBackend&>(*this);
  const reward::EvaluatorConfig& c = evaluator_->config();
  const int compile_workers =
      c.compile_workers > 0 ? c.compile_workers
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const reward::GpuInfo info = self.evaluator_->gpu_info();
  std::string gpu;
  if (self.gpu_available()) {
    gpu = "GPU " + info.devices.front().name;
  } else if (compile_only_) {
    gpu = "compile only (requested)";
  } else {
    gpu = "no GPU (compile only)";
  }
  return "evaluator: " + std::to_string(compile_workers) + " compile worker" +
         (compile_workers == 1 ? "" : "s") + ", " + gpu + ", arch " + self.evaluator_->arch() +
         (c.compile_cache_entries == 0 ? ", no caches" : "");
}

std::shared_ptr<EvaluatorBackend> make_evaluator_backend(const EvaluatorBackendOptions& o) {
  reward::EvaluatorConfig c;
  c.worker_path = o.worker;
  if (!o.arch.empty()) c.arch = o.arch;
  c.compile_workers = o.compile_workers;
  c.gpu_workers = o.compile_only ? 0 : o.gpu_workers;
  c.compile_cache_entries = o.cache_entries;
  c.result_cache_entries = o.cache_entries;
  c.protocol = o.protocol;
  c.data_dir = o.data_dir;
  c.index_dirs = o.indexes;
  c.limits = o.limits;
  c.log = o.log;
  return std::make_shared<EvaluatorBackend>(std::make_shared<reward::Evaluator>(std::move(c)),
                                            o.compile_only);
}

}  // namespace sparserl::env
