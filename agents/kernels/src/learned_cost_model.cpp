// The learned cost model (learned_cost_model.hpp): merging repeated measurements, the feature
// position and the design-free base time, kernel-weighted residuals with shrinkage toward the
// analytic prior, familiarity and the budget it leads to.
#include "sparserl/kernels/learned_cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "sparserl/datasets/task.hpp"

namespace sparserl::kernels {
namespace {

std::string space_key(Op op, DType dtype) {
  return std::string(to_string(op)) + " " + std::string(to_string(dtype));
}

// One (matrix, k, design) of the store after merging its repeats.
struct Merged {
  const Measurement* first = nullptr;  // for the features and the prediction
  bool full = false;                   // from the full protocol
  double log_sum = 0;
  int count = 0;
  double log_predicted = 0;
  bool has_predicted = false;
};

}  // namespace

std::vector<double> LearnedCostModel::position(const datasets::MatrixFeatures& f, std::int64_t k) {
  const double rows = std::max<double>(static_cast<double>(f.rows), 1.0);
  const double cols = std::max<double>(static_cast<double>(f.cols), 1.0);
  const double mean = std::max(f.row_nnz_mean, 0.1);
  const double max_row = std::max<double>(static_cast<double>(f.row_nnz_max), 1.0);
  // Scales by hand: one unit is a change that matters to a kernel (10x rows count half, a row
  // length 10x longer one unit, locality from banded to random about two).
  return {0.5 * std::log10(rows),
          std::log10(mean),
          std::log10(max_row / std::max(mean, 1.0)),
          2.0 * f.row_nnz_gini,
          2.0 * f.empty_row_share,
          2.0 * std::log10(1.0 + std::max(f.profile, 0.0)) / std::log10(2.0 + cols),
          2.0 * f.dense_block_share,
          0.5 * std::log10(cols / rows),
          0.5 * std::log2(static_cast<double>(std::max<std::int64_t>(k, 1)))};
}

double LearnedCostModel::base_us(const datasets::MatrixFeatures& f, DType dtype, std::int64_t k) {
  const double vb = static_cast<double>(datasets::dtype_bytes(dtype));
  const double kk = static_cast<double>(std::max<std::int64_t>(k, 1));
  const double bytes = static_cast<double>(f.nnz) * (4 + vb) +
                       (static_cast<double>(f.rows) + 1) * 4 +
                       (static_cast<double>(f.rows) + static_cast<double>(f.cols)) * vb * kk;
  return bytes / 3.0e6 + 1.0;  // 3000 GB/s = 3e6 bytes per us; 1 us for the launch
}

LearnedCostModel::LearnedCostModel(const std::vector<Measurement>& measurements, std::string device,
                                   LearnedModelOptions options)
    : device_(std::move(device)), options_(options) {
  // Merge by (space, uri, k, design), in sorted order (std::map), so the sums below do not depend
  // on the order of the store.
  std::map<std::tuple<std::string, std::string, std::int64_t, std::string>, Merged> merged;
  for (const Measurement& m : measurements) {
    if (!m.usable() || (!device_.empty() && m.device != device_)) continue;
    Merged& e = merged[{space_key(m.op, m.dtype), m.uri, m.k, m.design}];
    const bool full = m.protocol == "full";
    if (e.first == nullptr || (full && !e.full)) {
      e = Merged{};
      e.first = &m;
      e.full = full;
    } else if (e.full && !full) {
      continue;  // a screening run does not dilute a full one
    }
    e.log_sum += std::log(m.median_us);
    ++e.count;
    if (m.predicted_us > 0) {
      e.log_predicted = std::log(m.predicted_us);
      e.has_predicted = true;
    }
  }
  std::map<std::string, std::vector<std::pair<std::string, std::int64_t>>> seen;
  for (const auto& [key, e] : merged) {
    const Measurement& m = *e.first;
    Sample s;
    s.position = position(m.features, m.k);
    const double log_time = e.log_sum / e.count;
    s.direct = log_time - std::log(base_us(m.features, m.dtype, m.k));
    s.has_analytic = e.has_predicted;
    s.analytic_error = e.has_predicted ? log_time - e.log_predicted : 0.0;
    const std::string space = std::get<0>(key);
    by_generator_[space + " " + m.generator].push_back(s);
    by_design_[space + " " + m.design].push_back(std::move(s));
    auto& matrices = seen[space];
    const std::pair<std::string, std::int64_t> matrix{m.uri, m.k};
    if (std::find(matrices.begin(), matrices.end(), matrix) == matrices.end()) {
      matrices.push_back(matrix);
      matrices_[space].push_back(position(m.features, m.k));
    }
    ++samples_;
  }
  for (const auto& [space, list] : seen) matrix_count_ += list.size();
}

std::string LearnedCostModel::describe() const {
  return "learned (" + std::to_string(samples_) + " measurements of " +
         std::to_string(matrix_count_) + " matrices, " +
         (device_.empty() ? std::string("every device") : device_) + ")";
}

double LearnedCostModel::weight(const std::vector<double>& a, const std::vector<double>& b) const {
  double d2 = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d2 += (a[i] - b[i]) * (a[i] - b[i]);
  return std::exp(-d2 / (2 * options_.bandwidth * options_.bandwidth));
}

double LearnedCostModel::familiarity(const datasets::MatrixFeatures& f, Op op, DType dtype,
                                     std::int64_t k) const {
  const auto it = matrices_.find(space_key(op, dtype));
  if (it == matrices_.end()) return 0;
  const std::vector<double> here = position(f, op == Op::spmm ? k : 1);
  double sum = 0;
  for (const auto& p : it->second) sum += weight(here, p);
  return sum;
}

LearnedPrediction LearnedCostModel::predict(const DesignPoint& point,
                                            const datasets::MatrixFeatures& f, std::int64_t k,
                                            double analytic_us) const {
  LearnedPrediction out;
  out.analytic_us = analytic_us;
  if (point.op != Op::spmm) k = 1;
  const std::vector<double> here = position(f, k);
  const double base = base_us(f, point.dtype, k);
  const std::string space = space_key(point.op, point.dtype);
  // The prior: the analytic model, corrected by its error on this generator near the matrix.
  double prior = std::log(std::max(analytic_us, 1e-3) / base);
  if (const auto g = by_generator_.find(space + " " + point.generator); g != by_generator_.end()) {
    double w_sum = 0, e_sum = 0;
    for (const Sample& s : g->second) {
      if (!s.has_analytic) continue;
      const double w = weight(here, s.position);
      w_sum += w;
      e_sum += w * s.analytic_error;
    }
    prior += e_sum / (w_sum + options_.generator_shrinkage);
  }
  double w_sum = 0, r_sum = 0;
  if (const auto d = by_design_.find(space + " " + point.id()); d != by_design_.end()) {
    for (const Sample& s : d->second) {
      const double w = weight(here, s.position);
      w_sum += w;
      r_sum += w * s.direct;
    }
  }
  const double residual = (r_sum + options_.shrinkage * prior) / (w_sum + options_.shrinkage);
  out.us = base * std::exp(residual);
  out.weight = w_sum;
  return out;
}

int LearnedCostModel::budget_for(int budget, int finalists, double familiarity,
                                 const std::vector<DesignPoint>& points,
                                 const std::vector<LearnedPrediction>& predictions) const {
  if (familiarity < options_.novel) return (3 * budget + 1) / 2;
  if (familiarity < options_.familiar || predictions.empty()) return budget;
  std::size_t best = 0;
  for (std::size_t i = 1; i < predictions.size(); ++i) {
    if (predictions[i].us < predictions[best].us) best = i;
  }
  double other_family = 0;
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    if (points[i].generator == points[best].generator) continue;
    if (other_family == 0 || predictions[i].us < other_family) other_family = predictions[i].us;
  }
  const bool confident = predictions[best].weight >= options_.confident_weight;
  const bool decisive =
      other_family == 0 || predictions[best].us * options_.decisive_margin <= other_family;
  if (!confident || !decisive) return budget;
  return std::min(budget, std::max(finalists + 2, (budget + 1) / 2));
}

}  // namespace sparserl::kernels
