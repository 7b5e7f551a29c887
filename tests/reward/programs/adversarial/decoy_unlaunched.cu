// Adversarial: launches a cheap decoy and leaves the real kernel unlaunched (hoping a harness times
// the decoy and checks stale output). Expected verdict: static_check (unlaunched_kernel).
//@format csr
//@launch decoy grid=1 block=32
extern "C" __global__ void decoy(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const value_t* __restrict__ val, const value_t* __restrict__ x,
                                value_t* __restrict__ y) {}

extern "C" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const value_t* __restrict__ val, const value_t* __restrict__ x,
                                value_t* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  value_t sum = 0;
  for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) sum += val[k] * x[col_idx[k]];
  y[row] = sum;
}
