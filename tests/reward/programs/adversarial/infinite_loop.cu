// Adversarial: never finishes. Expected verdict: timeout, then a fresh worker serves the next request.
//@format csr
//@launch spmv grid=ceil_div(M, 128) block=128
extern "C" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const value_t* __restrict__ val, const value_t* __restrict__ x,
                                value_t* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  volatile int spin = 1;
  while (spin) {
  }
  if (row < M) y[row] = 0;
}
