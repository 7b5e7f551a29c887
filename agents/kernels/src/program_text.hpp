// Internal: what every generator shares - the registry entry a generator provides, and the pieces a
// program is assembled from (the header comment, directives, kernel heads in the ABI, ${name}
// substitution into kernel templates, loads through __ldg or plain). Generators write CUDA as raw
// string templates with ${name} holes; fill() refuses a hole left open, so a generator bug fails in
// the CPU tests instead of reaching the compiler.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparserl/kernels/design_space.hpp"

namespace sparserl::kernels::detail {

// A generator as the registry holds it.
struct GeneratorDef {
  GeneratorInfo info;
  // Every parameter combination of the design for a dtype, each in info.param_names order.
  std::function<std::vector<std::vector<DesignParam>>(DType)> enumerate;
  // The program text of a point of this generator (parameters already checked against enumerate).
  std::function<std::string(const DesignPoint&)> render;
  // The //@format of a point (sell and bsr take their parameters from the point).
  std::function<FormatSpec(const DesignPoint&)> format;
  // Parameters that pick a format or a distinct code path: representatives() keeps one point per
  // distinct combination of them.
  std::vector<std::string> structural_params;
};

// The families, one per source file.
std::vector<GeneratorDef> csr_spmv_generators();
GeneratorDef csr_merge_generator();  // csr_spmv_generators() lists it last
std::vector<GeneratorDef> format_spmv_generators();
std::vector<GeneratorDef> split_spmv_generators();      // gen_csr_split.cpp (issue 25)
std::vector<GeneratorDef> nnz_split_spmv_generators();  // gen_csr_nnz_split.cpp
std::vector<GeneratorDef> spmm_generators();

// All generators in documentation order.
const std::vector<GeneratorDef>& generator_defs();
const GeneratorDef* find_generator_def(std::string_view name);

// The cartesian product of per-parameter value lists, in order (the last parameter varies fastest),
// keeping the combinations `keep` accepts.
using ParamValues = std::vector<std::pair<std::string, std::vector<std::string>>>;
std::vector<std::vector<DesignParam>> product(
    const ParamValues& values,
    const std::function<bool(const std::vector<DesignParam>&)>& keep = nullptr);
using ParamFilter = std::function<bool(const std::vector<DesignParam>&)>;
using FormatOf = std::function<FormatSpec(const DesignPoint&)>;

// A generator whose parameters are the keys of `values` (info.param_names is filled in from them,
// so the two cannot disagree): a point for every combination of their values for a dtype, less
// those `keep` refuses; its //@format is `format_of`'s, or plain_format(info.format) when null.
GeneratorDef design_generator(GeneratorInfo info, const std::function<ParamValues(DType)>& values,
                              std::function<std::string(const DesignPoint&)> render,
                              std::vector<std::string> structural_params,
                              const ParamFilter& keep = nullptr, FormatOf format_of = nullptr);
// The same for value lists that are alike for every dtype.
GeneratorDef design_generator(GeneratorInfo info, const ParamValues& values,
                              std::function<std::string(const DesignPoint&)> render,
                              std::vector<std::string> structural_params,
                              const ParamFilter& keep = nullptr, FormatOf format_of = nullptr);

// The value of `name` in a parameter list (empty if absent).
std::string value_of(const std::vector<DesignParam>& params, std::string_view name);
int int_value_of(const std::vector<DesignParam>& params, std::string_view name);

// Replaces every ${name} in `tmpl`; std::logic_error for a hole without a value.
std::string fill(std::string_view tmpl,
                 const std::vector<std::pair<std::string_view, std::string>>& values);

// `extern "C" __global__ void __launch_bounds__(BOUNDS)\nNAME(<the ABI argument list>)` for the
// point's (op, format); no __launch_bounds__ when bounds is empty.
std::string kernel_head(Op op, Format format, std::string_view name, std::string_view bounds);

// The //@format of a point: a format without parameters (csr, coo, ell); SELL-C-sigma from the
// point's C and sigma; BSR from its shape "RxC".
FormatSpec plain_format(Format format);
FormatSpec sell_format(const DesignPoint& p);
FormatSpec bsr_format(const DesignPoint& p);

// The device function `merge_path_rows(row_ptr, diagonal, lane, MASK)` of the merge-path designs
// (csr_merge, spmm_csr_merge): how many row ends precede the first `diagonal` items of the merge of
// the row ends row_ptr[1..M] with the nonzero indices 0..NNZ-1, found by a group of `group` lanes
// that probe together (`mask` names the group's lanes), each step narrowing the range group-fold.
// The caller writes the comment above it (and a template line when `group` is a parameter).
std::string merge_path_rows_function(std::string_view group, std::string_view mask);
// The narrowing step of such a group-wide search (also the split class's search for a nonzero's
// row): `count` of the group's probes, spaced `step` apart from `low`, passed - a prefix of them -
// so the answer lies after the last that passed and before the next probe. Lines at a while
// loop's indent of 4.
std::string narrow_search_range();

// `__ldg(&array[index])` or `array[index]`.
std::string load(bool ldg, std::string_view array, std::string_view index);

// `sum += val[k] * x[col_idx[k]];` with or without __ldg, for an index expression `k` (SpMV).
std::string fma_line(bool ldg, const std::string& k);

// The opening of the SpMV kernels in which each warp owns a tile of 32 consecutive rows, one per
// lane: `tile`, `lane`, the lane's `row` and its [begin, end) in col_idx (empty past the last row).
extern const char* const kWarpTileRows;

// The device function `row_of_nonzero(row_ptr, nz, low, lane, mask)` of the split and segmented
// designs: the row holding nonzero nz (0 <= nz < NNZ), searched from row `low` on by a group of
// `group` lanes (`mask` names them, `lane` is the caller's place in the group) that probe together,
// each step narrowing the range group-fold. Comment lines above it included.
std::string row_of_nonzero_function(std::string_view group);

// A warp's inclusive segmented scan of `value` over runs of equal `key` (shuffles up, five steps),
// then `next_row`, the key of the next lane: the lines at `indent`, "#pragma unroll" first.
std::string warp_segmented_scan(std::string_view value, std::string_view key,
                                std::string_view indent);

// A warp's sum of the nonzeros [from, to) of one row, lane by lane (`fma` adds nonzero k to
// `sum`), reduced to lane 0, which adds it to y[`row`] with atomicAdd: the lines at `indent`.
std::string warp_chunk_sum(std::string_view indent, std::string_view row, std::string_view fma);

// The walk of the split designs' long-row launches over a chunk [chunk_begin, chunk_end) of
// SPLIT_ROW nonzeros: a long row holds more than SPLIT_ROW entries, so only the rows of the
// chunk's first and last nonzero can be long; `body` runs for each of them that is (with begin,
// end, from, to and row set) at an indent of 6. `mask` names the searching lanes.
std::string long_row_chunk_walk(std::string_view mask, std::string_view body);

// The vector type names of a dtype for `width` elements: {"float4", "int4"}, {"double2", "int2"}.
struct VectorTypes {
  std::string value;
  std::string index;
};
VectorTypes vector_types(DType dtype, int width);
// The widest vector of value_t a 16-byte load holds: 4 for f32, 2 for f64.
int max_vector_width(DType dtype);

struct LaunchLine {
  std::string kernel;
  std::string grid;
  std::string block;
  std::string smem;  // empty: no smem=
};

// What a rendered program is made of.
struct ProgramParts {
  std::string summary;  // what the design does (a paragraph)
  std::vector<std::pair<std::string, std::string>> parameter_docs;  // "lanes=8" -> its meaning
  FormatSpec format;
  std::vector<LaunchLine> launches;
  std::string body;  // #defines and kernels
};

// The zeroing launch of the designs that cut the nonzeros into tiles of TILE and add the rows a
// tile boundary cuts with atomicAdd (csr_segscan, csr_nnzsplit): the kernel `name`, its comment
// lines above it, which zeroes those rows (and every empty row where EMPTY_ROWS > 0) using
// row_of_nonzero(); and its launch line for a tile of `tile` nonzeros.
std::string tile_cut_zeroing_kernel(Op op, std::string_view name);
LaunchLine tile_cut_zeroing_launch(std::string name, const std::string& tile);

// The zeroing launch of the COO SpMV designs (coo_segmented, coo_tiled), whose atomics add into y:
// the kernel zero_y (its comment line above it, a thread per row, followed by a blank line) and
// its launch line.
std::string zero_y_kernel(Op op);
LaunchLine zero_y_launch();

// The program text: the header comment (the point's id, the summary wrapped at 100 columns, one
// line per parameter), the directives, a blank line, the body.
std::string assemble(const DesignPoint& point, const ProgramParts& parts);

}  // namespace sparserl::kernels::detail
