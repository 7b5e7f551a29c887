// The GPU worker's device-side checks (device_checks.hpp): NVRTC compile and load of the check
// kernels; check() enqueues the digest trees (one sha256_regions launch per level of the host's
// DigestPlan, all arrays of a group of 32 at once), the guard checks (one guards_intact launch per
// 32 guard pairs) and the gated output comparisons (one launch each) behind one another, reads
// every result back in one copy and waits once.
#include "gpu/device_checks.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "gpu/cuda_errors.hpp"
#include "sparserl/reward/compiler.hpp"
#include "sparserl/reward/digest_tree.hpp"

namespace sparserl::reward::gpu {
namespace {

constexpr unsigned kThreads = 256;    // compare_* assume 256
constexpr std::size_t kMaxCompareBlocks = 1024;
constexpr unsigned kDigestThreads = 128;
constexpr std::size_t kGuardsPerLaunch = 32;

// The kernels' parameter tables (device_checks_source()), field for field.
struct DigestJobParam {
  const void* in;
  void* out;
  std::uint64_t bytes, first;
};
struct DigestTable {
  std::uint64_t chunk, count, threads;
  DigestJobParam job[kDigestJobsPerLaunch];
};
struct GuardPair {
  const void* before;
  const void* after;
  std::uint64_t bytes;
};
struct GuardTable {
  std::uint64_t count;
  GuardPair pair[kGuardsPerLaunch];
};
struct Gate {
  const void* digests;
  std::uint32_t expected[24];
};
static_assert(kDigestJobsPerLaunch == 32 && sizeof(DigestTable) == 1048, "sha256_regions' DigestTable");
static_assert(sizeof(GuardTable) == 776, "guards_intact's GuardTable");
static_assert(sizeof(Gate) == 104, "compare_*'s Gate");

std::size_t compare_blocks(std::int64_t rows) {
  return std::clamp<std::size_t>((static_cast<std::size_t>(rows) + kThreads / 32 - 1) / (kThreads / 32), 1,
                                 kMaxCompareBlocks);
}

std::size_t align_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// `area` (device memory of `capacity` bytes, or null) replaced by a fresh allocation of `bytes` when
// it is smaller; its contents are not kept. Returns the area.
std::uint8_t* grown(std::uint8_t*& area, std::size_t& capacity, std::size_t bytes, const char* what) {
  if (bytes > capacity) {
    if (area != nullptr) cudaFree(area);
    area = nullptr;
    capacity = 0;
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes), what);
    area = static_cast<std::uint8_t*>(p);
    capacity = bytes;
  }
  return area;
}

}  // namespace

std::string DeviceChecks::compile_kernels(int device) {
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  CompileRequest request;
  request.source = std::string(device_checks_source());
  request.arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
  request.options = device_checks_options();
  request.name = "sparserl_device_checks.cu";
  CompileResult compiled = compile(request);
  if (!compiled.ok) throw std::runtime_error("compiling the device checks for " + request.arch + ": " + compiled.log);
  return std::move(compiled.cubin);
}

DeviceChecks::DeviceChecks(std::string cubin) : cubin_(std::move(cubin)) { load(); }

void DeviceChecks::load() {
  if (library_ != nullptr) check_cuda(cudaLibraryUnload(library_), "unloading the device checks");
  library_ = nullptr;
  check_cuda(cudaLibraryLoadData(&library_, cubin_.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
             "loading the device checks");
  check_cuda(cudaLibraryGetKernel(&sha256_, library_, "sha256_regions"), "sha256_regions");
  check_cuda(cudaLibraryGetKernel(&guards_, library_, "guards_intact"), "guards_intact");
  check_cuda(cudaLibraryGetKernel(&compare_f32_, library_, "compare_f32"), "compare_f32");
  check_cuda(cudaLibraryGetKernel(&compare_f64_, library_, "compare_f64"), "compare_f64");
  stale_ = false;
}

DeviceChecks::~DeviceChecks() {
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (results_ != nullptr) cudaFree(results_);
  if (library_ != nullptr) cudaLibraryUnload(library_);
}

void DeviceChecks::launch(cudaKernel_t kernel, unsigned grid, unsigned block, void** args, cudaStream_t stream) {
  check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(grid), dim3(block), args, 0, stream),
             "device check launch");
  ++launches_;
}

std::uint8_t* DeviceChecks::results(std::size_t bytes) {
  return grown(results_, results_bytes_, bytes, "cudaMalloc (device check results)");
}

void DeviceChecks::enqueue_digests(std::span<const Region> regions, std::uint8_t* slots, cudaStream_t stream) {
  std::vector<std::uint64_t> sizes;
  for (const Region& r : regions) {
    if (reinterpret_cast<std::uintptr_t>(r.data) % 16 != 0) {
      throw std::logic_error("DeviceChecks: a digested array must be 16-byte aligned");
    }
    sizes.push_back(r.bytes);
  }
  const DigestPlan plan = plan_digest_tree(sizes);
  std::uint8_t* scratch = grown(scratch_, scratch_bytes_, plan.scratch_bytes, "cudaMalloc (digest scratch)");
  for (const DigestLaunch& level : plan.launches) {
    if (level.jobs.empty() || level.jobs.size() > kDigestJobsPerLaunch) {
      throw std::logic_error("DeviceChecks: a digest launch of " + std::to_string(level.jobs.size()) + " jobs");
    }
    DigestTable table{};
    table.chunk = kDigestChunk;
    table.count = level.jobs.size();
    table.threads = level.threads;
    for (std::size_t j = 0; j < level.jobs.size(); ++j) {
      const DigestJob& job = level.jobs[j];
      table.job[j].in = job.from_array ? regions[job.array].data : scratch + job.in_offset;
      table.job[j].out = job.to_digest ? slots + 32 * job.array : scratch + job.out_offset;
      table.job[j].bytes = job.bytes;
      table.job[j].first = job.first;
    }
    void* args[] = {&table};
    launch(sha256_, static_cast<unsigned>((level.threads + kDigestThreads - 1) / kDigestThreads), kDigestThreads, args,
           stream);
  }
}

void DeviceChecks::enqueue_guards(std::span<const Guards> guards, unsigned* flags, cudaStream_t stream) {
  for (std::size_t start = 0; start < guards.size(); start += kGuardsPerLaunch) {
    const std::size_t n = std::min(kGuardsPerLaunch, guards.size() - start);
    GuardTable table{};
    table.count = n;
    for (std::size_t j = 0; j < n; ++j) {
      const Guards& g = guards[start + j];
      table.pair[j] = {g.before, g.after, g.bytes};
    }
    unsigned* broken = flags + start;
    void* args[] = {&table, &broken};
    launch(guards_, static_cast<unsigned>(n), 256, args, stream);
  }
}

std::size_t DeviceChecks::enqueue_compare(const Comparison& c, const std::uint8_t* slots, void* tallies,
                                          cudaStream_t stream) {
  const std::size_t blocks = compare_blocks(c.csr.rows);
  const void* row_ptr = c.csr.row_ptr;
  const void* col_idx = c.csr.col_idx;
  const void* val = c.csr.val;
  const void* x = c.x;
  const void* y = c.y;
  std::int64_t rows = c.csr.rows, cols = c.csr.cols, nnz = c.csr.nnz;
  int k = c.k;
  double scale0 = c.factor * dtype_epsilon(c.dtype);  // the host's factor * eps, rounded once
  double largest = dtype_largest(c.dtype);
  Gate gate{};
  if (c.gate_at) {
    gate.digests = slots + 32 * *c.gate_at;
    for (std::size_t i = 0; i < 3; ++i) std::memcpy(gate.expected + 8 * i, c.gate_digests[i].data(), 32);
  }
  void* args[] = {&row_ptr, &col_idx, &val, &x, &y, &rows, &cols, &nnz, &k, &scale0, &largest, &tallies, &gate};
  launch(c.dtype == DType::f32 ? compare_f32_ : compare_f64_, static_cast<unsigned>(blocks), kThreads, args, stream);
  return blocks;
}

namespace {

// std::logic_error unless every comparison batched with regions is gated on three of them that are
// its CSR's arrays.
void check_gates(std::span<const DeviceChecks::Region> regions, std::span<const DeviceChecks::Comparison> comparisons) {
  for (const DeviceChecks::Comparison& c : comparisons) {
    if (!c.gate_at) {
      if (!regions.empty()) {
        throw std::logic_error("DeviceChecks::check: a comparison batched with a memory check must be gated on "
                               "the CSR copy's digests");
      }
      continue;
    }
    const std::size_t at = *c.gate_at;
    if (at > regions.size() || regions.size() - at < 3 || regions[at].data != c.csr.row_ptr ||
        regions[at + 1].data != c.csr.col_idx || regions[at + 2].data != c.csr.val) {
      throw std::logic_error("DeviceChecks::check: a comparison's gate does not name its CSR copy's three arrays");
    }
  }
}

}  // namespace

void DeviceChecks::check(std::span<const Region> regions, std::span<const Guards> guards,
                         std::span<const Comparison> comparisons, cudaStream_t stream, Findings& findings) {
  check_gates(regions, comparisons);
  if (stale_) load();  // before anything is launched
  // The results: the digests, the guard flags, then each comparison's per-block tallies.
  const std::size_t flags_at = regions.size() * 32;
  const std::size_t tallies_at = align_up(flags_at + guards.size() * sizeof(unsigned), 16);
  std::vector<std::size_t> blocks;
  std::size_t total = tallies_at;
  for (const Comparison& c : comparisons) {
    blocks.push_back(compare_blocks(c.csr.rows));
    total += blocks.back() * sizeof(OutputTally);
  }
  std::uint8_t* out = results(std::max<std::size_t>(16, total));
  enqueue_digests(regions, out, stream);
  enqueue_guards(guards, reinterpret_cast<unsigned*>(out + flags_at), stream);
  std::size_t at = tallies_at;
  for (std::size_t i = 0; i < comparisons.size(); ++i) {
    enqueue_compare(comparisons[i], out, out + at, stream);
    at += blocks[i] * sizeof(OutputTally);
  }
  const std::span<std::uint8_t> host = host_.get(std::max<std::size_t>(1, total));
  check_cuda(cudaMemcpyAsync(host.data(), out, total, cudaMemcpyDeviceToHost, stream), "device check results");
  check_cuda(cudaStreamSynchronize(stream), "device checks");
  findings.digests.resize(regions.size());
  for (std::size_t i = 0; i < regions.size(); ++i) std::memcpy(findings.digests[i].data(), host.data() + 32 * i, 32);
  findings.intact.resize(guards.size());
  for (std::size_t j = 0; j < guards.size(); ++j) {
    unsigned broken = 0;
    std::memcpy(&broken, host.data() + flags_at + j * sizeof(unsigned), sizeof(unsigned));
    findings.intact[j] = broken == 0;
  }
  findings.tallies.assign(comparisons.size(), OutputTally{});
  at = tallies_at;
  for (std::size_t i = 0; i < comparisons.size(); ++i) {
    for (std::size_t b = 0; b < blocks[i]; ++b, at += sizeof(OutputTally)) {
      OutputTally t;
      std::memcpy(&t, host.data() + at, sizeof(OutputTally));
      findings.tallies[i] = merge(findings.tallies[i], t);
    }
  }
}

void DeviceChecks::inspect(std::span<const Region> regions, std::span<const Guards> guards, cudaStream_t stream,
                           std::vector<Digest>& digests, std::vector<bool>& intact) {
  Findings findings;
  check(regions, guards, {}, stream, findings);
  digests = std::move(findings.digests);
  intact = std::move(findings.intact);
}

Digest DeviceChecks::digest(const Region& region, cudaStream_t stream) {
  std::vector<Digest> digests;
  std::vector<bool> intact;
  inspect({&region, 1}, {}, stream, digests, intact);
  return digests.front();
}

OutputTally DeviceChecks::compare(const Csr& csr, const void* x, const void* y, DType dtype, int k, double factor,
                                  cudaStream_t stream) {
  const Comparison c{csr, x, y, dtype, k, factor, std::nullopt, {}};
  Findings findings;
  check({}, {}, {&c, 1}, stream, findings);
  return findings.tallies.front();
}

}  // namespace sparserl::reward::gpu
