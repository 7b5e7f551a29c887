// Adversarial: writes 0 for every seventh row instead of computing it. Expected verdict: wrong_answer
// (on matrices where such a row holds nonzeros).
//@format csr
//@launch spmv grid=ceil_div(M, 128) block=128
extern "C" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const value_t* __restrict__ val, const value_t* __restrict__ x,
                                value_t* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  value_t sum = 0;
  if (row % 7 != 3) {
    for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) sum += val[k] * x[col_idx[k]];
  }
  y[row] = sum;
}
