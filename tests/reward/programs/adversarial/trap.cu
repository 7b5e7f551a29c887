// Adversarial: aborts the kernel with __trap(). Expected verdict: illegal_address (a kernel fault).
//@format csr
//@launch spmv grid=ceil_div(M, 128) block=128
extern "C" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const value_t* __restrict__ val, const value_t* __restrict__ x,
                                value_t* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row == 0) __trap();
  if (row < M) y[row] = 0;
}
