// SpMM on ELL: one thread per output element (column index fastest) walks its row's ELL_WIDTH
// slots, skipping padding (col < 0).
//@format ell
//@launch spmm_ell grid=ceil_div(max(M * K, 1), 256) block=256

extern "C" __global__ void spmm_ell(const int* __restrict__ col_idx,
                                    const value_t* __restrict__ val,
                                    const value_t* __restrict__ X, value_t* __restrict__ Y) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(M) * K) return;
  const long long row = t / K;
  const int c = static_cast<int>(t % K);
  value_t sum = 0;
  for (int k = 0; k < ELL_WIDTH; ++k) {
    const long long slot = static_cast<long long>(k) * M + row;
    const int col = col_idx[slot];
    if (col >= 0) sum += val[slot] * X[static_cast<long long>(col) * K + c];
  }
  Y[t] = sum;
}
