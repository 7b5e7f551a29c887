// What the policy sees of a task: K nonzeros of the matrix, sampled with a seed and stratified so
// that every part of the matrix is represented, their (row, col), the sinusoidal embedding of those
// indices, and a feature vector of the pattern and the task. Plain C++ (vectors of float and
// int32), fixed shapes for a given ObservationConfig, so that an agent batches them without copying
// logic.
//
// Sampling (all nonzeros, in row-major order, when nnz <= K; count = nnz and the rest is padding):
//   nonzeros  the nnz entries, in row-major order, are cut into K strata of equal size
//             [floor(s nnz / K), floor((s+1) nnz / K)); one entry is drawn uniformly from each. A
//             stratum is a contiguous block of rows holding 1/K of the entries, so every such block
//             is represented, dense regions in proportion to their entries (the method's choice:
//             the model sees where the work is).
//   rows      the rows are cut into K blocks of equal row count; one entry is drawn uniformly from
//             each block that has entries, and the slots of empty blocks are filled by uniform
//             draws (without replacement) from the remaining entries. Sparse regions are seen as
//             often as dense ones.
//   The draws use datasets::Rng(seed, kObservationStream); the samples are sorted row-major.
//
// Embedding: e = [PE(r) | PE(c)] of width D (D a multiple of 4), each half of width H = D/2:
//   PE(p, 2j) = sin(p / 10000^(2j / H)),  PE(p, 2j + 1) = cos(p / 10000^(2j / H)),  j < H/2,
// with p = the index itself (IndexScaling::raw, as in the method) or p = index / rows * scale
// (resp. / cols; IndexScaling::normalized). Computed in double, stored as float; padding rows are
// 0.
//
// Features (feature_names() names them): the pattern features of datasets/features.hpp, counts as
// log1p, density as log10(max(density, 1e-12)) / 12, shares and the Gini coefficient as they are;
// then the task: op_spmm (0/1), dtype_f64 (0/1), log1p(K).
//
// Text: the task, the matrix's shape and the sampled (row, col) pairs written out
// (prompt_text.hpp), for a policy that reads the matrix as a text prompt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::env {

enum class IndexScaling { raw, normalized };
enum class Stratification { nonzeros, rows };
std::string_view to_string(IndexScaling scaling);
std::string_view to_string(Stratification stratification);
std::optional<IndexScaling> parse_index_scaling(std::string_view text);     // "raw", "normalized"
std::optional<Stratification> parse_stratification(std::string_view text);  // "nonzeros", "rows"

struct ObservationConfig {
  int nnz_samples = 128;   // K (the public code's --max-nnz default)
  int embedding_dim = 64;  // D, a multiple of 4
  IndexScaling scaling = IndexScaling::raw;
  double scale = 1000.0;  // IndexScaling::normalized: index / extent * scale
  Stratification stratification = Stratification::nonzeros;

  // nullopt when valid, else the first knob out of its declared range (env_knobs.hpp), by key:
  // "embedding_dim: value 6 is not a multiple of 4 (half of it per index, sin and cos)".
  [[nodiscard]] std::optional<std::string> validate() const;
};

struct SampledNonzeros {
  std::vector<std::int32_t> rows, cols;  // sorted row-major; size min(K, nnz)
};

// The random stream of the observation's draws (datasets::Rng(seed, stream)).
inline constexpr std::uint64_t kObservationStream = 0x6f62736572766521ULL;  // "observe!"

SampledNonzeros sample_nonzeros(const datasets::SparseMatrix& matrix, int k, std::uint64_t seed,
                                Stratification stratification);

// PE(position, .) of `width` (even) values into out[0..width).
void positional_encoding(double position, int width, float* out);

const std::vector<std::string>& feature_names();
std::vector<float> feature_vector(const datasets::MatrixFeatures& features,
                                  const datasets::Task& task);

struct MatrixObservation {
  int nnz_samples = 0;    // K: rows of `rows`, `cols`, `embedding`
  int embedding_dim = 0;  // D
  int count = 0;          // sampled entries; rows past count are padding (row = col = -1)
  std::vector<std::int32_t> rows, cols;  // K each
  std::vector<float> embedding;          // K x D, row-major
  std::vector<float> features;           // feature_names().size()
  // The task and the sampled nonzeros written out (prompt_text.hpp, the short form): the prompt
  // of a policy that reads the matrix as text. Empty where the observation was not made by
  // observe_matrix().
  std::string text;
};

MatrixObservation observe_matrix(const datasets::SparseMatrix& matrix,
                                 const datasets::MatrixFeatures& features,
                                 const datasets::Task& task, const ObservationConfig& config,
                                 std::uint64_t seed);

}  // namespace sparserl::env
