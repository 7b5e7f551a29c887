// cuSPARSE set-up and launch for the baseline (cusparse_baseline.hpp): the formats each path needs,
// built on the host from the canonical CSR, uploaded once; descriptors and work buffers per path.
#include "gpu/cusparse_baseline.hpp"

#include <algorithm>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

#include "gpu/cuda_errors.hpp"
#include "sparserl/datasets/formats.hpp"

namespace sparserl::reward::gpu {
namespace {

using datasets::Index;

void check_sparse(cusparseStatus_t status, const char* where) {
  if (status != CUSPARSE_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cuSPARSE ") + where + ": " + cusparseGetErrorString(status));
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The value type of a task's precision and the scalars of Y = 1 A X + 0 Y in it: cuSPARSE reads
// alpha and beta through pointers to that type (host pointer mode, read during the call).
struct Scalars {
  explicit Scalars(datasets::DType dtype)
      : f32(dtype == datasets::DType::f32), value_type(f32 ? CUDA_R_32F : CUDA_R_64F) {}
  [[nodiscard]] const void* alpha() const { return f32 ? static_cast<const void*>(&one32) : &one64; }
  [[nodiscard]] const void* beta() const { return f32 ? static_cast<const void*>(&zero32) : &zero64; }

  bool f32;
  cudaDataType value_type;
  double one64 = 1.0, zero64 = 0.0;
  float one32 = 1.0f, zero32 = 0.0f;
};

// Distinct b x b blocks (on the b-grid) that hold an entry: a BSR conversion stores that many
// blocks. Counted with one marker per block column, O(nnz).
struct BlockCount {
  std::int64_t blocks = 0;         // non-empty blocks
  std::int64_t max_per_row = 0;    // the most non-empty blocks in one block row
};

BlockCount count_blocks(const datasets::SparseMatrix& a, Index b) {
  BlockCount c;
  const auto row_ptr = a.row_ptr();
  const auto col_idx = a.col_idx();
  const std::int64_t mb = ceil_div(a.rows(), b), nb = ceil_div(a.cols(), b);
  std::vector<std::int64_t> marker(static_cast<std::size_t>(nb), -1);
  for (std::int64_t i = 0; i < mb; ++i) {
    std::int64_t in_row = 0;
    const std::int64_t end = std::min<std::int64_t>((i + 1) * b, a.rows());
    for (std::int64_t r = i * b; r < end; ++r) {
      for (std::int64_t p = row_ptr[r]; p < row_ptr[r + 1]; ++p) {
        const std::int64_t j = col_idx[p] / b;
        if (marker[j] != i) {
          marker[j] = i;
          ++in_row;
        }
      }
    }
    c.blocks += in_row;
    c.max_per_row = std::max(c.max_per_row, in_row);
  }
  return c;
}

// The square BSR block sizes (of 2, 4, 8) whose format stores at most kMaxBaselineFill x nnz.
std::vector<Index> bsr_blocks(const datasets::SparseMatrix& a) {
  std::vector<Index> out;
  if (a.nnz() == 0) return out;
  for (Index b : {2, 4, 8}) {
    if (b > a.rows() || b > a.cols()) continue;
    const double stored = static_cast<double>(count_blocks(a, b).blocks) * b * b;
    if (stored <= kMaxBaselineFill * static_cast<double>(a.nnz())) out.push_back(b);
  }
  return out;
}

// The cuSPARSE algorithms tried on a CSR matrix, and on a row-sorted COO one, for the op.
std::vector<std::pair<std::string, int>> csr_algorithms(datasets::Op op) {
  if (op == datasets::Op::spmv) {
    return {{"CSR_ALG1", CUSPARSE_SPMV_CSR_ALG1}, {"CSR_ALG2", CUSPARSE_SPMV_CSR_ALG2}};
  }
  return {{"CSR_ALG1", CUSPARSE_SPMM_CSR_ALG1},
          {"CSR_ALG2", CUSPARSE_SPMM_CSR_ALG2},
          {"CSR_ALG3", CUSPARSE_SPMM_CSR_ALG3}};
}

std::vector<std::pair<std::string, int>> coo_algorithms(datasets::Op op) {
  if (op == datasets::Op::spmv) {
    return {{"COO_ALG1", CUSPARSE_SPMV_COO_ALG1}, {"COO_ALG2", CUSPARSE_SPMV_COO_ALG2}};
  }
  return {{"COO_ALG1", CUSPARSE_SPMM_COO_ALG1},
          {"COO_ALG2", CUSPARSE_SPMM_COO_ALG2},
          {"COO_ALG3", CUSPARSE_SPMM_COO_ALG3},
          {"COO_ALG4", CUSPARSE_SPMM_COO_ALG4}};
}

}  // namespace

void* CusparseBaseline::alloc(std::size_t bytes) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc (cuSPARSE baseline)");
  allocations_.push_back(p);
  device_bytes_ += bytes;
  return p;
}

void* CusparseBaseline::upload_indices(const std::vector<Index>& host) {
  void* d = alloc(host.size() * sizeof(Index));
  check_cuda(cudaMemcpy(d, host.data(), host.size() * sizeof(Index), cudaMemcpyHostToDevice),
             "upload baseline indices");
  return d;
}

void* CusparseBaseline::upload_values(std::span<const double> host) {
  const std::size_t vbytes = datasets::dtype_bytes(dtype_);
  void* d = alloc(host.size() * vbytes);
  if (dtype_ == datasets::DType::f32) {
    const std::vector<float> narrow(host.begin(), host.end());
    check_cuda(cudaMemcpy(d, narrow.data(), narrow.size() * sizeof(float), cudaMemcpyHostToDevice),
               "upload baseline values");
  } else {
    check_cuda(cudaMemcpy(d, host.data(), host.size() * sizeof(double), cudaMemcpyHostToDevice),
               "upload baseline values");
  }
  return d;
}

CusparseBaseline::CusparseBaseline(const datasets::SparseMatrix& a, datasets::Op op,
                                   datasets::DType dtype, int k, BaselineMode mode,
                                   cudaStream_t stream)
    : op_(op), dtype_(dtype), k_(op == datasets::Op::spmv ? 1 : k), stream_(stream) {
  const std::size_t vbytes = datasets::dtype_bytes(dtype);
  const bool best = mode == BaselineMode::best;
  // The BSR block sizes first: they decide how far x and y are padded.
  const std::vector<Index> bsr = best ? bsr_blocks(a) : std::vector<Index>{};
  x_rows_ = a.cols();
  y_rows_ = a.rows();
  for (Index b : bsr) {
    x_rows_ = std::max(x_rows_, ceil_div(a.cols(), b) * b);
    y_rows_ = std::max(y_rows_, ceil_div(a.rows(), b) * b);
  }
  d_x_ = alloc(static_cast<std::size_t>(x_rows_) * k_ * vbytes);
  d_y_ = alloc(static_cast<std::size_t>(y_rows_) * k_ * vbytes);
  y_bytes_ = static_cast<std::size_t>(a.rows()) * k_ * vbytes;
  // x's padding must stay zero: the timed runs overwrite only its first cols * k elements.
  check_cuda(cudaMemset(d_x_, 0, static_cast<std::size_t>(x_rows_) * k_ * vbytes), "zero x");
  check_cuda(cudaMemset(d_y_, 0, static_cast<std::size_t>(y_rows_) * k_ * vbytes), "zero y");
  // The legacy-stream memsets must finish before anything on the session's non-blocking stream.
  check_cuda(cudaDeviceSynchronize(), "zero x and y");

  check_sparse(cusparseCreate(&handle_), "cusparseCreate");
  check_sparse(cusparseSetStream(handle_, stream_), "cusparseSetStream");
  add_csr_and_coo(a, mode);
  if (best && op == datasets::Op::spmv) add_sell(a);
  for (Index b : bsr) add_bsr(a, b);
  check_cuda(cudaStreamSynchronize(stream_), "cuSPARSE preprocessing");
  if (names_.empty()) throw std::runtime_error("cuSPARSE supports no path for this task");
}

CusparseBaseline::~CusparseBaseline() {
  for (Path& p : paths_) {
    if (p.vec_x) cusparseDestroyDnVec(p.vec_x);
    if (p.vec_y) cusparseDestroyDnVec(p.vec_y);
    if (p.mat_x) cusparseDestroyDnMat(p.mat_x);
    if (p.mat_y) cusparseDestroyDnMat(p.mat_y);
  }
  for (cusparseSpMatDescr_t m : mats_) cusparseDestroySpMat(m);
  if (handle_) cusparseDestroy(handle_);
  for (void* p : allocations_) cudaFree(p);
}

void CusparseBaseline::add_paths(cusparseSpMatDescr_t mat, std::int64_t rows, std::int64_t cols,
                                 const std::vector<std::pair<std::string, int>>& algs) {
  mats_.push_back(mat);
  const Scalars scalars(dtype_);
  const cudaDataType value_type = scalars.value_type;
  const void* alpha = scalars.alpha();
  const void* beta = scalars.beta();
  const auto N = CUSPARSE_OPERATION_NON_TRANSPOSE;
  for (const auto& [name, alg] : algs) {
    Path p;
    p.mat = mat;
    p.alg = alg;
    std::size_t bytes = 0;
    bool ok = false;
    if (op_ == datasets::Op::spmv) {
      check_sparse(cusparseCreateDnVec(&p.vec_x, cols, d_x_, value_type), "cusparseCreateDnVec x");
      check_sparse(cusparseCreateDnVec(&p.vec_y, rows, d_y_, value_type), "cusparseCreateDnVec y");
      const auto a = static_cast<cusparseSpMVAlg_t>(alg);
      ok = cusparseSpMV_bufferSize(handle_, N, alpha, mat, p.vec_x, beta, p.vec_y, value_type, a,
                                   &bytes) == CUSPARSE_STATUS_SUCCESS;
      if (ok) {
        p.buffer = alloc(bytes);
        ok = cusparseSpMV_preprocess(handle_, N, alpha, mat, p.vec_x, beta, p.vec_y, value_type, a,
                                     p.buffer) == CUSPARSE_STATUS_SUCCESS;
      }
    } else {
      check_sparse(cusparseCreateDnMat(&p.mat_x, cols, k_, k_, d_x_, value_type, CUSPARSE_ORDER_ROW),
                   "cusparseCreateDnMat X");
      check_sparse(cusparseCreateDnMat(&p.mat_y, rows, k_, k_, d_y_, value_type, CUSPARSE_ORDER_ROW),
                   "cusparseCreateDnMat Y");
      const auto a = static_cast<cusparseSpMMAlg_t>(alg);
      ok = cusparseSpMM_bufferSize(handle_, N, N, alpha, mat, p.mat_x, beta, p.mat_y, value_type, a,
                                   &bytes) == CUSPARSE_STATUS_SUCCESS;
      if (ok) {
        p.buffer = alloc(bytes);
        ok = cusparseSpMM_preprocess(handle_, N, N, alpha, mat, p.mat_x, beta, p.mat_y, value_type,
                                     a, p.buffer) == CUSPARSE_STATUS_SUCCESS;
      }
    }
    // Kept either way so the destructor frees its descriptors; only accepted paths get a name.
    if (ok) {
      names_.push_back(name);
      paths_.push_back(p);
    } else {
      if (p.vec_x) cusparseDestroyDnVec(p.vec_x);
      if (p.vec_y) cusparseDestroyDnVec(p.vec_y);
      if (p.mat_x) cusparseDestroyDnMat(p.mat_x);
      if (p.mat_y) cusparseDestroyDnMat(p.mat_y);
    }
  }
}

void CusparseBaseline::add_csr_and_coo(const datasets::SparseMatrix& a, BaselineMode mode) {
  const bool f32 = dtype_ == datasets::DType::f32;
  const cudaDataType value_type = f32 ? CUDA_R_32F : CUDA_R_64F;
  const std::vector<Index> row_ptr(a.row_ptr().begin(), a.row_ptr().end());
  const std::vector<Index> col_idx(a.col_idx().begin(), a.col_idx().end());
  void* d_row_ptr = upload_indices(row_ptr);
  void* d_col_idx = upload_indices(col_idx);
  void* d_values = upload_values(a.values());
  cusparseSpMatDescr_t csr = nullptr;
  check_sparse(cusparseCreateCsr(&csr, a.rows(), a.cols(), a.nnz(), d_row_ptr, d_col_idx, d_values,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                 value_type),
               "cusparseCreateCsr");
  add_paths(csr, a.rows(), a.cols(), csr_algorithms(op_));
  if (mode != BaselineMode::best) return;
  // Row-sorted COO shares the CSR's column indices and values (the same order).
  std::vector<Index> row_idx(static_cast<std::size_t>(a.nnz()));
  for (Index r = 0; r < a.rows(); ++r) {
    std::fill(row_idx.begin() + row_ptr[r], row_idx.begin() + row_ptr[r + 1], r);
  }
  cusparseSpMatDescr_t coo = nullptr;
  check_sparse(cusparseCreateCoo(&coo, a.rows(), a.cols(), a.nnz(), upload_indices(row_idx),
                                 d_col_idx, d_values, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                 value_type),
               "cusparseCreateCoo");
  add_paths(coo, a.rows(), a.cols(), coo_algorithms(op_));
}

void CusparseBaseline::add_sell(const datasets::SparseMatrix& a) {
  constexpr Index kSlice = 32;
  if (a.nnz() == 0) return;
  // sigma = 1: cuSPARSE's sliced ELL keeps the rows in order; the layout is then the kernel ABI's
  // SELL (formats.hpp): slice_ptr offsets, each slice column-major, padding column -1.
  const std::int64_t max_stored = static_cast<std::int64_t>(kMaxBaselineFill * static_cast<double>(a.nnz()));
  datasets::SellMatrix sell;
  try {
    sell = datasets::to_sell(a, kSlice, 1, max_stored);
  } catch (const datasets::FormatTooLarge&) {
    return;  // more than twice the nonzeros: not a path for this matrix
  }
  const cudaDataType value_type = dtype_ == datasets::DType::f32 ? CUDA_R_32F : CUDA_R_64F;
  cusparseSpMatDescr_t mat = nullptr;
  check_sparse(cusparseCreateSlicedEll(&mat, a.rows(), a.cols(), a.nnz(),
                                       static_cast<std::int64_t>(sell.val.size()), kSlice,
                                       upload_indices(sell.slice_ptr), upload_indices(sell.col_idx),
                                       upload_values(sell.val), CUSPARSE_INDEX_32I,
                                       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, value_type),
               "cusparseCreateSlicedEll");
  add_paths(mat, a.rows(), a.cols(), {{"SELL_ALG1", CUSPARSE_SPMV_SELL_ALG1}});
}

void CusparseBaseline::add_bsr(const datasets::SparseMatrix& a, Index b) {
  const datasets::BsrMatrix bsr = datasets::to_bsr(a, b, b);
  const cudaDataType value_type = dtype_ == datasets::DType::f32 ? CUDA_R_32F : CUDA_R_64F;
  const std::int64_t nb = ceil_div(a.cols(), b);
  cusparseSpMatDescr_t mat = nullptr;
  check_sparse(cusparseCreateBsr(&mat, bsr.mb(), nb, bsr.nnzb(), b, b,
                                 upload_indices(bsr.block_row_ptr), upload_indices(bsr.block_col_idx),
                                 upload_values(bsr.val), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_BASE_ZERO, value_type, CUSPARSE_ORDER_ROW),
               "cusparseCreateBsr");
  const std::string name = "BSR_ALG1(" + std::to_string(b) + "x" + std::to_string(b) + ")";
  const int alg = op_ == datasets::Op::spmv ? static_cast<int>(CUSPARSE_SPMV_BSR_ALG1)
                                            : static_cast<int>(CUSPARSE_SPMM_BSR_ALG1);
  add_paths(mat, bsr.mb() * b, nb * b, {{name, alg}});
}

void CusparseBaseline::enqueue(std::size_t index) {
  const Scalars scalars(dtype_);
  const cudaDataType value_type = scalars.value_type;
  const void* alpha = scalars.alpha();
  const void* beta = scalars.beta();
  const Path& p = paths_.at(index);
  const auto N = CUSPARSE_OPERATION_NON_TRANSPOSE;
  if (op_ == datasets::Op::spmv) {
    check_sparse(cusparseSpMV(handle_, N, alpha, p.mat, p.vec_x, beta, p.vec_y, value_type,
                              static_cast<cusparseSpMVAlg_t>(p.alg), p.buffer),
                 "cusparseSpMV");
  } else {
    check_sparse(cusparseSpMM(handle_, N, N, alpha, p.mat, p.mat_x, beta, p.mat_y, value_type,
                              static_cast<cusparseSpMMAlg_t>(p.alg), p.buffer),
                 "cusparseSpMM");
  }
}

}  // namespace sparserl::reward::gpu
