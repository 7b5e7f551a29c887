// SpMV on BSR: one thread per matrix row walks the blocks of its block row and the BSR_C columns of
// each. Blocks at the right and bottom edges reach past N and M: the row guard and the col < N test
// keep every access inside x and y (cells past the edge hold 0 but x has no entry for them).
//@format bsr R=4 C=4
//@launch spmv_bsr grid=ceil_div(max(M, 1), 256) block=256

extern "C" __global__ void spmv_bsr(const int* __restrict__ block_row_ptr,
                                    const int* __restrict__ block_col_idx,
                                    const value_t* __restrict__ val,
                                    const value_t* __restrict__ x, value_t* __restrict__ y) {
  const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const long long block_row = row / BSR_R;
  const int i = static_cast<int>(row % BSR_R);
  value_t sum = 0;
  for (int b = block_row_ptr[block_row]; b < block_row_ptr[block_row + 1]; ++b) {
    const long long col0 = static_cast<long long>(block_col_idx[b]) * BSR_C;
    const value_t* block = val + static_cast<long long>(b) * (BSR_R * BSR_C) + i * BSR_C;
#pragma unroll
    for (int j = 0; j < BSR_C; ++j) {
      if (col0 + j < N) sum += block[j] * x[col0 + j];
    }
  }
  y[row] = sum;
}
