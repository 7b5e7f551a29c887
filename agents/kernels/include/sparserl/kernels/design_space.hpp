// The kernel design space: parameterised generators that emit complete programs in the kernel ABI
// (directives + kernels, reward/abi.hpp), and the DesignSpace object that enumerates, samples,
// prunes and describes their points. A point is a generator name plus its parameters; its id is the
// generator and the parameters in the generator's order, "csr_vector lanes=8 block=256 unroll=2
// vec=1 ldg=1", stable across builds because the tuning corpus, the SFT pairs and the tables are
// keyed by it. The emitted program opens with a comment that says what the design does and what its
// parameters are, so every program of the corpus documents itself.
//
// The designs (docs/design-space.md has the full table):
//   SpMV  csr_scalar, csr_vector, csr_xstage, csr_adaptive, csr_binned, csr_merge, coo_segmented,
//         ell, sell, bsr_row, bsr_warp, csr_split, csr_segscan, csr_nnzsplit
//   SpMM  spmm_csr_rowgroup, spmm_csr_merge, spmm_coo, spmm_ell, spmm_sell, spmm_bsr,
//         spmm_csr_split
// Every point is correct for every matrix the ABI admits (empty rows, a huge row, a single column,
// the 0 x 0 matrix): a program specialises itself to the matrix only through the prelude constants
// and falls back to a general path where a specialisation does not apply.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/features.hpp"
#include "sparserl/datasets/task.hpp"
#include "sparserl/reward/abi.hpp"

namespace sparserl::kernels {

using datasets::DType;
using datasets::Op;
using reward::Format;
using reward::FormatSpec;

// One parameter of a point, as written in its id: "lanes" = "8".
struct DesignParam {
  std::string name;
  std::string value;
  friend bool operator==(const DesignParam&, const DesignParam&) = default;
};

// A point of the design space for one (op, dtype).
struct DesignPoint {
  std::string generator;  // "csr_vector"
  Op op = Op::spmv;
  DType dtype = DType::f32;
  std::vector<DesignParam> params;  // in the generator's parameter order

  // "csr_vector lanes=8 block=256 unroll=2 vec=1 ldg=1": the generator, then name=value pairs.
  [[nodiscard]] std::string id() const;
  // The value of a parameter; std::invalid_argument naming the point and the parameter if absent.
  [[nodiscard]] const std::string& param(std::string_view name) const;
  // param() as an integer; std::invalid_argument if it is not one.
  [[nodiscard]] int int_param(std::string_view name) const;
  // The storage format its program names in `//@format`.
  [[nodiscard]] FormatSpec format() const;

  // The inverse of id() for a space: std::invalid_argument naming the text when the generator is
  // unknown, belongs to another op, or a parameter is missing, unknown or malformed.
  static DesignPoint parse(Op op, DType dtype, std::string_view id);

  friend bool operator==(const DesignPoint&, const DesignPoint&) = default;
};

// A generator: one design with its parameters.
struct GeneratorInfo {
  std::string name;
  Op op = Op::spmv;
  Format format = Format::csr;
  std::string summary;                     // one line for docs and `sparserl tune --list`
  std::vector<std::string> param_names{};  // in id order
};

// Every generator, SpMV first, in documentation order.
const std::vector<GeneratorInfo>& generators();
const GeneratorInfo* find_generator(std::string_view name);

// The complete program text of a point: header comment, //@format, //@launch lines, kernels.
// std::invalid_argument for an unknown generator or a parameter value outside the design space.
std::string render_program(const DesignPoint& point);

// The points of one (op, dtype).
class DesignSpace {
 public:
  DesignSpace(Op op, DType dtype);

  [[nodiscard]] Op op() const { return op_; }
  [[nodiscard]] DType dtype() const { return dtype_; }
  // Every point, grouped by generator in generators() order; ids are unique.
  [[nodiscard]] const std::vector<DesignPoint>& points() const { return points_; }
  [[nodiscard]] std::size_t size() const { return points_.size(); }

  // The point with this id, or nullopt.
  [[nodiscard]] std::optional<DesignPoint> find(std::string_view id) const;

  // n distinct points drawn uniformly without replacement (all of them when n >= size()), in space
  // order; the same (n, seed) gives the same points on every platform.
  [[nodiscard]] std::vector<DesignPoint> sample(std::size_t n, std::uint64_t seed) const;

  // The points worth measuring on a matrix: drops designs that cannot be good there (a BSR shape
  // that would pad a scattered matrix tenfold, an ELL width far above the mean row, SpMM column
  // tiles wider than K, ...) and designs whose format the evaluator would refuse as too large.
  // Never empty: the general designs (csr_vector, csr_merge, spmm_csr_rowgroup) always stay.
  [[nodiscard]] std::vector<DesignPoint> pruned(const datasets::MatrixFeatures& features,
                                                std::int64_t k = 1) const;

  // One representative per (generator, format parameters): a small subset that still exercises
  // every code path of every generator (the CPU compile test uses it).
  [[nodiscard]] std::vector<DesignPoint> representatives() const;

  [[nodiscard]] std::string render(const DesignPoint& point) const { return render_program(point); }

 private:
  Op op_;
  DType dtype_;
  std::vector<DesignPoint> points_;
};

}  // namespace sparserl::kernels
