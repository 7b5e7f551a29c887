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
// With a learned cost model (SearchOptions::model, fitted on the measurement store) the search
// spends its budget by the matrix: the points are ordered by the learned prediction, and the
// budget shrinks where the model knows the matrix's neighbourhood and is confident of its
// favourite, and grows where the matrix is far from anything measured; with SearchOptions::halving
// the screened candidates are halved round by round (repetitions doubling) down to the finalists.
// With SearchOptions::refine the first screening round is followed by the next points of its two
// fastest design families (the model ranks families better than a family's own parameters).
// Candidates of one format are evaluated together, so the GPU worker converts the matrix once.
// Without a GPU the search still runs: every chosen candidate goes through the static checks and
// NVRTC, nothing is ranked by time, the best program is the cost model's favourite among those that
// compiled, and the result says that timing needs a GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sparserl/datasets/matrix_store.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/kernels/learned_cost_model.hpp"
#include "sparserl/reward/eval_result.hpp"
#include "sparserl/reward/protocol.hpp"

namespace sparserl::kernels {

class CostModel;  // cost_model.hpp

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
  // The learned cost model (nullptr: the analytic model alone, the budget as given).
  std::shared_ptr<const LearnedCostModel> model;
  // With a model: the budget by the matrix (LearnedCostModel::budget_for).
  bool adaptive_budget = true;
  // Successive halving: after screening, the faster half of the usable candidates is screened
  // again with twice the repetitions (a new seed) until at most 2 x finalists remain; then the
  // finalists get the full protocol. false: screening, then the finalists (two rounds).
  bool halving = false;
  // Refinement: after the first screening round, up to this many more points of the two design
  // families whose screened programs were fastest (their next points in the predicted order,
  // the two families in turn), screened the same way, so that a family's other parameters are
  // measured where the model ranks them poorly (0: none).
  int refine = 0;
};

// One measured candidate.
struct CandidateResult {
  DesignPoint point;
  std::string program;      // the rendered text that was evaluated
  int round = 1;            // 1: screening (or the only round), 2: finalists
  std::string protocol;     // "screen" or "full"
  double predicted_us = 0;  // the cost model's estimate
  // The learned model's estimate that ordered it (NaN without a learned model).
  double learned_us = std::numeric_limits<double>::quiet_NaN();
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
  int budget = 0;                // the first round's budget for this task
  // How the candidates were chosen: "analytic", or the learned model's size, the matrix's
  // familiarity and the budget it led to.
  std::string strategy;
  double familiarity = 0;   // LearnedCostModel::familiarity (0 without a model)
  double wall_seconds = 0;  // the whole search: matrix load, cost models, every evaluation
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
  // search() for every task, up to `parallel` at once on threads of its own (1 or less: one after
  // another), the results in the tasks' order; `on_done` (when given) is called once per finished
  // task, from one thread at a time, in the order they finish. A search's GPU pass measures one
  // program at a time, so several searches keep several GPU workers busy and overlap one matrix's
  // loading or generation and compiles with another's timing. The first search that throws stops
  // the others from starting and its exception is rethrown once the running ones have finished.
  // Needs an evaluator and a store that may be used from several threads (EvaluatorBackend and
  // MatrixStore may).
  std::vector<SearchResult> search_all(const std::vector<datasets::Task>& tasks, int parallel,
                                       const std::function<void(const SearchResult&)>& on_done = {});

  [[nodiscard]] const SearchOptions& options() const { return options_; }
  // Replaces the learned cost model (nullptr: the analytic model alone), e.g. refitted on a
  // measurement store that grew.
  void set_model(std::shared_ptr<const LearnedCostModel> model) {
    options_.model = std::move(model);
  }

 private:
  struct Plan;
  // A point to measure with the predictions that chose it.
  struct Pick {
    DesignPoint point;
    double analytic_us = 0;
    double learned_us = 0;
  };
  Plan plan(const datasets::Task& task, const DesignSpace& space, CostModel& model,
            SearchResult& r) const;
  // Evaluates the picks (grouped by format) and appends their results; their indices in
  // r.candidates.
  std::vector<std::size_t> measure(SearchResult& r, const std::vector<Pick>& picks, int round,
                                   const reward::GpuProtocol& protocol, const std::string& name);
  void screen_and_finish(SearchResult& r, const std::vector<Pick>& chosen,
                         const std::vector<Pick>& pool);
  std::vector<Pick> refinements(const SearchResult& r, const std::vector<std::size_t>& screened,
                                const std::vector<Pick>& pool) const;
  void log(const std::string& line) const;

  CandidateEvaluator& evaluator_;
  datasets::MatrixStore& store_;
  SearchOptions options_;
  mutable std::mutex log_mutex_;  // options_.log one line at a time (search_all's threads)
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
