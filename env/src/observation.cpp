// Sampling, the sinusoidal embedding, the feature vector and the text of a matrix observation.
// Draws come from the project's Rng only, so a (matrix, seed) pair gives the same samples
// everywhere.
#include "sparserl/env/observation.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/datasets/random.hpp"
#include "sparserl/env/env_knobs.hpp"
#include "sparserl/env/prompt_text.hpp"

namespace sparserl::env {
namespace {

using datasets::Index;

// The row of entry e (row_ptr[row] <= e < row_ptr[row + 1]).
std::int32_t row_of(std::span<const Index> row_ptr, std::int64_t e) {
  const auto it = std::upper_bound(row_ptr.begin(), row_ptr.end(), static_cast<Index>(e));
  return static_cast<std::int32_t>(it - row_ptr.begin() - 1);
}

constexpr auto kIndexScalingNames =
    datasets::enum_names<IndexScaling::raw, IndexScaling::normalized>({"raw", "normalized"});
constexpr auto kStratificationNames =
    datasets::enum_names<Stratification::nonzeros, Stratification::rows>({"nonzeros", "rows"});

}  // namespace

std::string_view to_string(IndexScaling scaling) { return kIndexScalingNames.name(scaling); }
std::string_view to_string(Stratification s) { return kStratificationNames.name(s); }
std::optional<IndexScaling> parse_index_scaling(std::string_view text) {
  return kIndexScalingNames.parse(text);
}
std::optional<Stratification> parse_stratification(std::string_view text) {
  return kStratificationNames.parse(text);
}

std::optional<std::string> ObservationConfig::validate() const {
  return observation_knobs().check(*this);  // every range and check is the knobs' (env_knobs.cpp)
}

SampledNonzeros sample_nonzeros(const datasets::SparseMatrix& matrix, int k, std::uint64_t seed,
                                Stratification stratification) {
  if (k < 1)
    throw std::invalid_argument("sample_nonzeros: k must be >= 1, got " + std::to_string(k));
  const std::int64_t nnz = matrix.nnz();
  const auto row_ptr = matrix.row_ptr();
  const auto col_idx = matrix.col_idx();
  std::vector<std::int64_t> entries;
  if (nnz <= k) {
    entries.resize(static_cast<std::size_t>(nnz));
    for (std::int64_t e = 0; e < nnz; ++e) entries[static_cast<std::size_t>(e)] = e;
  } else {
    datasets::Rng rng(seed, kObservationStream);
    entries.reserve(static_cast<std::size_t>(k));
    if (stratification == Stratification::nonzeros) {
      for (int s = 0; s < k; ++s) {
        const std::int64_t first = nnz * s / k;
        const std::int64_t last = nnz * (s + 1) / k;  // > first because nnz > k
        entries.push_back(
            first + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(last - first))));
      }
    } else {
      const std::int64_t m = matrix.rows();
      std::set<std::int64_t> taken;
      for (int s = 0; s < k; ++s) {
        const std::int64_t r0 = m * s / k;
        const std::int64_t r1 = m * (s + 1) / k;
        const std::int64_t first = row_ptr[static_cast<std::size_t>(r0)];
        const std::int64_t last = row_ptr[static_cast<std::size_t>(r1)];
        if (last == first) continue;
        const std::int64_t e =
            first + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(last - first)));
        taken.insert(e);
      }
      // Empty blocks' slots: uniform draws among the entries not drawn yet (nnz > k, so this ends).
      while (static_cast<int>(taken.size()) < k) {
        taken.insert(static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(nnz))));
      }
      entries.assign(taken.begin(), taken.end());
    }
  }
  SampledNonzeros out;
  out.rows.reserve(entries.size());
  out.cols.reserve(entries.size());
  for (std::int64_t e : entries) {
    out.rows.push_back(row_of(row_ptr, e));
    out.cols.push_back(col_idx[static_cast<std::size_t>(e)]);
  }
  return out;
}

void positional_encoding(double position, int width, float* out) {
  for (int j = 0; 2 * j < width; ++j) {
    const double angle = position / std::pow(10000.0, static_cast<double>(2 * j) / width);
    out[2 * j] = static_cast<float>(std::sin(angle));
    if (2 * j + 1 < width) out[2 * j + 1] = static_cast<float>(std::cos(angle));
  }
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = {"log1p_rows",        "log1p_cols",
                                                 "log1p_nnz",         "log10_density_over_12",
                                                 "log1p_row_nnz_min", "log1p_row_nnz_mean",
                                                 "log1p_row_nnz_max", "log1p_row_nnz_std",
                                                 "row_nnz_gini",      "log1p_empty_rows",
                                                 "empty_row_share",   "log1p_bandwidth",
                                                 "log1p_profile",     "diagonal_share",
                                                 "dense_block_share", "op_spmm",
                                                 "dtype_f64",         "log1p_k"};
  return names;
}

std::vector<float> feature_vector(const datasets::MatrixFeatures& f, const datasets::Task& task) {
  const auto lg = [](double v) { return static_cast<float>(std::log1p(std::max(v, 0.0))); };
  return {lg(static_cast<double>(f.rows)),
          lg(static_cast<double>(f.cols)),
          lg(static_cast<double>(f.nnz)),
          static_cast<float>(std::log10(std::max(f.density, 1e-12)) / 12.0),
          lg(static_cast<double>(f.row_nnz_min)),
          lg(f.row_nnz_mean),
          lg(static_cast<double>(f.row_nnz_max)),
          lg(f.row_nnz_std),
          static_cast<float>(f.row_nnz_gini),
          lg(static_cast<double>(f.empty_rows)),
          static_cast<float>(f.empty_row_share),
          lg(static_cast<double>(f.bandwidth)),
          lg(f.profile),
          static_cast<float>(f.diagonal_share),
          static_cast<float>(f.dense_block_share),
          task.op == datasets::Op::spmm ? 1.0f : 0.0f,
          task.dtype == datasets::DType::f64 ? 1.0f : 0.0f,
          lg(static_cast<double>(task.op == datasets::Op::spmm ? task.k : 1))};
}

MatrixObservation observe_matrix(const datasets::SparseMatrix& matrix,
                                 const datasets::MatrixFeatures& features,
                                 const datasets::Task& task, const ObservationConfig& config,
                                 std::uint64_t seed) {
  if (auto problem = config.validate())
    throw std::invalid_argument("observation config: " + *problem);
  const int k = config.nnz_samples;
  const int d = config.embedding_dim;
  const int half = d / 2;
  MatrixObservation obs;
  obs.nnz_samples = k;
  obs.embedding_dim = d;
  const SampledNonzeros sample = sample_nonzeros(matrix, k, seed, config.stratification);
  obs.count = static_cast<int>(sample.rows.size());
  obs.rows.assign(static_cast<std::size_t>(k), -1);
  obs.cols.assign(static_cast<std::size_t>(k), -1);
  obs.embedding.assign(static_cast<std::size_t>(k) * static_cast<std::size_t>(d), 0.0f);
  const double row_extent = std::max<double>(matrix.rows(), 1);
  const double col_extent = std::max<double>(matrix.cols(), 1);
  for (int i = 0; i < obs.count; ++i) {
    const auto r = sample.rows[static_cast<std::size_t>(i)];
    const auto c = sample.cols[static_cast<std::size_t>(i)];
    obs.rows[static_cast<std::size_t>(i)] = r;
    obs.cols[static_cast<std::size_t>(i)] = c;
    double pr = r, pc = c;
    if (config.scaling == IndexScaling::normalized) {
      pr = r / row_extent * config.scale;
      pc = c / col_extent * config.scale;
    }
    float* row = obs.embedding.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(d);
    positional_encoding(pr, half, row);
    positional_encoding(pc, half, row + half);
  }
  obs.features = feature_vector(features, task);
  obs.text = prompt_text(matrix, task, obs);
  return obs;
}

}  // namespace sparserl::env
