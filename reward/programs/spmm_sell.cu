// SpMM on SELL-C-sigma: one thread per (sorted position, column), column fastest. The position's
// slice gives the width and the entries; the result goes to the original row through row_perm.
//@format sell C=32 sigma=256
//@launch spmm_sell grid=ceil_div(max(M * K, 1), 256) block=256

extern "C" __global__ void spmm_sell(const int* __restrict__ slice_ptr,
                                     const int* __restrict__ row_perm,
                                     const int* __restrict__ col_idx,
                                     const value_t* __restrict__ val,
                                     const value_t* __restrict__ X, value_t* __restrict__ Y) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(M) * K) return;
  const long long p = t / K;
  const int c = static_cast<int>(t % K);
  const long long slice = p / SELL_C;
  const int lane = static_cast<int>(p % SELL_C);
  const int start = slice_ptr[slice];
  const int width = (slice_ptr[slice + 1] - start) / SELL_C;
  value_t sum = 0;
  for (int k = 0; k < width; ++k) {
    const int slot = start + k * SELL_C + lane;
    const int col = col_idx[slot];
    if (col >= 0) sum += val[slot] * X[static_cast<long long>(col) * K + c];
  }
  Y[static_cast<long long>(row_perm[p]) * K + c] = sum;
}
