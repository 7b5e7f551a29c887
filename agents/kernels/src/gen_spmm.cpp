// The SpMM designs, Y = A X with X (N x K) and Y (M x K) row-major. Every design tiles over the K
// dense columns the same way: a group of LANES threads shares a unit of sparse work (a row, a chunk
// of the merge path, a run of COO entries) and each thread owns COLS consecutive columns per step,
// so the group reads a row of X and writes a row of Y with coalesced accesses, 16 bytes at a time
// when K is a multiple of COLS (checked at compile time on the prelude's K; otherwise a guarded
// scalar path). Designs: spmm_csr_rowgroup (a row per group, optionally loading the row's entries
// once per group and broadcasting them by shuffle), spmm_csr_merge (load-balanced merge path, for
// power-law and huge rows), spmm_coo, spmm_ell, spmm_sell, spmm_bsr, and spmm_csr_split (issue 25:
// the bulk by row groups, the few long rows in nonzero chunks over many groups).
#include <string>
#include <string_view>
#include <vector>

#include "program_text.hpp"

namespace sparserl::kernels::detail {
namespace {

// The column-tile defines: LANES, COLS and VECTOR_COLUMNS (K % COLS == 0, from the prelude).
std::string column_defines(const DesignPoint& p) {
  return "#define LANES " + p.param("lanes") + "\n#define COLS " + p.param("cols") +
         "\n#if K % COLS == 0\n#define VECTOR_COLUMNS 1\n#else\n#define VECTOR_COLUMNS 0\n#endif\n";
}

const char* kComponents[] = {"x", "y", "z", "w"};

// Accumulates v * X[xrow + c0 .. c0 + COLS - 1] into acc[0..COLS-1]; `xrow` points at X[col * K +
// c0].
std::string accumulate(const DesignPoint& p, const std::string& v, const std::string& xrow,
                       const std::string& indent) {
  const int cols = p.int_param("cols");
  if (cols == 1) return indent + "acc[0] += " + v + " * __ldg(" + xrow + ");\n";
  const VectorTypes vt = vector_types(p.dtype, cols);
  std::string out = "#if VECTOR_COLUMNS\n" + indent + "{\n" + indent + "  const " + vt.value +
                    " xv = __ldg(reinterpret_cast<const " + vt.value + "*>(" + xrow + "));\n";
  for (int t = 0; t < cols; ++t) {
    out += indent + "  acc[" + std::to_string(t) + "] += " + v + " * xv." + kComponents[t] + ";\n";
  }
  out += indent + "}\n#else\n#pragma unroll\n" + indent + "for (int t = 0; t < COLS; ++t) {\n" +
         indent + "  if (c0 + t < K) acc[t] += " + v + " * __ldg(" + xrow + " + t);\n" + indent +
         "}\n#endif\n";
  return out;
}

// Stores acc[0..COLS-1] to Y[out + c0 ..] (plain) or adds it (atomic).
std::string store(const DesignPoint& p, const std::string& dest, bool atomic,
                  const std::string& indent) {
  const int cols = p.int_param("cols");
  if (atomic) {
    if (cols == 1) return indent + "atomicAdd(" + dest + ", acc[0]);\n";
    return "#pragma unroll\n" + indent + "for (int t = 0; t < COLS; ++t) {\n" + indent +
           "  if (c0 + t < K) atomicAdd(" + dest + " + t, acc[t]);\n" + indent + "}\n";
  }
  if (cols == 1) return indent + "*(" + dest + ") = acc[0];\n";
  const VectorTypes vt = vector_types(p.dtype, cols);
  std::string args;
  for (int t = 0; t < cols; ++t) args += (t ? ", acc[" : "acc[") + std::to_string(t) + "]";
  return "#if VECTOR_COLUMNS\n" + indent + "*reinterpret_cast<" + vt.value + "*>(" + dest +
         ") = make_" + vt.value + "(" + args + ");\n#else\n#pragma unroll\n" + indent +
         "for (int t = 0; t < COLS; ++t) {\n" + indent + "  if (c0 + t < K) (" + dest +
         ")[t] = acc[t];\n" + indent + "}\n#endif\n";
}

std::string zero_acc(const std::string& indent) {
  return indent + "value_t acc[COLS];\n#pragma unroll\n" + indent +
         "for (int t = 0; t < COLS; ++t) acc[t] = 0;\n";
}

std::vector<std::pair<std::string, std::string>> column_docs(const DesignPoint& p) {
  return {{"lanes=" + p.param("lanes"), "threads that share one unit of sparse work"},
          {"cols=" + p.param("cols"),
           "consecutive columns of X and Y per thread and step (one 16-byte or 8-byte access "
           "when K is a multiple of cols)"}};
}

// lanes x cols combinations. `all_cols`: every width up to the dtype's 16-byte vector (1, 2, 4 for
// f32; 1, 2 for f64); otherwise scalar and the widest only.
ParamValues lanes_cols(DType dtype, std::vector<std::string> lanes, bool all_cols = false) {
  std::vector<std::string> cols = {"1"};
  if (all_cols && dtype == DType::f32) cols.push_back("2");
  cols.push_back(std::to_string(max_vector_width(dtype)));
  return {{"lanes", std::move(lanes)}, {"cols", cols}};
}

// -------------------------------------------------------------------------------------------------
// spmm_csr_rowgroup

std::string render_rowgroup(const DesignPoint& p) {
  const bool cache = p.int_param("cache") != 0;
  const std::string block = p.param("block");
  std::string body = "#define BLOCK " + block + "\n" + column_defines(p) + "\n" +
                     // Without launch bounds: with them ptxas caps the shuffle variant at 32
                     // registers and spills.
                     kernel_head(p.op, Format::csr, "spmm_csr_rowgroup", cache ? "" : "BLOCK") +
                     " {\n";
  body +=
      "  const long long thread = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;\n"
      "  const long long row = thread / LANES;\n"
      "  const int lane = static_cast<int>(thread % LANES);\n"
      "  if (row >= M) return;  // whole groups only: LANES divides 32\n"
      "  const int begin = row_ptr[row];\n"
      "  const int end = row_ptr[row + 1];\n"
      "  value_t* out = Y + row * K;\n";
  if (!cache) {
    body +=
        "  for (int c0 = lane * COLS; c0 < K; c0 += LANES * COLS) {\n" + zero_acc("    ") +
        "    for (int k = begin; k < end; ++k) {\n"
        "      const value_t v = __ldg(&val[k]);\n"
        "      const value_t* xrow = X + static_cast<long long>(__ldg(&col_idx[k])) * K + c0;\n" +
        accumulate(p, "v", "xrow", "      ") + "    }\n" + store(p, "out + c0", false, "    ") +
        "  }\n}\n";
  } else {
    body +=
        "  // The group's lanes only: other groups of the warp work on other rows.\n"
        "  const unsigned group_mask = LANES == 32 ? 0xffffffffu\n"
        "      : ((1u << (LANES % 32)) - 1u) << ((threadIdx.x % 32) / LANES * LANES);\n"
        "  for (int base = 0; base < K; base += LANES * COLS) {\n"
        "    const int c0 = base + lane * COLS;\n"
        "    const bool active = c0 < K;\n" +
        zero_acc("    ") +
        "    // LANES entries per coalesced load, then broadcast one by one with shuffles.\n"
        "    for (int chunk = begin; chunk < end; chunk += LANES) {\n"
        "      int my_col = 0;\n"
        "      value_t my_val = 0;\n"
        "      if (chunk + lane < end) {\n"
        "        my_col = __ldg(&col_idx[chunk + lane]);\n"
        "        my_val = __ldg(&val[chunk + lane]);\n"
        "      }\n"
        "      const int count = min(LANES, end - chunk);\n"
        "      for (int j = 0; j < count; ++j) {\n"
        "        const int col = __shfl_sync(group_mask, my_col, j, LANES);\n"
        "        const value_t v = __shfl_sync(group_mask, my_val, j, LANES);\n"
        "        if (active) {\n"
        "          const value_t* xrow = X + static_cast<long long>(col) * K + c0;\n" +
        accumulate(p, "v", "xrow", "          ") +
        "        }\n"
        "      }\n"
        "    }\n"
        "    if (active) {\n" +
        store(p, "out + c0", false, "      ") + "    }\n  }\n}\n";
  }
  ProgramParts parts;
  parts.summary =
      "SpMM on CSR with a group of LANES threads per row: each thread owns COLS consecutive "
      "columns per step and walks the row's entries, so the group reads rows of X and writes its "
      "row of Y coalesced. " +
      std::string(cache ? "The group loads LANES entries (column, value) at once and broadcasts "
                          "them with shuffles, one load per entry instead of one per lane."
                        : "Every lane loads each entry itself (one cached broadcast load).");
  parts.parameter_docs = column_docs(p);
  parts.parameter_docs.push_back(
      {"cache=" + p.param("cache"), cache ? "entries loaded once per group and shared by shuffle"
                                          : "entries loaded by every lane"});
  parts.parameter_docs.push_back({"block=" + block, "threads per block"});
  parts.format = p.format();
  parts.launches = {{"spmm_csr_rowgroup",
                     "ceil_div(max(M, 1) * " + p.param("lanes") + ", " + block + ")", block, ""}};
  parts.body = body;
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// spmm_csr_merge

std::string render_spmm_merge(const DesignPoint& p) {
  const int items = p.int_param("items");
  const std::string tmpl = R"cuda(#define BLOCK 256
${columns}#define ITEMS ${items}

// Merge-path search by a group of LANES lanes: how many row ends precede the first `diagonal` items
// of the merge of the row ends row_ptr[1..M] with the nonzero indices 0..NNZ-1 (a row end goes
// first on a tie). Row end m is among them when row_ptr[m + 1] + m + 1 <= diagonal, a prefix of m:
// LANES probes per step narrow the range LANES-fold.
${merge_path_rows}
// Launch 1: rows cut by a group boundary get their sums from several groups through atomicAdd, so
// their K outputs start at zero; every other row is stored once by the group that holds it whole.
// Row r's items lie on diagonals row_ptr[r] + r .. row_ptr[r + 1] + r of the merge path: it is cut
// when a multiple of ITEMS falls after its first item and at or before its end.
${zero_head} {
  const long long row = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if (row >= M) return;
  const long long begin = row_ptr[row] + row;
  const long long end = row_ptr[row + 1] + row;
  if (end / ITEMS > begin / ITEMS) {
    for (int c = 0; c < K; ++c) Y[row * K + c] = 0;
  }
}

// Launch 2: each group of LANES threads consumes ITEMS items of the merge path (row ends and
// nonzeros), whatever the row lengths; each thread carries COLS columns.
${main_head} {
  const long long thread = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  const long long group = thread / LANES;
  const int lane = static_cast<int>(thread % LANES);
  const unsigned group_mask = LANES == 32 ? 0xffffffffu
      : ((1u << (LANES % 32)) - 1u) << ((threadIdx.x % 32) / LANES * LANES);
  const long long total = static_cast<long long>(M) + NNZ;
  const long long first = group * ITEMS;
  if (first >= total) return;  // the whole group
  const long long last = first + ITEMS < total ? first + ITEMS : total;
  const int row_start = merge_path_rows(row_ptr, first, lane, group_mask);
  const int nz_start = static_cast<int>(first - row_start);
  const bool starts_row = nz_start == row_ptr[row_start];
  for (int c0 = lane * COLS; c0 < K; c0 += LANES * COLS) {
${zero_acc}    int row = row_start;
    int nz = nz_start;
    int row_end = row_ptr[row + 1];
    bool whole = starts_row;
    bool touched = false;
    for (long long item = first; item < last; ++item) {
      if (nz < row_end) {
        const value_t v = __ldg(&val[nz]);
        const value_t* xrow = X + static_cast<long long>(__ldg(&col_idx[nz])) * K + c0;
${accumulate}        ++nz;
        touched = true;
      } else {
        value_t* out = Y + static_cast<long long>(row) * K + c0;
        if (whole) {
${store}        } else {
${atomic}        }
#pragma unroll
        for (int t = 0; t < COLS; ++t) acc[t] = 0;
        ++row;
        row_end = row < M ? row_ptr[row + 1] : NNZ;
        whole = true;
        touched = false;
      }
    }
    if (touched) {
      // The row continues in the next group.
      value_t* out = Y + static_cast<long long>(row) * K + c0;
${atomic}    }
  }
}
)cuda";
  ProgramParts parts;
  parts.summary =
      "Merge-path SpMM on CSR: the merge of the M row ends with the NNZ nonzeros is cut into "
      "chunks of ITEMS items, one per group of LANES threads, so huge rows are spread over many "
      "groups and every group does the same work. A group finds its chunk with a search on "
      "row_ptr in which its LANES lanes probe together; rows it holds whole are stored, rows cut "
      "by a chunk boundary are added with "
      "atomicAdd after a first launch (one pass over row_ptr) has zeroed them. Each thread carries "
      "COLS columns.";
  parts.parameter_docs = column_docs(p);
  parts.parameter_docs.push_back({"items=" + p.param("items"), "merge-path items per group"});
  parts.format = p.format();
  const std::string lanes = p.param("lanes");
  parts.launches = {
      {"merge_zero", "ceil_div(max(M, 1), 256)", "256", ""},
      {"spmm_csr_merge",
       "max(ceil_div(ceil_div(M + NNZ, " + p.param("items") + ") * " + lanes + ", 256), 1)", "256",
       ""}};
  parts.body = fill(tmpl, {{"columns", column_defines(p)},
                           {"items", std::to_string(items)},
                           {"merge_path_rows", merge_path_rows_function("LANES", "group_mask")},
                           {"zero_head", kernel_head(p.op, Format::csr, "merge_zero", "256")},
                           {"main_head", kernel_head(p.op, Format::csr, "spmm_csr_merge", "BLOCK")},
                           {"zero_acc", zero_acc("    ")},
                           {"accumulate", accumulate(p, "v", "xrow", "        ")},
                           {"store", store(p, "out", false, "          ")},
                           {"atomic", store(p, "out", true, "          ")}});
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// spmm_csr_split (issue 25)

std::string render_spmm_split(const DesignPoint& p) {
  const std::string split = p.param("split");
  const std::string tmpl = R"cuda(#define BLOCK 256
${columns}#define SPLIT_ROW ${split}

${row_of_nonzero}
// Launch 1, the bulk: a group of LANES threads per row, each thread COLS columns; rows longer than
// SPLIT_ROW get zeros here and their sums from launch 2.
${bulk_head} {
  const long long thread = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  const long long row = thread / LANES;
  const int lane = static_cast<int>(thread % LANES);
  if (row >= M) return;  // whole groups only: LANES divides 32
  const int begin = row_ptr[row];
  const int end = row_ptr[row + 1] - begin > SPLIT_ROW ? begin : row_ptr[row + 1];
  value_t* out = Y + row * K;
  for (int c0 = lane * COLS; c0 < K; c0 += LANES * COLS) {
${zero_acc}#pragma unroll 4
    for (int k = begin; k < end; ++k) {
      const value_t v = __ldg(&val[k]);
      const value_t* xrow = X + static_cast<long long>(__ldg(&col_idx[k])) * K + c0;
${accumulate_bulk}    }
${store}  }
}

// Launch 2, the long rows: a group per chunk of SPLIT_ROW consecutive nonzeros adds the chunk's
// share of every long row it touches with atomicAdd (launch 1 zeroed them). No long row lies inside
// a chunk, so only the rows of the chunk's first and last nonzero can be long. Without long rows
// (MAX_ROW_NNZ <= SPLIT_ROW) this launch is one empty block.
${long_head} {
#if MAX_ROW_NNZ > SPLIT_ROW
  const long long thread = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  const long long chunk_begin = thread / LANES * SPLIT_ROW;
  const int lane = static_cast<int>(thread % LANES);
  const unsigned group_mask = LANES == 32 ? 0xffffffffu
      : ((1u << (LANES % 32)) - 1u) << ((threadIdx.x % 32) / LANES * LANES);
  if (chunk_begin >= NNZ) return;  // the whole group
${chunk_walk}#endif
}
)cuda";
  ProgramParts parts;
  parts.summary =
      "Split SpMM on CSR for a few very long rows among many short ones, in two launches. Launch "
      "1: a group of LANES threads per row (each thread COLS columns) sums the rows of at most "
      "SPLIT_ROW entries and zeroes the longer ones. Launch 2: a group per chunk of SPLIT_ROW "
      "consecutive nonzeros finds the rows of the chunk's first and last nonzero (the only ones "
      "that can be long) with group-wide searches on row_ptr and adds its share of each long one "
      "with atomicAdd, so a huge row is spread over NNZ / SPLIT_ROW groups.";
  parts.parameter_docs = column_docs(p);
  parts.parameter_docs.push_back(
      {"split=" + split, "rows longer than this are cut into chunks of this many nonzeros"});
  parts.format = p.format();
  const std::string lanes = p.param("lanes");
  parts.launches = {{"spmm_split_bulk", "ceil_div(max(M, 1) * " + lanes + ", 256)", "256", ""},
                    {"spmm_split_long",
                     "max(ceil_div(ceil_div(NNZ, " + split + ") * " + lanes +
                         " * min(MAX_ROW_NNZ / (" + split + " + 1), 1), 256), 1)",
                     "256", ""}};
  const std::string long_row = fill(R"cuda(      value_t* out = Y + static_cast<long long>(row) * K;
      for (int c0 = lane * COLS; c0 < K; c0 += LANES * COLS) {
${zero_acc}#pragma unroll 4
        for (long long k = from; k < to; ++k) {
          const value_t v = __ldg(&val[k]);
          const value_t* xrow = X + static_cast<long long>(__ldg(&col_idx[k])) * K + c0;
${accumulate}        }
${atomic}      }
)cuda",
                                    {{"zero_acc", zero_acc("        ")},
                                     {"accumulate", accumulate(p, "v", "xrow", "          ")},
                                     {"atomic", store(p, "out + c0", true, "        ")}});
  parts.body =
      fill(tmpl, {{"columns", column_defines(p)},
                  {"split", split},
                  {"row_of_nonzero", row_of_nonzero_function("LANES")},
                  {"bulk_head", kernel_head(p.op, Format::csr, "spmm_split_bulk", "BLOCK")},
                  {"long_head", kernel_head(p.op, Format::csr, "spmm_split_long", "BLOCK")},
                  {"zero_acc", zero_acc("    ")},
                  {"accumulate_bulk", accumulate(p, "v", "xrow", "      ")},
                  {"store", store(p, "out + c0", false, "    ")},
                  {"chunk_walk", long_row_chunk_walk("group_mask", long_row)}});
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// spmm_coo

std::string render_spmm_coo(const DesignPoint& p) {
  const std::string tmpl = R"cuda(#define BLOCK 256
${columns}#define ITEMS ${items}

// Launch 1: Y = 0 (the evaluator fills Y with NaN before every run; the atomics need zeros).
${zero_head} {
  const long long i = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if (i < static_cast<long long>(M) * K) Y[i] = 0;
}

// Launch 2: each group of LANES threads takes ITEMS consecutive entries and adds each run of equal
// rows into Y with one atomicAdd per run and column.
${main_head} {
  const long long thread = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  const long long first = thread / LANES * ITEMS;
  const int lane = static_cast<int>(thread % LANES);
  if (first >= NNZ) return;
  const long long last = first + ITEMS < NNZ ? first + ITEMS : NNZ;
  for (int c0 = lane * COLS; c0 < K; c0 += LANES * COLS) {
${zero_acc}    int row = __ldg(&row_idx[first]);
    for (long long e = first; e < last; ++e) {
      const int r = __ldg(&row_idx[e]);
      if (r != row) {
        value_t* out = Y + static_cast<long long>(row) * K + c0;
${atomic}#pragma unroll
        for (int t = 0; t < COLS; ++t) acc[t] = 0;
        row = r;
      }
      const value_t v = __ldg(&val[e]);
      const value_t* xrow = X + static_cast<long long>(__ldg(&col_idx[e])) * K + c0;
${accumulate}    }
    value_t* out = Y + static_cast<long long>(row) * K + c0;
${atomic}  }
}
)cuda";
  ProgramParts parts;
  parts.summary =
      "SpMM on COO: a zeroing launch, then groups of LANES threads each take ITEMS consecutive "
      "entries (equal work per group whatever the row lengths) and add every run of equal rows "
      "into Y with atomicAdd; each thread carries COLS columns.";
  parts.parameter_docs = column_docs(p);
  parts.parameter_docs.push_back({"items=" + p.param("items"), "entries per group"});
  parts.format = p.format();
  parts.launches = {
      {"zero_y", "ceil_div(max(M * K, 1), 256)", "256", ""},
      {"spmm_coo",
       "max(ceil_div(ceil_div(NNZ, " + p.param("items") + ") * " + p.param("lanes") + ", 256), 1)",
       "256", ""}};
  parts.body = fill(tmpl, {{"columns", column_defines(p)},
                           {"items", p.param("items")},
                           {"zero_head", kernel_head(p.op, Format::coo, "zero_y", "256")},
                           {"main_head", kernel_head(p.op, Format::coo, "spmm_coo", "BLOCK")},
                           {"zero_acc", zero_acc("    ")},
                           {"accumulate", accumulate(p, "v", "xrow", "      ")},
                           {"atomic", store(p, "out", true, "        ")}});
  return assemble(p, parts);
}

// -------------------------------------------------------------------------------------------------
// spmm_ell, spmm_sell, spmm_bsr: a group of LANES threads per row

// The kernel of every row-group design: a group of LANES threads per row - `unit` numbers the
// groups (the row, or SELL's sorted position) - each thread COLS columns of X and Y. A format gives
// the lines that find its row (`setup`), the row of Y it writes (`out_row`) and the walk over the
// row's entries (`entries`, the accumulation inside); the column defines, the kernel head and the
// accumulator code (zero, store to `out + c0`) are the column tiles'.
const char* kRowGroupKernel = R"cuda(#define BLOCK 256
${columns}
${head} {
  const long long thread = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  const long long ${unit} = thread / LANES;${unit_note}
  const int lane = static_cast<int>(thread % LANES);
  if (${unit} >= M) return;
${setup}  value_t* out = Y + ${out_row} * K;
  for (int c0 = lane * COLS; c0 < K; c0 += LANES * COLS) {
${zero_acc}${entries}${store}  }
}
)cuda";

// The walk over a row's padded slots (ELL, SELL): `count` of them, slot k where `slot_line` puts
// it; the padding (col < 0) only follows a row's entries.
std::string padded_slot_walk(std::string_view count, std::string_view slot_line,
                             const std::string& accumulate) {
  return fill(R"cuda(    for (int k = 0; k < ${count}; ++k) {
      ${slot_line}
      const int col = __ldg(&col_idx[slot]);
      if (col < 0) break;  // padding only follows a row's entries
      const value_t v = __ldg(&val[slot]);
      const value_t* xrow = X + static_cast<long long>(col) * K + c0;
${accumulate}    }
)cuda",
              {{"count", std::string(count)},
               {"slot_line", std::string(slot_line)},
               {"accumulate", accumulate}});
}

// The walks over a row's entries of each format, the accumulation inside.
std::string ell_slots(const DesignPoint& p) {
  return padded_slot_walk("ELL_WIDTH",
                          "const long long slot = static_cast<long long>(k) * M + row;",
                          accumulate(p, "v", "xrow", "      "));
}

std::string sell_slots(const DesignPoint& p) {
  return padded_slot_walk("width", "const int slot = start + k * SELL_C + r;",
                          accumulate(p, "v", "xrow", "      "));
}

std::string bsr_blocks(const DesignPoint& p) {
  return fill(R"cuda(    for (int b = begin; b < end; ++b) {
      const long long col0 = static_cast<long long>(__ldg(&block_col_idx[b])) * BSR_C;
      const value_t* cells = val + static_cast<long long>(b) * (BSR_R * BSR_C) + i * BSR_C;
#pragma unroll
      for (int j = 0; j < BSR_C; ++j) {
        if (col0 + j < N) {
          const value_t v = __ldg(&cells[j]);
          const value_t* xrow = X + (col0 + j) * K + c0;
${accumulate}        }
      }
    }
)cuda",
              {{"accumulate", accumulate(p, "v", "xrow", "          ")}});
}

// What a format puts into kRowGroupKernel, and its program's summary.
struct RowGroupKernel {
  const char* unit;       // the group's number: "row" or "position"
  const char* unit_note;  // a comment after it, or ""
  const char* setup;      // lines that find the row's entries
  const char* out_row;    // the row of Y, a long long expression
  std::string (*entries)(const DesignPoint&);
  const char* summary;
};

const RowGroupKernel kSpmmEll = {
    .unit = "row",
    .unit_note = "",
    .setup = "",
    .out_row = "row",
    .entries = ell_slots,
    .summary =
        "SpMM on ELL: a group of LANES threads per row walks the row's ELL_WIDTH slots (stopping "
        "at the first padding slot); each thread carries COLS columns of X and Y."};

const RowGroupKernel kSpmmSell = {
    .unit = "position",
    .unit_note = "  // sorted position: row row_perm[position]",
    .setup =
        "  const long long slice = position / SELL_C;\n"
        "  const int r = static_cast<int>(position % SELL_C);\n"
        "  const int start = slice_ptr[slice];\n"
        "  const int width = (slice_ptr[slice + 1] - start) / SELL_C;\n",
    .out_row = "static_cast<long long>(row_perm[position])",
    .entries = sell_slots,
    .summary =
        "SpMM on SELL-C-sigma: a group of LANES threads per sorted row walks the row's slots "
        "in its slice (padded only to the slice's longest row) and writes the original row "
        "row_perm[position] of Y; each thread carries COLS columns."};

const RowGroupKernel kSpmmBsr = {
    .unit = "row",
    .unit_note = "",
    .setup =
        "  const long long block_row = row / BSR_R;\n"
        "  const int i = static_cast<int>(row % BSR_R);\n"
        "  const int begin = block_row_ptr[block_row];\n"
        "  const int end = block_row_ptr[block_row + 1];\n",
    .out_row = "row",
    .entries = bsr_blocks,
    .summary =
        "SpMM on BSR: a group of LANES threads per matrix row walks the blocks of its block "
        "row and the BSR_C cells of its line in each (unrolled: BSR_C is a prelude "
        "constant); each thread carries COLS columns. The col < N test keeps edge blocks "
        "inside X."};

// A row-group design's program: kRowGroupKernel with the format's parts, one launch of LANES
// threads per row, the parameter docs the columns' and `extra_docs`.
std::string render_row_group(const DesignPoint& p, Format format, const char* kernel,
                             const RowGroupKernel& parts_of_format,
                             const std::vector<std::pair<std::string, std::string>>& extra_docs) {
  ProgramParts parts;
  parts.summary = parts_of_format.summary;
  parts.parameter_docs = column_docs(p);
  parts.parameter_docs.insert(parts.parameter_docs.end(), extra_docs.begin(), extra_docs.end());
  parts.format = p.format();
  parts.launches = {{kernel, "ceil_div(max(M, 1) * " + p.param("lanes") + ", 256)", "256", ""}};
  parts.body = fill(kRowGroupKernel, {{"columns", column_defines(p)},
                                      {"head", kernel_head(p.op, format, kernel, "BLOCK")},
                                      {"unit", parts_of_format.unit},
                                      {"unit_note", parts_of_format.unit_note},
                                      {"setup", parts_of_format.setup},
                                      {"out_row", parts_of_format.out_row},
                                      {"zero_acc", zero_acc("    ")},
                                      {"entries", parts_of_format.entries(p)},
                                      {"store", store(p, "out + c0", false, "    ")}});
  return assemble(p, parts);
}

std::string render_spmm_ell(const DesignPoint& p) {
  return render_row_group(p, Format::ell, "spmm_ell", kSpmmEll, {});
}

std::string render_spmm_sell(const DesignPoint& p) {
  return render_row_group(p, Format::sell, "spmm_sell", kSpmmSell,
                          {{"C=" + p.param("C"), "slice height (rows per slice)"},
                           {"sigma=" + p.param("sigma"), "sorting window (1: no sorting)"}});
}

std::string render_spmm_bsr(const DesignPoint& p) {
  return render_row_group(p, Format::bsr, "spmm_bsr", kSpmmBsr,
                          {{"shape=" + p.param("shape"), "block rows x block columns"}});
}

// Appends `extra` parameter lists to lanes x cols.
ParamValues with(ParamValues base, const ParamValues& extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

}  // namespace

std::vector<GeneratorDef> spmm_generators() {
  return {
      design_generator(
          {"spmm_csr_rowgroup", Op::spmm, Format::csr,
           "CSR, a group of lanes per row, each thread COLS columns"},
          [](DType dtype) {
            return with(lanes_cols(dtype, {"1", "2", "4", "8", "16", "32"}, true),
                        {{"cache", {"0", "1"}}, {"block", {"128", "256"}}});
          },
          render_rowgroup, {"cols", "cache"},
          [](const std::vector<DesignParam>& v) {
            // sharing entries by shuffle needs a group of 4 or more
            return value_of(v, "cache") == "0" || int_value_of(v, "lanes") >= 4;
          }),
      design_generator(
          {"spmm_csr_merge", Op::spmm, Format::csr,
           "CSR merge path per lane group (load balanced), atomics at chunk boundaries"},
          [](DType dtype) {
            return with(lanes_cols(dtype, {"2", "8", "32"}), {{"items", {"16", "64"}}});
          },
          render_spmm_merge, {"cols"}),
      design_generator({"spmm_coo", Op::spmm, Format::coo,
                        "COO, runs of equal rows added with atomics after a zeroing launch"},
                       [](DType dtype) {
                         return with(lanes_cols(dtype, {"2", "8", "32"}), {{"items", {"8", "32"}}});
                       },
                       render_spmm_coo, {"cols"}),
      design_generator({"spmm_ell", Op::spmm, Format::ell, "ELL, a group of lanes per row"},
                       [](DType dtype) {
                         return lanes_cols(dtype, {"1", "2", "8", "32"});
                       },
                       render_spmm_ell, {"cols"}),
      design_generator(
          {"spmm_sell", Op::spmm, Format::sell, "SELL-C-sigma, a group of lanes per sorted row"},
          [](DType dtype) {
            return with(lanes_cols(dtype, {"2", "8", "32"}),
                        {{"C", {"32"}}, {"sigma", {"1", "4096"}}});
          },
          render_spmm_sell, {"cols", "sigma"}, nullptr, sell_format),
      design_generator(
          {"spmm_bsr", Op::spmm, Format::bsr, "BSR, a group of lanes per matrix row"},
          [](DType dtype) {
            return with(lanes_cols(dtype, {"2", "8", "32"}), {{"shape", {"2x2", "3x3", "4x4"}}});
          },
          render_spmm_bsr, {"cols", "shape"}, nullptr, bsr_format),
      design_generator(
          {"spmm_csr_split", Op::spmm, Format::csr,
           "CSR in two launches: a lane group per row for the bulk, nonzero chunks over many "
           "groups (atomics) for the long rows"},
          [](DType dtype) {
            return with(lanes_cols(dtype, {"2", "8", "32"}), {{"split", {"64", "512"}}});
          },
          render_spmm_split, {"cols"})};
}

}  // namespace sparserl::kernels::detail
