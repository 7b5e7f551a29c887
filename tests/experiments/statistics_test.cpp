// The statistics behind `sparserl compare`: pass@k against brute-force enumeration of k-subsets,
// the interquartile mean by hand, the stratified bootstrap against a plain re-implementation and
// for its coverage on data with a known mean, and the probability of improvement on cases worked
// out by hand.
#include "sparserl/experiments/statistics.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "catch.hpp"
#include "sparserl/datasets/random.hpp"
#include "test_support.hpp"

using namespace sparserl::experiments;
using sparserl::datasets::Rng;
using sparserl::testing::has_substring;

namespace {

// The share of the k-subsets of n programs (the first c correct) that hold a correct one.
double pass_at_k_by_enumeration(int n, int c, int k) {
  long long subsets = 0, hits = 0;
  for (unsigned mask = 0; mask < (1U << n); ++mask) {
    if (__builtin_popcount(mask) != k) continue;
    ++subsets;
    if ((mask & ((1U << c) - 1)) != 0) ++hits;
  }
  return static_cast<double>(hits) / static_cast<double>(subsets);
}

// The bootstrap done the plain way: rebuild every replicate's scores and aggregate them.
Interval plain_bootstrap(const ScoreTable& scores, Statistic statistic, const BootstrapOptions& o) {
  const std::size_t runs = scores.size(), tasks = scores[0].size();
  std::vector<double> all;
  for (const auto& run : scores) all.insert(all.end(), run.begin(), run.end());
  Rng rng(o.seed, 0);
  std::vector<double> reps;
  for (std::int64_t b = 0; b < o.replicates; ++b) {
    std::vector<double> drawn;
    for (std::size_t t = 0; t < tasks; ++t)
      for (std::size_t k = 0; k < runs; ++k) drawn.push_back(scores[rng.below(runs)][t]);
    reps.push_back(aggregate(statistic, drawn));
  }
  std::sort(reps.begin(), reps.end());
  const double tail = (1 - o.confidence) / 2;
  return {aggregate(statistic, all), quantile_of_sorted(reps, tail),
          quantile_of_sorted(reps, 1 - tail)};
}

ScoreTable random_table(Rng& rng, std::size_t runs, std::size_t tasks, double spread) {
  ScoreTable t(runs, std::vector<double>(tasks));
  for (std::size_t r = 0; r < runs; ++r)
    for (std::size_t k = 0; k < tasks; ++k)
      t[r][k] = 1.0 + static_cast<double>(k % 5) * 0.3 + spread * rng.uniform01();
  return t;
}

}  // namespace

TEST_CASE("pass@k matches enumeration of every k-subset", "[statistics]") {
  for (int n = 1; n <= 10; ++n) {
    for (int c = 0; c <= n; ++c) {
      for (int k = 1; k <= n; ++k) {
        INFO("n = " << n << ", c = " << c << ", k = " << k);
        CHECK(pass_at_k(n, c, k) == Approx(pass_at_k_by_enumeration(n, c, k)).margin(1e-12));
      }
    }
  }
  CHECK(pass_at_k(1, 1, 1) == 1.0);
  CHECK(pass_at_k(9, 0, 9) == 0.0);
  CHECK(pass_at_k(9, 3, 1) == Approx(3.0 / 9.0));
  // Large n: the product form stays finite where C(n, k) overflows a double.
  CHECK(pass_at_k(2000, 1, 1) == Approx(1.0 / 2000));
  CHECK(pass_at_k(2000, 10, 1000) == Approx(1.0 - std::pow(0.5, 10)).epsilon(0.01));
  CHECK(std::isfinite(pass_at_k(100000, 50000, 500)));
}

TEST_CASE("pass@k refuses impossible arguments", "[statistics]") {
  CHECK_THROWS_WITH(pass_at_k(4, 1, 5), has_substring("k = 5 exceeds the n = 4 programs"));
  CHECK_THROWS_WITH(pass_at_k(4, 5, 1), has_substring("c = 5 correct programs exceed the n = 4"));
  CHECK_THROWS_WITH(pass_at_k(-1, 0, 1), has_substring("must not be negative"));
  CHECK_THROWS_WITH(pass_at_k(4, -2, 1), has_substring("must not be negative"));
  CHECK_THROWS_WITH(pass_at_k(4, 1, 0), has_substring("k must be at least 1"));
  CHECK_THROWS_AS(pass_at_k(0, 0, 1), std::invalid_argument);
}

TEST_CASE("the interquartile mean drops floor(n/4) from each end", "[statistics]") {
  using V = std::vector<double>;
  CHECK(std::isnan(interquartile_mean(V{})));
  CHECK(interquartile_mean(V{7}) == 7);
  CHECK(interquartile_mean(V{1, 2, 9}) == 4);                       // n < 4: the mean
  CHECK(interquartile_mean(V{4, 1, 3, 2}) == 2.5);                  // drop 1 + 1: (2 + 3) / 2
  CHECK(interquartile_mean(V{5, 1, 4, 2, 3}) == 3);                 // drop 1 + 1: (2 + 3 + 4) / 3
  CHECK(interquartile_mean(V{100, 1, 2, 3, 4, 5}) == 3.5);          // drop 1 + 1: 2..5
  CHECK(interquartile_mean(V{0, 1, 2, 3, 4, 5, 60}) == 3);          // drop 1 + 1: 1..5
  CHECK(interquartile_mean(V{8, 7, 6, 5, 4, 3, 2, 1}) == 4.5);      // drop 2 + 2: 3..6
  CHECK(interquartile_mean(V{-50, 1, 2, 3, 4, 5, 6, 7, 90}) == 4);  // drop 2 + 2: 2..6
  CHECK(interquartile_mean(V{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) == 6);  // drop 2 + 2: 3..9
  CHECK(std::isnan(interquartile_mean(V{1, std::nan(""), 3, 4})));
  CHECK(arithmetic_mean(V{1, 2, 6}) == 3);
  CHECK(geometric_mean(V{1, 4, 16}) == Approx(4));
  CHECK(std::isnan(geometric_mean(V{1, 0, 16})));
  CHECK(aggregate(Statistic::interquartile_mean, V{4, 1, 3, 2}) == 2.5);
}

TEST_CASE("the stratified bootstrap equals its plain re-implementation", "[statistics]") {
  Rng rng(5);
  const ScoreTable scores = random_table(rng, 3, 17, 0.8);
  BootstrapOptions o;
  o.replicates = 300;
  o.seed = 11;
  for (Statistic s : {Statistic::mean, Statistic::interquartile_mean, Statistic::geometric_mean}) {
    INFO(to_string(s));
    const Interval fast = stratified_bootstrap(scores, s, o);
    const Interval plain = plain_bootstrap(scores, s, o);
    CHECK(fast.point == Approx(plain.point).epsilon(1e-12));
    CHECK(fast.low == Approx(plain.low).epsilon(1e-12));
    CHECK(fast.high == Approx(plain.high).epsilon(1e-12));
    CHECK(fast.low <= fast.point);
    CHECK(fast.point <= fast.high);
  }
  // The same seed gives the same interval, another seed another one.
  const Interval a = stratified_bootstrap(scores, Statistic::interquartile_mean, o);
  const Interval b = stratified_bootstrap(scores, Statistic::interquartile_mean, o);
  CHECK(a.low == b.low);
  CHECK(a.high == b.high);
  o.seed = 12;
  const Interval c = stratified_bootstrap(scores, Statistic::interquartile_mean, o);
  CHECK((c.low != a.low || c.high != a.high));
}

TEST_CASE("the bootstrap resamples runs within a task, never across tasks", "[statistics]") {
  // Tasks with very different scores but identical runs: no replicate can differ from the point.
  ScoreTable same_runs(4, std::vector<double>{0.5, 3.0, 40.0, 1.25});
  BootstrapOptions o;
  o.replicates = 200;
  for (Statistic s : {Statistic::mean, Statistic::interquartile_mean, Statistic::geometric_mean}) {
    const Interval i = stratified_bootstrap(same_runs, s, o);
    CHECK(i.low == Approx(i.point));
    CHECK(i.high == Approx(i.point));
  }
  // One run: nothing to resample.
  const Interval one = stratified_bootstrap({{1.0, 2.0, 7.0}}, Statistic::mean, o);
  CHECK(one.low == Approx(one.point));
  CHECK(one.high == Approx(one.point));
}

TEST_CASE("a 95% interval of the mean covers the true mean about 95% of the time", "[statistics]") {
  // Each task has its own true mean; a run's score is that mean plus uniform noise in [-1, 1).
  // With the tasks fixed (what the stratified bootstrap assumes), the quantity estimated is the
  // mean of the task means. Ten runs per task; the percentile bootstrap is a little narrow with
  // few runs (its spread is (n-1)/n of the truth), so about 93-95% is expected.
  const std::size_t runs = 10, tasks = 20, trials = 400;
  std::vector<double> task_mean(tasks);
  double truth = 0;
  for (std::size_t t = 0; t < tasks; ++t) {
    task_mean[t] = 1.0 + 0.25 * static_cast<double>(t);
    truth += task_mean[t] / static_cast<double>(tasks);
  }
  Rng rng(2024);
  BootstrapOptions o;
  o.replicates = 1000;
  std::size_t covered = 0;
  for (std::size_t trial = 0; trial < trials; ++trial) {
    ScoreTable scores(runs, std::vector<double>(tasks));
    for (auto& run : scores)
      for (std::size_t t = 0; t < tasks; ++t) run[t] = task_mean[t] + rng.uniform_pm1();
    o.seed = trial;
    const Interval i = stratified_bootstrap(scores, Statistic::mean, o);
    if (i.low <= truth && truth <= i.high) ++covered;
  }
  const double coverage = static_cast<double>(covered) / trials;
  INFO("coverage " << coverage);
  CHECK(coverage >= 0.90);
  CHECK(coverage <= 0.99);
}

TEST_CASE("the bootstrap refuses malformed tables and options", "[statistics]") {
  BootstrapOptions o;
  CHECK_THROWS_WITH(stratified_bootstrap({}, Statistic::mean, o), has_substring("no runs"));
  CHECK_THROWS_WITH(stratified_bootstrap({{}}, Statistic::mean, o), has_substring("no tasks"));
  CHECK_THROWS_WITH(stratified_bootstrap({{1, 2}, {1}}, Statistic::mean, o),
                    has_substring("run 1 holds 1 tasks, run 0 holds 2"));
  o.replicates = 0;
  CHECK_THROWS_WITH(stratified_bootstrap({{1, 2}}, Statistic::mean, o),
                    has_substring("replicates must be at least 1"));
  o.replicates = 10;
  o.confidence = 1.0;
  CHECK_THROWS_WITH(stratified_bootstrap({{1, 2}}, Statistic::mean, o),
                    has_substring("confidence must lie in (0, 1)"));
  o.confidence = 0.95;
  const Interval nan = stratified_bootstrap({{1, std::nan("")}}, Statistic::mean, o);
  CHECK(std::isnan(nan.point));
  CHECK(std::isnan(nan.low));
}

TEST_CASE("probability of improvement on cases worked out by hand", "[statistics]") {
  BootstrapOptions o;
  o.replicates = 500;
  // X always better: 1, on every replicate.
  const ScoreTable low = {{1, 2, 3}, {1.5, 2.5, 3.5}};
  const ScoreTable high = {{4, 5, 6}, {4.5, 5.5, 6.5}, {5, 6, 7}};
  CHECK(probability_of_improvement(high, low) == 1.0);
  CHECK(probability_of_improvement(low, high) == 0.0);
  const Interval always = probability_of_improvement_interval(high, low, o);
  CHECK(always.low == 1.0);
  CHECK(always.high == 1.0);
  // Identical: every pair ties on a task with one distinct value, so 1/2 exactly.
  const ScoreTable flat = {{2, 3, 4}, {2, 3, 4}};
  CHECK(probability_of_improvement(flat, flat) == 0.5);
  const Interval tie = probability_of_improvement_interval(flat, flat, o, /*paired=*/true);
  CHECK(tie.low == 0.5);
  CHECK(tie.high == 0.5);
  // A mixture: task 0 X wins every pair (1), task 1 all tie (1/2), task 2 X = {3, 5, 7} against
  // Y = {2, 6}: 3>2, 5>2, 7>2, 7>6 win, 3<6, 5<6 lose: 4/6. Mean (1 + 1/2 + 2/3) / 3.
  const ScoreTable x = {{9, 1, 3}, {9, 1, 5}, {9, 1, 7}};
  const ScoreTable y = {{1, 1, 2}, {1, 1, 6}};
  CHECK(probability_of_improvement(x, y) == Approx((1.0 + 0.5 + 4.0 / 6.0) / 3.0));
  CHECK(probability_of_improvement(y, x) == Approx(1.0 - (1.0 + 0.5 + 4.0 / 6.0) / 3.0));
  const Interval mix = probability_of_improvement_interval(x, y, o);
  CHECK(mix.point == Approx(0.7222222222));
  CHECK(mix.low < mix.point);
  CHECK(mix.high > mix.point);
  CHECK(mix.low >= 0.5);  // task 0 and 1 contribute 1.5 / 3 on every replicate
  CHECK(mix.high <= 5.0 / 6.0);
}

TEST_CASE("probability of improvement: P(X>Y) + P(Y>X) = 1 and shape errors", "[statistics]") {
  Rng rng(99);
  const ScoreTable x = random_table(rng, 3, 12, 2.0);
  const ScoreTable y = random_table(rng, 5, 12, 2.0);
  CHECK(probability_of_improvement(x, y) + probability_of_improvement(y, x) == Approx(1.0));
  BootstrapOptions o;
  o.replicates = 50;
  CHECK_THROWS_WITH(probability_of_improvement_interval(x, y, o, true),
                    has_substring("paired runs need as many runs of X (3) as of Y (5)"));
  const ScoreTable short_y = {{1, 2}};
  CHECK_THROWS_WITH(probability_of_improvement(x, short_y), has_substring("X holds 12 tasks, Y 2"));
  CHECK_THROWS_WITH(probability_of_improvement({}, y), has_substring("no runs"));
}

TEST_CASE("bootstrap draws are pinned: the same numbers on every platform", "[statistics]") {
  // The project's Rng and integer arithmetic make the draws, so these bounds must not move with
  // the compiler or the standard library. A change here is a change of the method: say so.
  const ScoreTable scores = {{1.0, 2.0, 4.0, 0.5}, {1.5, 2.5, 3.0, 0.75}, {0.8, 2.2, 5.0, 1.0}};
  BootstrapOptions o;
  o.replicates = 1000;
  o.seed = 7;
  const Interval i = stratified_bootstrap(scores, Statistic::interquartile_mean, o);
  CHECK(i.point == Approx(1.7));
  CHECK(i.low == Approx(1.5).epsilon(1e-12));
  CHECK(i.high == Approx(1.88375).epsilon(1e-12));
}
