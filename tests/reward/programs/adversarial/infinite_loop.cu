// Adversarial: never finishes. Expected verdict: timeout, then a fresh worker serves the next request.
// The loop reads global memory through a volatile pointer each time round, so the compiler can
// neither prove it finite nor delete it (an empty `while (spin)` on a volatile local was removed by
// NVRTC on sm_90, and the kernel then finished with a wrong answer instead of hanging).
//@format csr
//@launch spmv grid=ceil_div(M, 128) block=128
extern "C" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const value_t* __restrict__ val, const value_t* __restrict__ x,
                                value_t* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const volatile int* ptr = row_ptr;
  int spins = 0;
  while (ptr[0] >= 0) {  // row_ptr[0] is 0 in every CSR matrix
    ++spins;
  }
  if (row < M) y[row] = static_cast<value_t>(spins);
}
