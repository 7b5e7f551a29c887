// Adversarial: accumulates into y with atomicAdd without zeroing it first (the flaw of the method's
// public COO executor). Expected verdict: unwritten_output (NaN + anything stays NaN).
//@format csr
//@launch spmv grid=ceil_div(NNZ, 128) block=128
extern "C" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const value_t* __restrict__ val, const value_t* __restrict__ x,
                                value_t* __restrict__ y) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= NNZ) return;
  int lo = 0, hi = M;  // the row of entry e: the last row whose start is <= e
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (row_ptr[mid] <= e) lo = mid; else hi = mid;
  }
  atomicAdd(&y[lo], val[e] * x[col_idx[e]]);
}
