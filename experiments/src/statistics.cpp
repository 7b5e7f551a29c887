// pass@k, the interquartile mean, stratified bootstrap intervals and the probability of
// improvement (statistics.hpp).
//
// A bootstrap replicate redraws every score of the table, so the work per replicate is the
// table's size. The replicates are computed on ranks: the scores are sorted once, a replicate only
// counts how often each rank was drawn, and a statistic walks the ranks in ascending order. That
// makes every replicate linear in the table's size (no sort per replicate) and its sums run in one
// fixed order, so the same draws give the same bits everywhere.
#include "sparserl/experiments/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/datasets/random.hpp"

namespace sparserl::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Independent streams of one seed: the table of stratified_bootstrap, and X and Y of the
// probability of improvement (paired draws use X's stream for both).
constexpr std::uint64_t kStreamScores = 0;
constexpr std::uint64_t kStreamX = 1;
constexpr std::uint64_t kStreamY = 2;

bool all_finite(std::span<const double> values) {
  return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

// The table's shape (runs, tasks), or std::invalid_argument naming what is wrong with it.
std::pair<std::size_t, std::size_t> table_shape(const ScoreTable& scores, const char* name) {
  if (scores.empty()) throw std::invalid_argument(std::string(name) + ": no runs");
  const std::size_t tasks = scores.front().size();
  if (tasks == 0) throw std::invalid_argument(std::string(name) + ": no tasks");
  for (std::size_t r = 1; r < scores.size(); ++r) {
    if (scores[r].size() != tasks) {
      throw std::invalid_argument(std::string(name) + ": run " + std::to_string(r) + " holds " +
                                  std::to_string(scores[r].size()) + " tasks, run 0 holds " +
                                  std::to_string(tasks) + " (a [run][task] table is rectangular)");
    }
  }
  return {scores.size(), tasks};
}

void check_options(const BootstrapOptions& options) {
  if (options.replicates < 1)
    throw std::invalid_argument("bootstrap: replicates must be at least 1, got " +
                                std::to_string(options.replicates));
  if (!(options.confidence > 0 && options.confidence < 1))
    throw std::invalid_argument("bootstrap: confidence must lie in (0, 1), got " +
                                std::to_string(options.confidence));
}

// The scores of a table sorted once, and each (run, task)'s rank among them.
struct RankedScores {
  std::vector<double> sorted;                  // ascending
  std::vector<double> logs;                    // log of each sorted value (NaN where <= 0)
  std::vector<std::vector<std::size_t>> rank;  // rank[run][task]: index into `sorted`
  bool positive = true;                        // every score > 0 (the geometric mean exists)
};

RankedScores rank_scores(const ScoreTable& scores, std::size_t runs, std::size_t tasks) {
  std::vector<std::pair<double, std::size_t>> flat;  // (score, run * tasks + task)
  flat.reserve(runs * tasks);
  for (std::size_t r = 0; r < runs; ++r)
    for (std::size_t t = 0; t < tasks; ++t) flat.emplace_back(scores[r][t], r * tasks + t);
  // Ties broken by position, so the ranks do not depend on the sort's implementation.
  std::sort(flat.begin(), flat.end());
  RankedScores out;
  out.rank.assign(runs, std::vector<std::size_t>(tasks));
  out.sorted.reserve(flat.size());
  out.logs.reserve(flat.size());
  for (std::size_t i = 0; i < flat.size(); ++i) {
    const double v = flat[i].first;
    out.sorted.push_back(v);
    out.logs.push_back(v > 0 ? std::log(v) : kNaN);
    out.positive = out.positive && v > 0;
    out.rank[flat[i].second / tasks][flat[i].second % tasks] = i;
  }
  return out;
}

// The statistic of a multiset of scores given as a count per rank (counts sum to `total`).
double statistic_of_counts(Statistic statistic, const RankedScores& ranked,
                           const std::vector<std::uint32_t>& counts, std::size_t total) {
  const std::size_t n = ranked.sorted.size();
  switch (statistic) {
    case Statistic::mean: {
      double sum = 0;
      for (std::size_t i = 0; i < n; ++i) sum += ranked.sorted[i] * counts[i];
      return sum / static_cast<double>(total);
    }
    case Statistic::geometric_mean: {
      if (!ranked.positive) return kNaN;
      double sum = 0;
      for (std::size_t i = 0; i < n; ++i) sum += ranked.logs[i] * counts[i];
      return std::exp(sum / static_cast<double>(total));
    }
    case Statistic::interquartile_mean: {
      // The kept positions of the sorted multiset are [cut, total - cut).
      const std::size_t cut = total / 4;
      const std::size_t end = total - cut;
      std::size_t pos = 0;
      double sum = 0;
      for (std::size_t i = 0; i < n && pos < end; ++i) {
        const std::size_t next = pos + counts[i];
        const std::size_t from = std::max(pos, cut);
        const std::size_t to = std::min(next, end);
        if (to > from) sum += ranked.sorted[i] * static_cast<double>(to - from);
        pos = next;
      }
      return sum / static_cast<double>(end - cut);
    }
  }
  return kNaN;
}

// The percentile interval of the replicates' statistics around `point`.
Interval percentile_interval(double point, std::vector<double> replicates, double confidence) {
  Interval out;
  out.point = point;
  replicates.erase(std::remove_if(replicates.begin(), replicates.end(),
                                  [](double v) { return !std::isfinite(v); }),
                   replicates.end());
  if (replicates.empty()) {
    out.low = out.high = kNaN;
    return out;
  }
  std::sort(replicates.begin(), replicates.end());
  const double tail = (1 - confidence) / 2;
  out.low = quantile_of_sorted(replicates, tail);
  out.high = quantile_of_sorted(replicates, 1 - tail);
  return out;
}

// Draws, for each task, `runs` run indices with replacement, and adds each drawn (run, task) to
// `counts` through `rank_of` (a function of (run, task)).
template <typename RankOf>
void draw_stratified(datasets::Rng& rng, std::size_t runs, std::size_t tasks,
                     std::vector<std::uint32_t>& counts, RankOf rank_of) {
  for (std::size_t t = 0; t < tasks; ++t) {
    for (std::size_t k = 0; k < runs; ++k) {
      const auto run = static_cast<std::size_t>(rng.below(runs));
      ++counts[rank_of(run, t)];
    }
  }
}

// The Mann-Whitney probabilities of one task: wins[i * ny + j] = 1 when X's run i beats Y's run j,
// 1/2 on a tie, 0 otherwise.
std::vector<std::vector<double>> pairwise_wins(const ScoreTable& x, const ScoreTable& y,
                                               std::size_t tasks) {
  const std::size_t nx = x.size(), ny = y.size();
  std::vector<std::vector<double>> wins(tasks, std::vector<double>(nx * ny));
  for (std::size_t t = 0; t < tasks; ++t) {
    for (std::size_t i = 0; i < nx; ++i) {
      for (std::size_t j = 0; j < ny; ++j) {
        const double a = x[i][t], b = y[j][t];
        wins[t][i * ny + j] = a > b ? 1.0 : (a == b ? 0.5 : 0.0);
      }
    }
  }
  return wins;
}

// The mean over tasks of the Mann-Whitney probability with the runs weighted by how often they
// were drawn (cx[t * nx + i], cy[t * ny + j]; all ones for the plain estimate).
double weighted_improvement(const std::vector<std::vector<double>>& wins,
                            const std::vector<std::uint32_t>& cx,
                            const std::vector<std::uint32_t>& cy, std::size_t nx, std::size_t ny) {
  double total = 0;
  const std::size_t tasks = wins.size();
  for (std::size_t t = 0; t < tasks; ++t) {
    double sum = 0;
    for (std::size_t i = 0; i < nx; ++i) {
      const std::uint32_t wi = cx[t * nx + i];
      if (wi == 0) continue;
      double row = 0;
      for (std::size_t j = 0; j < ny; ++j) row += wins[t][i * ny + j] * cy[t * ny + j];
      sum += row * wi;
    }
    total += sum / static_cast<double>(nx * ny);
  }
  return total / static_cast<double>(tasks);
}

}  // namespace

double pass_at_k(std::int64_t n, std::int64_t c, std::int64_t k) {
  if (n < 0 || c < 0 || k < 0) {
    throw std::invalid_argument(
        "pass@k: n, c and k must not be negative (n = " + std::to_string(n) +
        ", c = " + std::to_string(c) + ", k = " + std::to_string(k) + ")");
  }
  if (k < 1) throw std::invalid_argument("pass@k: k must be at least 1, got " + std::to_string(k));
  if (k > n) {
    throw std::invalid_argument("pass@k: k = " + std::to_string(k) +
                                " exceeds the n = " + std::to_string(n) + " programs drawn");
  }
  if (c > n) {
    throw std::invalid_argument("pass@k: c = " + std::to_string(c) +
                                " correct programs exceed the n = " + std::to_string(n) + " drawn");
  }
  // Every k-subset holds a correct program once fewer than k are wrong.
  if (n - c < k) return 1.0;
  // C(n-c, k) / C(n, k) = prod_{i = n-c+1}^{n} (1 - k / i): no factorials, no overflow.
  double miss = 1.0;
  for (std::int64_t i = n - c + 1; i <= n; ++i)
    miss *= 1.0 - static_cast<double>(k) / static_cast<double>(i);
  return 1.0 - miss;
}

double interquartile_mean(std::span<const double> values) {
  if (values.empty() || !all_finite(values)) return kNaN;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  const std::size_t cut = v.size() / 4;
  double sum = 0;
  for (std::size_t i = cut; i < v.size() - cut; ++i) sum += v[i];
  return sum / static_cast<double>(v.size() - 2 * cut);
}

double arithmetic_mean(std::span<const double> values) {
  if (values.empty() || !all_finite(values)) return kNaN;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double geometric_mean(std::span<const double> values) {
  if (values.empty() || !all_finite(values)) return kNaN;
  double sum = 0;
  for (double v : values) {
    if (!(v > 0)) return kNaN;
    sum += std::log(v);
  }
  return std::exp(sum / static_cast<double>(values.size()));
}

std::string_view to_string(Statistic statistic) {
  static constexpr auto kNames = datasets::enum_names<Statistic::mean, Statistic::geometric_mean>(
      {"mean", "IQM", "geometric mean"});
  return kNames.name(statistic);
}

double aggregate(Statistic statistic, std::span<const double> values) {
  switch (statistic) {
    case Statistic::mean:
      return arithmetic_mean(values);
    case Statistic::interquartile_mean:
      return interquartile_mean(values);
    case Statistic::geometric_mean:
      return geometric_mean(values);
  }
  return kNaN;
}

double quantile_of_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return kNaN;
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Interval stratified_bootstrap(const ScoreTable& scores, Statistic statistic,
                              const BootstrapOptions& options) {
  const auto [runs, tasks] = table_shape(scores, "stratified bootstrap");
  check_options(options);
  for (const auto& run : scores) {
    if (!all_finite(run)) return {kNaN, kNaN, kNaN};
  }
  const RankedScores ranked = rank_scores(scores, runs, tasks);
  const std::size_t total = runs * tasks;
  const std::vector<std::uint32_t> ones(total, 1);
  const double point = statistic_of_counts(statistic, ranked, ones, total);

  datasets::Rng rng(options.seed, kStreamScores);
  std::vector<double> replicates;
  replicates.reserve(static_cast<std::size_t>(options.replicates));
  std::vector<std::uint32_t> counts(total);
  for (std::int64_t b = 0; b < options.replicates; ++b) {
    std::fill(counts.begin(), counts.end(), 0U);
    draw_stratified(rng, runs, tasks, counts,
                    [&](std::size_t run, std::size_t task) { return ranked.rank[run][task]; });
    replicates.push_back(statistic_of_counts(statistic, ranked, counts, total));
  }
  return percentile_interval(point, std::move(replicates), options.confidence);
}

double probability_of_improvement(const ScoreTable& x, const ScoreTable& y) {
  const auto [nx, tasks] = table_shape(x, "probability of improvement (X)");
  const auto [ny, tasks_y] = table_shape(y, "probability of improvement (Y)");
  if (tasks != tasks_y) {
    throw std::invalid_argument("probability of improvement: X holds " + std::to_string(tasks) +
                                " tasks, Y " + std::to_string(tasks_y));
  }
  for (const auto* table : {&x, &y}) {
    for (const auto& run : *table) {
      if (!all_finite(run)) return kNaN;
    }
  }
  const auto wins = pairwise_wins(x, y, tasks);
  return weighted_improvement(wins, std::vector<std::uint32_t>(tasks * nx, 1),
                              std::vector<std::uint32_t>(tasks * ny, 1), nx, ny);
}

Interval probability_of_improvement_interval(const ScoreTable& x, const ScoreTable& y,
                                             const BootstrapOptions& options, bool paired) {
  const double point = probability_of_improvement(x, y);  // checks the shapes
  check_options(options);
  const std::size_t nx = x.size(), ny = y.size(), tasks = x.front().size();
  if (paired && nx != ny) {
    throw std::invalid_argument("probability of improvement: paired runs need as many runs of X (" +
                                std::to_string(nx) + ") as of Y (" + std::to_string(ny) + ")");
  }
  if (!std::isfinite(point)) return {kNaN, kNaN, kNaN};
  const auto wins = pairwise_wins(x, y, tasks);
  datasets::Rng rng_x(options.seed, kStreamX);
  datasets::Rng rng_y(options.seed, kStreamY);
  std::vector<std::uint32_t> cx(tasks * nx), cy(tasks * ny);
  std::vector<double> replicates;
  replicates.reserve(static_cast<std::size_t>(options.replicates));
  for (std::int64_t b = 0; b < options.replicates; ++b) {
    std::fill(cx.begin(), cx.end(), 0U);
    std::fill(cy.begin(), cy.end(), 0U);
    for (std::size_t t = 0; t < tasks; ++t) {
      for (std::size_t k = 0; k < nx; ++k) {
        const auto i = static_cast<std::size_t>(rng_x.below(nx));
        ++cx[t * nx + i];
        if (paired) ++cy[t * ny + i];
      }
      if (paired) continue;
      for (std::size_t k = 0; k < ny; ++k) ++cy[t * ny + static_cast<std::size_t>(rng_y.below(ny))];
    }
    replicates.push_back(weighted_improvement(wins, cx, cy, nx, ny));
  }
  return percentile_interval(point, std::move(replicates), options.confidence);
}

}  // namespace sparserl::experiments
