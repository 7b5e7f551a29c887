// SpMM on BSR: one thread per output element (column fastest) walks the blocks of its block row;
// the guards row < M and col < N keep edge blocks inside X and Y.
//@format bsr R=4 C=4
//@launch spmm_bsr grid=ceil_div(max(M * K, 1), 256) block=256

extern "C" __global__ void spmm_bsr(const int* __restrict__ block_row_ptr,
                                    const int* __restrict__ block_col_idx,
                                    const value_t* __restrict__ val,
                                    const value_t* __restrict__ X, value_t* __restrict__ Y) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(M) * K) return;
  const long long row = t / K;
  const int c = static_cast<int>(t % K);
  const long long block_row = row / BSR_R;
  const int i = static_cast<int>(row % BSR_R);
  value_t sum = 0;
  for (int b = block_row_ptr[block_row]; b < block_row_ptr[block_row + 1]; ++b) {
    const long long col0 = static_cast<long long>(block_col_idx[b]) * BSR_C;
    const value_t* block = val + static_cast<long long>(b) * (BSR_R * BSR_C) + i * BSR_C;
#pragma unroll
    for (int j = 0; j < BSR_C; ++j) {
      if (col0 + j < N) sum += block[j] * X[(col0 + j) * K + c];
    }
  }
  Y[t] = sum;
}
