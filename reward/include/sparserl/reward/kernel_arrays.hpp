// KernelArrays: a matrix laid out as a program's kernels receive it. For a (format, params, dtype) it
// builds the host bytes of every matrix argument of the ABI signature, in registry order and under the
// registry's names, with values narrowed to the task's dtype; the GPU runner uploads them as they are.
// It also keeps the matrix with its values rounded to the dtype: the fp64 reference is computed from
// exactly the values the kernel sees, so the only difference left is the kernel's own rounding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sparserl/datasets/formats.hpp"
#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/reward/abi.hpp"

namespace sparserl::reward {

struct HostArray {
  std::string name;                 // the registry's argument name ("row_ptr", "val", ...)
  ArgKind kind = ArgKind::index_array;
  std::int64_t elements = 0;
  std::vector<std::uint8_t> bytes;  // elements * (4 for int, dtype size for values)
};

struct KernelArrays {
  std::vector<HostArray> matrix_args;   // the signature's arguments before x / X, in order
  datasets::SparseMatrix rounded;       // the matrix with values rounded to the dtype
  std::int64_t stored_entries = 0;      // padded entries of the format's value array
  double conversion_ms = 0;             // host time of the conversion (upload is the runner's)
};

// Converts and narrows. Throws datasets::FormatTooLarge when the padded format would exceed
// max_stored entries, std::invalid_argument for an invalid spec.
KernelArrays build_kernel_arrays(const datasets::SparseMatrix& matrix, const FormatSpec& spec,
                                 DType dtype,
                                 std::int64_t max_stored = datasets::kDefaultMaxStoredEntries);

// The matrix with every value rounded to the dtype (identity for f64).
datasets::SparseMatrix round_values(const datasets::SparseMatrix& matrix, DType dtype);

}  // namespace sparserl::reward
