// The plain CSR SpMV kernel, one thread per row: correct by itself, and the program most adversarial
// cases are one hostile twist of (tests/reward/adversarial_programs.hpp applies each twist to the
// lines from the directives on). Expected verdict: correct.
//@format csr
//@launch spmv grid=ceil_div(M, 128) block=128
extern "C" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const value_t* __restrict__ val, const value_t* __restrict__ x,
                                value_t* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  value_t sum = 0;
  for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) sum += val[k] * x[col_idx[k]];
  y[row] = sum;
}
