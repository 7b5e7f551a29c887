// The environment's EvaluationBackend on the project's Evaluator (reward/evaluator.hpp): the
// sandboxed worker pool that runs the static checks, NVRTC in compile workers (with the compile and
// result caches) and the GPU stages in GPU workers. submit() returns the Evaluator's future at once
// and never throws for anything a program does, so VectorEnv keeps stepping while evaluations are
// in flight. One Evaluator may serve several consumers (the environment and the template search of
// `sparserl rollout` share one pool through evaluator()).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/env/evaluation.hpp"
#include "sparserl/reward/evaluator.hpp"

namespace sparserl::env {

struct EvaluatorBackendOptions {
  std::filesystem::path worker;    // sparserl-worker; empty: reward::find_worker_executable()
  int compile_workers = 0;         // 0: one per core
  int gpu_workers = -1;            // -1: one per visible GPU
  bool compile_only = false;       // stop after the compile stage even with a GPU
  std::filesystem::path data_dir;  // where the workers find suitesparse-v1 matrices
  std::vector<std::filesystem::path> indexes;  // SuiteSparse index folders
  std::string arch;                            // without a GPU: "" = reward::kDefaultArch
  std::size_t cache_entries = 4096;            // compile and result cache entries; 0: no caches
  reward::ProgramLimits limits;
  reward::GpuProtocol protocol;               // check and timing protocol of the GPU stages
  std::function<void(std::string_view)> log;  // the pool's notices (empty: stderr)
};

class EvaluatorBackend : public EvaluationBackend {
 public:
  EvaluatorBackend(std::shared_ptr<reward::Evaluator> evaluator, bool compile_only);

  std::future<reward::EvalResult> submit(const datasets::Task& task, std::string program) override;
  [[nodiscard]] std::string describe() const override;
  // Whether the GPU stages run: a GPU is present and compile_only is off (waits for the pool's
  // probe).
  bool gpu_available();
  [[nodiscard]] reward::Evaluator& evaluator() { return *evaluator_; }

 private:
  std::shared_ptr<reward::Evaluator> evaluator_;
  bool compile_only_;
};

// Starts the Evaluator. std::invalid_argument naming the option for a missing worker or bad counts.
std::shared_ptr<EvaluatorBackend> make_evaluator_backend(const EvaluatorBackendOptions& options);

}  // namespace sparserl::env
