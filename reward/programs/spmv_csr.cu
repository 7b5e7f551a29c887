// SpMV on CSR: a group of LANES threads per row, LANES being the power of two (1..32) at most the
// mean row length, fixed at compile time from the prelude (the "code for this input" idea in its
// simplest form). Each lane sums a strided part of the row, the group reduces with shuffles, lane 0
// writes y. Rows are visited in a grid-stride loop whose trip count is uniform over the warp, so the
// full-mask shuffles are always executed by all 32 lanes.
//@format csr
//@launch spmv_csr grid=ceil_div(max(M, 1) * min(max(NNZ / max(M, 1), 1), 32), 256) block=256

#define MEAN_ROW_NNZ (M > 0 ? NNZ / M : 0)
#define LANES                                                                           \
  (MEAN_ROW_NNZ >= 32 ? 32 : MEAN_ROW_NNZ >= 16 ? 16 : MEAN_ROW_NNZ >= 8 ? 8 : \
   MEAN_ROW_NNZ >= 4 ? 4 : MEAN_ROW_NNZ >= 2 ? 2 : 1)

extern "C" __global__ void spmv_csr(const int* __restrict__ row_ptr,
                                    const int* __restrict__ col_idx,
                                    const value_t* __restrict__ val,
                                    const value_t* __restrict__ x, value_t* __restrict__ y) {
  const int lane = threadIdx.x % LANES;
  const long long group = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / LANES;
  const long long groups = static_cast<long long>(gridDim.x) * blockDim.x / LANES;
  const long long warp_first_group = group - (threadIdx.x % 32) / LANES;
  for (long long first = warp_first_group; first < M; first += groups) {
    const long long row = group + (first - warp_first_group);
    value_t sum = 0;
    if (row < M) {
      for (int k = row_ptr[row] + lane; k < row_ptr[row + 1]; k += LANES) {
        sum += val[k] * x[col_idx[k]];
      }
    }
    for (int offset = LANES / 2; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(0xffffffffu, sum, offset, LANES);
    }
    if (row < M && lane == 0) y[row] = sum;
  }
}
