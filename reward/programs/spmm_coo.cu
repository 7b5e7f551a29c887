// SpMM on COO: Y is zeroed by its own launch first (the evaluator fills Y with NaN before every
// run), then one thread per (entry, column) adds val * X[col, c] into Y[row, c] with atomicAdd.
// The column index is fastest, so a warp touches consecutive elements of X and Y.
//@format coo
//@launch zero_Y grid=ceil_div(max(M * K, 1), 256) block=256
//@launch spmm_coo grid=ceil_div(max(NNZ * K, 1), 256) block=256

extern "C" __global__ void zero_Y(const int* __restrict__ row_idx, const int* __restrict__ col_idx,
                                  const value_t* __restrict__ val, const value_t* __restrict__ X,
                                  value_t* __restrict__ Y) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < static_cast<long long>(M) * K) Y[i] = 0;
}

extern "C" __global__ void spmm_coo(const int* __restrict__ row_idx,
                                    const int* __restrict__ col_idx,
                                    const value_t* __restrict__ val,
                                    const value_t* __restrict__ X, value_t* __restrict__ Y) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(NNZ) * K) return;
  const long long e = t / K;
  const int c = static_cast<int>(t % K);
  atomicAdd(&Y[static_cast<long long>(row_idx[e]) * K + c],
            val[e] * X[static_cast<long long>(col_idx[e]) * K + c]);
}
