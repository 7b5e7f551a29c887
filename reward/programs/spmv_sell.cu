// SpMV on SELL-C-sigma: one thread per lane of a slice. A slice's width is its own longest row, so
// a long row costs only its slice; with C a multiple of 32 a warp reads consecutive addresses at
// every step. Lanes past M are padding; results go to the original row through row_perm.
//@format sell C=32 sigma=256
//@launch spmv_sell grid=ceil_div(max(SELL_SLICES * SELL_C, 1), 256) block=256

extern "C" __global__ void spmv_sell(const int* __restrict__ slice_ptr,
                                     const int* __restrict__ row_perm,
                                     const int* __restrict__ col_idx,
                                     const value_t* __restrict__ val,
                                     const value_t* __restrict__ x, value_t* __restrict__ y) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= M) return;
  const long long slice = p / SELL_C;
  const int lane = static_cast<int>(p % SELL_C);
  const int start = slice_ptr[slice];
  const int width = (slice_ptr[slice + 1] - start) / SELL_C;
  value_t sum = 0;
  for (int k = 0; k < width; ++k) {
    const int slot = start + k * SELL_C + lane;
    const int col = col_idx[slot];
    if (col >= 0) sum += val[slot] * x[col];
  }
  y[row_perm[p]] = sum;
}
