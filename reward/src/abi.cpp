// The registry tables (signatures, prelude constants), the computation of the constants from a
// matrix, and the renderings of the registry: the prelude, `sparserl abi` text and
// docs/kernel-abi.md. The Markdown is compared byte for byte with the committed page by a test, so
// what it prints is the documentation of record.
#include "sparserl/reward/abi.hpp"

#include <algorithm>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/reward/static_checks.hpp"

namespace sparserl::reward {
namespace {

using datasets::Index;
using datasets::SparseMatrix;

std::vector<KernelArg> matrix_args(Format format) {
  switch (format) {
    case Format::csr:
      return {
          {"row_ptr", ArgKind::index_array, "M + 1",
           "row i's entries are row_ptr[i] .. row_ptr[i+1]-1"},
          {"col_idx", ArgKind::index_array, "NNZ", "column of each entry, increasing within a row"},
          {"val", ArgKind::value_array, "NNZ", "value of each entry"}};
    case Format::coo:
      return {
          {"row_idx", ArgKind::index_array, "NNZ", "row of each entry, sorted (row-major order)"},
          {"col_idx", ArgKind::index_array, "NNZ", "column of each entry, increasing within a row"},
          {"val", ArgKind::value_array, "NNZ", "value of each entry"}};
    case Format::ell:
      return {{"col_idx", ArgKind::index_array, "ELL_WIDTH * M",
               "column-major: entry k of row i at k*M + i; -1 = padding (skip it)"},
              {"val", ArgKind::value_array, "ELL_WIDTH * M", "same layout; padding holds 0"}};
    case Format::sell:
      return {
          {"slice_ptr", ArgKind::index_array, "SELL_SLICES + 1",
           "slice s starts at slice_ptr[s]; its width is (slice_ptr[s+1]-slice_ptr[s]) / SELL_C"},
          {"row_perm", ArgKind::index_array, "M",
           "sorted position p holds original row row_perm[p] (write y[row_perm[p]])"},
          {"col_idx", ArgKind::index_array, "SELL_STORED",
           "entry k of lane r of slice s at slice_ptr[s] + k*SELL_C + r; -1 = padding (lanes "
           "past M are padding too)"},
          {"val", ArgKind::value_array, "SELL_STORED", "same layout; padding holds 0"}};
    case Format::bsr:
      return {{"block_row_ptr", ArgKind::index_array, "BSR_MB + 1",
               "block row b's blocks are block_row_ptr[b] .. block_row_ptr[b+1]-1"},
              {"block_col_idx", ArgKind::index_array, "BSR_NNZB",
               "block column of each block, increasing within a block row"},
              {"val", ArgKind::value_array, "BSR_NNZB * BSR_R * BSR_C",
               "blocks row-major: element (i, j) of block b at b*BSR_R*BSR_C + i*BSR_C + j; cells "
               "without an entry hold 0; guard row < M and col < N at the matrix edge"}};
  }
  return {};
}

std::vector<Signature> build_registry() {
  std::vector<Signature> registry;
  for (Op op : kOps) {
    for (Format format : kFormats) {
      Signature s;
      s.op = op;
      s.format = format;
      s.args = matrix_args(format);
      if (op == Op::spmv) {
        s.args.push_back({"x", ArgKind::value_array, "N", "dense input vector"});
        s.args.push_back(
            {"y", ArgKind::output_array, "M", "output y = A x; every element must be written"});
      } else {
        s.args.push_back(
            {"X", ArgKind::value_array, "N * K", "dense input, N x K, row-major: X[j*K + c]"});
        s.args.push_back(
            {"Y", ArgKind::output_array, "M * K",
             "output Y = A X, M x K, row-major: Y[i*K + c]; every element must be written"});
      }
      registry.push_back(std::move(s));
    }
  }
  return registry;
}

const std::vector<Signature>& registry() {
  static const std::vector<Signature> table = build_registry();
  return table;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Slice widths of SELL-C-sigma as the converter builds them, summed and multiplied by C: every
// slice stores C lanes, the last one included.
std::int64_t sell_stored(const SparseMatrix& a, std::int64_t c, std::int64_t sigma) {
  const std::int64_t m = a.rows();
  std::vector<Index> lengths(static_cast<std::size_t>(m));
  for (Index i = 0; i < a.rows(); ++i) lengths[static_cast<std::size_t>(i)] = a.row_length(i);
  if (sigma > 1) {
    // sigma is a multiple of C, so each slice lies inside one sorted window.
    for (std::int64_t w = 0; w < m; w += sigma) {
      const auto first = lengths.begin() + w;
      const auto last = lengths.begin() + std::min(m, w + sigma);
      std::sort(first, last, std::greater<>());
    }
  }
  std::int64_t stored = 0;
  for (std::int64_t s = 0; s < m; s += c) {
    Index width = 0;
    for (std::int64_t p = s; p < std::min(m, s + c); ++p) {
      width = std::max(width, lengths[static_cast<std::size_t>(p)]);
    }
    stored += static_cast<std::int64_t>(width) * c;
  }
  return stored;
}

// Distinct (block row, block column) pairs, one pass over the pattern with a stamp per block
// column.
std::int64_t bsr_nnzb(const SparseMatrix& a, std::int64_t r, std::int64_t c) {
  const std::int64_t mb = ceil_div(a.rows(), r);
  const std::int64_t nb = ceil_div(a.cols(), c);
  std::vector<std::int64_t> stamp(static_cast<std::size_t>(nb), -1);
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  std::int64_t nnzb = 0;
  for (std::int64_t br = 0; br < mb; ++br) {
    const std::int64_t row_end = std::min<std::int64_t>(a.rows(), (br + 1) * r);
    for (std::int64_t i = br * r; i < row_end; ++i) {
      for (Index e = row_ptr[static_cast<std::size_t>(i)];
           e < row_ptr[static_cast<std::size_t>(i + 1)]; ++e) {
        const auto bc = static_cast<std::size_t>(col_idx[static_cast<std::size_t>(e)] / c);
        if (stamp[bc] != br) {
          stamp[bc] = br;
          ++nnzb;
        }
      }
    }
  }
  return nnzb;
}

std::string_view op_title(Op op) { return op == Op::spmv ? "SpMV, y = A x" : "SpMM, Y = A X"; }

constexpr auto kFormatNames =
    datasets::enum_names<Format::csr, Format::bsr>({"csr", "coo", "ell", "sell", "bsr"});
constexpr auto kArgKindNames = datasets::enum_names<ArgKind::index_array, ArgKind::output_array>(
    {"index_array", "value_array", "output_array"});
// The C type of each ArgKind, in the same order.
constexpr auto kArgKindCTypes = datasets::enum_names<ArgKind::index_array, ArgKind::output_array>(
    {"const int*", "const value_t*", "value_t*"});

}  // namespace

std::string_view to_string(Format format) { return kFormatNames.name(format); }
std::optional<Format> parse_format(std::string_view text) { return kFormatNames.parse(text); }

std::string FormatSpec::str() const {
  std::string s(to_string(format));
  if (format == Format::sell) {
    s += " C=" + std::to_string(params.sell_c) + " sigma=" + std::to_string(params.sell_sigma);
  } else if (format == Format::bsr) {
    s += " R=" + std::to_string(params.bsr_r) + " C=" + std::to_string(params.bsr_c);
  }
  return s;
}

std::optional<std::string> FormatSpec::validate() const {
  const FormatParams none;
  switch (format) {
    case Format::csr:
    case Format::coo:
    case Format::ell:
      if (params != none) return str() + ": this format takes no parameters";
      return std::nullopt;
    case Format::sell:
      if (params.bsr_r != 0 || params.bsr_c != 0) return str() + ": sell takes only C and sigma";
      if (params.sell_c < 1 || params.sell_c > kMaxSellC) {
        return str() + ": C must be in 1.." + std::to_string(kMaxSellC);
      }
      if (params.sell_sigma < 1 || params.sell_sigma > kMaxSellSigma) {
        return str() + ": sigma must be in 1.." + std::to_string(kMaxSellSigma);
      }
      return std::nullopt;
    case Format::bsr:
      if (params.sell_c != 0 || params.sell_sigma != 0) return str() + ": bsr takes only R and C";
      if (params.bsr_r < 1 || params.bsr_r > kMaxBsrBlock || params.bsr_c < 1 ||
          params.bsr_c > kMaxBsrBlock) {
        return str() + ": R and C must be in 1.." + std::to_string(kMaxBsrBlock);
      }
      return std::nullopt;
  }
  return "unknown format";
}

std::int64_t FormatSpec::effective_sigma() const {
  if (format != Format::sell) return 0;
  if (params.sell_sigma <= 1) return 1;
  return ceil_div(params.sell_sigma, params.sell_c) * params.sell_c;
}

std::string_view to_string(ArgKind kind) { return kArgKindNames.name(kind); }

std::string_view c_type(ArgKind kind) { return kArgKindCTypes.name(kind); }

std::string Signature::declaration(std::string_view kernel_name) const {
  std::string s = "extern \"C\" __global__ void ";
  s += kernel_name;
  s += "(";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i > 0) s += ", ";
    s += c_type(args[i].kind);
    s += " __restrict__ ";
    s += args[i].name;
  }
  s += ")";
  return s;
}

const Signature& signature(Op op, Format format) {
  for (const Signature& s : registry()) {
    if (s.op == op && s.format == format) return s;
  }
  throw std::logic_error("kernel ABI registry: no signature for an (op, format) pair");
}

const std::vector<ConstantInfo>& constant_infos() {
  static const std::vector<ConstantInfo> table = {
      {"M", std::nullopt, "rows of A (length of y; SpMM: rows of Y)"},
      {"N", std::nullopt, "columns of A (length of x; SpMM: rows of X)"},
      {"NNZ", std::nullopt, "stored entries of A (explicit zeros included)"},
      {"MAX_ROW_NNZ", std::nullopt, "entries in the longest row"},
      {"MIN_ROW_NNZ", std::nullopt, "entries in the shortest row"},
      {"EMPTY_ROWS", std::nullopt, "rows without entries (their output is 0 and must be written)"},
      {"K", std::nullopt, "dense columns of X and Y for SpMM; 1 for SpMV"},
      {"ELL_WIDTH", Format::ell, "entries per row slot, = MAX_ROW_NNZ"},
      {"SELL_C", Format::sell, "slice height C (rows per slice)"},
      {"SELL_SIGMA", Format::sell,
       "sorting window: rows sorted by decreasing length within windows of SELL_SIGMA rows (1: "
       "unsorted; a sigma > 1 is rounded up to a multiple of SELL_C)"},
      {"SELL_SLICES", Format::sell, "slices, = ceil_div(M, SELL_C)"},
      {"SELL_STORED", Format::sell, "entries stored with padding, = slice_ptr[SELL_SLICES]"},
      {"BSR_R", Format::bsr, "block rows R"},
      {"BSR_C", Format::bsr, "block columns C"},
      {"BSR_MB", Format::bsr, "block rows of A, = ceil_div(M, BSR_R)"},
      {"BSR_NB", Format::bsr, "block columns of A, = ceil_div(N, BSR_C)"},
      {"BSR_NNZB", Format::bsr, "stored (nonzero) blocks"},
  };
  return table;
}

std::vector<std::string_view> constant_names(Format format) {
  std::vector<std::string_view> names;
  for (const ConstantInfo& c : constant_infos()) {
    if (!c.format || *c.format == format) names.push_back(c.name);
  }
  return names;
}

std::optional<std::int64_t> Constants::find(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return e.value;
  }
  return std::nullopt;
}

std::int64_t Constants::at(std::string_view name) const {
  if (auto v = find(name)) return *v;
  throw std::out_of_range("prelude constant " + std::string(name) + " is not defined here");
}

Constants compute_constants(const SparseMatrix& matrix, Op op, std::int64_t k,
                            const FormatSpec& spec) {
  if (auto problem = spec.validate()) throw std::invalid_argument("format " + *problem);
  if (op == Op::spmm && k < 1) {
    throw std::invalid_argument("SpMM needs K >= 1 dense columns, got " + std::to_string(k));
  }
  std::int64_t max_row = 0, min_row = 0, empty_rows = 0;
  for (Index i = 0; i < matrix.rows(); ++i) {
    const std::int64_t len = matrix.row_length(i);
    max_row = std::max(max_row, len);
    min_row = (i == 0) ? len : std::min(min_row, len);
    if (len == 0) ++empty_rows;
  }
  std::vector<Constants::Entry> e = {
      {"M", matrix.rows()},          {"N", matrix.cols()},     {"NNZ", matrix.nnz()},
      {"MAX_ROW_NNZ", max_row},      {"MIN_ROW_NNZ", min_row}, {"EMPTY_ROWS", empty_rows},
      {"K", op == Op::spmm ? k : 1},
  };
  switch (spec.format) {
    case Format::csr:
    case Format::coo:
      break;
    case Format::ell:
      e.push_back({"ELL_WIDTH", max_row});
      break;
    case Format::sell: {
      const std::int64_t c = spec.params.sell_c;
      const std::int64_t sigma = spec.effective_sigma();
      e.push_back({"SELL_C", c});
      e.push_back({"SELL_SIGMA", sigma});
      e.push_back({"SELL_SLICES", ceil_div(matrix.rows(), c)});
      e.push_back({"SELL_STORED", sell_stored(matrix, c, sigma)});
      break;
    }
    case Format::bsr: {
      const std::int64_t r = spec.params.bsr_r, c = spec.params.bsr_c;
      e.push_back({"BSR_R", r});
      e.push_back({"BSR_C", c});
      e.push_back({"BSR_MB", ceil_div(matrix.rows(), r)});
      e.push_back({"BSR_NB", ceil_div(matrix.cols(), c)});
      e.push_back({"BSR_NNZB", bsr_nnzb(matrix, r, c)});
      break;
    }
  }
  return Constants(std::move(e));
}

std::int64_t stored_entries(const Constants& constants, Format format) {
  switch (format) {
    case Format::csr:
    case Format::coo:
      return constants.at("NNZ");
    case Format::ell:
      return constants.at("ELL_WIDTH") * constants.at("M");
    case Format::sell:
      return constants.at("SELL_STORED");
    case Format::bsr:
      return constants.at("BSR_NNZB") * constants.at("BSR_R") * constants.at("BSR_C");
  }
  return 0;
}

std::string render_prelude(DType dtype, const Constants& constants) {
  std::string s = "// SparseRL Gym prelude (prepended by the evaluator)\n";
  s += dtype == DType::f32 ? "typedef float value_t;\n" : "typedef double value_t;\n";
  for (const Constants::Entry& e : constants.entries()) {
    s += "#define " + e.name + " " + std::to_string(e.value);
    if (e.value > 2147483647) s += "LL";  // keeps the literal's type explicit past int
    s += "\n";
  }
  s += "#line 1 \"";
  s += kProgramFileName;
  s += "\"\n";
  return s;
}

std::string render_abi_text() {
  std::ostringstream out;
  out << "SparseRL Gym kernel ABI\n\nPrelude constants (launch expressions may use them):\n";
  for (const ConstantInfo& c : constant_infos()) {
    out << "  " << c.name;
    for (std::size_t pad = c.name.size(); pad < 12; ++pad) out << ' ';
    const std::string format = c.format ? std::string(to_string(*c.format)) : std::string("all");
    out << format;
    for (std::size_t pad = format.size(); pad < 6; ++pad) out << ' ';
    out << c.doc << "\n";
  }
  for (Op op : kOps) {
    for (Format format : kFormats) {
      const Signature& s = signature(op, format);
      out << "\n" << to_string(op) << " " << to_string(format) << ":\n";
      for (const KernelArg& a : s.args) {
        std::string type(c_type(a.kind));
        out << "  " << type;
        for (std::size_t pad = type.size(); pad < 16; ++pad) out << ' ';
        out << a.name;
        for (std::size_t pad = a.name.size(); pad < 14; ++pad) out << ' ';
        out << "[" << a.length << "]\n";
      }
    }
  }
  out << "\nStatic check reasons:\n";
  for (std::size_t i = 0; i < kStaticCheckReasonCount; ++i) {
    const auto reason = static_cast<StaticCheckReason>(i);
    out << "  " << to_string(reason) << ": " << describe(reason) << "\n";
  }
  return out.str();
}

std::string render_abi_markdown() {
  const ProgramLimits limits;
  std::ostringstream out;
  out << "# The kernel ABI\n\n"
      << "<!-- Generated by `sparserl abi --markdown > docs/kernel-abi.md` from "
         "reward/src/abi.cpp; "
         "do not edit by hand: tests/reward/abi_test.cpp fails when this page differs from the "
         "registry. -->\n\n"
      << "What a generated program is, what it receives, and what the evaluator refuses. The "
         "registry in `reward/` (`sparserl/reward/abi.hpp`) is the source of this page; the "
         "evaluator, the static checks, the GPU runner and the tokenizer read the same tables.\n\n";

  out << "## A program\n\n"
      << "CUDA device code plus directive comments; never host code. Directives are line comments "
         "that start with `//@` on a line of their own, anywhere in the text:\n\n"
      << "```\n"
      << "//@format csr | coo | ell | sell C=<1.." << kMaxSellC << "> sigma=<1.." << kMaxSellSigma
      << "> | bsr R=<1.." << kMaxBsrBlock << "> C=<1.." << kMaxBsrBlock << ">\n"
      << "//@launch NAME grid=EXPR block=EXPR [smem=EXPR]\n"
      << "```\n\n"
      << "- exactly one `//@format`; the evaluator converts the matrix to it (conversion time is "
         "reported apart, never inside the kernel time). Any other `//@` word is an error.\n"
      << "- 1 to " << kMaxLaunches
      << " `//@launch` lines, run in order on the same stream, each a 1-D grid of 1-D blocks "
         "with `smem` bytes of dynamic shared memory (default 0). A kernel that needs a zeroed "
         "output launches its own zeroing kernel first (see `reward/programs/spmv_coo.cu`): the "
         "output is filled with NaN before every run.\n"
      << "- every launched kernel is defined as `extern \"C\" __global__ void NAME(...)` with "
         "exactly the argument list of its (op, format) below, in that order: a zeroing kernel "
         "takes the full list too. Parameter names are free; types are compared after whitespace "
         "normalisation; `__restrict__` (or `__restrict`) after the `*` and a `const` pointer are "
         "allowed; inputs must be pointers to `const`. `__launch_bounds__(...)` may follow "
         "`void`.\n"
      << "- every `__global__` function is launched (a kernel that is never launched is a decoy "
         "and refused).\n\n";

  out << "## Prelude\n\n"
      << "Prepended by the evaluator, not part of the generated tokens: `typedef float value_t;` "
         "(f32) or `typedef double value_t;` (f64), one `#define NAME VALUE` per constant of the "
         "program's format (values past 2^31-1 carry `LL`), then `#line 1 \"program.cu\"` so that "
         "compiler messages point at program lines. The same names are the names of launch "
         "expressions.\n\n"
      << "| constant | format | meaning |\n|---|---|---|\n";
  for (const ConstantInfo& c : constant_infos()) {
    out << "| `" << c.name << "` | " << (c.format ? std::string(to_string(*c.format)) : "all")
        << " | " << c.doc << " |\n";
  }
  out << "\nA SELL sigma greater than 1 is rounded up to a multiple of C, as the converter does; "
         "`SELL_SIGMA` is the rounded value.\n\n";

  out << "## Launch expressions\n\n"
      << "`grid=`, `block=` and `smem=` take an integer expression: decimal literals, the prelude "
         "constants, `+ - * /` (division truncates toward zero), unary `-`, parentheses, "
         "`ceil_div(a, b)`, `min(a, b)`, `max(a, b)`, evaluated in 64-bit integers on the task's "
         "matrix. At most "
      << kMaxLaunchExprLength << " characters and " << kMaxLaunchExprDepth
      << " levels of nesting. A syntax error, an unknown name or trailing text is a directive "
         "error (`bad_directive`) with its column; division by zero and overflow on the matrix are "
         "`bad_geometry`. Limits (defaults of `ProgramLimits`, an sm_90 device and the method's "
         "shared-memory limit):\n\n"
      << "| quantity | allowed | refusal |\n|---|---|---|\n"
      << "| grid | 1 .. " << limits.max_grid << " | bad_geometry |\n"
      << "| block | 1 .. " << limits.max_block << " | bad_geometry |\n"
      << "| smem | 0 .. " << limits.max_shared_bytes
      << " bytes, static + dynamic | bad_geometry below 0, resource_limit above |\n"
      << "| registers x block (warps rounded) | " << limits.max_registers_per_block
      << " | resource_limit |\n"
      << "| stored entries of the format (padding included) | " << limits.max_stored_entries
      << " | resource_limit |\n"
      << "| program text | " << limits.max_program_bytes << " bytes | program_too_large |\n\n";

  out << "## Signatures\n\n"
      << "Index arrays are `const int*`, values and dense inputs `const value_t*`, the output "
         "`value_t*` (the only argument a kernel may write). Lengths are in elements, as launch "
         "expressions over the prelude constants; a length of 0 is possible (an ELL matrix without "
         "entries). Dense operands of SpMM are row-major.\n";
  for (Op op : kOps) {
    out << "\n### " << op_title(op) << "\n";
    for (Format format : kFormats) {
      const Signature& s = signature(op, format);
      out << "\n#### " << to_string(op) << " / " << to_string(format) << "\n\n"
          << "```\n"
          << s.declaration(op == Op::spmv ? "spmv" : "spmm") << "\n```\n\n"
          << "| # | argument | type | length | layout |\n|---|---|---|---|---|\n";
      for (std::size_t i = 0; i < s.args.size(); ++i) {
        const KernelArg& a = s.args[i];
        out << "| " << i << " | `" << a.name << "` | `" << c_type(a.kind) << "` | `" << a.length
            << "` | " << a.doc << " |\n";
      }
    }
  }

  out << "\n## Static checks\n\n"
      << "Checked on real tokens (comments, string and character literals are skipped; "
         "backslash-newline splices are applied first, as the compiler does). The first refusal "
         "is reported with its reason and line; `bad_directive` becomes the error kind "
         "`bad_program`, `resource_limit` the kind `resource_limit`, every other reason the kind "
         "`static_check`.\n\n"
      << "| reason | refuses |\n|---|---|\n";
  for (std::size_t i = 0; i < kStaticCheckReasonCount; ++i) {
    const auto reason = static_cast<StaticCheckReason>(i);
    out << "| `" << to_string(reason) << "` | " << describe(reason) << " |\n";
  }
  out << "\nAfter compilation the same limits are checked against ptxas' figures: static + dynamic "
         "shared memory, registers x block, spills (when a limit is set), module-scope device "
         "memory (`global_state`) and that every launched kernel is in the cubin.\n\n"
      << "The reward computed from the evaluation is described in docs/reward.md.\n";
  return out.str();
}

}  // namespace sparserl::reward
