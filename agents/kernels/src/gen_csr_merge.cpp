// The merge-path CSR SpMV design (csr_merge, Merrill and Garland), kept apart from the other CSR
// designs of gen_csr_spmv.cpp for its size: the merge of the M row ends with the NNZ nonzeros is
// cut into equal shares, so that one huge row is spread over many warps and a run of empty rows
// costs one item each. A first launch zeroes the rows that blocks share; the second walks the merge
// path in sub-tiles staged in shared memory and combines split rows within the warp, between the
// warps of a block and (through atomicAdd) between blocks.
#include <string>
#include <vector>

#include "program_text.hpp"

namespace sparserl::kernels::detail {
namespace {

// The program's body: ${name} holes for the parameters, the kernel heads and the loads.
const char* kCsrMerge = R"cuda(#define BLOCK ${block}
#define ITEMS ${items}
#define STEPS ${steps}
#define WARPS (BLOCK / 32)
#define SUB_TILE (32 * ITEMS)
#define WARP_TILE (STEPS * SUB_TILE)
#define TILE (WARPS * WARP_TILE)

// Merge-path search by a group of G lanes: how many row ends precede the first `diagonal` items of
// the merge of the row ends row_ptr[1..M] with the nonzero indices 0..NNZ-1 (a row end goes first
// on a tie); the nonzeros consumed by then are diagonal - rows. Row end m is among those items when
// row_ptr[m + 1] + m + 1 <= diagonal, which holds for a prefix of m: G probes per step narrow the
// range G-fold (a warp needs 4 dependent loads for a million rows instead of 20).
template <int G>
${merge_path_rows}
// Launch 1: rows cut by a block's tile boundary get their sums from several blocks through
// atomicAdd, so they start at zero; every other row is stored exactly once. Eight lanes search
// each boundary together.
${zero_head} {
  const long long boundary = (static_cast<long long>(blockIdx.x) * 256 + threadIdx.x) / 8 + 1;
  const int lane = threadIdx.x % 8;
  const unsigned mask = 0xffu << (threadIdx.x % 32 / 8 * 8);
  const long long diagonal = boundary * TILE;
  if (diagonal >= static_cast<long long>(M) + NNZ) return;  // the whole group
  const int row = merge_path_rows<8>(row_ptr, diagonal, lane, mask);
  if (lane == 0 && row < M && diagonal - row > row_ptr[row]) y[row] = 0;
}

// Launch 2: a block consumes TILE items of the merge path (row ends and nonzeros), each warp its own
// WARP_TILE of them in STEPS sub-tiles of SUB_TILE items, so every warp does the same work whatever
// the row lengths. A warp searches row_ptr once; each sub-tile starts where the last one ended, and
// its split between rows and nonzeros is found in the staged row ends. Warps meet once, at the end,
// to combine the rows they share.
${main_head} {
  __shared__ int s_row_end[WARPS][SUB_TILE + 1];
  __shared__ value_t s_product[WARPS][SUB_TILE];
  __shared__ value_t s_partial[WARPS][SUB_TILE + 1];
  __shared__ int s_first_row[WARPS];      // the warp's first row (-1: the warp has no items)
  __shared__ int s_first_started[WARPS];  // the warp holds the start of its first row
  __shared__ int s_completes[WARPS];      // the warp ends its first row without having started it
  __shared__ value_t s_first_sum[WARPS];  // ... and this is its share of that row
  __shared__ int s_open_row[WARPS];       // the row still open at the warp's end (-1: none)
  __shared__ value_t s_open_sum[WARPS];   // ... and the warp's share of it
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const long long total = static_cast<long long>(M) + NNZ;
  const long long first = static_cast<long long>(blockIdx.x) * TILE + warp * WARP_TILE;
  const long long last = first + WARP_TILE < total ? first + WARP_TILE : total;
  int* row_end = s_row_end[warp];
  value_t* product = s_product[warp];
  value_t* partial = s_partial[warp];
  if (lane == 0) {
    s_first_row[warp] = -1;
    s_completes[warp] = 0;
    s_open_row[warp] = -1;
  }
  if (first < total) {  // the whole warp
    // The warp's position on the merge path: `row` is the open row, `nz` the next nonzero.
    int row = merge_path_rows<32>(row_ptr, first, lane, 0xffffffffu);
    int nz = static_cast<int>(first - row);
    int row_begin = row_ptr[row];
    const int first_row = row;
    const bool first_started = nz == row_begin;
    bool open_started = first_started;  // the open row began inside this warp
    value_t carry = 0;                  // this warp's share of the open row so far
    bool completes = false;
    value_t completes_sum = 0;
    for (long long base = first; base < last; base += SUB_TILE) {
      const int items = static_cast<int>(last - base < SUB_TILE ? last - base : SUB_TILE);
      // Row ends of the next SUB_TILE + 1 rows: enough for any split of the sub-tile.
#pragma unroll
      for (int j = 0; j <= ITEMS; ++j) {
        const int i = lane + 32 * j;
        if (i <= SUB_TILE) row_end[i] = row + i < M ? row_ptr[row + i + 1] : NNZ;
      }
      __syncwarp();
      // How many of the sub-tile's items are row ends (the same search in every lane).
      int low = max(items - (NNZ - nz), 0);
      int high = items;
      while (low < high) {
        const int mid = (low + high) / 2;
        if (row_end[mid] - nz + mid + 1 <= items) {
          low = mid + 1;
        } else {
          high = mid;
        }
      }
      const int rows_in = low;
      const int nnz_in = items - rows_in;
      // Products val * x of the sub-tile's nonzeros: every lane issues its loads before using any.
      int col[ITEMS];
      value_t value[ITEMS];
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        const int i = lane + 32 * j;
        col[j] = i < nnz_in ? ${col_i} : 0;
        value[j] = i < nnz_in ? ${val_i} : value_t(0);
      }
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        const int i = lane + 32 * j;
        if (i < nnz_in) product[i] = value[j] * ${x_col};
      }
#pragma unroll
      for (int j = 0; j <= ITEMS; ++j) {
        const int i = lane + 32 * j;
        if (i <= rows_in) partial[i] = i == 0 ? carry : value_t(0);
      }
      __syncwarp();
      // This lane's ITEMS items, found by a merge-path search in the staged sub-tile.
      const int start = min(lane * ITEMS, items);
      const int stop = min(start + ITEMS, items);
      low = max(start - nnz_in, 0);
      high = min(start, rows_in);
      while (low < high) {
        const int mid = (low + high) / 2;
        if (row_end[mid] - nz <= start - mid - 1) {
          low = mid + 1;
        } else {
          high = mid;
        }
      }
      int local_row = low;
      int local_nz = start - low;
      // A lane that holds the start of a row stores it directly when it also reaches its end.
      bool whole = nz + local_nz == (local_row == 0 ? row_begin : row_end[local_row - 1]);
      int finish = -1;
      value_t sum = 0;
      for (int item = start; item < stop; ++item) {
        if (nz + local_nz < row_end[local_row]) {
          sum += product[local_nz];
          ++local_nz;
        } else {
          if (whole) {
            y[row + local_row] = sum;
          } else {
            atomicAdd(&partial[local_row], sum);
            finish = local_row;
          }
          sum = 0;
          ++local_row;
          whole = true;
        }
      }
      if (stop > start) atomicAdd(&partial[local_row], sum);
      __syncwarp();
      // Rows split between lanes: a row begun in this sub-tile is stored by the lane that ends it;
      // the open row carried in (local row 0) is stored if it began in this warp, else combined
      // with the warps before at the end.
      if (finish > 0) y[row + finish] = partial[finish];
      if (__ballot_sync(0xffffffffu, finish == 0) != 0) {
        if (open_started) {
          if (lane == 0) y[row] = partial[0];
        } else {
          completes = true;
          completes_sum = partial[0];
        }
      }
      if (rows_in > 0) {
        row_begin = row_end[rows_in - 1];
        open_started = true;
      }
      carry = partial[rows_in];
      row += rows_in;
      nz += nnz_in;
      __syncwarp();
    }
    if (lane == 0) {
      s_first_row[warp] = first_row;
      s_first_started[warp] = first_started;
      s_completes[warp] = completes;
      s_first_sum[warp] = completes_sum;
      if (row < M && nz > row_begin) {
        s_open_row[warp] = row;
        s_open_sum[warp] = carry;
      }
    }
  }
  __syncthreads();
  if (lane != 0 || s_first_row[warp] < 0) return;
  // Rows shared between warps: the warp that ends a row adds the shares of the warps before it
  // that left it open; a row still open at the end of the block is added by the last warp holding
  // it. A row begun before the block (or continued after it) goes through atomicAdd: launch 1
  // zeroed it.
  if (s_completes[warp]) {
    const int r = s_first_row[warp];
    value_t sum = s_first_sum[warp];
    int w = warp - 1;
    while (w >= 0 && s_open_row[w] == r) sum += s_open_sum[w--];
    // Begun before the block only if warp 0 holds it and did not start it.
    const bool begun_here = w >= 0 || s_first_row[0] != r || s_first_started[0];
    if (begun_here) {
      y[r] = sum;
    } else {
      atomicAdd(&y[r], sum);
    }
  }
  const int r = s_open_row[warp];
  if (r >= 0 && !(warp + 1 < WARPS && s_first_row[warp + 1] == r)) {
    value_t sum = 0;
    for (int w = warp; w >= 0 && s_open_row[w] == r; --w) sum += s_open_sum[w];
    atomicAdd(&y[r], sum);
  }
}
)cuda";

std::string render_csr_merge(const DesignPoint& p) {
  const int block = p.int_param("block");
  const int items = p.int_param("items");
  const std::string tile = std::to_string(block * items * p.int_param("steps"));
  ProgramParts parts;
  parts.summary =
      "Merge-path SpMV on CSR (Merrill and Garland): the merge of the M row ends with the NNZ "
      "nonzeros is cut into equal shares, so a huge row is spread over many warps and a run of "
      "empty rows costs one item each. Each warp finds its share with one warp-wide search on "
      "row_ptr (32 probes per step), then walks it in STEPS sub-tiles: it stages the sub-tile's "
      "row ends and products in shared memory and each lane consumes ITEMS items. Rows split "
      "between lanes are combined in shared memory, between warps at the end of the block, "
      "between blocks with atomicAdd after a first launch has zeroed them.";
  parts.parameter_docs = {
      {"block=" + p.param("block"), "threads per block"},
      {"items=" + p.param("items"), "merge-path items per lane and sub-tile"},
      {"steps=" + p.param("steps"),
       "sub-tiles per warp after its one search (TILE = block * items * steps per block)"}};
  parts.format = p.format();
  parts.launches = {
      {"merge_zero", "max(ceil_div(ceil_div(M + NNZ, " + tile + ") * 8, 256), 1)", "256", ""},
      {"spmv_csr_merge", "max(ceil_div(M + NNZ, " + tile + "), 1)", p.param("block"), ""}};
  parts.body =
      fill(kCsrMerge, {{"block", p.param("block")},
                       {"items", p.param("items")},
                       {"steps", p.param("steps")},
                       {"merge_path_rows", merge_path_rows_function("G", "mask")},
                       {"zero_head", kernel_head(p.op, Format::csr, "merge_zero", "256")},
                       {"main_head", kernel_head(p.op, Format::csr, "spmv_csr_merge", "BLOCK")},
                       {"col_i", load(true, "col_idx", "nz + i")},
                       {"val_i", load(true, "val", "nz + i")},
                       {"x_col", load(true, "x", "col[j]")}});
  return assemble(p, parts);
}

}  // namespace

GeneratorDef csr_merge_generator() {
  return design_generator(
      {"csr_merge", Op::spmv, Format::csr,
       "CSR merge path: equal shares of rows + nonzeros per thread (load balanced)"},
      ParamValues{
          {"block", {"128", "256"}}, {"items", {"5", "7", "11"}}, {"steps", {"1", "4", "16"}}},
      render_csr_merge, {}, [](const std::vector<DesignParam>& v) {
        // shared memory: TILE = block * items <= 2048 (f64 fits 48 KiB)
        return int_value_of(v, "block") * int_value_of(v, "items") <= 2048;
      });
}

}  // namespace sparserl::kernels::detail
