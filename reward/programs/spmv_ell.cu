// SpMV on ELL: one thread per row walks its ELL_WIDTH slots. The column-major layout makes the
// threads of a warp read consecutive addresses at every slot; padding slots (col < 0) are skipped.
//@format ell
//@launch spmv_ell grid=ceil_div(max(M, 1), 256) block=256

extern "C" __global__ void spmv_ell(const int* __restrict__ col_idx,
                                    const value_t* __restrict__ val,
                                    const value_t* __restrict__ x, value_t* __restrict__ y) {
  const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= M) return;
  value_t sum = 0;
  for (int k = 0; k < ELL_WIDTH; ++k) {
    const long long slot = static_cast<long long>(k) * M + row;
    const int col = col_idx[slot];
    if (col >= 0) sum += val[slot] * x[col];
  }
  y[row] = sum;
}
