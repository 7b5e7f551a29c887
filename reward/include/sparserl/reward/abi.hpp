// The kernel ABI registry: the one definition of what a generated program sees. For every (op,
// format) it names the kernel's argument list (the same list for every launched kernel, in registry
// order), the type of each argument and its length in prelude constants; it defines the prelude
// constants (matrix figures and format parameters), computes them from a SparseMatrix without
// building the format's arrays, and renders the prelude the evaluator prepends to a program. The
// evaluator, the static checks, the GPU runner, the tokenizer vocabulary and docs/kernel-abi.md are
// all generated from these tables or checked against them, so a change here is a change of the ABI.
//
// Array layouts are those of sparserl/datasets/formats.hpp (COO row-sorted, ELL column-major with
// -1 padding, SELL-C-sigma slices with a row permutation, BSR row-major blocks); dense X and Y of
// SpMM are row-major, X is N x K and Y is M x K. K is defined for SpMV too, as 1, so that one
// program text and one expression language serve both operations.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparserl/datasets/sparse_matrix.hpp"
#include "sparserl/datasets/task.hpp"

namespace sparserl::reward {

using datasets::DType;
using datasets::Op;

enum class Format { csr, coo, ell, sell, bsr };

inline constexpr std::array<Format, 5> kFormats = {Format::csr, Format::coo, Format::ell,
                                                   Format::sell, Format::bsr};
inline constexpr std::array<Op, 2> kOps = {Op::spmv, Op::spmm};
inline constexpr std::array<DType, 2> kDTypes = {DType::f32, DType::f64};

std::string_view to_string(Format format);
std::optional<Format> parse_format(std::string_view text);  // "csr" ... "bsr"; nullopt otherwise

// Parameter ranges of the parametrised formats (checked by validate()).
inline constexpr int kMaxSellC = 1024;  // SELL slice height C in [1, 1024]
inline constexpr std::int64_t kMaxSellSigma = std::int64_t{1} << 30;  // sigma in [1, 2^30]
inline constexpr int kMaxBsrBlock = 32;                               // BSR R and C in [1, 32]

// Format parameters; only those of the spec's format are meaningful (others stay 0).
struct FormatParams {
  int sell_c = 0;               // SELL slice height C
  std::int64_t sell_sigma = 0;  // SELL sorting window (1 = no sorting)
  int bsr_r = 0;                // BSR block rows
  int bsr_c = 0;                // BSR block columns
  friend bool operator==(const FormatParams&, const FormatParams&) = default;
};

// A format with its parameters, as a `//@format` directive names it.
struct FormatSpec {
  Format format = Format::csr;
  FormatParams params;

  // The directive's argument text: "csr", "sell C=32 sigma=256", "bsr R=4 C=4".
  [[nodiscard]] std::string str() const;
  // nullopt when valid, else what is wrong ("sell C=0: C must be in 1..1024").
  [[nodiscard]] std::optional<std::string> validate() const;
  // SELL's sorting window as the converter applies it: sigma > 1 is rounded up to a multiple of C
  // (formats.hpp). This is the SELL_SIGMA a program sees. 0 for other formats.
  [[nodiscard]] std::int64_t effective_sigma() const;
  friend bool operator==(const FormatSpec&, const FormatSpec&) = default;
};

// How a kernel argument is typed. Inputs are pointers to const; y / Y is the only output.
enum class ArgKind {
  index_array,   // const int*      (row_ptr, col_idx, ...)
  value_array,   // const value_t*  (matrix values, x / X)
  output_array,  // value_t*        (y / Y)
};
std::string_view to_string(ArgKind kind);
// The canonical C type of an argument of this kind: "const int*", "const value_t*", "value_t*".
std::string_view c_type(ArgKind kind);

struct KernelArg {
  std::string_view name;  // the registry's (documentation) name; programs may name it freely
  ArgKind kind;
  std::string_view length;  // element count, a launch expression over prelude constants ("M + 1")
  std::string_view doc;     // one line for docs/kernel-abi.md
};

// The argument list of every kernel launched for (op, format).
struct Signature {
  Op op = Op::spmv;
  Format format = Format::csr;
  std::vector<KernelArg> args;

  // "extern \"C\" __global__ void NAME(const int* __restrict__ row_ptr, ...)" without a body.
  [[nodiscard]] std::string declaration(std::string_view kernel_name) const;
};

// The registry entry; every (op, format) pair exists.
const Signature& signature(Op op, Format format);

// A prelude constant: a macro in the prelude and a name in launch expressions.
struct ConstantInfo {
  std::string_view name;
  std::optional<Format> format;  // nullopt: defined for every format
  std::string_view doc;
};
// Every constant, in prelude order (the matrix constants, K, then each format's own).
const std::vector<ConstantInfo>& constant_infos();
// The names defined for a program in this format (what launch expressions may use).
std::vector<std::string_view> constant_names(Format format);

// The constants of one (matrix, op, K, format) as name -> value, in prelude order.
class Constants {
 public:
  struct Entry {
    std::string name;
    std::int64_t value = 0;
  };

  Constants() = default;
  explicit Constants(std::vector<Entry> entries) : entries_(std::move(entries)) {}

  [[nodiscard]] std::optional<std::int64_t> find(std::string_view name) const;
  // The value, or std::out_of_range naming the constant.
  [[nodiscard]] std::int64_t at(std::string_view name) const;
  [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

// Computes every constant for the format. k is the number of dense columns for SpMM (>= 1) and is
// ignored for SpMV (K = 1). BSR_NNZB and SELL_STORED take one pass over the pattern without
// building the format's arrays. Throws std::invalid_argument for an invalid spec or k < 1.
Constants compute_constants(const datasets::SparseMatrix& matrix, Op op, std::int64_t k,
                            const FormatSpec& spec);

// The stored (padded) entries of the format's value array (NNZ, ELL_WIDTH*M, SELL_STORED,
// BSR_NNZB*BSR_R*BSR_C): what the converter will allocate and what its size limit is checked on.
std::int64_t stored_entries(const Constants& constants, Format format);

// The file name compiler messages point at: the prelude ends with `#line 1 "program.cu"`.
inline constexpr std::string_view kProgramFileName = "program.cu";

// `typedef float value_t;` (or double), one `#define NAME VALUE` per constant, then
// `#line 1 "program.cu"` so that compiler messages carry program line numbers.
std::string render_prelude(DType dtype, const Constants& constants);

// The registry as text (`sparserl abi`) and as the Markdown page docs/kernel-abi.md.
std::string render_abi_text();
std::string render_abi_markdown();

}  // namespace sparserl::reward
