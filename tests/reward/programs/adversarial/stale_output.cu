// Adversarial: computes y on its first run only and afterwards returns at once, relying on the
// previous run's output still being in memory. Expected verdict: unwritten_output (y is NaN-filled
// before every run).
//@format csr
//@launch spmv grid=ceil_div(M, 128) block=128
__device__ int runs_seen;

extern "C" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const value_t* __restrict__ val, const value_t* __restrict__ x,
                                value_t* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  if (runs_seen > 0) return;
  value_t sum = 0;
  for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) sum += val[k] * x[col_idx[k]];
  y[row] = sum;
  if (row == 0) atomicAdd(&runs_seen, 1);
}
