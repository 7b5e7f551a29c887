// The shared pieces of program text (see program_text.hpp): template filling, kernel heads built
// from the ABI registry, the header comment and the directives.
#include "program_text.hpp"

#include <algorithm>
#include <stdexcept>

#include "sparserl/reward/abi.hpp"

namespace sparserl::kernels::detail {
namespace {

constexpr std::size_t kCommentWidth = 100;

// Greedy word wrap of a paragraph into `// ` lines no longer than kCommentWidth.
void wrap_comment(std::string& out, std::string_view text, std::string_view indent) {
  std::string line = "//" + std::string(indent);
  bool line_has_word = false;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    std::size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j == i) break;
    const std::string_view word = text.substr(i, j - i);
    if (line_has_word && line.size() + 1 + word.size() > kCommentWidth) {
      out += line + "\n";
      line = "//" + std::string(indent) + "  ";
      line_has_word = false;
    }
    if (line_has_word) line += ' ';
    line += word;
    line_has_word = true;
    i = j;
  }
  if (line_has_word) out += line + "\n";
}

}  // namespace

std::vector<std::vector<DesignParam>> product(
    const ParamValues& values, const std::function<bool(const std::vector<DesignParam>&)>& keep) {
  std::vector<std::vector<DesignParam>> out = {{}};
  for (const auto& [name, options] : values) {
    std::vector<std::vector<DesignParam>> next;
    for (const auto& partial : out) {
      for (const std::string& v : options) {
        auto p = partial;
        p.push_back({name, v});
        next.push_back(std::move(p));
      }
    }
    out = std::move(next);
  }
  if (keep) {
    std::erase_if(out, [&](const std::vector<DesignParam>& p) { return !keep(p); });
  }
  return out;
}

GeneratorDef design_generator(GeneratorInfo info, const std::function<ParamValues(DType)>& values,
                              std::function<std::string(const DesignPoint&)> render,
                              std::vector<std::string> structural_params, const ParamFilter& keep,
                              FormatOf format_of) {
  info.param_names.clear();
  for (const auto& [name, options] : values(DType::f32)) info.param_names.push_back(name);
  if (!format_of) {
    format_of = [format = info.format](const DesignPoint&) { return plain_format(format); };
  }
  return {std::move(info), [values, keep](DType dtype) { return product(values(dtype), keep); },
          std::move(render), std::move(format_of), std::move(structural_params)};
}

GeneratorDef design_generator(GeneratorInfo info, const ParamValues& values,
                              std::function<std::string(const DesignPoint&)> render,
                              std::vector<std::string> structural_params, const ParamFilter& keep,
                              FormatOf format_of) {
  return design_generator(
      std::move(info), [values](DType) { return values; }, std::move(render),
      std::move(structural_params), keep, std::move(format_of));
}

std::string value_of(const std::vector<DesignParam>& params, std::string_view name) {
  for (const DesignParam& p : params) {
    if (p.name == name) return p.value;
  }
  return {};
}

int int_value_of(const std::vector<DesignParam>& params, std::string_view name) {
  const std::string v = value_of(params, name);
  return v.empty() ? 0 : std::stoi(v);
}

std::string fill(std::string_view tmpl,
                 const std::vector<std::pair<std::string_view, std::string>>& values) {
  std::string out;
  out.reserve(tmpl.size() + 256);
  std::size_t i = 0;
  while (i < tmpl.size()) {
    const std::size_t open = tmpl.find("${", i);
    if (open == std::string_view::npos) {
      out.append(tmpl.substr(i));
      break;
    }
    out.append(tmpl.substr(i, open - i));
    const std::size_t close = tmpl.find('}', open);
    if (close == std::string_view::npos) throw std::logic_error("kernel template: unclosed ${");
    const std::string_view key = tmpl.substr(open + 2, close - open - 2);
    const auto it =
        std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == key; });
    if (it == values.end()) {
      throw std::logic_error("kernel template: no value for ${" + std::string(key) + "}");
    }
    out += it->second;
    i = close + 1;
  }
  return out;
}

std::string kernel_head(Op op, Format format, std::string_view name, std::string_view bounds) {
  const reward::Signature& sig = reward::signature(op, format);
  std::string head = "extern \"C\" __global__ void ";
  if (!bounds.empty()) head += "__launch_bounds__(" + std::string(bounds) + ") ";
  head += std::string(name) + "(";
  const std::string indent(head.size() < 60 ? head.size() : 4, ' ');
  std::string line = head;
  std::string out;
  for (std::size_t i = 0; i < sig.args.size(); ++i) {
    std::string arg = std::string(reward::c_type(sig.args[i].kind)) + " __restrict__ " +
                      std::string(sig.args[i].name);
    arg += (i + 1 < sig.args.size()) ? "," : ")";
    if (line.size() + 1 + arg.size() > kCommentWidth && line.size() > indent.size()) {
      out += line + "\n";
      line = indent;
    } else if (line.back() != '(' && line.size() > indent.size()) {
      line += ' ';
    }
    line += arg;
  }
  out += line;
  return out;
}

FormatSpec plain_format(Format format) {
  FormatSpec spec;
  spec.format = format;
  return spec;
}

FormatSpec sell_format(const DesignPoint& p) {
  FormatSpec s;
  s.format = Format::sell;
  s.params.sell_c = p.int_param("C");
  s.params.sell_sigma = p.int_param("sigma");
  return s;
}

FormatSpec bsr_format(const DesignPoint& p) {
  FormatSpec s;
  s.format = Format::bsr;
  const std::string shape = p.param("shape");  // "RxC"
  const std::size_t x = shape.find('x');
  s.params.bsr_r = std::stoi(shape.substr(0, x));
  s.params.bsr_c = std::stoi(shape.substr(x + 1));
  return s;
}

std::string merge_path_rows_function(std::string_view group, std::string_view mask) {
  return fill(
      R"cuda(__device__ __forceinline__ int merge_path_rows(const int* __restrict__ row_ptr, long long diagonal,
                                               int lane, unsigned ${mask}) {
  long long low = diagonal > NNZ ? diagonal - NNZ : 0;
  long long high = diagonal < M ? diagonal : M;
  while (low < high) {
    const long long step = (high - low + ${group} - 1) / ${group};
    const long long probe = low + lane * step;
    const bool consumed = probe < high && row_ptr[probe + 1] + probe + 1 <= diagonal;
    const int count = __popc(__ballot_sync(${mask}, consumed) & ${mask});
${narrow}  }
  return static_cast<int>(low);
}
)cuda",
      {{"group", std::string(group)},
       {"mask", std::string(mask)},
       {"narrow", narrow_search_range()}});
}

std::string warp_segmented_scan(std::string_view value, std::string_view key,
                                std::string_view indent) {
  return fill(R"cuda(#pragma unroll
${i}for (int offset = 1; offset < 32; offset *= 2) {
${i}  const value_t other = __shfl_up_sync(0xffffffffu, ${v}, offset);
${i}  const int other_row = __shfl_up_sync(0xffffffffu, ${key}, offset);
${i}  if (lane >= offset && other_row == ${key}) ${v} += other;
${i}}
${i}const int next_row = __shfl_down_sync(0xffffffffu, ${key}, 1);
)cuda",
              {{"i", std::string(indent)}, {"v", std::string(value)}, {"key", std::string(key)}});
}

std::string warp_chunk_sum(std::string_view indent, std::string_view row, std::string_view fma) {
  return fill(R"cuda(${i}value_t sum = 0;
#pragma unroll 4
${i}for (long long k = from + lane; k < to; k += 32) ${fma}
#pragma unroll
${i}for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
${i}if (lane == 0) atomicAdd(&y[${row}], sum);
)cuda",
              {{"i", std::string(indent)}, {"row", std::string(row)}, {"fma", std::string(fma)}});
}

std::string long_row_chunk_walk(std::string_view mask, std::string_view body) {
  return fill(
      R"cuda(  const long long chunk_end = chunk_begin + SPLIT_ROW < NNZ ? chunk_begin + SPLIT_ROW : NNZ;
  int row = row_of_nonzero(row_ptr, chunk_begin, 0, lane, ${mask});
  for (int side = 0; side < 2; ++side) {
    const int begin = row_ptr[row];
    const int end = row_ptr[row + 1];
    if (end - begin > SPLIT_ROW) {
      const long long from = begin > chunk_begin ? begin : chunk_begin;
      const long long to = end < chunk_end ? end : chunk_end;
${body}    }
    if (end >= chunk_end) break;  // this row reaches the end of the chunk
    row = row_of_nonzero(row_ptr, chunk_end - 1, row + 1, lane, ${mask});
  }
)cuda",
      {{"mask", std::string(mask)}, {"body", std::string(body)}});
}

std::string narrow_search_range() {
  return R"cuda(    if (count == 0) {
      high = low;
    } else {
      const long long last = low + (count - 1) * step;
      low = last + 1;
      high = min(high, last + step);
    }
)cuda";
}

std::string load(bool ldg, std::string_view array, std::string_view index) {
  if (ldg) return "__ldg(&" + std::string(array) + "[" + std::string(index) + "])";
  return std::string(array) + "[" + std::string(index) + "]";
}

std::string fma_line(bool ldg, const std::string& k) {
  return "sum += " + load(ldg, "val", k) + " * " + load(ldg, "x", load(ldg, "col_idx", k)) + ";";
}

const char* const kWarpTileRows =
    R"cuda(  const long long tile = (static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  const long long row = tile * 32 + lane;
  int begin = 0;
  int end = 0;
  if (row < M) {
    begin = row_ptr[row];
    end = row_ptr[row + 1];
  }
)cuda";

std::string tile_cut_zeroing_kernel(Op op, std::string_view name) {
  return fill(
      R"cuda(// Launch 1: the main launch adds rows cut by a tile boundary (multiples of TILE nonzeros) with
// atomicAdd, so they start at zero. With empty rows (EMPTY_ROWS > 0), which no nonzero reaches, a
// thread per row also writes their zeros; without, a warp per tile boundary finds its cut row.
${zero_head} {
#if EMPTY_ROWS > 0
  const long long row = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if (row >= M) return;
  const int begin = row_ptr[row];
  const int end = row_ptr[row + 1];
  if (begin == end || begin / TILE != (end - 1) / TILE) y[row] = 0;
#else
  const long long boundary =
      ((static_cast<long long>(blockIdx.x) * 256 + threadIdx.x) / 32 + 1) * TILE;
  const int lane = threadIdx.x % 32;
  if (boundary >= NNZ) return;  // the whole warp
  const int cut = row_of_nonzero(row_ptr, boundary, 0, lane, 0xffffffffu);
  if (lane == 0 && row_ptr[cut] < boundary) y[cut] = 0;
#endif
})cuda",
      {{"zero_head", kernel_head(op, Format::csr, name, "256")}});
}

std::string zero_y_kernel(Op op) {
  return fill(
      R"cuda(// Launch 1: y = 0 (the evaluator fills y with NaN before every run; the atomics need zeros).
${zero_head} {
  const long long i = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if (i < M) y[i] = 0;
}

)cuda",
      {{"zero_head", kernel_head(op, Format::coo, "zero_y", "256")}});
}

LaunchLine zero_y_launch() { return {"zero_y", "ceil_div(max(M, 1), 256)", "256", ""}; }

LaunchLine tile_cut_zeroing_launch(std::string name, const std::string& tile) {
  return {std::move(name),
          "max(min(EMPTY_ROWS, 1) * ceil_div(M, 256) + (1 - min(EMPTY_ROWS, 1)) * "
          "ceil_div(ceil_div(NNZ, " +
              tile + ") * 32, 256), 1)",
          "256", ""};
}

std::string row_of_nonzero_function(std::string_view group) {
  return fill(
      R"cuda(// The row holding nonzero nz (0 <= nz < NNZ): the count of rows from `low` on that end at or before
// it (row_ptr[r + 1] <= nz holds for a prefix of the rows), found by ${group} lanes (`mask`) that
// probe together, each step narrowing the range ${group}-fold.
__device__ __forceinline__ int row_of_nonzero(const int* __restrict__ row_ptr, long long nz,
                                              long long low, int lane, unsigned mask) {
  long long high = M;
  while (low < high) {
    const long long step = (high - low + ${group} - 1) / ${group};
    const long long probe = low + lane * step;
    const bool before = probe < high && row_ptr[probe + 1] <= nz;
    const int count = __popc(__ballot_sync(mask, before) & mask);
${narrow}  }
  return static_cast<int>(low);
}
)cuda",
      {{"group", std::string(group)}, {"narrow", narrow_search_range()}});
}

VectorTypes vector_types(DType dtype, int width) {
  const std::string w = std::to_string(width);
  return {(dtype == DType::f32 ? "float" : "double") + w, "int" + w};
}

int max_vector_width(DType dtype) { return dtype == DType::f32 ? 4 : 2; }

std::string assemble(const DesignPoint& point, const ProgramParts& parts) {
  std::string out = "// Design: " + point.id() + " (" + std::string(to_string(point.op)) + ", " +
                    std::string(to_string(point.dtype)) + ")\n";
  wrap_comment(out, parts.summary, " ");
  if (!parts.parameter_docs.empty()) {
    out += "// Parameters:\n";
    for (const auto& [name, doc] : parts.parameter_docs) {
      wrap_comment(out, name + ": " + doc, "   ");
    }
  }
  out += "//@format " + parts.format.str() + "\n";
  for (const LaunchLine& l : parts.launches) {
    out += "//@launch " + l.kernel + " grid=" + l.grid + " block=" + l.block;
    if (!l.smem.empty()) out += " smem=" + l.smem;
    out += "\n";
  }
  out += "\n";
  out += parts.body;
  if (out.back() != '\n') out += "\n";
  return out;
}

}  // namespace sparserl::kernels::detail
