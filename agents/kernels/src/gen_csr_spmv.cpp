// The CSR SpMV designs: one thread per row (csr_scalar), a group of lanes per row (csr_vector),
// x staged in shared memory for banded matrices (csr_xstage), thread-per-row for short rows with
// warp groups for long ones in one launch (csr_adaptive), one launch per row-length class
// (csr_binned) and the load-balanced merge path over rows and nonzeros (csr_merge, in
// gen_csr_merge.cpp for its size). The first four
// lose badly on power-law and huge-row matrices, where one long row serialises a warp or a block;
// csr_merge splits every row over as many threads as its length needs, at the price of a search
// and a second (zeroing) launch.
#include <stdexcept>
#include <string>
#include <vector>

#include "program_text.hpp"

namespace sparserl::kernels::detail {
namespace {

bool ldg_of(const DesignPoint& p) { return p.int_param("ldg") != 0; }

// A warp-synchronous reduction of `sum` over groups of `lanes` lanes (lane 0 of each group ends up
// with the group's total). `lanes` is a macro name or a number.
std::string group_reduce(const std::string& lanes) {
  return "#pragma unroll\n"
         "  for (int offset = " +
         lanes +
         " / 2; offset > 0; offset /= 2) {\n"
         "    sum += __shfl_down_sync(0xffffffffu, sum, offset, " +
         lanes +
         ");\n"
         "  }\n";
}

// Position of the n-th (0-based) set bit of a mask that has more than n set bits: five popcount
// steps instead of a loop over the bits (warp-group compaction of rows).
const char* kNthSetBit = R"cuda(__device__ __forceinline__ int nth_set_bit(unsigned mask, int n) {
  int position = 0;
#pragma unroll
  for (int width = 16; width > 0; width /= 2) {
    const unsigned low = mask & ((1u << width) - 1u);
    const int count = __popc(low);
    if (n >= count) {
      n -= count;
      mask >>= width;
      position += width;
    } else {
      mask = low;
    }
  }
  return position;
}

)cuda";

// -------------------------------------------------------------------------------------------------
// csr_scalar

std::string scalar_loop(bool ldg, const std::string& indent) {
  return indent + "int k = begin;\n" + indent +
         "for (; k + UNROLL <= end; k += UNROLL) {\n"
         "#pragma unroll\n" +
         indent + "  for (int u = 0; u < UNROLL; ++u) " + fma_line(ldg, "k + u") + "\n" + indent +
         "}\n" + indent + "for (; k < end; ++k) " + fma_line(ldg, "k") + "\n";
}

std::string render_csr_scalar(const DesignPoint& p) {
  const bool ldg = ldg_of(p);
  const std::string unroll = p.param("unroll");
  std::string defines = "#define BLOCK " + p.param("block") + "\n";
  std::string loop;
  if (unroll == "1") {
    loop = "  for (int k = begin; k < end; ++k) " + fma_line(ldg, "k") + "\n";
  } else if (unroll == "max") {
    defines += "#define UNROLL 4\n";
    loop =
        "#if MAX_ROW_NNZ <= 32\n"
        "  // No row is longer than MAX_ROW_NNZ: a fully unrolled, predicated loop without a\n"
        "  // data-dependent trip count.\n"
        "#pragma unroll\n"
        "  for (int j = 0; j < MAX_ROW_NNZ; ++j) {\n"
        "    if (begin + j < end) " +
        fma_line(ldg, "begin + j") +
        "\n"
        "  }\n"
        "#else\n" +
        scalar_loop(ldg, "  ") + "#endif\n";
  } else {
    defines += "#define UNROLL " + unroll + "\n";
    loop = scalar_loop(ldg, "  ");
  }
  ProgramParts parts;
  parts.summary =
      "SpMV on CSR with one thread per row: the thread walks its row's entries and writes y once. "
      "Cheapest per row when rows are short and of similar length; a long row stalls its warp.";
  parts.parameter_docs = {
      {"block=" + p.param("block"), "threads per block"},
      {"unroll=" + unroll,
       unroll == "max" ? "the row loop is unrolled MAX_ROW_NNZ times (a prelude constant) when no "
                         "row is longer than 32, else 4 times"
                       : "entries loaded per loop step"},
      {"ldg=" + p.param("ldg"), ldg ? "loads through the read-only cache (__ldg)" : "plain loads"}};
  parts.format = p.format();
  parts.launches = {
      {"spmv_csr_scalar", "ceil_div(max(M, 1), " + p.param("block") + ")", p.param("block"), ""}};
  parts.body = defines + "\n" + kernel_head(p.op, Format::csr, "spmv_csr_scalar", "BLOCK") +
               " {\n" +
               "  const long long row = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;\n"
               "  if (row >= M) return;\n"
               "  const int begin = row_ptr[row];\n"
               "  const int end = row_ptr[row + 1];\n"
               "  value_t sum = 0;\n" +
               loop + "  y[row] = sum;\n}\n";
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// csr_vector

// The launch-expression spelling of the compile-time lane count of `lanes=auto`: the largest power
// of two (1..32) not above the mean row length NNZ / M (the expression language has no comparisons,
// so each power is switched on by min(mean / 2^i, 1)).
const char* kAutoLanesExpr =
    "(1 + min(NNZ / max(M, 1) / 2, 1) + 2 * min(NNZ / max(M, 1) / 4, 1) + 4 * min(NNZ / max(M, 1) "
    "/ 8, 1) + 8 * min(NNZ / max(M, 1) / 16, 1) + 16 * min(NNZ / max(M, 1) / 32, 1))";

const char* kAutoLanesDefine =
    "#define MEAN_ROW_NNZ (M > 0 ? NNZ / M : 0)\n"
    "#define LANES                                                                      \\\n"
    "  (MEAN_ROW_NNZ >= 32 ? 32 : MEAN_ROW_NNZ >= 16 ? 16 : MEAN_ROW_NNZ >= 8 ? 8 :   \\\n"
    "   MEAN_ROW_NNZ >= 4 ? 4 : MEAN_ROW_NNZ >= 2 ? 2 : 1)\n";

std::string vector_row_loop(const DesignPoint& p, bool ldg, int unroll, int vec) {
  const std::string I = "    ";
  if (vec > 1) {
    const VectorTypes vt = vector_types(p.dtype, vec);
    const std::string vload = ldg ? "__ldg(reinterpret_cast<const " + vt.value + "*>(val + k))"
                                  : "*reinterpret_cast<const " + vt.value + "*>(val + k)";
    const std::string cload = ldg ? "__ldg(reinterpret_cast<const " + vt.index + "*>(col_idx + k))"
                                  : "*reinterpret_cast<const " + vt.index + "*>(col_idx + k)";
    static const char* kComp[] = {"x", "y", "z", "w"};
    std::string body;
    for (int i = 0; i < vec; ++i) {
      body += I + "  sum += v." + kComp[i] + " * " + load(ldg, "x", std::string("c.") + kComp[i]) +
              ";\n";
    }
    return I +
           "// The middle of the row, from the first multiple of VEC on, is read VEC entries\n" +
           I + "// per 16-byte load; the unaligned head and the tail one entry at a time.\n" + I +
           "int aligned = (begin + VEC - 1) / VEC * VEC;\n" + I +
           "if (aligned > end) aligned = end;\n" + I +
           "const int stop = aligned + (end - aligned) / VEC * VEC;\n" + I +
           "for (int k = begin + lane; k < aligned; k += LANES) " + fma_line(ldg, "k") + "\n" + I +
           "for (int k = aligned + lane * VEC; k < stop; k += LANES * VEC) {\n" + I + "  const " +
           vt.value + " v = " + vload + ";\n" + I + "  const " + vt.index + " c = " + cload +
           ";\n" + body + I + "}\n" + I + "for (int k = stop + lane; k < end; k += LANES) " +
           fma_line(ldg, "k") + "\n";
  }
  if (unroll > 1) {
    return I + "int k = begin + lane;\n" + I +
           "for (; k + (UNROLL - 1) * LANES < end; k += UNROLL * LANES) {\n"
           "#pragma unroll\n" +
           I + "  for (int u = 0; u < UNROLL; ++u) " + fma_line(ldg, "k + u * LANES") + "\n" + I +
           "}\n" + I + "for (; k < end; k += LANES) " + fma_line(ldg, "k") + "\n";
  }
  return I + "for (int k = begin + lane; k < end; k += LANES) " + fma_line(ldg, "k") + "\n";
}

std::string render_csr_vector(const DesignPoint& p) {
  const bool ldg = ldg_of(p);
  const std::string lanes = p.param("lanes");
  const int unroll = p.int_param("unroll");
  const int vec = p.int_param("vec");
  const std::string block = p.param("block");
  std::string defines = "#define BLOCK " + block + "\n";
  std::string lanes_expr;
  if (lanes == "auto") {
    defines += kAutoLanesDefine;
    lanes_expr = kAutoLanesExpr;
  } else {
    defines += "#define LANES " + lanes + "\n";
    lanes_expr = lanes;
  }
  if (unroll > 1) defines += "#define UNROLL " + std::to_string(unroll) + "\n";
  if (vec > 1) defines += "#define VEC " + std::to_string(vec) + "\n";
  ProgramParts parts;
  parts.summary =
      "SpMV on CSR with a group of LANES threads per row: the lanes read the row's entries "
      "side by side (coalesced), each keeps a partial sum, and the group adds them with warp "
      "shuffles; lane 0 writes y. Every thread of a warp reaches the shuffles (rows past M add "
      "nothing), so the full-mask shuffles are safe.";
  parts.parameter_docs = {
      {"lanes=" + lanes, lanes == "auto"
                             ? "lanes per row fixed at compile time from the prelude: the largest "
                               "power of two not above the mean row length NNZ / M, at most 32"
                             : "threads per row"},
      {"block=" + block, "threads per block"},
      {"unroll=" + std::to_string(unroll), "strided loads issued per loop step"},
      {"vec=" + std::to_string(vec),
       vec > 1 ? "entries per 16-byte vector load of val and col_idx (aligned middle of each row)"
               : "scalar loads"},
      {"ldg=" + p.param("ldg"), ldg ? "loads through the read-only cache (__ldg)" : "plain loads"}};
  parts.format = p.format();
  parts.launches = {
      {"spmv_csr_vector", "ceil_div(max(M, 1) * " + lanes_expr + ", " + block + ")", block, ""}};
  parts.body =
      defines + "\n" + kernel_head(p.op, Format::csr, "spmv_csr_vector", "BLOCK") + " {\n" +
      "  const long long thread = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;\n"
      "  const long long row = thread / LANES;\n"
      "  const int lane = static_cast<int>(thread % LANES);\n"
      "  value_t sum = 0;\n"
      "  if (row < M) {\n"
      "    const int begin = row_ptr[row];\n"
      "    const int end = row_ptr[row + 1];\n" +
      vector_row_loop(p, ldg, unroll, vec) + "  }\n" + group_reduce("LANES") +
      "  if (row < M && lane == 0) y[row] = sum;\n}\n";
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// csr_xstage

constexpr int kStageWindow = 4096;  // x entries staged per block (16 KiB f32, 32 KiB f64)

std::string render_csr_xstage(const DesignPoint& p) {
  const std::string lanes = p.param("lanes");
  const std::string block = p.param("block");
  const int rows = p.int_param("block") / p.int_param("lanes");
  const char* tmpl = R"cuda(#define BLOCK ${block}
#define LANES ${lanes}
#define ROWS (BLOCK / LANES)
#define WINDOW ${window}

${head} {
  __shared__ value_t s_x[WINDOW];
  __shared__ int s_low[BLOCK / 32];
  __shared__ int s_high[BLOCK / 32];
  const long long row = static_cast<long long>(blockIdx.x) * ROWS + threadIdx.x / LANES;
  const int lane = threadIdx.x % LANES;
  int begin = 0;
  int end = 0;
  if (row < M) {
    begin = row_ptr[row];
    end = row_ptr[row + 1];
  }
  // The block's column window: columns are sorted within a row, so the first and last entry of
  // each row bound it.
  int low = 0x7fffffff;
  int high = -1;
  if (lane == 0 && begin < end) {
    low = col_idx[begin];
    high = col_idx[end - 1];
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    low = min(low, __shfl_xor_sync(0xffffffffu, low, offset));
    high = max(high, __shfl_xor_sync(0xffffffffu, high, offset));
  }
  if (threadIdx.x % 32 == 0) {
    s_low[threadIdx.x / 32] = low;
    s_high[threadIdx.x / 32] = high;
  }
  __syncthreads();
  low = s_low[0];
  high = s_high[0];
  for (int w = 1; w < BLOCK / 32; ++w) {
    low = min(low, s_low[w]);
    high = max(high, s_high[w]);
  }
  // Block-uniform: either the whole window fits in shared memory or every row reads x directly.
  const bool staged = high >= low && high - low < WINDOW;
  value_t sum = 0;
  if (staged) {
    for (int i = threadIdx.x; i <= high - low; i += BLOCK) s_x[i] = x[low + i];
    __syncthreads();
    for (int k = begin + lane; k < end; k += LANES) sum += val[k] * s_x[col_idx[k] - low];
  } else {
    for (int k = begin + lane; k < end; k += LANES) sum += val[k] * x[col_idx[k]];
  }
${reduce}  if (row < M && lane == 0) y[row] = sum;
}
)cuda";
  ProgramParts parts;
  parts.summary =
      "SpMV on CSR for banded matrices: each block takes ROWS consecutive rows, finds the range of "
      "columns they touch, and when it spans fewer than WINDOW entries copies that slice of x into "
      "shared memory with coalesced loads, so the gathers hit shared memory instead of the cache. "
      "Blocks whose window is wider read x directly. LANES threads share a row.";
  parts.parameter_docs = {{"lanes=" + lanes, "threads per row"},
                          {"block=" + block, "threads per block (ROWS = block / lanes rows)"}};
  parts.format = p.format();
  parts.launches = {
      {"spmv_csr_xstage", "ceil_div(max(M, 1), " + std::to_string(rows) + ")", block, ""}};
  parts.body = fill(tmpl, {{"block", block},
                           {"lanes", lanes},
                           {"window", std::to_string(kStageWindow)},
                           {"head", kernel_head(p.op, Format::csr, "spmv_csr_xstage", "BLOCK")},
                           {"reduce", lanes == "1" ? "" : group_reduce("LANES")}});
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// csr_adaptive

std::string render_csr_adaptive(const DesignPoint& p) {
  const std::string block = p.param("block");
  const int long_lanes = p.int_param("lanes");
  std::string long_part;
  if (long_lanes == 32) {
    long_part = R"cuda(  while (pending != 0) {
    const int source = __ffs(pending) - 1;
    pending &= pending - 1;
    const int row_begin = __shfl_sync(0xffffffffu, begin, source);
    const int row_end = __shfl_sync(0xffffffffu, end, source);
    value_t sum = 0;
    for (int k = row_begin + lane; k < row_end; k += 32) ${fma}
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane == 0) y[tile * 32 + source] = sum;
  }
)cuda";
  } else {
    long_part =
        R"cuda(  // Groups of LONG_LANES lanes take the next 32 / LONG_LANES long rows of the tile per round.
  const int group = lane / LONG_LANES;
  const int sub = lane % LONG_LANES;
  while (pending != 0) {
    const int source = group < __popc(pending) ? nth_set_bit(pending, group) : -1;
    for (int i = 0; i < 32 / LONG_LANES && pending != 0; ++i) pending &= pending - 1;
    const int row_begin = __shfl_sync(0xffffffffu, begin, source < 0 ? 0 : source);
    const int row_end = __shfl_sync(0xffffffffu, end, source < 0 ? 0 : source);
    value_t sum = 0;
    if (source >= 0) {
      for (int k = row_begin + sub; k < row_end; k += LONG_LANES) ${fma}
    }
#pragma unroll
    for (int offset = LONG_LANES / 2; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(0xffffffffu, sum, offset, LONG_LANES);
    }
    if (source >= 0 && sub == 0) y[tile * 32 + source] = sum;
  }
)cuda";
  }
  const char* tmpl = R"cuda(#define BLOCK ${block}
#define SHORT_ROW ${short}
#define LONG_LANES ${lanes}

${helper}${head} {
  // Each warp owns a tile of 32 consecutive rows, one per lane.
${warp_rows}  const bool is_long = end - begin > SHORT_ROW;
  if (row < M && !is_long) {
    value_t sum = 0;
    for (int k = begin; k < end; ++k) ${fma}
    y[row] = sum;
  }
  unsigned pending = __ballot_sync(0xffffffffu, row < M && is_long);
${long_part}}
)cuda";
  ProgramParts parts;
  parts.summary =
      "Adaptive SpMV on CSR in one launch: each warp owns 32 consecutive rows. Rows of at most "
      "SHORT_ROW entries are summed by their own lane (thread per row); the longer ones are "
      "collected with a ballot and processed LONG_LANES lanes per row, 32 / LONG_LANES rows at "
      "a time, so a long row no longer serialises one thread.";
  parts.parameter_docs = {{"short=" + p.param("short"), "longest row handled by a single thread"},
                          {"lanes=" + p.param("lanes"), "lanes per long row"},
                          {"block=" + block, "threads per block"}};
  parts.format = p.format();
  parts.launches = {{"spmv_csr_adaptive", "ceil_div(max(M, 1), " + block + ")", block, ""}};
  parts.body = fill(tmpl, {{"block", block},
                           {"short", p.param("short")},
                           {"lanes", p.param("lanes")},
                           {"helper", long_lanes == 32 ? "" : kNthSetBit},
                           {"head", kernel_head(p.op, Format::csr, "spmv_csr_adaptive", "BLOCK")},
                           {"warp_rows", kWarpTileRows},
                           {"fma", fma_line(true, "k")},
                           {"long_part", fill(long_part, {{"fma", fma_line(true, "k")}})}});
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// csr_binned

struct RowClass {
  std::string lanes;  // "1".."32", "b" (the whole block) or "s" (split over warps, last class only)
  long long high;     // longest row of the class; -1 for the last (unbounded) class
};

std::vector<RowClass> parse_classes(const std::string& spec) {
  std::vector<RowClass> classes;
  std::size_t i = 0;
  while (i < spec.size()) {
    std::size_t comma = spec.find(',', i);
    if (comma == std::string::npos) comma = spec.size();
    const std::string item = spec.substr(i, comma - i);
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) throw std::invalid_argument("csr_binned classes: " + spec);
    RowClass c;
    c.lanes = item.substr(0, colon);
    const std::string high = item.substr(colon + 1);
    c.high = high == "*" ? -1 : std::stoll(high);
    classes.push_back(c);
    i = comma + 1;
  }
  return classes;
}

// The row-length test of class i: (low, high], with low = -1 for the first class.
std::string class_test(const std::vector<RowClass>& classes, std::size_t i) {
  std::string test;
  if (i > 0) test = "length > " + std::to_string(classes[i - 1].high);
  if (classes[i].high >= 0) {
    if (!test.empty()) test += " && ";
    test += "length <= " + std::to_string(classes[i].high);
  }
  return test.empty() ? "true" : test;
}

// The split class's kernel: rows longer than SPLIT_ROW are cut into chunks of CHUNK nonzeros.
const char* kSplitClass =
    R"cuda(// Class ${index}: rows with more than SPLIT_ROW entries, cut into chunks of CHUNK nonzeros with a
// warp per chunk, so one huge row is summed by many warps at once; each chunk's share is added
// with atomicAdd (launch 0 zeroed these rows). A warp finds the row of its first nonzero with a
// warp-wide search on row_ptr and skips rows of the other classes 32 at a time.
${head} {
  const long long chunk_begin = (static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x) / 32 * CHUNK;
  const int lane = threadIdx.x % 32;
  if (chunk_begin >= NNZ) return;  // the whole warp
  const long long chunk_end = chunk_begin + CHUNK < NNZ ? chunk_begin + CHUNK : NNZ;
  // The row holding nonzero chunk_begin: the count of rows ending at or before it (32 probes per
  // step).
  long long low = 0;
  long long high = M;
  while (low < high) {
    const long long step = (high - low + 31) / 32;
    const long long probe = low + lane * step;
    const bool before = probe < high && row_ptr[probe + 1] <= chunk_begin;
    const int count = __popc(__ballot_sync(0xffffffffu, before));
${narrow}  }
  long long r = low;
  while (r < M) {
    const long long candidate = r + lane;
    int begin = 0;
    int end = 0;
    if (candidate < M) {
      begin = row_ptr[candidate];
      end = row_ptr[candidate + 1];
    }
    const unsigned hits =
        __ballot_sync(0xffffffffu, candidate < M && end - begin > SPLIT_ROW && begin < chunk_end);
    if (hits == 0) {
      // None of these 32 rows is split; stop once they reach the end of the chunk.
      if (__shfl_sync(0xffffffffu, static_cast<int>(candidate >= M || end >= chunk_end), 31)) break;
      r += 32;
      continue;
    }
    const int source = __ffs(hits) - 1;
    const int row_begin = __shfl_sync(0xffffffffu, begin, source);
    const int row_end = __shfl_sync(0xffffffffu, end, source);
    const long long from = row_begin > chunk_begin ? row_begin : chunk_begin;
    const long long to = row_end < chunk_end ? row_end : chunk_end;
${chunk_sum}    if (row_end >= chunk_end) break;
    r += source + 1;
  }
}
)cuda";

std::string binned_kernel(const DesignPoint& p, const std::vector<RowClass>& classes, std::size_t i,
                          const std::string& name) {
  const std::string head = kernel_head(p.op, Format::csr, name, "BLOCK");
  const std::string test = class_test(classes, i);
  const std::string fma = fma_line(true, "k");
  const RowClass& c = classes[i];
  // Launch 0 zeroes the rows of the split class: its atomics need zeros.
  const bool zero_split = i == 0 && classes.back().lanes == "s";
  if (c.lanes == "s") {
    return fill(kSplitClass, {{"index", std::to_string(i)},
                              {"head", head},
                              {"narrow", narrow_search_range()},
                              {"chunk_sum", warp_chunk_sum("    ", "r + source", fma)}});
  }
  if (c.lanes == "1") {
    return fill(R"cuda(// Class ${index}: rows with ${test}, one thread each.${zero_doc}
${head} {
  const long long row = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  if (row >= M) return;
  const int begin = row_ptr[row];
  const int end = row_ptr[row + 1];
  const int length = end - begin;
${zero}  if (!(${test})) return;
  value_t sum = 0;
  for (int k = begin; k < end; ++k) ${fma}
  y[row] = sum;
}
)cuda",
                {{"index", std::to_string(i)},
                 {"test", test},
                 {"head", head},
                 {"fma", fma},
                 {"zero_doc", zero_split ? " It also zeroes the rows of the split class." : ""},
                 {"zero", zero_split ? "  if (length > SPLIT_ROW) y[row] = 0;\n" : ""}});
  }
  if (c.lanes == "b") {
    return fill(
        R"cuda(// Class ${index}: rows with ${test}, the whole block on each. The block scans BLOCK rows,
// lists those of its class in shared memory, then sums each with all its threads.
${head} {
  __shared__ int s_rows[BLOCK];
  __shared__ int s_count;
  __shared__ value_t s_warp[BLOCK / 32];
  if (threadIdx.x == 0) s_count = 0;
  __syncthreads();
  const long long row = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  if (row < M) {
    const int length = row_ptr[row + 1] - row_ptr[row];
    if (${test}) s_rows[atomicAdd(&s_count, 1)] = static_cast<int>(row);
  }
  __syncthreads();
  const int count = s_count;
  for (int i = 0; i < count; ++i) {
    const int r = s_rows[i];
    const int begin = row_ptr[r];
    const int end = row_ptr[r + 1];
    value_t sum = 0;
    for (int k = begin + threadIdx.x; k < end; k += BLOCK) ${fma}
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (threadIdx.x % 32 == 0) s_warp[threadIdx.x / 32] = sum;
    __syncthreads();
    if (threadIdx.x < 32) {
      sum = threadIdx.x < BLOCK / 32 ? s_warp[threadIdx.x] : 0;
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
      if (threadIdx.x == 0) y[r] = sum;
    }
    __syncthreads();
  }
}
)cuda",
        {{"index", std::to_string(i)}, {"test", test}, {"head", head}, {"fma", fma}});
  }
  const std::string lanes = c.lanes;
  const std::string define = "CLASS" + std::to_string(i) + "_LANES";
  std::string out = "#define " + define + " " + lanes + "\n";
  out += fill(
      R"cuda(// Class ${index}: rows with ${test}, ${lanes} lanes each. Each warp scans 32 rows, keeps those of
// its class with a ballot, and its 32 / ${lanes} lane groups take them in rounds.${zero_doc}
${head} {
${warp_rows}  const int length = end - begin;
${zero}  unsigned pending = __ballot_sync(0xffffffffu, row < M && (${test}));
  const int group = lane / ${L};
  const int sub = lane % ${L};
  while (pending != 0) {
    const int source = group < __popc(pending) ? nth_set_bit(pending, group) : -1;
    for (int i = 0; i < 32 / ${L} && pending != 0; ++i) pending &= pending - 1;
    const int row_begin = __shfl_sync(0xffffffffu, begin, source < 0 ? 0 : source);
    const int row_end = __shfl_sync(0xffffffffu, end, source < 0 ? 0 : source);
    value_t sum = 0;
    if (source >= 0) {
      for (int k = row_begin + sub; k < row_end; k += ${L}) ${fma}
    }
#pragma unroll
    for (int offset = ${L} / 2; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(0xffffffffu, sum, offset, ${L});
    }
    if (source >= 0 && sub == 0) y[tile * 32 + source] = sum;
  }
}
)cuda",
      {{"index", std::to_string(i)},
       {"test", test},
       {"lanes", lanes},
       {"L", define},
       {"head", head},
       {"warp_rows", kWarpTileRows},
       {"fma", fma},
       {"zero_doc", zero_split ? "\n// It also zeroes the rows of the split class." : ""},
       {"zero", zero_split ? "  if (row < M && length > SPLIT_ROW) y[row] = 0;\n" : ""}});
  return out;
}

std::string render_csr_binned(const DesignPoint& p) {
  const std::vector<RowClass> classes = parse_classes(p.param("classes"));
  const std::string block = p.param("block");
  bool needs_nth = false;
  for (const RowClass& c : classes)
    needs_nth |= (c.lanes != "1" && c.lanes != "b" && c.lanes != "s");
  const bool split = classes.back().lanes == "s";
  std::string body = "#define BLOCK " + block + "\n";
  long long chunk = 0;
  if (split) {
    const long long split_row = classes[classes.size() - 2].high;
    chunk = std::max(1024LL, 2 * split_row);
    body += "#define SPLIT_ROW " + std::to_string(split_row) + "\n#define CHUNK " +
            std::to_string(chunk) + "\n";
  }
  body += "\n";
  if (needs_nth) body += kNthSetBit;
  ProgramParts parts;
  std::string class_list;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const std::string name = "spmv_bin" + std::to_string(i);
    body += binned_kernel(p, classes, i, name);
    if (i + 1 < classes.size()) body += "\n";
    if (classes[i].lanes == "s") {
      parts.launches.push_back(
          {name,
           "ceil_div(max(ceil_div(NNZ, " + std::to_string(chunk) + "), 1) * 32, " + block + ")",
           block, ""});
    } else {
      parts.launches.push_back({name, "ceil_div(max(M, 1), " + block + ")", block, ""});
    }
    if (i > 0) class_list += ", ";
    if (classes[i].lanes == "s") {
      class_list +=
          "longer rows cut into chunks of " + std::to_string(chunk) + " nonzeros, a warp per chunk";
    } else {
      class_list +=
          "rows of at most " +
          (classes[i].high >= 0 ? std::to_string(classes[i].high) : std::string("any")) +
          " entries on " +
          (classes[i].lanes == "b" ? std::string("a whole block") : classes[i].lanes + " lane(s)");
    }
  }
  parts.summary =
      "Row-binned SpMV on CSR: rows are classed by length and each class has its own launch with "
      "its own lane count (" +
      class_list +
      "). The classes are computed by the kernels "
      "themselves: every launch scans the row lengths (one coalesced row_ptr read per 32 rows) and "
      "works only on its class, so short rows do not wait for long ones and long rows get many "
      "lanes.";
  parts.parameter_docs = {
      {"classes=" + p.param("classes"),
       "lanes:longest-row per class in launch order (b = the whole block, s = split into "
       "nonzero chunks over many warps, * = unbounded)"},
      {"block=" + block, "threads per block"}};
  parts.format = p.format();
  parts.body = body;
  return assemble(p, parts);
}

}  // namespace

std::vector<GeneratorDef> csr_spmv_generators() {
  return {design_generator(
              {"csr_scalar", Op::spmv, Format::csr, "CSR, one thread per row"},
              ParamValues{
                  {"block", {"128", "256"}}, {"unroll", {"1", "4", "max"}}, {"ldg", {"0", "1"}}},
              render_csr_scalar, {"unroll"}),
          design_generator(
              {"csr_vector", Op::spmv, Format::csr,
               "CSR, a group of 2..32 lanes per row (warp shuffles)"},
              [](DType dtype) {
                return ParamValues{{"lanes", {"2", "4", "8", "16", "32", "auto"}},
                                   {"block", {"128", "256"}},
                                   {"unroll", {"1", "2"}},
                                   {"vec", {"1", std::to_string(max_vector_width(dtype))}},
                                   {"ldg", {"0", "1"}}};
              },
              render_csr_vector, {"lanes", "unroll", "vec"},
              [](const std::vector<DesignParam>& v) {
                // vector loads replace unrolling; they pay off with at least 4 lanes
                const bool vec = value_of(v, "vec") != "1";
                if (vec && value_of(v, "unroll") != "1") return false;
                if (vec && (value_of(v, "lanes") == "2")) return false;
                return true;
              }),
          design_generator({"csr_xstage", Op::spmv, Format::csr,
                            "CSR with the block's window of x staged in shared memory (banded "
                            "matrices)"},
                           ParamValues{{"lanes", {"1", "2", "4", "8"}}, {"block", {"128", "256"}}},
                           render_csr_xstage, {"lanes"}),
          design_generator(
              {"csr_adaptive", Op::spmv, Format::csr,
               "CSR in one launch: thread per short row, lane groups for long rows"},
              ParamValues{
                  {"short", {"4", "8", "16"}}, {"lanes", {"8", "32"}}, {"block", {"128", "256"}}},
              render_csr_adaptive, {"lanes"}),
          design_generator(
              {"csr_binned", Op::spmv, Format::csr,
               "CSR, one launch per row-length class, each with its own lane count"},
              ParamValues{{"classes",
                           {"1:16,32:*", "1:8,8:64,32:*", "1:4,4:32,32:1024,b:*",
                            "1:16,32:1024,s:*", "1:8,8:64,32:1024,s:*", "2:16,8:128,32:2048,s:*"}},
                          {"block", {"128", "256"}}},
              render_csr_binned, {"classes"}),
          csr_merge_generator()};  // gen_csr_merge.cpp
}

}  // namespace sparserl::kernels::detail
