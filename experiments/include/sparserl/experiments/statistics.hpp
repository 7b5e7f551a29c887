// The statistics that tell agents apart over a few seeds, after rliable (Agarwal et al., "Deep RL
// at the Edge of the Statistical Precipice", NeurIPS 2021) and Codex's pass@k (Chen et al. 2021):
//
//   pass_at_k               the unbiased estimator 1 - C(n-c, k) / C(n, k), as a stable product
//   interquartile_mean      the mean of the middle half: scipy's trim_mean(x, 0.25), dropping
//                           floor(n / 4) values from each end of the sorted values (rliable's IQM)
//   stratified_bootstrap    a percentile confidence interval of a statistic (IQM, mean, geometric
//                           mean) of scores laid out [run][task]: each replicate resamples, for
//                           every task on its own, the runs of that task with replacement
//                           (rliable's StratifiedBootstrap), so the interval reflects the spread
//                           over seeds and never mixes one matrix's score into another's
//   probability_of_improvement
//                           P(X > Y) on a random task: per task the Mann-Whitney probability over
//                           the runs of X and of Y (a tie counts 1/2), averaged over the tasks; its
//                           interval resamples X's and Y's runs independently per task (rliable's
//                           StratifiedIndependentBootstrap), or with the same draws for both when
//                           the runs are paired (run i of X and of Y measured together)
//
// Resampling draws from the project's Rng (datasets/random.hpp), never from std:: distributions,
// so a seed gives the same interval on every compiler and standard library. Every call with the
// same seed and the same [run][task] shape draws the same indices (common random numbers: two
// agents' intervals differ by their scores, not by their luck). Scores must be finite; a
// non-finite score makes the statistic NaN. Malformed input (no runs, ragged rows, k > n, ...) is
// std::invalid_argument saying what was wrong.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace sparserl::experiments {

// The unbiased estimate of pass@k from n programs of which c are correct: the probability that k
// programs drawn from the n without replacement hold at least one correct one,
// 1 - C(n-c, k) / C(n, k) = 1 - prod_{i = n-c+1}^{n} (1 - k / i). std::invalid_argument for a
// negative argument, k < 1, k > n or c > n.
double pass_at_k(std::int64_t n, std::int64_t c, std::int64_t k);

// The interquartile mean: sort, drop floor(n / 4) values from each end, average the rest (scipy
// trim_mean(x, 0.25); for n < 4 nothing is dropped and it is the mean). NaN when `values` is
// empty or holds a non-finite value.
double interquartile_mean(std::span<const double> values);
// The arithmetic mean (NaN when empty or not all finite).
double arithmetic_mean(std::span<const double> values);
// exp(mean(log x)) (NaN when empty, not all finite or not all positive).
double geometric_mean(std::span<const double> values);

enum class Statistic { mean, interquartile_mean, geometric_mean };
std::string_view to_string(Statistic statistic);  // "mean", "IQM", "geometric mean"
double aggregate(Statistic statistic, std::span<const double> values);

// Scores of one agent: scores[run][task], every run holding every task (runs: the agent's seeds,
// tasks: the matrices).
using ScoreTable = std::vector<std::vector<double>>;

struct BootstrapOptions {
  std::int64_t replicates = 2000;  // rliable's papers use 50,000; --reps sets it
  std::uint64_t seed = 0;
  double confidence = 0.95;  // a two-sided percentile interval at this level
};

// A point estimate with its confidence interval. NaN bounds: no interval (e.g. NaN scores).
struct Interval {
  double point = 0, low = 0, high = 0;
};

// The statistic of all scores (flattened over runs and tasks), with the percentile interval of its
// stratified bootstrap: each replicate draws, for each task, `runs` run indices with replacement
// and computes the statistic of the drawn scores. std::invalid_argument for an empty or ragged
// table, replicates < 1 or a confidence outside (0, 1).
Interval stratified_bootstrap(const ScoreTable& scores, Statistic statistic,
                              const BootstrapOptions& options);

// P(X > Y): for each task, the share of pairs (run of X, run of Y) in which X's score is higher, a
// tie counting 1/2 (the Mann-Whitney U statistic over n_x * n_y); the mean over tasks. X and Y must
// hold the same number of tasks, in the same order (std::invalid_argument otherwise); their
// numbers of runs may differ.
double probability_of_improvement(const ScoreTable& x, const ScoreTable& y);

// The same with a stratified bootstrap interval. Unpaired: each replicate resamples X's runs and
// Y's runs independently within each task. Paired (X and Y have as many runs, run i of each
// measured together, e.g. two agents of one `sparserl bench`): the same run indices are drawn for
// both, so what the two shared - the machine, the baseline's measurement - stays shared.
Interval probability_of_improvement_interval(const ScoreTable& x, const ScoreTable& y,
                                             const BootstrapOptions& options, bool paired = false);

// The value at quantile q of `sorted` (ascending) with linear interpolation between order
// statistics (numpy's default percentile): position q * (n - 1). NaN when empty.
double quantile_of_sorted(std::span<const double> sorted, double q);

}  // namespace sparserl::experiments
