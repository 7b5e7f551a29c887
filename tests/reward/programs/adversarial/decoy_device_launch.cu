// Adversarial: the launched kernel starts the real work with a device-side launch, out of sight of a
// timer that watches only the host's launches. Expected verdict: static_check (device_launch).
//@format csr
//@launch spmv grid=1 block=1
__global__ void work(const int* row_ptr, const int* col_idx, const value_t* val, const value_t* x,
                     value_t* y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  value_t sum = 0;
  for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) sum += val[k] * x[col_idx[k]];
  y[row] = sum;
}

extern "C" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const value_t* __restrict__ val, const value_t* __restrict__ x,
                                value_t* __restrict__ y) {
  work<<<(M + 127) / 128, 128>>>(row_ptr, col_idx, val, x, y);
}
