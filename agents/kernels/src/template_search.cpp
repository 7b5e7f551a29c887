// The template search (template_search.hpp): pruning, the cost model's candidate order, one
// exhaustive round or screening + finalists, and the template-search agent's per-task cache.
#include "sparserl/kernels/template_search.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "sparserl/datasets/text.hpp"
#include "sparserl/kernels/cost_model.hpp"

namespace sparserl::kernels {
namespace {

using datasets::fixed;

bool usable(const CandidateResult& c) { return c.result.correct && c.result.timed; }

// The index of the fastest correct, timed candidate among `indices`.
std::optional<std::size_t> fastest(const std::vector<CandidateResult>& candidates,
                                   const std::vector<std::size_t>& indices) {
  std::optional<std::size_t> best;
  for (std::size_t i : indices) {
    if (!usable(candidates[i])) continue;
    if (!best ||
        candidates[i].result.timing.median_us < candidates[*best].result.timing.median_us) {
      best = i;
    }
  }
  return best;
}

}  // namespace

std::string SearchResult::best_program() const {
  return best ? candidates[*best].program : std::string();
}

double SearchResult::baseline_us() const {
  return best && candidates[*best].result.timed ? candidates[*best].result.timing.baseline_median_us
                                                : 0.0;
}

TemplateSearch::TemplateSearch(CandidateEvaluator& evaluator, datasets::MatrixStore& store,
                               SearchOptions options)
    : evaluator_(evaluator), store_(store), options_(std::move(options)) {
  if (options_.budget < 1) throw std::invalid_argument("template search: budget must be >= 1");
  if (options_.finalists < 1)
    throw std::invalid_argument("template search: finalists must be >= 1");
}

void TemplateSearch::log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

SearchResult TemplateSearch::search(const datasets::Task& task) {
  SearchResult r;
  r.task = task;
  const auto matrix = store_.load(task.uri);
  const std::int64_t k = task.op == Op::spmm ? task.k : 1;
  const DesignSpace space(task.op, task.dtype);
  CostModel model(*matrix, task.op, task.dtype, k);
  const std::vector<DesignPoint> pruned = space.pruned(model.features(), k);
  std::vector<double> predicted;
  const std::vector<DesignPoint> ranked = choose_candidates(pruned, model, 0, &predicted);
  r.features = model.features();
  r.space_size = static_cast<std::int64_t>(space.size());
  r.pruned_size = static_cast<std::int64_t>(ranked.size());
  r.gpu = evaluator_.gpu_available();
  r.device = evaluator_.device();

  // Evaluates points (grouped by format, so the GPU worker converts the matrix once per format) and
  // appends their results; returns their indices in r.candidates.
  auto measure = [&](const std::vector<DesignPoint>& points, const std::vector<double>& estimates,
                     int round, const reward::GpuProtocol& protocol, const std::string& name) {
    std::vector<std::size_t> order(points.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return points[a].format().str() < points[b].format().str();
    });
    std::vector<std::string> programs;
    for (std::size_t i : order) programs.push_back(render_program(points[i]));
    const std::vector<reward::EvalResult> results = evaluator_.evaluate(task, programs, protocol);
    if (results.size() != programs.size()) {
      throw std::logic_error("template search: the evaluator answered " +
                             std::to_string(results.size()) + " results for " +
                             std::to_string(programs.size()) + " programs");
    }
    std::vector<std::size_t> indices;
    for (std::size_t j = 0; j < order.size(); ++j) {
      CandidateResult c;
      c.point = points[order[j]];
      c.program = programs[j];
      c.round = round;
      c.protocol = name;
      c.predicted_us = estimates[order[j]];
      c.result = results[j];
      indices.push_back(r.candidates.size());
      r.candidates.push_back(std::move(c));
    }
    return indices;
  };

  const auto budget = static_cast<std::size_t>(options_.budget);
  if (!r.gpu) {
    const std::size_t n = std::min(budget, ranked.size());
    const std::vector<DesignPoint> chosen(ranked.begin(), ranked.begin() + n);
    const std::vector<double> estimates(predicted.begin(), predicted.begin() + n);
    const auto indices = measure(chosen, estimates, 1, options_.full, "compile");
    // No timing: the cost model's order decides among the programs that compiled.
    for (std::size_t i = 0; i < chosen.size() && !r.best; ++i) {
      for (std::size_t idx : indices) {
        if (r.candidates[idx].point == chosen[i] && r.candidates[idx].result.compiled) r.best = idx;
      }
    }
    r.note =
        "compile-only: timing needs a GPU; nothing was ranked by time, the best program is "
        "the cost model's favourite among those that compiled";
  } else if (ranked.size() <= budget) {
    r.exhaustive = true;
    const auto indices = measure(ranked, predicted, 1, options_.full, "full");
    r.best = fastest(r.candidates, indices);
  } else {
    std::vector<double> estimates;
    const std::vector<DesignPoint> chosen =
        choose_candidates(pruned, model, options_.budget, &estimates);
    const auto screened = measure(chosen, estimates, 1, options_.screen, "screen");
    std::vector<std::size_t> ok;
    for (std::size_t i : screened) {
      if (usable(r.candidates[i])) ok.push_back(i);
    }
    std::stable_sort(ok.begin(), ok.end(), [&](std::size_t a, std::size_t b) {
      return r.candidates[a].result.timing.median_us < r.candidates[b].result.timing.median_us;
    });
    if (ok.size() > static_cast<std::size_t>(options_.finalists)) ok.resize(options_.finalists);
    std::vector<DesignPoint> finalists;
    std::vector<double> finalist_estimates;
    for (std::size_t i : ok) {
      finalists.push_back(r.candidates[i].point);
      finalist_estimates.push_back(r.candidates[i].predicted_us);
    }
    if (!finalists.empty()) {
      const auto finals = measure(finalists, finalist_estimates, 2, options_.full, "full");
      r.best = fastest(r.candidates, finals);
    }
    // A finalist that failed its full run (a wrong answer on another input) is no winner; fall
    // back to the screening round only if every finalist failed.
    if (!r.best) r.best = fastest(r.candidates, screened);
  }

  std::size_t correct = 0;
  for (const CandidateResult& c : r.candidates) correct += c.result.correct ? 1 : 0;
  std::string line = "search " + task.str() + ": " + std::to_string(r.candidates.size()) +
                     " evaluations of " + std::to_string(r.pruned_size) + " candidates (space " +
                     std::to_string(r.space_size) + "), " + std::to_string(correct) + " correct";
  if (const CandidateResult* b = r.best_candidate()) {
    line += "; best " + b->point.id();
    if (b->result.timed) {
      line += " " + fixed(b->result.timing.median_us, 2) + " us (" +
              fixed(b->result.timing.speedup, 2) + "x cuSPARSE)";
    }
  } else {
    line += "; no usable candidate";
  }
  log(line);
  return r;
}

TemplateSearchAgent::TemplateSearchAgent(CandidateEvaluator& evaluator,
                                         datasets::MatrixStore& store, SearchOptions options)
    : search_(evaluator, store, std::move(options)) {}

std::string TemplateSearchAgent::act(const datasets::Task& task) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cache_.find(task.str());
  if (it == cache_.end()) it = cache_.emplace(task.str(), search_.search(task)).first;
  const std::string program = it->second.best_program();
  if (program.empty()) {
    throw std::runtime_error("template search: no design-space program compiled for " + task.str());
  }
  return program;
}

const SearchResult* TemplateSearchAgent::result(const datasets::Task& task) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = cache_.find(task.str());
  return it == cache_.end() ? nullptr : &it->second;
}

}  // namespace sparserl::kernels
