// The learned cost model: predicts a design point's time on a matrix from the measurements the
// template search has made (measurement_store.hpp), with the analytic CostModel as the prior where
// the data says little. Few measurements, many designs and matrices unlike the measured ones are
// the normal case, so the model is kernel regression with shrinkage rather than a fitted formula:
//
//   base(m)     compulsory bytes of the matrix's CSR arrays, x and y over a nominal 3000 GB/s, plus
//               1 us: a design-free scale, so residuals compare matrices of different sizes
//   position    the matrix as a point in a scaled feature space (size, mean row length, the
//               longest row over the mean, Gini, empty-row share, locality of the columns, dense
//               4 x 4 blocks, shape, log2 K); neighbours weigh w = exp(-|a - b|^2 / (2 h^2))
//   direct      for design d: R_d = the w-weighted mean of log(t / base) over d's measurements,
//               W_d the sum of their weights (the effective count of measurements near the matrix)
//   prior       log(analytic / base), corrected by how far the analytic model was off for d's
//               generator near the matrix (its weighted mean log error, shrunk by W_g / (W_g +
//               L_g))
//   prediction  base * exp((W_d R_d + L prior) / (W_d + L)): the analytic model where nothing near
//               was measured, the measurements where many were
//
// It also tells the search how well it knows a matrix (familiarity: the summed weights of the
// distinct measured matrices of the task's op and dtype) and turns that into a budget
// (budget_for). Only measurements of one device are used (devices differ). Deterministic: the
// records are sorted before they are summed, so their order in the store does not matter.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sparserl/datasets/features.hpp"
#include "sparserl/kernels/design_space.hpp"
#include "sparserl/kernels/measurement_store.hpp"

namespace sparserl::kernels {

struct LearnedModelOptions {
  double bandwidth = 0.5;            // h: kernel width in the scaled feature space
  double shrinkage = 2.0;            // L: the prior counts as this many measurements of a design
  double generator_shrinkage = 4.0;  // L_g: the same for a generator's analytic error
  // budget_for(): a matrix with less familiarity than `novel` is far from anything measured; one
  // with at least `familiar`, whose favourite is backed by `confident_weight` measurements and
  // predicted `decisive_margin` times faster than the best of any other design family, is one the
  // model knows.
  double novel = 0.5;
  double familiar = 3.0;
  double confident_weight = 2.0;
  double decisive_margin = 1.25;
};

struct LearnedPrediction {
  double us = 0;           // the learned estimate
  double analytic_us = 0;  // the analytic model's, the prior
  double weight = 0;       // W_d: effective measurements of this design near the matrix
};

class LearnedCostModel {
 public:
  // Fits on the usable measurements (correct, timed) of `device`; "" takes every device.
  // Repeated measurements of one (matrix, k, design) become one: the full protocol's when there is
  // one, else the mean log time of the screening runs.
  LearnedCostModel(const std::vector<Measurement>& measurements, std::string device,
                   LearnedModelOptions options = {});

  [[nodiscard]] const std::string& device() const { return device_; }
  [[nodiscard]] const LearnedModelOptions& options() const { return options_; }
  // (matrix, k, design) measurements the model holds, and distinct (matrix, k) among them.
  [[nodiscard]] std::size_t size() const { return samples_; }
  [[nodiscard]] std::size_t matrices() const { return matrix_count_; }
  // "learned (N measurements of M matrices, DEVICE)".
  [[nodiscard]] std::string describe() const;

  // How well the measurements cover the matrix for the task's op and dtype: the sum, over the
  // distinct measured matrices, of their kernel weights (0: nothing near; 1: one measured matrix
  // just like it).
  [[nodiscard]] double familiarity(const datasets::MatrixFeatures& features, Op op, DType dtype,
                                   std::int64_t k) const;

  [[nodiscard]] LearnedPrediction predict(const DesignPoint& point,
                                          const datasets::MatrixFeatures& features, std::int64_t k,
                                          double analytic_us) const;

  // The first round's budget for a matrix, from the configured `budget`: 1.5 x budget where the
  // matrix is novel; max(finalists + 2, budget / 2) where it is familiar and the favourite is
  // confident and decisive (`predictions` of the candidates, with their generators); else budget.
  [[nodiscard]] int budget_for(int budget, int finalists, double familiarity,
                               const std::vector<DesignPoint>& points,
                               const std::vector<LearnedPrediction>& predictions) const;

  // The scaled feature position of a matrix for a task (exposed for tests and docs).
  static std::vector<double> position(const datasets::MatrixFeatures& features, std::int64_t k);
  // base(m) in microseconds.
  static double base_us(const datasets::MatrixFeatures& features, DType dtype, std::int64_t k);

 private:
  struct Sample {
    std::vector<double> position;
    double direct = 0;          // log(t / base)
    double analytic_error = 0;  // log(t / analytic prediction at measurement time)
    bool has_analytic = false;
  };
  [[nodiscard]] double weight(const std::vector<double>& a, const std::vector<double>& b) const;

  std::string device_;
  LearnedModelOptions options_;
  std::size_t samples_ = 0;
  std::size_t matrix_count_ = 0;
  std::map<std::string, std::vector<Sample>> by_design_;              // "op dtype design id"
  std::map<std::string, std::vector<Sample>> by_generator_;           // "op dtype generator"
  std::map<std::string, std::vector<std::vector<double>>> matrices_;  // "op dtype": positions
};

}  // namespace sparserl::kernels
