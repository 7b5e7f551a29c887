// Adversarial: caches its first result in device memory and replays it on every later run (cheaper
// than reading the matrix). Expected verdict: wrong_answer (every run gets a fresh x).
//@format csr
//@launch spmv grid=ceil_div(M, 128) block=128
#define CACHE_ROWS (1 << 20)
__device__ value_t cache[CACHE_ROWS];
__device__ int cache_ready;

extern "C" __global__ void spmv(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const value_t* __restrict__ val, const value_t* __restrict__ x,
                                value_t* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  if (cache_ready && row < CACHE_ROWS) {
    y[row] = cache[row];
    return;
  }
  value_t sum = 0;
  for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) sum += val[k] * x[col_idx[k]];
  y[row] = sum;
  if (row < CACHE_ROWS) cache[row] = sum;
  __threadfence();
  if (row == 0) cache_ready = 1;
}
