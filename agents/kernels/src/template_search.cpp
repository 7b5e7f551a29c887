// The template search (template_search.hpp): pruning, the cost models' candidate order and the
// budget by the matrix, one exhaustive round or screening (+ its refinement, + halving rounds) +
// finalists, and the template-search agent's per-task cache.
#include "sparserl/kernels/template_search.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>

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

// The usable candidates among `indices`, fastest first.
std::vector<std::size_t> by_time(const std::vector<CandidateResult>& candidates,
                                 const std::vector<std::size_t>& indices) {
  std::vector<std::size_t> ok;
  for (std::size_t i : indices) {
    if (usable(candidates[i])) ok.push_back(i);
  }
  std::stable_sort(ok.begin(), ok.end(), [&](std::size_t a, std::size_t b) {
    return candidates[a].result.timing.median_us < candidates[b].result.timing.median_us;
  });
  return ok;
}

// The log line of a finished search.
std::string summary_line(const SearchResult& r) {
  std::size_t correct = 0;
  for (const CandidateResult& c : r.candidates) correct += c.result.correct ? 1 : 0;
  std::string line = "search " + r.task.str() + ": " + std::to_string(r.candidates.size()) +
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
  return line + "; " + fixed(r.wall_seconds, 1) + " s; " + r.strategy;
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
  if (!options_.log) return;
  const std::lock_guard<std::mutex> lock(log_mutex_);
  options_.log(line);
}

// The candidates of a task in the order they are worth measuring, with their predictions.
struct TemplateSearch::Plan {
  std::vector<DesignPoint> ranked;  // every feasible pruned point, best first
  std::vector<double> analytic;     // their analytic predictions
  std::vector<double> learned;      // their learned predictions (NaN without a model)
  int budget = 0;                   // the first round's budget for this task
};

TemplateSearch::Plan TemplateSearch::plan(const datasets::Task& task, const DesignSpace& space,
                                          CostModel& model, SearchResult& r) const {
  const std::int64_t k = task.op == Op::spmm ? task.k : 1;
  const std::vector<DesignPoint> pruned = space.pruned(model.features(), k);
  Plan p;
  p.ranked = choose_candidates(pruned, model, 0, &p.analytic);
  p.learned.assign(p.ranked.size(), std::numeric_limits<double>::quiet_NaN());
  p.budget = options_.budget;
  r.strategy = "analytic";
  if (!options_.model) return p;
  const LearnedCostModel& learned = *options_.model;
  std::vector<LearnedPrediction> predictions;
  std::vector<double> times;
  for (std::size_t i = 0; i < p.ranked.size(); ++i) {
    predictions.push_back(learned.predict(p.ranked[i], model.features(), k, p.analytic[i]));
    times.push_back(predictions.back().us);
  }
  r.familiarity = learned.familiarity(model.features(), task.op, task.dtype, k);
  if (options_.adaptive_budget) {
    p.budget = learned.budget_for(options_.budget, options_.finalists, r.familiarity, p.ranked,
                                  predictions);
  }
  // The learned order: the best predicted point of every family within the margin first, then the
  // rest by prediction (choose_candidates' rule on the learned times).
  const std::vector<std::size_t> order = order_candidates(p.ranked, times, 0);
  Plan out;
  out.budget = p.budget;
  for (std::size_t i : order) {
    out.ranked.push_back(p.ranked[i]);
    out.analytic.push_back(p.analytic[i]);
    out.learned.push_back(times[i]);
  }
  r.strategy = learned.describe() + "; familiarity " + fixed(r.familiarity, 2) + ", budget " +
               std::to_string(out.budget);
  return out;
}

std::vector<std::size_t> TemplateSearch::measure(SearchResult& r, const std::vector<Pick>& picks,
                                                 int round, const reward::GpuProtocol& protocol,
                                                 const std::string& name) {
  // Grouped by format, so the GPU worker converts the matrix once per format.
  std::vector<std::size_t> order(picks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return picks[a].point.format().str() < picks[b].point.format().str();
  });
  std::vector<std::string> programs;
  for (std::size_t i : order) programs.push_back(render_program(picks[i].point));
  const std::vector<reward::EvalResult> results = evaluator_.evaluate(r.task, programs, protocol);
  if (results.size() != programs.size()) {
    throw std::logic_error("template search: the evaluator answered " +
                           std::to_string(results.size()) + " results for " +
                           std::to_string(programs.size()) + " programs");
  }
  std::vector<std::size_t> indices;
  for (std::size_t j = 0; j < order.size(); ++j) {
    CandidateResult c;
    c.point = picks[order[j]].point;
    c.program = programs[j];
    c.round = round;
    c.protocol = name;
    c.predicted_us = picks[order[j]].analytic_us;
    c.learned_us = picks[order[j]].learned_us;
    c.result = results[j];
    indices.push_back(r.candidates.size());
    r.candidates.push_back(std::move(c));
  }
  return indices;
}

// The refinement round's picks: the unmeasured points of the two fastest screened families, in
// the pool's (predicted) order, the families in turn, options_.refine at most.
std::vector<TemplateSearch::Pick> TemplateSearch::refinements(
    const SearchResult& r, const std::vector<std::size_t>& screened,
    const std::vector<Pick>& pool) const {
  std::vector<std::string> families;
  for (std::size_t i : by_time(r.candidates, screened)) {
    const std::string& g = r.candidates[i].point.generator;
    if (families.size() < 2 && std::find(families.begin(), families.end(), g) == families.end()) {
      families.push_back(g);
    }
  }
  std::set<std::string> measured;
  for (const CandidateResult& c : r.candidates) measured.insert(c.point.id());
  std::vector<std::vector<const Pick*>> queues(families.size());
  for (const Pick& p : pool) {
    const auto f = std::find(families.begin(), families.end(), p.point.generator);
    if (f != families.end() && !measured.count(p.point.id())) {
      queues[static_cast<std::size_t>(f - families.begin())].push_back(&p);
    }
  }
  std::vector<Pick> out;
  for (std::size_t step = 0; out.size() < static_cast<std::size_t>(options_.refine); ++step) {
    bool any = false;
    for (const auto& queue : queues) {
      if (step < queue.size() && out.size() < static_cast<std::size_t>(options_.refine)) {
        out.push_back(*queue[step]);
        any = true;
      }
    }
    if (!any) break;
  }
  return out;
}

// Screening (+ its refinement), the halving rounds, the finalists (successive halving on the GPU).
void TemplateSearch::screen_and_finish(SearchResult& r, const std::vector<Pick>& chosen,
                                       const std::vector<Pick>& pool) {
  auto screened = measure(r, chosen, 1, options_.screen, "screen");
  if (options_.refine > 0) {
    const std::vector<Pick> more = refinements(r, screened, pool);
    if (!more.empty()) {
      const auto refined = measure(r, more, 1, options_.screen, "screen");
      screened.insert(screened.end(), refined.begin(), refined.end());
    }
  }
  const auto picks_of = [&](const std::vector<std::size_t>& indices) {
    std::vector<Pick> picks;
    for (std::size_t i : indices) {
      const CandidateResult& c = r.candidates[i];
      picks.push_back({c.point, c.predicted_us, c.learned_us});
    }
    return picks;
  };
  const auto finalists = static_cast<std::size_t>(options_.finalists);
  std::vector<std::size_t> survivors = by_time(r.candidates, screened);
  std::vector<std::size_t> last_screen = screened;
  int round = 2;
  reward::GpuProtocol protocol = options_.screen;
  while (options_.halving && survivors.size() > 2 * finalists) {
    survivors.resize(std::max(finalists, (survivors.size() + 1) / 2));
    protocol.timed_runs *= 2;
    protocol.seed += 1;
    last_screen = measure(r, picks_of(survivors), round++, protocol, "screen");
    survivors = by_time(r.candidates, last_screen);
  }
  if (survivors.size() > finalists) survivors.resize(finalists);
  if (!survivors.empty()) {
    const auto finals = measure(r, picks_of(survivors), round, options_.full, "full");
    r.best = fastest(r.candidates, finals);
  }
  // A finalist that failed its full run (a wrong answer on another input) is no winner; fall back
  // to the last screening round only if every finalist failed.
  if (!r.best) r.best = fastest(r.candidates, last_screen);
}

SearchResult TemplateSearch::search(const datasets::Task& task) {
  const auto started = std::chrono::steady_clock::now();
  SearchResult r;
  r.task = task;
  const auto matrix = store_.load(task.uri);
  const std::int64_t k = task.op == Op::spmm ? task.k : 1;
  const DesignSpace space(task.op, task.dtype);
  CostModel model(*matrix, task.op, task.dtype, k);
  const Plan plan_ = plan(task, space, model, r);
  r.features = model.features();
  r.space_size = static_cast<std::int64_t>(space.size());
  r.pruned_size = static_cast<std::int64_t>(plan_.ranked.size());
  r.budget = plan_.budget;
  r.gpu = evaluator_.gpu_available();
  r.device = evaluator_.device();
  std::vector<Pick> picks;
  for (std::size_t i = 0; i < plan_.ranked.size(); ++i) {
    picks.push_back({plan_.ranked[i], plan_.analytic[i], plan_.learned[i]});
  }

  const auto budget = static_cast<std::size_t>(plan_.budget);
  if (!r.gpu) {
    picks.resize(std::min(budget, picks.size()));
    const auto indices = measure(r, picks, 1, options_.full, "compile");
    // No timing: the predicted order decides among the programs that compiled.
    for (std::size_t i = 0; i < picks.size() && !r.best; ++i) {
      for (std::size_t idx : indices) {
        if (r.candidates[idx].point == picks[i].point && r.candidates[idx].result.compiled) {
          r.best = idx;
        }
      }
    }
    r.note =
        "compile-only: timing needs a GPU; nothing was ranked by time, the best program is "
        "the cost model's favourite among those that compiled";
  } else if (picks.size() <= budget) {
    r.exhaustive = true;
    r.best = fastest(r.candidates, measure(r, picks, 1, options_.full, "full"));
  } else {
    std::vector<Pick> chosen;
    if (options_.model) {
      // The plan's order is already the learned family-first order.
      chosen.assign(picks.begin(), picks.begin() + static_cast<std::ptrdiff_t>(budget));
    } else {
      std::vector<double> estimates;
      for (const DesignPoint& p :
           choose_candidates(space.pruned(r.features, k), model, options_.budget, &estimates)) {
        chosen.push_back({p, estimates[chosen.size()], std::numeric_limits<double>::quiet_NaN()});
      }
    }
    screen_and_finish(r, chosen, picks);  // picks: every feasible point, the refinement's pool
  }
  r.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  log(summary_line(r));
  return r;
}

std::vector<SearchResult> TemplateSearch::search_all(
    const std::vector<datasets::Task>& tasks, int parallel,
    const std::function<void(const SearchResult&)>& on_done) {
  std::vector<SearchResult> results(tasks.size());
  std::atomic<std::size_t> next{0};
  std::mutex done_mutex;
  std::exception_ptr failure;
  const auto work = [&] {
    for (;;) {
      {
        const std::lock_guard<std::mutex> lock(done_mutex);
        if (failure) return;
      }
      const std::size_t i = next++;
      if (i >= tasks.size()) return;
      try {
        SearchResult r = search(tasks[i]);
        const std::lock_guard<std::mutex> lock(done_mutex);
        results[i] = std::move(r);
        if (on_done) on_done(results[i]);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(done_mutex);
        if (!failure) failure = std::current_exception();
        return;
      }
    }
  };
  // One search at a time runs on this thread.
  const std::size_t threads =
      std::min(static_cast<std::size_t>(std::max(1, parallel)), tasks.size());
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(work);
    for (std::thread& t : pool) t.join();
  }
  if (failure) std::rethrow_exception(failure);
  return results;
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
