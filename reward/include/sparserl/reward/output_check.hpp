// The output check's rule, in one place for the host and the device: a kernel's output (y = A x, or
// Y = A X for SpMM, row-major) against the fp64 reference computed from exactly the values the kernel
// sees, with a per-element tolerance factor * eps(dtype) * (sqrt(row length) + 2) * sum_j |a_ij x_j|.
//
// The GPU worker judges on the device (gpu/device_checks.hpp): after the candidate's run and the
// input checks, a kernel of its own recomputes the reference row by row in the same order and with
// the same roundings as reference_output() below (no fused multiply-add), applies the same rule as
// tally_output() and reduces per-block OutputTally records that the worker merges with merge() and
// turns into the verdict with output_verdict(). tally_output() and reference_output() are the
// host's statement of that rule: the GPU tests compare the device's tallies with them field by field,
// and the CPU tests pin the rule itself. device_checks_source() is the CUDA source of those kernels
// (and of the input digests and guard checks), compiled by NVRTC inside the GPU worker.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/reward/abi.hpp"
#include "sparserl/reward/eval_result.hpp"

namespace sparserl::reward {

// Per-output tolerance factor: eight standard deviations of the rounding error of any summation
// order.
inline constexpr double kDefaultToleranceFactor = 8.0;

// The tallies of a comparison over some of the output's elements. Counts add; the first rows are
// the smallest (kNoRow when none); the worst element is the one of the largest error ratio (above
// 0), the smallest element index among equals. merge() is associative and commutative, so any split
// of the rows gives the verdict of one pass in row order. The layout is the device kernel's
// (device_checks_source()): ten 8-byte fields, no padding.
struct OutputTally {
  static constexpr std::int64_t kNoRow = std::numeric_limits<std::int64_t>::max();
  std::int64_t unchecked = 0;    // elements whose exact result the dtype cannot represent (not judged)
  std::int64_t unwritten = 0;    // NaN: never written
  std::int64_t first_unwritten = kNoRow;
  std::int64_t wrong = 0;        // outside the tolerance
  std::int64_t first_wrong = kNoRow;
  std::int64_t worst_index = kNoRow;  // element index (row * k + column) of the worst ratio
  std::int64_t bad_index = 0;    // device only: rows whose row_ptr or col_idx was out of range
  double max_ratio = 0;          // |got - expected| / tolerance of the worst element
  double worst_got = 0;
  double worst_ref = 0;
  friend bool operator==(const OutputTally&, const OutputTally&) = default;
};
static_assert(sizeof(OutputTally) == 80, "OutputTally is shared with the device kernel");

OutputTally merge(OutputTally a, const OutputTally& b);

// The verdict of a merged tally over `elements` output elements: unwritten_output before
// wrong_answer, with the message the evaluator has always given ("N of M output elements are outside
// the tolerance, first in row R; worst got X expected Y (error Zx the tolerance)").
struct OutputVerdict {
  ErrorKind error = ErrorKind::none;
  std::int64_t bad = 0;
  std::int64_t first_bad_row = -1;
  double max_ratio = 0;
  std::int64_t unchecked = 0;
  std::string detail;
};
OutputVerdict output_verdict(const OutputTally& tally, std::size_t elements);

// The dtype's machine epsilon and largest finite value, as the rule uses them.
double dtype_epsilon(DType dtype);
double dtype_largest(DType dtype);

// y = A X and y_abs = |A| |X| in fp64 (X is cols x k, row-major), each row summed in storage order.
void reference_output(const datasets::SparseMatrix& a, std::span<const double> x, int k, std::vector<double>& y,
                      std::vector<double>& y_abs);

// The host's comparison of `out` (the output's bytes in the dtype) with a reference: the rule the
// device applies. Rows whose exact result cannot be represented in the dtype (an entry, or
// sum_j |a_ij x_j|, beyond its largest finite value: real matrices such as SuiteSparse's `temp` hold
// entries above FLT_MAX) have no right answer in it and count as unchecked.
OutputTally tally_output(std::span<const std::uint8_t> out, DType dtype, const datasets::SparseMatrix& a, int k,
                         std::span<const double> ref, std::span<const double> ref_abs,
                         double factor = kDefaultToleranceFactor);

// The CUDA source of the GPU worker's check kernels: sha256_regions (one level of the SHA-256 trees of
// up to 32 arrays, from a table digest_tree.hpp plans), guards_intact (the guard zones of up to 32
// arrays still 0xFF), compare_f32 / compare_f64 (reference and comparison, per-block OutputTally
// records, gated on the CSR copy's digests). NVRTC options: device_checks_options().
std::string_view device_checks_source();
std::vector<std::string> device_checks_options();

}  // namespace sparserl::reward
