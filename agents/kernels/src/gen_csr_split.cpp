// The CSR SpMV designs of issue 25 for the structures the earlier designs lose on - a few very long
// rows among many short ones (arrow-shaped circuits, one 500k-entry row among a million), power-law
// row lengths (R-MAT, LP, log-normal):
//   csr_split    two launches of one program: the bulk (short rows on small lane groups, medium
//   rows
//                on a warp each, 32 rows per warp) and the long rows cut into nonzero chunks of
//                SPLIT_ROW entries, a warp per chunk, added with atomics. A long row holds more
//                than SPLIT_ROW entries, so no chunk holds a long row whole: a chunk's long rows
//                are those of its first and last nonzero, found by two searches on row_ptr.
//   csr_segscan  a lean load-balanced kernel: each warp takes TILE consecutive nonzeros and walks
//                them 32 at a time (coalesced); a slab inside one row is summed per lane with no
//                shuffles at all, a slab with row ends gets each lane's row from the next 32 row
//                ends (a five-step search across lanes) and a segmented scan. Rows cut by a tile
//                boundary are added with atomics after a zeroing launch.
// Both specialise on the prelude (MAX_ROW_NNZ, EMPTY_ROWS) and keep a general path, so every point
// is correct on every matrix; tests/agents/split_designs_test.cpp re-implements their partitions
// on the host and checks them against matrices.
#include <string>
#include <vector>

#include "program_text.hpp"

namespace sparserl::kernels::detail {
namespace {

// -------------------------------------------------------------------------------------------------
// csr_split

const char* kCsrSplit = R"cuda(#define BLOCK 256
#define LANES ${lanes}
#define GROUPS (32 / LANES)
#define SHORT_ROW (8 * LANES)
#define SPLIT_ROW ${split}

${row_of_nonzero}
// Launch 1, the bulk: each warp owns 32 consecutive rows. Rows of at most SHORT_ROW entries are
// summed by groups of LANES lanes, GROUPS rows per round; rows of up to SPLIT_ROW entries by the
// whole warp, one after the other; longer rows get a zero here and their sums from launch 2.
${bulk_head} {
${warp_rows}  const int length = end - begin;
#if MAX_ROW_NNZ > SPLIT_ROW
  if (row < M && length > SPLIT_ROW) y[row] = 0;
#endif
  const int group = lane / LANES;
  const int sub = lane % LANES;
  for (int turn = 0; turn < LANES; ++turn) {
    const int source = turn * GROUPS + group;
    const int row_begin = __shfl_sync(0xffffffffu, begin, source);
    const int row_end = __shfl_sync(0xffffffffu, end, source);
    const bool short_row = row_end - row_begin <= SHORT_ROW;
    value_t sum = 0;
    if (short_row) {
      for (int k = row_begin + sub; k < row_end; k += LANES) ${fma}
    }
${short_reduce}    if (short_row && sub == 0 && tile * 32 + source < M) y[tile * 32 + source] = sum;
  }
#if MAX_ROW_NNZ > SHORT_ROW
  unsigned pending = __ballot_sync(0xffffffffu, row < M && length > SHORT_ROW && length <= SPLIT_ROW);
  while (pending != 0) {
    const int source = __ffs(pending) - 1;
    pending &= pending - 1;
    const int row_begin = __shfl_sync(0xffffffffu, begin, source);
    const int row_end = __shfl_sync(0xffffffffu, end, source);
    value_t sum = 0;
#pragma unroll 4
    for (int k = row_begin + lane; k < row_end; k += 32) ${fma}
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) y[tile * 32 + source] = sum;
  }
#endif
}

// Launch 2, the long rows: a warp per chunk of SPLIT_ROW consecutive nonzeros adds the chunk's
// share of every long row it touches with atomicAdd (launch 1 zeroed them). A long row has more
// than SPLIT_ROW entries, so none lies inside a chunk: only the rows of the chunk's first and last
// nonzero can be long. Without long rows (MAX_ROW_NNZ <= SPLIT_ROW) this launch is one empty block.
${long_head} {
#if MAX_ROW_NNZ > SPLIT_ROW
  const long long chunk_begin =
      (static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x) / 32 * SPLIT_ROW;
  const int lane = threadIdx.x % 32;
  if (chunk_begin >= NNZ) return;  // the whole warp
${chunk_walk}#endif
}
)cuda";

std::string render_csr_split(const DesignPoint& p) {
  const std::string lanes = p.param("lanes");
  const std::string split = p.param("split");
  ProgramParts parts;
  parts.summary =
      "Split SpMV on CSR for a few very long rows among many short ones, in two launches. Launch "
      "1 (the bulk): each warp owns 32 consecutive rows; rows of at most SHORT_ROW = 8 * LANES "
      "entries are summed by groups of LANES lanes, rows of up to SPLIT_ROW entries by the whole "
      "warp, longer rows are zeroed. Launch 2 (the long rows): a warp per chunk of SPLIT_ROW "
      "consecutive nonzeros finds, with two warp-wide searches on row_ptr, the rows of the chunk's "
      "first and last nonzero - the only ones that can be long - and adds its share of each long "
      "one with atomicAdd, so one huge row is summed by NNZ / SPLIT_ROW warps at once.";
  parts.parameter_docs = {
      {"lanes=" + lanes, "lanes per short row (rows of at most 8 * lanes entries)"},
      {"split=" + split, "rows longer than this are cut into chunks of this many nonzeros"}};
  parts.format = p.format();
  parts.launches = {{"spmv_split_bulk", "ceil_div(max(M, 1), 256)", "256", ""},
                    {"spmv_split_long",
                     "max(ceil_div(ceil_div(NNZ, " + split + ") * 32 * min(MAX_ROW_NNZ / (" +
                         split + " + 1), 1), 256), 1)",
                     "256", ""}};
  const std::string short_reduce =
      lanes == "1" ? ""
                   : "#pragma unroll\n"
                     "    for (int offset = LANES / 2; offset > 0; offset /= 2) {\n"
                     "      sum += __shfl_down_sync(0xffffffffu, sum, offset, LANES);\n"
                     "    }\n";
  parts.body = fill(
      kCsrSplit,
      {{"lanes", lanes},
       {"split", split},
       {"row_of_nonzero", row_of_nonzero_function("32")},
       // No __launch_bounds__ on the bulk: with them ptxas caps it at 32
       // registers and spills in f64 (lanes=8).
       {"bulk_head", kernel_head(p.op, Format::csr, "spmv_split_bulk", "")},
       {"long_head", kernel_head(p.op, Format::csr, "spmv_split_long", "BLOCK")},
       {"warp_rows", kWarpTileRows},
       {"short_reduce", short_reduce},
       {"fma", fma_line(true, "k")},
       {"chunk_walk",
        long_row_chunk_walk("0xffffffffu", warp_chunk_sum("      ", "row", fma_line(true, "k")))}});
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// csr_segscan

const char* kCsrSegscan = R"cuda(#define BLOCK 256
#define SLABS ${slabs}
#define TILE (32 * SLABS)

${row_of_nonzero}
${tile_cut_zeroing}

// Launch 2: each warp takes TILE consecutive nonzeros and walks them in slabs of 32, lane i on
// nonzero base + i (coalesced). The open row is the row of the slab's first nonzero. A slab inside
// it is summed per lane; a slab with row ends finds each lane's row among the next 32 row ends,
// adds the lanes' earlier shares of the open row to lane 0, and sums each row by a segmented scan.
// A row begun and ended in this tile is stored, any other one added with atomicAdd.
${main_head} {
  const long long tile_begin = (static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x) / 32 * TILE;
  const int lane = threadIdx.x % 32;
  if (tile_begin >= NNZ) return;  // the whole warp
  const long long tile_end = tile_begin + TILE < NNZ ? tile_begin + TILE : NNZ;
  int row = row_of_nonzero(row_ptr, tile_begin, 0, lane, 0xffffffffu);
  int row_end = row_ptr[row + 1];
  bool began_here = row_ptr[row] == tile_begin;
  value_t share = 0;  // this lane's share of the open row
  for (long long base = tile_begin; base < tile_end; base += 32) {
    const long long nz = base + lane;
    const long long stop = base + 32 < tile_end ? base + 32 : tile_end;
    value_t sum = 0;
    if (nz < stop) ${fma}
    if (row_end > stop) {  // the whole slab lies in the open row
      share += sum;
      continue;
    }
    // Lane i's row is the open row plus the count of the next 32 row ends at or before its
    // nonzero (five probes across the lanes); past 32 of them (empty rows) it searches row_ptr.
    const long long window = row + lane;
    const int window_end = window < M ? row_ptr[window + 1] : NNZ;
    int count = 0;
#pragma unroll
    for (int step = 16; step > 0; step /= 2) {
      if (__shfl_sync(0xffffffffu, window_end, count + step - 1) <= nz) count += step;
    }
    if (__shfl_sync(0xffffffffu, window_end, 31) <= nz) count = 32;
    const int count_end = __shfl_sync(0xffffffffu, window_end, count & 31);
    int my_row = row + count;
    int my_end = count_end;
    if (nz >= stop) {
      my_row = M;  // no nonzero: a segment of its own that writes nothing
    } else if (count == 32) {
      long long low = row + 32;
      long long high = M;
      while (low < high) {
        const long long middle = (low + high) / 2;
        if (row_ptr[middle + 1] <= nz) {
          low = middle + 1;
        } else {
          high = middle;
        }
      }
      my_row = static_cast<int>(low);
      my_end = row_ptr[my_row + 1];
    }
    // Lane 0's nonzero lies in the open row: it takes the lanes' shares of it.
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) share += __shfl_xor_sync(0xffffffffu, share, offset);
    if (lane == 0) sum += share;
    share = 0;
${scan}    if (nz < stop && (lane == 31 || next_row != my_row)) {
      // The last lane of its row: a row ended here is stored when it began in this tile; a row
      // that goes on past the tile adds this tile's share.
      if (my_end <= stop) {
        if (my_row != row || began_here) {
          y[my_row] = sum;
        } else {
          atomicAdd(&y[my_row], sum);
        }
      } else if (stop == tile_end) {
        atomicAdd(&y[my_row], sum);
      }
    }
    if (stop == tile_end) break;
    // The next slab's open row: lane 31's row if it goes on, else the row of nonzero `stop`.
    const int last_row = __shfl_sync(0xffffffffu, my_row, 31);
    const int last_end = __shfl_sync(0xffffffffu, my_end, 31);
    const value_t last_sum = __shfl_sync(0xffffffffu, sum, 31);
    if (last_end > stop) {
      began_here = began_here || last_row != row;
      row = last_row;
      row_end = last_end;
      if (lane == 0) share = last_sum;
    } else {
      const int ended = __popc(__ballot_sync(0xffffffffu, window_end <= stop));
      row = ended < 32 ? row + ended : row_of_nonzero(row_ptr, stop, row + 32, lane, 0xffffffffu);
      row_end = row_ptr[row + 1];
      began_here = true;
    }
  }
  // The open row goes on past the tile: this warp's share of it.
  if (row_end > tile_end) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) share += __shfl_xor_sync(0xffffffffu, share, offset);
    if (lane == 0) atomicAdd(&y[row], share);
  }
}
)cuda";

std::string render_csr_segscan(const DesignPoint& p) {
  const std::string slabs = p.param("slabs");
  const std::string tile = std::to_string(32 * p.int_param("slabs"));
  ProgramParts parts;
  parts.summary =
      "Segmented-scan SpMV on CSR, load balanced by nonzeros with no row index per entry: each "
      "warp takes TILE = 32 * SLABS consecutive nonzeros and walks them 32 at a time, lane i on "
      "nonzero base + i. A slab that lies inside one row costs three coalesced loads and an add "
      "per lane; a slab with row ends gets each lane's row from the next 32 row ends and sums "
      "each row with a warp segmented scan. Rows within a tile are stored, rows cut by a tile "
      "boundary added with atomicAdd after a first launch has zeroed them (and the empty rows).";
  parts.parameter_docs = {{"slabs=" + slabs, "slabs of 32 nonzeros per warp"}};
  parts.format = p.format();
  parts.launches = {
      tile_cut_zeroing_launch("segscan_zero", tile),
      {"spmv_segscan", "max(ceil_div(ceil_div(NNZ, " + tile + ") * 32, 256), 1)", "256", ""}};
  parts.body =
      fill(kCsrSegscan, {{"slabs", slabs},
                         {"row_of_nonzero", row_of_nonzero_function("32")},
                         {"tile_cut_zeroing", tile_cut_zeroing_kernel(p.op, "segscan_zero")},
                         {"main_head", kernel_head(p.op, Format::csr, "spmv_segscan", "BLOCK")},
                         {"fma", fma_line(true, "nz")},
                         {"scan", warp_segmented_scan("sum", "my_row", "    ")}});
  return assemble(p, parts);
}

}  // namespace

std::vector<GeneratorDef> split_spmv_generators() {
  return {design_generator(
              {"csr_split", Op::spmv, Format::csr,
               "CSR in two launches: lane groups and warps for the bulk, nonzero "
               "chunks over many warps for the long rows"},
              ParamValues{{"lanes", {"1", "2", "4", "8"}}, {"split", {"512", "2048", "8192"}}},
              render_csr_split, {"lanes"}),
          design_generator({"csr_segscan", Op::spmv, Format::csr,
                            "CSR nonzero tiles per warp, per-lane sums inside a row and a "
                            "segmented scan across row ends (load balanced, lean)"},
                           ParamValues{{"slabs", {"4", "16", "64"}}}, render_csr_segscan, {})};
}

}  // namespace sparserl::kernels::detail
