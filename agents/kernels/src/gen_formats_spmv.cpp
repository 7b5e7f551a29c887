// The SpMV designs on the other storage formats: COO with a segmented reduction (load balanced by
// construction: every thread gets the same number of entries, at the price of a row index per
// entry and atomics), ELL (column-major, coalesced, for near-uniform row lengths), SELL-C-sigma
// (ELL per slice of C rows, rows sorted by length within windows of sigma; C < 32 puts several
// threads on a row) and BSR (dense R x C blocks, one thread per row or a warp per block row).
// ELL and SELL place a row's padding after its entries, so the first -1 column ends the row.
#include <string>
#include <vector>

#include "program_text.hpp"

namespace sparserl::kernels::detail {
namespace {

// -------------------------------------------------------------------------------------------------
// coo_segmented

std::string render_coo_segmented(const DesignPoint& p) {
  const int items = p.int_param("items");
  const std::string block = p.param("block");
  const char* one =
      R"cuda(// Launch 2: one entry per thread; the warp adds up runs of equal rows with a segmented shuffle
// scan (rows are sorted, so a run is contiguous) and the last lane of each run does one atomicAdd.
${head} {
  const long long e = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  const int lane = threadIdx.x % 32;
  int row = -1;
  value_t v = 0;
  if (e < NNZ) {
    row = row_idx[e];
    v = __ldg(&val[e]) * __ldg(&x[__ldg(&col_idx[e])]);
  }
${scan}  if (row >= 0 && (lane == 31 || next_row != row)) atomicAdd(&y[row], v);
}
)cuda";
  const char* many =
      R"cuda(// Launch 2: ITEMS consecutive entries per thread. A row that starts and ends inside the thread's
// share is stored directly; the first and the last row may be shared with neighbours: atomicAdd.
${head} {
  const long long first = (static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x) * ITEMS;
  if (first >= NNZ) return;
  const long long last = first + ITEMS < NNZ ? first + ITEMS : NNZ;
  int row = row_idx[first];
  bool shared_row = true;
  value_t sum = 0;
  for (long long e = first; e < last; ++e) {
    const int r = row_idx[e];
    if (r != row) {
      if (shared_row) {
        atomicAdd(&y[row], sum);
      } else {
        y[row] = sum;
      }
      shared_row = false;
      row = r;
      sum = 0;
    }
    sum += __ldg(&val[e]) * __ldg(&x[__ldg(&col_idx[e])]);
  }
  atomicAdd(&y[row], sum);
}
)cuda";
  ProgramParts parts;
  parts.summary =
      items == 1
          ? "SpMV on COO with a segmented reduction: one entry per thread, warp-level segmented "
            "scan "
            "over equal rows, one atomicAdd per row run and warp. Every thread does the same work "
            "whatever the row lengths."
          : "SpMV on COO with a segmented reduction: ITEMS consecutive entries per thread, a "
            "running "
            "sum per row, atomicAdd only for rows shared with neighbouring threads. Every thread "
            "does the same work whatever the row lengths.";
  parts.parameter_docs = {{"items=" + p.param("items"), "entries per thread"},
                          {"block=" + block, "threads per block"}};
  parts.format = p.format();
  const std::string per_block = std::to_string(p.int_param("block") * items);
  parts.launches = {zero_y_launch(),
                    {"spmv_coo", "ceil_div(max(NNZ, 1), " + per_block + ")", block, ""}};
  std::string body = "#define BLOCK " + block + "\n";
  if (items > 1) body += "#define ITEMS " + p.param("items") + "\n";
  body += "\n" + zero_y_kernel(p.op);
  body +=
      fill(items == 1 ? one : many, {{"head", kernel_head(p.op, Format::coo, "spmv_coo", "BLOCK")},
                                     {"scan", warp_segmented_scan("v", "row", "  ")}});
  parts.body = body;
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// ell

std::string render_ell(const DesignPoint& p) {
  const bool ldg = p.int_param("ldg") != 0;
  const std::string unroll = p.param("unroll");
  const std::string block = p.param("block");
  std::string pragma;
  if (unroll == "max") {
    pragma = "#if ELL_WIDTH <= 32\n#pragma unroll\n#else\n#pragma unroll 4\n#endif\n";
  } else if (unroll != "1") {
    pragma = "#pragma unroll " + unroll + "\n";
  } else {
    pragma = "#pragma unroll 1\n";
  }
  const char* tmpl = R"cuda(#define BLOCK ${block}

${head} {
  const long long row = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  if (row >= M) return;
  value_t sum = 0;
  // Slot k of every row is one contiguous column of the array: a warp reads 32 neighbours.
${pragma}  for (int k = 0; k < ELL_WIDTH; ++k) {
    const long long slot = static_cast<long long>(k) * M + row;
    const int col = ${col};
    if (col < 0) break;  // padding only follows a row's entries
    sum += ${v} * ${xc};
  }
  y[row] = sum;
}
)cuda";
  ProgramParts parts;
  parts.summary =
      "SpMV on ELL: one thread per row walks the ELL_WIDTH slots of its row; the column-major "
      "layout makes every step a coalesced read, and the loop stops at the row's first padding "
      "slot. The slot count ELL_WIDTH is a prelude constant, so the loop bound is known at compile "
      "time. Good when rows have nearly equal lengths; padding costs bandwidth otherwise.";
  parts.parameter_docs = {
      {"block=" + block, "threads per block"},
      {"unroll=" + unroll, unroll == "max" ? "slot loop fully unrolled when ELL_WIDTH <= 32"
                                           : "slots per unrolled loop step"},
      {"ldg=" + p.param("ldg"), ldg ? "loads through the read-only cache (__ldg)" : "plain loads"}};
  parts.format = p.format();
  parts.launches = {{"spmv_ell", "ceil_div(max(M, 1), " + block + ")", block, ""}};
  parts.body = fill(tmpl, {{"block", block},
                           {"head", kernel_head(p.op, Format::ell, "spmv_ell", "BLOCK")},
                           {"pragma", pragma},
                           {"col", load(ldg, "col_idx", "slot")},
                           {"v", load(ldg, "val", "slot")},
                           {"xc", load(ldg, "x", "col")}});
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// sell

std::string render_sell(const DesignPoint& p) {
  const int c = p.int_param("C");
  const int lanes = c >= 32 ? 1 : 32 / c;
  const std::string block = p.param("block");
  const char* tmpl = R"cuda(#define BLOCK ${block}
#define LANES ${lanes}

${head} {
  // SELL_C * LANES threads per slice: thread (lane, r) takes slots lane, lane + LANES, ... of the
  // slice's row r, so at every step the slice's threads read SELL_C * LANES neighbouring slots.
  const long long thread = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  const long long slice = thread / (SELL_C * LANES);
  const int local = static_cast<int>(thread % (SELL_C * LANES));
  const int lane = local / SELL_C;
  const int r = local % SELL_C;
  const long long position = slice * SELL_C + r;
  value_t sum = 0;
  if (slice < SELL_SLICES) {
    const int start = slice_ptr[slice];
    const int width = (slice_ptr[slice + 1] - start) / SELL_C;
    for (int k = lane; k < width; k += LANES) {
      const int slot = start + k * SELL_C + r;
      const int col = __ldg(&col_idx[slot]);
      if (col < 0) break;  // padding only follows a row's entries
      sum += __ldg(&val[slot]) * __ldg(&x[col]);
    }
  }
${reduce}  if (lane == 0 && slice < SELL_SLICES && position < M) y[row_perm[position]] = sum;
}
)cuda";
  const std::string reduce =
      lanes == 1 ? ""
                 : "#pragma unroll\n"
                   "  for (int offset = LANES / 2; offset > 0; offset /= 2) {\n"
                   "    sum += __shfl_xor_sync(0xffffffffu, sum, offset * SELL_C);\n"
                   "  }\n";
  ProgramParts parts;
  parts.summary =
      "SpMV on SELL-C-sigma: rows are sorted by length within windows of sigma rows and cut into "
      "slices of C rows, each padded only to its own longest row, so a long row costs its slice "
      "alone. " +
      std::string(lanes == 1 ? "One thread per row of a slice; a warp reads consecutive slots."
                             : "LANES threads share each row (SELL_C * LANES = 32: a warp per "
                               "slice) and add their sums with shuffles.") +
      " Results go to the original row through row_perm.";
  parts.parameter_docs = {{"C=" + p.param("C"), "slice height (rows per slice)"},
                          {"sigma=" + p.param("sigma"), "sorting window in rows (1: no sorting)"},
                          {"block=" + block, "threads per block"}};
  parts.format = p.format();
  parts.launches = {
      {"spmv_sell",
       "ceil_div(max(SELL_SLICES, 1) * " + std::to_string(c * lanes) + ", " + block + ")", block,
       ""}};
  parts.body = fill(tmpl, {{"block", block},
                           {"lanes", std::to_string(lanes)},
                           {"head", kernel_head(p.op, Format::sell, "spmv_sell", "BLOCK")},
                           {"reduce", reduce}});
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// bsr_row and bsr_warp

const char* kBsrRow = R"cuda(#define BLOCK ${block}

${head} {
  const long long row = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  if (row >= M) return;
  const long long block_row = row / BSR_R;
  const int i = static_cast<int>(row % BSR_R);
  value_t sum = 0;
  for (int b = block_row_ptr[block_row]; b < block_row_ptr[block_row + 1]; ++b) {
    const long long col0 = static_cast<long long>(__ldg(&block_col_idx[b])) * BSR_C;
    const value_t* cells = val + static_cast<long long>(b) * (BSR_R * BSR_C) + i * BSR_C;
#pragma unroll
    for (int j = 0; j < BSR_C; ++j) {
      if (col0 + j < N) sum += __ldg(&cells[j]) * __ldg(&x[col0 + j]);
    }
  }
  y[row] = sum;
}
)cuda";
const char* kBsrRowSummary =
    "SpMV on BSR with one thread per matrix row: the thread walks the blocks of its block row "
    "and the BSR_C columns of its line in each, with a fully unrolled inner loop (BSR_C is a "
    "prelude constant). Edge blocks reach past N: the col < N test keeps x in bounds.";

const char* kBsrWarp = R"cuda(#define BLOCK ${block}
#define CELLS (BSR_R * BSR_C)
#define PER_STEP (32 / CELLS)

${head} {
  // A warp per block row; lane = (block of the step, cell of the block). The warp reads PER_STEP
  // whole blocks per step: 32 consecutive values.
  const long long block_row = (static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  const int cell = lane % CELLS;
  const int i = cell / BSR_C;
  const int j = cell % BSR_C;
  value_t sum = 0;
  if (block_row < BSR_MB) {
    const int end = block_row_ptr[block_row + 1];
    for (int b = block_row_ptr[block_row] + lane / CELLS; b < end; b += PER_STEP) {
      const long long col = static_cast<long long>(__ldg(&block_col_idx[b])) * BSR_C + j;
      const value_t v = __ldg(&val[static_cast<long long>(b) * CELLS + cell]);
      if (col < N) sum += v * __ldg(&x[col]);
    }
  }
  // Add the lanes of one block line i: over j (the low bits of the cell) and over the blocks.
#pragma unroll
  for (int offset = 1; offset < BSR_C; offset *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
#pragma unroll
  for (int offset = CELLS; offset < 32; offset *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (block_row < BSR_MB && lane < CELLS && j == 0) {
    const long long row = block_row * BSR_R + i;
    if (row < M) y[row] = sum;
  }
}
)cuda";
const char* kBsrWarpSummary =
    "SpMV on BSR with a warp per block row: the lanes cover PER_STEP = 32 / (R * C) whole blocks "
    "per step, so value loads are fully coalesced, and lanes of the same block line are added "
    "with xor shuffles at the end. R * C divides 32 and C is a power of two.";

// A BSR design's program: `tmpl` filled with BLOCK and the head of `kernel`, launched with
// `threads` threads (an expression) in blocks of BLOCK.
std::string render_bsr(const DesignPoint& p, const char* kernel, const char* tmpl,
                       const std::string& threads, std::string summary) {
  const std::string block = p.param("block");
  ProgramParts parts;
  parts.summary = std::move(summary);
  parts.parameter_docs = {{"shape=" + p.param("shape"), "block rows x block columns (R x C)"},
                          {"block=" + block, "threads per block"}};
  parts.format = p.format();
  parts.launches = {{kernel, "ceil_div(" + threads + ", " + block + ")", block, ""}};
  parts.body =
      fill(tmpl, {{"block", block}, {"head", kernel_head(p.op, Format::bsr, kernel, "BLOCK")}});
  return assemble(p, parts);
}

std::string render_bsr_row(const DesignPoint& p) {
  return render_bsr(p, "spmv_bsr", kBsrRow, "max(M, 1)", kBsrRowSummary);
}

std::string render_bsr_warp(const DesignPoint& p) {
  return render_bsr(p, "spmv_bsr_warp", kBsrWarp, "max(BSR_MB, 1) * 32", kBsrWarpSummary);
}

}  // namespace

std::vector<GeneratorDef> format_spmv_generators() {
  return {design_generator({"coo_segmented", Op::spmv, Format::coo,
                            "COO segmented reduction with its own zeroing launch"},
                           ParamValues{{"items", {"1", "4", "8"}}, {"block", {"128", "256"}}},
                           render_coo_segmented, {"items"}),
          design_generator(
              {"ell", Op::spmv, Format::ell, "ELL, one thread per row, coalesced slots"},
              ParamValues{
                  {"block", {"128", "256"}}, {"unroll", {"1", "4", "max"}}, {"ldg", {"0", "1"}}},
              render_ell, {"unroll"}),
          design_generator({"sell", Op::spmv, Format::sell,
                            "SELL-C-sigma, C rows per slice, 32 / C threads per row when C < 32"},
                           ParamValues{{"C", {"4", "8", "16", "32"}},
                                       {"sigma", {"1", "256", "8192"}},
                                       {"block", {"128", "256"}}},
                           render_sell, {"C", "sigma"}, nullptr, sell_format),
          design_generator(
              {"bsr_row", Op::spmv, Format::bsr, "BSR, one thread per matrix row"},
              ParamValues{{"shape", {"2x2", "3x3", "4x4", "8x8"}}, {"block", {"128", "256"}}},
              render_bsr_row, {"shape"}, nullptr, bsr_format),
          design_generator(
              {"bsr_warp", Op::spmv, Format::bsr, "BSR, a warp per block row (coalesced blocks)"},
              ParamValues{{"shape", {"2x2", "4x4", "8x4"}}, {"block", {"128", "256"}}},
              render_bsr_warp, {"shape"}, nullptr, bsr_format)};
}

}  // namespace sparserl::kernels::detail
