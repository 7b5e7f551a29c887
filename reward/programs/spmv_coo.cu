// SpMV on COO (entries sorted by row): y is zeroed by its own launch first - the evaluator fills y
// with NaN before every run, so an atomicAdd kernel that assumes a zeroed y is wrong - then one
// thread per entry multiplies, the warp adds up runs of equal rows with a segmented shuffle scan
// (rows are sorted, so equal rows are contiguous), and the last lane of each run does one atomicAdd.
// Both kernels take the full argument list, as every launched kernel does.
//@format coo
//@launch zero_y grid=ceil_div(max(M, 1), 256) block=256
//@launch spmv_coo grid=ceil_div(max(NNZ, 1), 256) block=256

extern "C" __global__ void zero_y(const int* __restrict__ row_idx, const int* __restrict__ col_idx,
                                  const value_t* __restrict__ val, const value_t* __restrict__ x,
                                  value_t* __restrict__ y) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < M) y[i] = 0;
}

extern "C" __global__ void spmv_coo(const int* __restrict__ row_idx,
                                    const int* __restrict__ col_idx,
                                    const value_t* __restrict__ val,
                                    const value_t* __restrict__ x, value_t* __restrict__ y) {
  const long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x % 32;
  int row = -1;
  value_t v = 0;
  if (e < NNZ) {
    row = row_idx[e];
    v = val[e] * x[col_idx[e]];
  }
  for (int offset = 1; offset < 32; offset *= 2) {
    const value_t other = __shfl_up_sync(0xffffffffu, v, offset);
    const int other_row = __shfl_up_sync(0xffffffffu, row, offset);
    if (lane >= offset && other_row == row) v += other;
  }
  const int next_row = __shfl_down_sync(0xffffffffu, row, 1);
  if (row >= 0 && (lane == 31 || next_row != row)) atomicAdd(&y[row], v);
}
