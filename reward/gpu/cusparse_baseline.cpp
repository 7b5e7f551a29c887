// cuSPARSE set-up and launch for the baseline (cusparse_baseline.hpp).
#include "gpu/cusparse_baseline.hpp"

#include <span>
#include <stdexcept>
#include <string>

#include "gpu/cuda_errors.hpp"

namespace sparserl::reward::gpu {
namespace {

void check_sparse(cusparseStatus_t status, const char* where) {
  if (status != CUSPARSE_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cuSPARSE ") + where + ": " + cusparseGetErrorString(status));
  }
}

template <typename T>
std::vector<T> narrow(std::span<const double> values) {
  return std::vector<T>(values.begin(), values.end());
}

}  // namespace

void* CusparseBaseline::alloc(std::size_t bytes) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc (cuSPARSE baseline)");
  allocations_.push_back(p);
  device_bytes_ += bytes;
  return p;
}

CusparseBaseline::CusparseBaseline(const datasets::SparseMatrix& a, datasets::Op op,
                                   datasets::DType dtype, int k, cudaStream_t stream)
    : op_(op), dtype_(dtype), stream_(stream) {
  const bool f32 = dtype == datasets::DType::f32;
  const cudaDataType value_type = f32 ? CUDA_R_32F : CUDA_R_64F;
  const std::size_t vbytes = datasets::dtype_bytes(dtype);
  const int kk = op == datasets::Op::spmv ? 1 : k;

  auto* row_ptr = static_cast<int*>(alloc((a.rows() + 1) * sizeof(int)));
  auto* col_idx = static_cast<int*>(alloc(a.nnz() * sizeof(int)));
  void* values = alloc(a.nnz() * vbytes);
  check_cuda(cudaMemcpy(row_ptr, a.row_ptr().data(), (a.rows() + 1) * sizeof(int), cudaMemcpyHostToDevice),
             "upload row_ptr");
  check_cuda(cudaMemcpy(col_idx, a.col_idx().data(), a.nnz() * sizeof(int), cudaMemcpyHostToDevice),
             "upload col_idx");
  if (f32) {
    auto v = narrow<float>(a.values());
    check_cuda(cudaMemcpy(values, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice), "upload values");
  } else {
    check_cuda(cudaMemcpy(values, a.values().data(), a.nnz() * sizeof(double), cudaMemcpyHostToDevice),
               "upload values");
  }
  d_x_ = alloc(static_cast<std::size_t>(a.cols()) * kk * vbytes);
  y_bytes_ = static_cast<std::size_t>(a.rows()) * kk * vbytes;
  d_y_ = alloc(y_bytes_);
  check_cuda(cudaMemset(d_x_, 0, static_cast<std::size_t>(a.cols()) * kk * vbytes), "zero x");
  // The legacy-stream memset must finish before anything on the session's non-blocking stream.
  check_cuda(cudaDeviceSynchronize(), "zero x");

  check_sparse(cusparseCreate(&handle_), "cusparseCreate");
  check_sparse(cusparseSetStream(handle_, stream_), "cusparseSetStream");
  check_sparse(cusparseCreateCsr(&mat_, a.rows(), a.cols(), a.nnz(), row_ptr, col_idx, values,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                 value_type),
               "cusparseCreateCsr");
  const double one64 = 1.0, zero64 = 0.0;
  const float one32 = 1.0f, zero32 = 0.0f;
  const void* alpha = f32 ? static_cast<const void*>(&one32) : &one64;
  const void* beta = f32 ? static_cast<const void*>(&zero32) : &zero64;

  if (op == datasets::Op::spmv) {
    check_sparse(cusparseCreateDnVec(&vec_x_, a.cols(), d_x_, value_type), "cusparseCreateDnVec x");
    check_sparse(cusparseCreateDnVec(&vec_y_, a.rows(), d_y_, value_type), "cusparseCreateDnVec y");
    const std::pair<const char*, cusparseSpMVAlg_t> algs[] = {{"CSR_ALG1", CUSPARSE_SPMV_CSR_ALG1},
                                                              {"CSR_ALG2", CUSPARSE_SPMV_CSR_ALG2}};
    for (const auto& [name, alg] : algs) {
      std::size_t bytes = 0;
      if (cusparseSpMV_bufferSize(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, mat_, vec_x_, beta,
                                  vec_y_, value_type, alg, &bytes) != CUSPARSE_STATUS_SUCCESS) {
        continue;
      }
      void* buffer = alloc(bytes);
      if (cusparseSpMV_preprocess(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, mat_, vec_x_, beta,
                                  vec_y_, value_type, alg, buffer) != CUSPARSE_STATUS_SUCCESS) {
        continue;
      }
      names_.emplace_back(name);
      algs_.push_back(static_cast<int>(alg));
      buffers_.push_back(buffer);
    }
  } else {
    check_sparse(cusparseCreateDnMat(&mat_x_, a.cols(), kk, kk, d_x_, value_type, CUSPARSE_ORDER_ROW),
                 "cusparseCreateDnMat X");
    check_sparse(cusparseCreateDnMat(&mat_y_, a.rows(), kk, kk, d_y_, value_type, CUSPARSE_ORDER_ROW),
                 "cusparseCreateDnMat Y");
    const std::pair<const char*, cusparseSpMMAlg_t> algs[] = {{"CSR_ALG1", CUSPARSE_SPMM_CSR_ALG1},
                                                              {"CSR_ALG2", CUSPARSE_SPMM_CSR_ALG2},
                                                              {"CSR_ALG3", CUSPARSE_SPMM_CSR_ALG3}};
    for (const auto& [name, alg] : algs) {
      std::size_t bytes = 0;
      if (cusparseSpMM_bufferSize(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                  CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, mat_, mat_x_, beta, mat_y_,
                                  value_type, alg, &bytes) != CUSPARSE_STATUS_SUCCESS) {
        continue;
      }
      void* buffer = alloc(bytes);
      if (cusparseSpMM_preprocess(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                  CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, mat_, mat_x_, beta, mat_y_,
                                  value_type, alg, buffer) != CUSPARSE_STATUS_SUCCESS) {
        continue;
      }
      names_.emplace_back(name);
      algs_.push_back(static_cast<int>(alg));
      buffers_.push_back(buffer);
    }
  }
  check_cuda(cudaStreamSynchronize(stream_), "cuSPARSE preprocessing");
  if (names_.empty()) throw std::runtime_error("cuSPARSE supports no CSR algorithm for this task");
}

CusparseBaseline::~CusparseBaseline() {
  if (vec_x_) cusparseDestroyDnVec(vec_x_);
  if (vec_y_) cusparseDestroyDnVec(vec_y_);
  if (mat_x_) cusparseDestroyDnMat(mat_x_);
  if (mat_y_) cusparseDestroyDnMat(mat_y_);
  if (mat_) cusparseDestroySpMat(mat_);
  if (handle_) cusparseDestroy(handle_);
  for (void* p : allocations_) cudaFree(p);
}

void CusparseBaseline::enqueue(std::size_t index) {
  const bool f32 = dtype_ == datasets::DType::f32;
  const cudaDataType value_type = f32 ? CUDA_R_32F : CUDA_R_64F;
  const double one64 = 1.0, zero64 = 0.0;
  const float one32 = 1.0f, zero32 = 0.0f;
  const void* alpha = f32 ? static_cast<const void*>(&one32) : &one64;
  const void* beta = f32 ? static_cast<const void*>(&zero32) : &zero64;
  if (op_ == datasets::Op::spmv) {
    check_sparse(cusparseSpMV(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, mat_, vec_x_, beta, vec_y_,
                              value_type, static_cast<cusparseSpMVAlg_t>(algs_.at(index)),
                              buffers_.at(index)),
                 "cusparseSpMV");
  } else {
    check_sparse(cusparseSpMM(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                              alpha, mat_, mat_x_, beta, mat_y_, value_type,
                              static_cast<cusparseSpMMAlg_t>(algs_.at(index)), buffers_.at(index)),
                 "cusparseSpMM");
  }
}

}  // namespace sparserl::reward::gpu
