// csr_nnzsplit: a lean CSR SpMV split by nonzeros, for power-law rows (R-MAT, LP, log-normal),
// where coo_segmented won on bench-v2 while reading a row index per nonzero that CSR does not
// store. Each warp owns a tile of TILE = 32 * ITEMS consecutive nonzeros. It loads its ITEMS
// products per lane first (coalesced val / col_idx, x through __ldg), finds the tile's first row
// once (a warp-wide search of row_ptr), then marks in shared memory, at each nonzero where a later
// nonempty row starts, that row's number (head flags from the row_ptr boundaries, 32 rows per
// step; a run of empty rows is skipped with one search). Each slab of 32 nonzeros is then summed by
// a warp segmented scan keyed by the head flags (one ballot, five shuffles); a slab inside one row
// only adds to per-lane shares. Rows begun and ended in the tile are stored, rows cut by a tile
// boundary added with atomicAdd after a zeroing launch (which also writes the empty rows).
// tests/agents/nnz_split_test.cpp re-implements the kernel lane by lane on the host and checks it
// against the reference.
// coo_tiled: the same warp tiles on COO, where the row index per nonzero makes the head flags free:
// each lane loads its ITEMS entries first (coalesced row / column / value, ITEMS gathers of x in
// flight), then each slab of 32 is summed by a warp segmented scan keyed by the row, the open row
// carried from slab to slab. A row begun and ended in the tile is stored; the tile's first row is
// added with atomicAdd, and the rows open at the tiles' ends once per run of them over the block's
// warps (a segmented scan of the warps' tails) - a row over whole tiles takes one atomic a block,
// where coo_segmented adds once per row and warp (a row of 400k entries: 13k atomics to one
// address, 2x cuSPARSE's COO_ALG1 time on bench-v2's circuit matrices).
// tests/agents/coo_tiled_test.cpp re-implements it lane by lane on the host.
#include <string>
#include <vector>

#include "program_text.hpp"

namespace sparserl::kernels::detail {
namespace {

const char* kCsrNnzSplit = R"cuda(#define BLOCK ${block}
#define WARPS (BLOCK / 32)
#define ITEMS ${items}
#define TILE (32 * ITEMS)

${row_of_nonzero}
${tile_cut_zeroing}

// Launch 2: each warp takes the TILE nonzeros from tile_begin on; lane i holds nonzero
// tile_begin + 32 s + i of slab s. A row begun and ended in the tile is stored; the tile's first
// and last rows, when a tile boundary cuts them, are added with atomicAdd.
${main_head} {
  __shared__ int heads[WARPS][TILE];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const long long tile_begin = (static_cast<long long>(blockIdx.x) * WARPS + warp) * TILE;
  if (tile_begin >= NNZ) return;  // the whole warp
  const long long tile_end = tile_begin + TILE < NNZ ? tile_begin + TILE : NNZ;
  int* const mark = heads[warp];
  // The products first: ITEMS independent gathers per lane in flight during the row search.
  value_t product[ITEMS];
#pragma unroll
  for (int s = 0; s < ITEMS; ++s) {
    const long long nz = tile_begin + s * 32 + lane;
    product[s] = nz < tile_end ? ${product} : static_cast<value_t>(0);
    mark[s * 32 + lane] = -1;
  }
  // The row of the tile's first nonzero, searched once by the whole warp.
  const int first = row_of_nonzero(row_ptr, tile_begin, 0, lane, 0xffffffffu);
  __syncwarp();
  // Head flags: each later nonempty row that starts in the tile writes its number at its first
  // nonzero (one nonempty row starts at a nonzero; empty rows write nothing). 32 rows per step; the
  // step that reaches a row starting at or past the tile's end is the last. A step of 32 empty rows
  // (a run of them, all starting at the same nonzero) jumps to the nonempty row that ends the run,
  // found by a warp-wide search, so a long run costs one search, not a step per 32 rows.
  for (long long base = first + 1;;) {
    const long long r = base + lane;
    const int start = r < M ? row_ptr[r] : NNZ;
    const int end = start < tile_end ? row_ptr[r + 1] : start;
    if (end > start) mark[start - tile_begin] = static_cast<int>(r);
    if (__any_sync(0xffffffffu, start >= tile_end)) break;
    if (__all_sync(0xffffffffu, end == start)) {
      base = row_of_nonzero(row_ptr, start, base + 32, lane, 0xffffffffu);
    } else {
      base += 32;
    }
  }
  __syncwarp();
  // The open row runs on from one slab into the next: its row, whether it began in this tile, its
  // sum so far (the same on every lane) and each lane's share from slabs without a row start.
  int open = first;
  bool open_began = row_ptr[first] == tile_begin;
  value_t carry = 0;
  value_t share = 0;
  bool pending = false;
#pragma unroll
  for (int s = 0; s < ITEMS; ++s) {
    if (tile_begin + s * 32 >= tile_end) break;
    const int row_mark = mark[s * 32 + lane];
    const unsigned head = __ballot_sync(0xffffffffu, row_mark >= 0);
    value_t sum = product[s];
    if (head == 0) {  // the slab lies inside the open row
      share += sum;
      pending = true;
      continue;
    }
    if (pending) {
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) {
        share += __shfl_xor_sync(0xffffffffu, share, offset);
      }
      carry += share;
      share = 0;
      pending = false;
    }
    // This lane's segment starts at the last head at or before it; lanes before the first head
    // continue the open row.
    const unsigned upto = head & (0xffffffffu >> (31 - lane));
    const int seg = upto != 0 ? 31 - __clz(upto) : -1;
    const int seg_row = __shfl_sync(0xffffffffu, row_mark, seg >= 0 ? seg : 0);
    const int row = seg >= 0 ? seg_row : open;
    if (lane == 0) {
      if (head & 1u) {  // the open row ended with the previous slab
        if (open_began) {
          y[open] = carry;
        } else {
          atomicAdd(&y[open], carry);
        }
      } else {
        sum += carry;
      }
    }
    const int low = seg >= 0 ? seg : 0;
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
      const value_t other = __shfl_up_sync(0xffffffffu, sum, offset);
      if (lane - offset >= low) sum += other;
    }
    // A lane followed by a row start ends its row: stored when the row began in this tile.
    if (lane < 31 && ((head >> (lane + 1)) & 1u)) {
      if (seg >= 0 || open_began) {
        y[row] = sum;
      } else {
        atomicAdd(&y[row], sum);
      }
    }
    // Lane 31's row (begun at a head of this slab) is the open row of the next slab.
    open = __shfl_sync(0xffffffffu, row, 31);
    carry = __shfl_sync(0xffffffffu, sum, 31);
    open_began = true;
  }
  if (pending) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      share += __shfl_xor_sync(0xffffffffu, share, offset);
    }
    carry += share;
  }
  // The open row holds the tile's last nonzero: stored if it began here and ends with the tile.
  if (lane == 0) {
    if (open_began && row_ptr[open + 1] <= tile_end) {
      y[open] = carry;
    } else {
      atomicAdd(&y[open], carry);
    }
  }
}
)cuda";

const char* kCooTiled = R"cuda(#define BLOCK ${block}
#define ITEMS ${items}
#define TILE (32 * ITEMS)

${zero_y}// Launch 2: each warp takes the TILE entries from tile_begin on; lane i holds entry
// tile_begin + 32 s + i of slab s. Rows are sorted, so a row's entries are contiguous: a row other
// than the tile's first that ends inside the tile began in it and is stored; the first row (which
// may have begun in an earlier tile) is added. The row still open at a tile's end is added once
// per run of such rows over the block's consecutive tiles (a row over whole tiles: one atomicAdd a
// block, not a tile).
${main_head} {
  __shared__ int tail_row[BLOCK / 32];
  __shared__ value_t tail_sum[BLOCK / 32];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const long long tile_begin = (static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x) / 32 * TILE;
  // The open row runs on from one slab into the next: its row and its sum so far (every lane).
  int open = -1;
  value_t carry = 0;
  if (tile_begin < NNZ) {  // the whole warp; every warp reaches the block's barrier below
    const int first = row_idx[tile_begin];
    // The entries first: ITEMS independent gathers of x per lane in flight.
    int rows[ITEMS];
    value_t product[ITEMS];
#pragma unroll
    for (int s = 0; s < ITEMS; ++s) {
      const long long e = tile_begin + s * 32 + lane;
      rows[s] = -1;
      product[s] = 0;
      if (e < NNZ) {
        rows[s] = row_idx[e];
        product[s] = ${product};
      }
    }
#pragma unroll
    for (int s = 0; s < ITEMS; ++s) {
      const int row = rows[s];
      value_t v = product[s];
      if (lane == 0) {
        if (row == open) {
          v += carry;
        } else if (open >= 0) {  // the open row ended with the previous slab
          if (open == first) {
            atomicAdd(&y[open], carry);
          } else {
            y[open] = carry;
          }
        }
      }
${scan}      // A lane followed by another row ends its row (entries past NNZ have row -1).
      if (row >= 0 && lane < 31 && next_row != row) {
        if (row == first) {
          atomicAdd(&y[row], v);
        } else {
          y[row] = v;
        }
      }
      open = __shfl_sync(0xffffffffu, row, 31);
      carry = __shfl_sync(0xffffffffu, v, 31);
    }
  }
  // The rows open at the tiles' ends may go on in the next tiles. Two consecutive warps with the
  // same open row: the second's whole tile is that row, which it added nowhere else; a segmented
  // scan over the block's warps sums each run of them into one atomicAdd.
  if (lane == 0) {
    tail_row[warp] = open;
    tail_sum[warp] = carry;
  }
  __syncthreads();
  if (warp == 0) {
    const int row = lane < BLOCK / 32 ? tail_row[lane] : -1;
    value_t v = lane < BLOCK / 32 ? tail_sum[lane] : static_cast<value_t>(0);
${block_scan}    if (row >= 0 && next_row != row) atomicAdd(&y[row], v);
  }
}
)cuda";

// The main launch's grid of the warp-tile designs: a warp per tile of 32 x items entries, block /
// 32 warps a block.
std::string warp_tile_grid(const DesignPoint& p) {
  return "max(ceil_div(ceil_div(NNZ, " + std::to_string(32 * p.int_param("items")) + "), " +
         std::to_string(p.int_param("block") / 32) + "), 1)";
}

// A lane's product for entry `index`: val and col_idx coalesced, x gathered, all through __ldg.
std::string tile_product(const std::string& index) {
  return load(true, "val", index) + " * " + load(true, "x", load(true, "col_idx", index));
}

std::string render_coo_tiled(const DesignPoint& p) {
  const std::string items = p.param("items");
  const std::string block = p.param("block");
  ProgramParts parts;
  parts.summary =
      "SpMV on COO in warp tiles of TILE = 32 * ITEMS consecutive entries: each lane loads its "
      "ITEMS entries first (coalesced, ITEMS gathers of x in flight), then each slab of 32 is "
      "summed by a warp segmented scan keyed by the row, the open row carried from slab to slab. "
      "Rows begun and ended in a tile are stored; the tile's first row is added with atomicAdd, "
      "and the rows open at the tiles' ends once per run of them over the block's warps (a "
      "segmented scan of the warps' tails: one atomic a block on a row over whole tiles), after a "
      "first launch has zeroed y.";
  parts.parameter_docs = {{"items=" + items, "slabs of 32 entries per warp (its tile)"},
                          {"block=" + block, "threads per block of the main launch"}};
  parts.format = p.format();
  parts.launches = {zero_y_launch(), {"spmv_coo_tiled", warp_tile_grid(p), block, ""}};
  parts.body =
      fill(kCooTiled, {{"block", block},
                       {"items", items},
                       {"zero_y", zero_y_kernel(p.op)},
                       {"main_head", kernel_head(p.op, Format::coo, "spmv_coo_tiled", "BLOCK")},
                       {"product", tile_product("e")},
                       {"scan", warp_segmented_scan("v", "row", "      ")},
                       {"block_scan", warp_segmented_scan("v", "row", "    ")}});
  return assemble(p, parts);
}

std::string render_csr_nnz_split(const DesignPoint& p) {
  const std::string items = p.param("items");
  const std::string block = p.param("block");
  const std::string tile = std::to_string(32 * p.int_param("items"));
  ProgramParts parts;
  parts.summary =
      "Nonzero-split SpMV on CSR for power-law rows, with no row index per entry: each warp takes "
      "TILE = 32 * ITEMS consecutive nonzeros, loads its products (coalesced, x through __ldg), "
      "finds the tile's first row with one warp-wide search of row_ptr and marks, in shared "
      "memory, the nonzero where each later nonempty row starts with that row's number. Each slab "
      "of 32 nonzeros is summed by a warp segmented scan keyed by those head flags (one ballot, "
      "five shuffles); a slab inside one row only adds to per-lane shares. Rows begun and ended in "
      "a tile are stored, rows cut by a tile boundary added with atomicAdd after a first launch "
      "has zeroed them (and the empty rows).";
  parts.parameter_docs = {{"items=" + items, "slabs of 32 nonzeros per warp (its tile)"},
                          {"block=" + block, "threads per block of the main launch"}};
  parts.format = p.format();
  parts.launches = {tile_cut_zeroing_launch("nnzsplit_zero", tile),
                    {"spmv_nnzsplit", warp_tile_grid(p), block, ""}};
  parts.body =
      fill(kCsrNnzSplit, {{"block", block},
                          {"items", items},
                          {"row_of_nonzero", row_of_nonzero_function("32")},
                          {"tile_cut_zeroing", tile_cut_zeroing_kernel(p.op, "nnzsplit_zero")},
                          {"main_head", kernel_head(p.op, Format::csr, "spmv_nnzsplit", "BLOCK")},
                          {"product", tile_product("nz")}});
  return assemble(p, parts);
}

}  // namespace

std::vector<GeneratorDef> nnz_split_spmv_generators() {
  return {design_generator({"csr_nnzsplit", Op::spmv, Format::csr,
                            "CSR nonzero tiles per warp, head flags from row_ptr in shared "
                            "memory and a warp segmented scan (lean, load balanced)"},
                           ParamValues{{"items", {"2", "4", "8", "16"}}, {"block", {"128", "256"}}},
                           render_csr_nnz_split, {"items"}),
          design_generator(
              {"coo_tiled", Op::spmv, Format::coo,
               "COO warp tiles, a segmented scan per slab of 32 with the open row "
               "carried, the block's open rows merged before their atomics"},
              ParamValues{{"items", {"1", "2", "4", "8", "16"}}, {"block", {"128", "256"}}},
              render_coo_tiled, {"items"})};
}

}  // namespace sparserl::kernels::detail
