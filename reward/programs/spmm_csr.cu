// SpMM on CSR, Y = A X with X (N x K) and Y (M x K) row-major: one thread per output element, the
// column index fastest, so the threads of a warp read consecutive elements of a row of X and write
// consecutive elements of Y. Each thread walks its row's entries; the entry loads are shared by
// the K threads of the row through the cache.
//@format csr
//@launch spmm_csr grid=ceil_div(max(M * K, 1), 256) block=256

extern "C" __global__ void spmm_csr(const int* __restrict__ row_ptr,
                                    const int* __restrict__ col_idx,
                                    const value_t* __restrict__ val,
                                    const value_t* __restrict__ X, value_t* __restrict__ Y) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(M) * K) return;
  const long long row = t / K;
  const int c = static_cast<int>(t % K);
  value_t sum = 0;
  for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) {
    sum += val[k] * X[static_cast<long long>(col_idx[k]) * K + c];
  }
  Y[t] = sum;
}
