// The template search: per task, measure design-space programs with the evaluator and keep the
// fastest correct one. It is the strongest non-learning baseline, the teacher of the SFT pairs and
// the source of the pretraining corpus, so it keeps every measured result.
//
// Strategy (budget B = most programs measured per task):
//   1. the design space of the task's (op, dtype), pruned by the matrix's features
//      (DesignSpace::pruned) and by the cost model (formats that would pad more than 3x or exceed
//      the evaluator's size cap are dropped);
//   2. when at most B points remain: all of them, one round, the full protocol (exhaustive);
//   3. otherwise successive halving: B points chosen by the cost model (the best of each design
//      family first) measured with a cheap screening protocol (few repetitions, one random input),
//      then the fastest `finalists` correct ones measured again with the full protocol; the best is
//      the fastest correct finalist. Every round's figures are kept.
// Candidates of one format are evaluated together, so the GPU worker converts the matrix once.
// Without a GPU the search still runs: every chosen candidate goes through the static checks and
// NVRTC, nothing is ranked by time, the best program is the cost model's favourite among those that
// compiled, and the result says that timing needs a GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/reward/eval_result.hpp"
#include "sparserl/reward/protocol.hpp"

namespace sparserl::kernels {

// What the search needs from the evaluator.
class CandidateEvaluator {
 public:
  virtual ~CandidateEvaluator() = default;
  // Whether programs can be run and timed (false: compile-only evaluations).
  virtual bool gpu_available() = 0;
  // The GPU's name ("" without one).
  virtual std::string device() { return {}; }
  // Evaluates every program on the task under the protocol and returns one result per program, in
  // order. Never throws for anything a program does (failures are results); may throw for a task
  // whose matrix cannot be loaded. Implementations should compile in parallel and evaluate the
  // programs on the GPU in the order given.
  virtual std::vector<reward::EvalResult> evaluate(const datasets::Task& task,
                                                   const std::vector<std::string>& programs,
                                                   const reward::GpuProtocol& protocol) = 0;
};

struct SearchOptions {
  int budget = 16;    // programs measured per task in the first round, at most
  int finalists = 4;  // re-measured with the full protocol after screening
  // Screening: a cheap protocol that still checks correctness on a fresh input.
  reward::GpuProtocol screen{.seed = 1,
                             .random_inputs = 1,
                             .warmup_runs = 2,
                             .timed_runs = 10,
                             .flush_l2 = true,
                             .time = true};
  // The protocol of the reported figures (the evaluator's defaults).
  reward::GpuProtocol full{.seed = 2,
                           .random_inputs = 3,
                           .warmup_runs = 5,
                           .timed_runs = 50,
                           .flush_l2 = true,
                           .time = true};
  // Optional progress lines ("task 3/40 ..."); empty: silent.
  std::function<void(const std::string&)> log;
};

// One measured candidate.
struct CandidateResult {
  DesignPoint point;
  std::string program;      // the rendered text that was evaluated
  int round = 1;            // 1: screening (or the only round), 2: finalists
  std::string protocol;     // "screen" or "full"
  double predicted_us = 0;  // the cost model's estimate
  reward::EvalResult result;

  [[nodiscard]] bool correct() const { return result.correct; }
  [[nodiscard]] bool timed() const { return result.timed; }
};

struct SearchResult {
  datasets::Task task;
  datasets::MatrixFeatures features;  // of the task's matrix
  bool gpu = false;                   // timings were measured
  std::string device;
  std::string note;              // e.g. "compile-only: timing needs a GPU"
  std::int64_t space_size = 0;   // points of the (op, dtype) space
  std::int64_t pruned_size = 0;  // after feature and cost-model pruning
  bool exhaustive = false;       // every remaining point was measured with the full protocol
  std::vector<CandidateResult> candidates;  // every evaluation, in evaluation order
  std::optional<std::size_t> best;          // index into candidates

  [[nodiscard]] const CandidateResult* best_candidate() const {
    return best ? &candidates[*best] : nullptr;
  }
  // The best program's text ("" when nothing compiled).
  [[nodiscard]] std::string best_program() const;
  // The cuSPARSE median of the best candidate's full-protocol run (0 without a GPU).
  [[nodiscard]] double baseline_us() const;
};

class TemplateSearch {
 public:
  // The store loads each task's matrix for the features and the cost model; the evaluator measures.
  TemplateSearch(CandidateEvaluator& evaluator, datasets::MatrixStore& store,
                 SearchOptions options = {});

  // Throws for a task whose matrix cannot be loaded (datasets::MatrixNotFound, InvalidUri, ...).
  SearchResult search(const datasets::Task& task);

  [[nodiscard]] const SearchOptions& options() const { return options_; }

 private:
  void log(const std::string& line) const;

  CandidateEvaluator& evaluator_;
  datasets::MatrixStore& store_;
  SearchOptions options_;
};

// The "template search" baseline as an agent: act(task) returns the best program the search finds
// within its budget, cached per task, so a benchmark table can list it beside the learned agents.
class TemplateSearchAgent {
 public:
  TemplateSearchAgent(CandidateEvaluator& evaluator, datasets::MatrixStore& store,
                      SearchOptions options = {});

  [[nodiscard]] std::string name() const { return "template_search"; }
  // The best program for the task (searching on the first call for it). Throws std::runtime_error
  // naming the task when no candidate compiled.
  std::string act(const datasets::Task& task);
  // The full search result behind act(task), or nullptr if the task was not searched yet.
  [[nodiscard]] const SearchResult* result(const datasets::Task& task) const;

 private:
  TemplateSearch search_;
  mutable std::mutex mutex_;
  std::map<std::string, SearchResult> cache_;  // by Task::str()
};

}  // namespace sparserl::kernels
