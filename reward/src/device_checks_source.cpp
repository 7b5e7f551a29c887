// The CUDA source of the GPU worker's check kernels (output_check.hpp: device_checks_source()),
// compiled by NVRTC in the worker with device_checks_options() (no fused multiply-add). Three jobs,
// each run by the worker after a candidate's kernels have finished, so that nothing they read or
// write was in reach of a candidate while it ran except the arrays being judged:
//   - sha256_regions: one level of the SHA-256 (FIPS 180-4) tree digests of up to 32 arrays at once,
//     one thread a 1 KiB chunk; the worker launches it once per level over the digests of the level
//     before until each array has one (an array of at most 1 KiB: its plain SHA-256). Which thread
//     hashes what and where its digest goes is a table the host plans (digest_tree.hpp) and passes
//     by value; the kernel only looks its thread up in it. An input's digest, taken right after its
//     upload and held on the host, is compared with its digest after the runs: changing an input
//     without changing the digest would take a SHA-256 collision of equal-length messages.
//   - guards_intact: whether both guard zones of each of up to 32 arrays still hold 0xFF only
//     (exact), one block an array.
//   - compare_f32 / compare_f64: per output row, the fp64 reference recomputed from the CSR copy of
//     the matrix and x, in storage order with the host's roundings, then output_check.hpp's rule;
//     one OutputTally per block. Gated on the copy's digests when they are taken in the same
//     batch: the blocks compare nothing unless the digests just written are those of the upload.
// The tables are __grid_constant__ parameters (read in place; sm_70 and later).
#include "sparserl/reward/output_check.hpp"

namespace sparserl::reward {
namespace {

constexpr std::string_view kSource = R"cuda(
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

__constant__ u32 kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

__device__ __forceinline__ u32 rotr(u32 x, int n) { return (x >> n) | (x << (32 - n)); }

// One compression of a 64-byte block given as 16 big-endian words (overwritten: the schedule). The
// rounds go 16 at a time, unrolled within (the schedule stays in registers, the code stays small).
__device__ void sha256_block(u32 h[8], u32 w[16]) {
  u32 a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i += 16) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      if (i > 0) {
        const u32 w15 = w[(j + 1) & 15], w2 = w[(j + 14) & 15];
        const u32 s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >> 3);
        const u32 s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >> 10);
        w[j] = w[j] + s0 + w[(j + 9) & 15] + s1;
      }
      const u32 t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i + j] + w[j];
      const u32 t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

// SHA-256 of in[t * chunk, min(bytes, (t + 1) * chunk)) into out[32 t, 32 t + 32): chunk t of an
// array. `in` is 16-byte aligned and chunk a multiple of 64; bytes == 0 hashes the empty message.
__device__ void sha256_chunk(const unsigned char* in, u64 bytes, u64 chunk, u64 t, unsigned char* out) {
  const u64 begin = t * chunk;
  const u64 n = (begin + chunk < bytes ? begin + chunk : bytes) - begin;
  const unsigned char* p = in + begin;
  u32 h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  u32 w[16];
  const u64 full = n / 64;
  for (u64 blk = 0; blk < full; ++blk) {
    const uint4* q = reinterpret_cast<const uint4*>(p + blk * 64);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint4 v = q[j];
      w[4 * j] = __byte_perm(v.x, 0, 0x0123);
      w[4 * j + 1] = __byte_perm(v.y, 0, 0x0123);
      w[4 * j + 2] = __byte_perm(v.z, 0, 0x0123);
      w[4 * j + 3] = __byte_perm(v.w, 0, 0x0123);
    }
    sha256_block(h, w);
  }
  // The tail, 0x80, zeros and the length in bits: one or two blocks.
  const u32 rem = (u32)(n - full * 64);
  const unsigned char* tail = p + full * 64;
  const u32 blocks = rem + 9 <= 64 ? 1 : 2;
  const u64 bits = n * 8;
  for (u32 blk = 0; blk < blocks; ++blk) {
    for (int j = 0; j < 16; ++j) {
      u32 word = 0;
      for (int b = 0; b < 4; ++b) {
        const u32 at = blk * 64 + j * 4 + b;
        u32 byte = 0;
        if (at < rem) byte = tail[at];
        else if (at == rem) byte = 0x80;
        else if (at >= blocks * 64 - 8) byte = (u32)(bits >> (8 * (blocks * 64 - 1 - at))) & 0xFF;
        word = (word << 8) | byte;
      }
      w[j] = word;
    }
    sha256_block(h, w);
  }
  unsigned char* o = out + 32 * t;
  for (int j = 0; j < 8; ++j) {
    o[4 * j] = h[j] >> 24; o[4 * j + 1] = h[j] >> 16; o[4 * j + 2] = h[j] >> 8; o[4 * j + 3] = h[j];
  }
}

// One level of the trees of up to 32 arrays (digest_tree.hpp's DigestLaunch; the host's table,
// field for field): job j's threads are [first, next job's first), thread `first + c` hashes chunk
// c of job j's `bytes` at `in` into out[32 c, 32 c + 32). The jobs are in increasing `first`, the
// first at 0; `threads` is the total. The table is read in place (__grid_constant__).
struct DigestJob {
  const unsigned char* in;
  unsigned char* out;
  u64 bytes, first;
};
struct DigestTable {
  u64 chunk, count, threads;
  DigestJob job[32];
};

extern "C" __global__ void sha256_regions(const __grid_constant__ DigestTable table) {
  const u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x;
  if (t >= table.threads) return;
  u32 lo = 0, hi = (u32)table.count - 1;  // the last job whose first thread is at most t
  while (lo < hi) {
    const u32 mid = (lo + hi + 1) / 2;
    if (table.job[mid].first <= t) lo = mid;
    else hi = mid - 1;
  }
  const DigestJob& job = table.job[lo];
  sha256_chunk(job.in, job.bytes, table.chunk, t - job.first, job.out);
}

// Whether p[0, bytes) holds 0xFF only, over this thread's share of a block's grid-stride (16-byte
// loads where aligned; each word's four lanes ANDed are all ones exactly when its bytes are).
__device__ bool all_ff(const unsigned char* p, u64 bytes) {
  bool ok = true;
  u64 head = (16 - ((unsigned long long)p & 15)) & 15;
  if (head > bytes) head = bytes;
  for (u64 i = threadIdx.x; i < head; i += blockDim.x) ok = ok && p[i] == 0xFF;
  const uint4* q = reinterpret_cast<const uint4*>(p + head);
  const u64 words = (bytes - head) / 16;
  for (u64 i = threadIdx.x; i < words; i += blockDim.x) {
    const uint4 v = q[i];
    ok = ok && (v.x & v.y & v.z & v.w) == 0xFFFFFFFFu;
  }
  for (u64 i = head + words * 16 + threadIdx.x; i < bytes; i += blockDim.x) ok = ok && p[i] == 0xFF;
  return ok;
}

// Up to 32 arrays' guard zones, one block a pair: broken[b] = 1 unless every byte of pair b's
// before[0, bytes) and after[0, bytes) is 0xFF, else 0 (written either way: no flag to clear first).
struct GuardPair {
  const unsigned char* before;
  const unsigned char* after;
  u64 bytes;
};
struct GuardTable {
  u64 count;
  GuardPair pair[32];
};

extern "C" __global__ void guards_intact(const __grid_constant__ GuardTable table, unsigned* broken) {
  if (blockIdx.x >= table.count) return;
  const GuardPair& g = table.pair[blockIdx.x];
  const bool ok = all_ff(g.before, g.bytes) && all_ff(g.after, g.bytes);
  const int bad = __syncthreads_or(!ok);
  if (threadIdx.x == 0) broken[blockIdx.x] = bad ? 1u : 0u;
}

// output_check.hpp's OutputTally, field for field.
struct Tally {
  i64 unchecked, unwritten, first_unwritten, wrong, first_wrong, worst_index, bad_index;
  double max_ratio, worst_got, worst_ref;
};
#define NO_ROW 0x7fffffffffffffffLL

__device__ void tally_init(Tally& t) {
  t.unchecked = 0; t.unwritten = 0; t.first_unwritten = NO_ROW; t.wrong = 0; t.first_wrong = NO_ROW;
  t.worst_index = NO_ROW; t.bad_index = 0; t.max_ratio = 0; t.worst_got = 0; t.worst_ref = 0;
}

__device__ void tally_merge(Tally& a, const Tally& b) {
  a.unchecked += b.unchecked; a.unwritten += b.unwritten; a.wrong += b.wrong; a.bad_index += b.bad_index;
  if (b.first_unwritten < a.first_unwritten) a.first_unwritten = b.first_unwritten;
  if (b.first_wrong < a.first_wrong) a.first_wrong = b.first_wrong;
  if (b.max_ratio > a.max_ratio || (b.max_ratio == a.max_ratio && b.max_ratio > 0 && b.worst_index < a.worst_index)) {
    a.max_ratio = b.max_ratio; a.worst_index = b.worst_index; a.worst_got = b.worst_got; a.worst_ref = b.worst_ref;
  }
}

// tally_output()'s rule for one element: `ref` and `ref_abs` are the row's sums, `scale` its
// factor * eps * (sqrt(length) + 2).
__device__ void judge(Tally& t, i64 row, i64 e, double got, double ref, double ref_abs, bool representable,
                      double scale, double largest) {
  if (!representable || !(ref_abs <= largest)) { ++t.unchecked; return; }
  if (isnan(got)) {
    ++t.unwritten;
    if (row < t.first_unwritten) t.first_unwritten = row;
    return;
  }
  const double diff = fabs(__dsub_rn(got, ref));
  const double tol = __dmul_rn(scale, ref_abs);
  const double ratio = diff == 0 ? 0 : (tol > 0 ? __ddiv_rn(diff, tol) : __longlong_as_double(0x7ff0000000000000LL));
  if (ratio > t.max_ratio || (ratio == t.max_ratio && ratio > 0 && e < t.worst_index)) {
    t.max_ratio = ratio; t.worst_index = e; t.worst_got = got; t.worst_ref = ref;
  }
  if (!(diff <= tol)) {
    ++t.wrong;
    if (row < t.first_wrong) t.first_wrong = row;
  }
}

// One warp per row (grid-stride over rows), 256 threads a block; out[blockIdx.x] gets the block's
// tally. The lanes load 32 entries of the row at a time; k == 1: they form the 32 products and every
// lane adds them in storage order; k > 1: lane c sums column c (and c + 32, ...) over them in
// storage order.
template <typename T>
__device__ void compare(const int* row_ptr, const int* col_idx, const T* val, const T* x, const T* y, i64 rows,
                        i64 cols, i64 nnz, int k, double scale0, double largest, Tally* out) {
  __shared__ Tally block[256];
  Tally t;
  tally_init(t);
  const int lane = threadIdx.x & 31;
  const i64 warps = (i64)gridDim.x * (blockDim.x / 32);
  for (i64 row = blockIdx.x * (i64)(blockDim.x / 32) + threadIdx.x / 32; row < rows; row += warps) {
    const i64 begin = row_ptr[row], end = row_ptr[row + 1];
    if (begin < 0 || end < begin || end > nnz) {
      if (lane == 0) ++t.bad_index;
      continue;
    }
    const double scale = __dmul_rn(scale0, __dadd_rn(__dsqrt_rn((double)(end - begin)), 2.0));
    if (k == 1) {
      double sum = 0, abs_sum = 0;
      bool representable = true, in_range = true;
      for (i64 base = begin; base < end; base += 32) {
        const i64 p = base + lane;
        double prod = 0;
        bool ok = true;
        if (p < end) {
          const int c = col_idx[p];
          const double v = (double)val[p];
          ok = fabs(v) <= largest;
          if (c < 0 || c >= cols) in_range = false;
          else prod = __dmul_rn(v, (double)x[c]);
        }
        representable = __all_sync(0xffffffffu, ok) && representable;
        in_range = __all_sync(0xffffffffu, in_range);
        const int n = end - base < 32 ? (int)(end - base) : 32;
#pragma unroll 8
        for (int j = 0; j < n; ++j) {
          const double q = __shfl_sync(0xffffffffu, prod, j);
          sum = __dadd_rn(sum, q);
          abs_sum = __dadd_rn(abs_sum, fabs(q));
        }
      }
      if (lane == 0) {
        if (!in_range) ++t.bad_index;
        else judge(t, row, row, (double)y[row], sum, abs_sum, representable, scale, largest);
      }
    } else {
      for (int c0 = 0; c0 < k; c0 += 32) {
        const int c = c0 + lane;
        double sum = 0, abs_sum = 0;
        bool representable = true, in_range = true;
        for (i64 base = begin; base < end; base += 32) {
          // The lanes load 32 entries at once; every lane then walks them in storage order.
          const i64 p = base + lane;
          int my_col = 0;
          double my_v = 0;
          bool ok = true, ok_col = true;
          if (p < end) {
            my_col = col_idx[p];
            my_v = (double)val[p];
            ok = fabs(my_v) <= largest;
            ok_col = my_col >= 0 && my_col < cols;
          }
          representable = __all_sync(0xffffffffu, ok) && representable;
          in_range = __all_sync(0xffffffffu, ok_col) && in_range;
          const int n = end - base < 32 ? (int)(end - base) : 32;
#pragma unroll 8
          for (int j = 0; j < n; ++j) {
            const int col = __shfl_sync(0xffffffffu, my_col, j);
            const double v = __shfl_sync(0xffffffffu, my_v, j);
            if (c < k && col >= 0 && col < cols) {
              const double prod = __dmul_rn(v, (double)x[(i64)col * k + c]);
              sum = __dadd_rn(sum, prod);
              abs_sum = __dadd_rn(abs_sum, fabs(prod));
            }
          }
        }
        if (c < k) {
          if (!in_range) ++t.bad_index;
          else judge(t, row, row * k + c, (double)y[row * k + c], sum, abs_sum, representable, scale, largest);
        }
      }
    }
  }
  block[threadIdx.x] = t;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 1; i < blockDim.x; ++i) tally_merge(t, block[i]);
    out[blockIdx.x] = t;
  }
}

// The comparison's gate: `digests` (when not null) points at the three digests of the CSR copy's
// arrays (row_ptr, col_idx, val) that sha256_regions has just written, `expected` holds those taken
// at the copy's upload, as the same bytes. A block compares only where they are equal: a copy a
// candidate changed is never read (not even to be thrown away), and its blocks' tallies say
// bad_index = 1 instead.
struct Gate {
  const u32* digests;
  u32 expected[24];
};

__device__ bool gate_open(const Gate& gate) {
  __shared__ int open;
  if (threadIdx.x == 0) {
    int same = 1;
    if (gate.digests != 0) {
      for (int i = 0; i < 24; ++i) same &= gate.digests[i] == gate.expected[i];
    }
    open = same;
  }
  __syncthreads();
  return open != 0;
}

__device__ void gate_closed(Tally* out) {
  if (threadIdx.x == 0) {
    Tally t;
    tally_init(t);
    t.bad_index = 1;
    out[blockIdx.x] = t;
  }
}

extern "C" __global__ void __launch_bounds__(256) compare_f32(const int* row_ptr, const int* col_idx,
    const float* val, const float* x, const float* y, i64 rows, i64 cols, i64 nnz, int k, double scale0,
    double largest, Tally* out, const __grid_constant__ Gate gate) {
  if (!gate_open(gate)) return gate_closed(out);
  compare<float>(row_ptr, col_idx, val, x, y, rows, cols, nnz, k, scale0, largest, out);
}

extern "C" __global__ void __launch_bounds__(256) compare_f64(const int* row_ptr, const int* col_idx,
    const double* val, const double* x, const double* y, i64 rows, i64 cols, i64 nnz, int k, double scale0,
    double largest, Tally* out, const __grid_constant__ Gate gate) {
  if (!gate_open(gate)) return gate_closed(out);
  compare<double>(row_ptr, col_idx, val, x, y, rows, cols, nnz, k, scale0, largest, out);
}
)cuda";

}  // namespace

std::string_view device_checks_source() { return kSource; }

}  // namespace sparserl::reward
