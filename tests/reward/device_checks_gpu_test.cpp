// The GPU worker's device-side checks (reward/gpu/device_checks.hpp) against their host statements
// (label gpu; each case skips itself where no GPU is present): the SHA-256 tree digest equals one
// computed on the host with the project's Sha256 and changes with any single byte, for one array and
// for arrays of mixed sizes (0 B to 3 MB, and 40 arrays: two groups) digested in one batch, whose
// launches are the host plan's levels (digest_tree.hpp) and one guard launch per 32 pairs; the guard
// check sees one changed byte at either end of either zone, and among 37 pairs flags only the one
// changed; the output comparison gives the host's tally_output() field for field - counts, first
// rows, the worst element's ratio, index and values - on f32 and f64, SpMV and SpMM (k = 3 and 40),
// long and empty rows, unwritten and wrong elements, rows beyond FLT_MAX, and outputs one ulp either
// side of the tolerance; batched with the memory check (check()) it gives the same tally, and from a
// CSR copy whose digest changed it compares nothing (the gate).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_checks.hpp"
#include "sparserl/reward/digest.hpp"
#include "sparserl/reward/digest_tree.hpp"
#include "sparserl/reward/kernel_arrays.hpp"
#include "sparserl/reward/output_check.hpp"
#include "test_support.hpp"

namespace rw = sparserl::reward;
namespace gpu = sparserl::reward::gpu;
namespace ds = sparserl::datasets;

namespace {

gpu::DeviceChecks& checks() {
  static std::unique_ptr<gpu::DeviceChecks> c;
  if (!c) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) sparserl::testing::skip("no CUDA device");
    c = std::make_unique<gpu::DeviceChecks>(gpu::DeviceChecks::compile_kernels(0));
  }
  return *c;
}

cudaStream_t stream() {
  static cudaStream_t s = [] {
    cudaStream_t created = nullptr;
    cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking);
    return created;
  }();
  return s;
}

// The tree DeviceChecks computes: SHA-256 of each 1 KiB chunk, then of the chunk digests, until one.
gpu::Digest host_tree_digest(std::vector<std::uint8_t> level) {
  for (;;) {
    const std::size_t chunks = std::max<std::size_t>(1, (level.size() + 1023) / 1024);
    std::vector<std::uint8_t> next;
    gpu::Digest last{};
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t begin = c * 1024;
      const std::size_t n = std::min<std::size_t>(1024, level.size() - std::min(begin, level.size()));
      rw::Sha256 h;
      h.update(std::string_view(reinterpret_cast<const char*>(level.data()) + begin, n));
      last = h.finish();
      next.insert(next.end(), last.begin(), last.end());
    }
    if (chunks == 1) return last;
    level = std::move(next);
  }
}

// One byte written on the legacy stream, waited for: the checks run on a non-blocking stream.
void poke(const void* at, std::uint8_t value) {
  REQUIRE(cudaMemcpy(const_cast<void*>(at), &value, 1, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

template <typename T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> out(v.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

gpu::GuardedBuffer uploaded(const char* name, const std::vector<std::uint8_t>& bytes) {
  gpu::GuardedBuffer b(name, bytes.size());
  b.upload(bytes, stream());
  return b;
}

// rows x cols with row lengths 0..24, one row of 5000 entries, one empty; values in [-1, 1]
// (one beyond FLT_MAX when `huge`), rounded to the dtype.
ds::SparseMatrix test_matrix(ds::DType dtype, bool huge, std::mt19937& rng) {
  const int rows = 1500, cols = 6000;
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::uniform_int_distribution<int> length(0, 24), column(0, cols - 1);
  std::vector<ds::Triplet> entries;
  for (int r = 0; r < rows; ++r) {
    const int n = r == 700 ? 5000 : (r == 3 ? 0 : length(rng));
    for (int j = 0; j < n; ++j) entries.push_back({r, column(rng), value(rng)});
  }
  if (huge) entries.push_back({11, 5, 1e39});
  return rw::round_values(ds::SparseMatrix::from_triplets(rows, cols, std::move(entries)), dtype);
}

// The dtype's bytes of `v`.
std::vector<std::uint8_t> in_dtype(const std::vector<double>& v, ds::DType dtype) {
  if (dtype == ds::DType::f64) return bytes_of(v);
  std::vector<float> f(v.begin(), v.end());
  return bytes_of(f);
}

// The largest value of the dtype at most the tolerance away from ref (`inside`) and the next one
// above it (`outside`), as the rule judges them.
void tolerance_edge(double ref, double tol, ds::DType dtype, double& inside, double& outside) {
  const auto step = [&](double v, double toward) {
    return dtype == ds::DType::f32
               ? static_cast<double>(std::nextafter(static_cast<float>(v), static_cast<float>(toward)))
               : std::nextafter(v, toward);
  };
  const auto next_up = [&](double v) { return step(v, 1e30); };
  double v = dtype == ds::DType::f32 ? static_cast<double>(static_cast<float>(ref + tol)) : ref + tol;
  while (!(std::abs(v - ref) <= tol)) v = step(v, -1e30);
  while (std::abs(next_up(v) - ref) <= tol) v = next_up(v);
  inside = v;
  outside = next_up(v);
}

}  // namespace

TEST_CASE("the device digest is the host's SHA-256 tree and changes with any byte", "[reward][gpu]") {
  gpu::DeviceChecks& c = checks();
  std::mt19937 rng(3);
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{55}, std::size_t{56}, std::size_t{64},
                           std::size_t{1000}, std::size_t{1024}, std::size_t{1025}, std::size_t{33 * 1024 + 17},
                           std::size_t{(3u << 20) + 5}}) {
    INFO("bytes " << size);
    std::vector<std::uint8_t> bytes(size);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    gpu::GuardedBuffer buffer = uploaded("t", bytes);
    const gpu::Digest before = c.digest({buffer.data(), size}, stream());
    CHECK(before == host_tree_digest(bytes));
    if (size == 0) continue;
    for (std::size_t at : {std::size_t{0}, size / 2, size - 1}) {
      std::uint8_t* p = static_cast<std::uint8_t*>(buffer.data()) + at;
      poke(p, static_cast<std::uint8_t>(bytes[at] ^ 0x01));
      CHECK(c.digest({buffer.data(), size}, stream()) != before);
      poke(p, bytes[at]);
      c.untrusted();  // the next check runs from a freshly loaded module: the same digest
      CHECK(c.digest({buffer.data(), size}, stream()) == before);
    }
  }
}

TEST_CASE("the device guard check sees one changed byte at either end of either zone", "[reward][gpu]") {
  gpu::DeviceChecks& c = checks();
  gpu::GuardedBuffer buffer = uploaded("g", std::vector<std::uint8_t>(1001, 7));
  const gpu::DeviceChecks::Guards zones{buffer.guard_before(), buffer.guard_after(), gpu::GuardedBuffer::kGuardBytes};
  std::vector<gpu::Digest> digests;
  std::vector<bool> intact;
  c.inspect({}, {&zones, 1}, stream(), digests, intact);
  REQUIRE(intact.size() == 1);
  CHECK(intact[0]);
  for (const void* zone : {buffer.guard_before(), buffer.guard_after()}) {
    for (std::size_t at : {std::size_t{0}, gpu::GuardedBuffer::kGuardBytes - 1}) {
      const void* p = static_cast<const std::uint8_t*>(zone) + at;
      poke(p, 0xFE);
      c.inspect({}, {&zones, 1}, stream(), digests, intact);
      CHECK_FALSE(intact[0]);
      poke(p, 0xFF);
      c.inspect({}, {&zones, 1}, stream(), digests, intact);
      CHECK(intact[0]);
    }
  }
}

TEST_CASE("one batched inspection digests arrays of mixed sizes as the host does, one launch a level",
          "[reward][gpu]") {
  gpu::DeviceChecks& c = checks();
  std::mt19937 rng(17);
  // One call, the arrays' trees side by side: 0 B to 3 MB (4 levels), then 40 arrays (two groups).
  const std::vector<std::size_t> mixed = {0, 1, 63, 64, 1024, 1025, 100 * 1024, (3u << 20) + 5};
  std::vector<std::size_t> many_sizes;
  std::uniform_int_distribution<std::size_t> size(0, 70 * 1024);
  for (int i = 0; i < 40; ++i) many_sizes.push_back(size(rng));
  const std::vector<std::size_t>& many = many_sizes;
  for (const std::vector<std::size_t>* sizes : {&mixed, &many}) {
    std::vector<std::vector<std::uint8_t>> contents;
    std::vector<gpu::GuardedBuffer> buffers;
    std::vector<gpu::DeviceChecks::Region> regions;
    std::vector<gpu::DeviceChecks::Guards> guards;
    std::vector<std::uint64_t> plan_sizes;
    for (std::size_t n : *sizes) {
      contents.emplace_back(n);
      for (auto& b : contents.back()) b = static_cast<std::uint8_t>(rng());
      buffers.push_back(uploaded("r", contents.back()));
      plan_sizes.push_back(n);
    }
    for (const gpu::GuardedBuffer& b : buffers) {
      regions.push_back({b.data(), b.bytes()});
      guards.push_back({b.guard_before(), b.guard_after(), gpu::GuardedBuffer::kGuardBytes});
    }
    std::vector<gpu::Digest> digests;
    std::vector<bool> intact;
    const std::uint64_t launches = c.launches();
    c.inspect(regions, guards, stream(), digests, intact);
    // The plan's launches and one guard launch per 32 pairs, whatever the number of arrays.
    CHECK(c.launches() - launches ==
          rw::plan_digest_tree(plan_sizes).launches.size() + (guards.size() + 31) / 32);
    REQUIRE(digests.size() == sizes->size());
    REQUIRE(intact.size() == sizes->size());
    for (std::size_t i = 0; i < sizes->size(); ++i) {
      INFO("array " << i << " of " << (*sizes)[i] << " bytes");
      CHECK(digests[i] == host_tree_digest(contents[i]));
      CHECK(intact[i]);
    }
    // One byte of one array changed: its digest alone changes, in a fresh module's batch.
    const std::size_t victim = sizes->size() - 2;
    if (contents[victim].empty()) continue;
    const std::size_t at = contents[victim].size() / 2;
    poke(static_cast<std::uint8_t*>(buffers[victim].data()) + at, static_cast<std::uint8_t>(contents[victim][at] ^ 0x80));
    c.untrusted();
    std::vector<gpu::Digest> after;
    c.inspect(regions, guards, stream(), after, intact);
    for (std::size_t i = 0; i < sizes->size(); ++i) CHECK((after[i] == digests[i]) == (i != victim));
  }
}

TEST_CASE("the batched guard check flags only the pair whose zone changed", "[reward][gpu]") {
  gpu::DeviceChecks& c = checks();
  // Sizes that leave the zones after them at every alignment; 37 pairs: two launches.
  std::vector<gpu::GuardedBuffer> buffers;
  std::vector<gpu::DeviceChecks::Guards> zones;
  for (std::size_t i = 0; i < 37; ++i) buffers.push_back(uploaded("g", std::vector<std::uint8_t>(1000 + i, 7)));
  for (const gpu::GuardedBuffer& b : buffers) {
    zones.push_back({b.guard_before(), b.guard_after(), gpu::GuardedBuffer::kGuardBytes});
  }
  std::vector<gpu::Digest> digests;
  std::vector<bool> intact;
  c.inspect({}, zones, stream(), digests, intact);
  REQUIRE(intact.size() == zones.size());
  for (bool ok : intact) CHECK(ok);
  for (std::size_t victim : {std::size_t{0}, std::size_t{5}, std::size_t{31}, std::size_t{32}, std::size_t{36}}) {
    for (bool after : {false, true}) {
      for (std::size_t at : {std::size_t{0}, std::size_t{17}, gpu::GuardedBuffer::kGuardBytes - 1}) {
        INFO("pair " << victim << (after ? " after" : " before") << " byte " << at);
        const void* zone = after ? buffers[victim].guard_after() : buffers[victim].guard_before();
        const void* p = static_cast<const std::uint8_t*>(zone) + at;
        poke(p, 0x7F);
        c.inspect({}, zones, stream(), digests, intact);
        for (std::size_t j = 0; j < zones.size(); ++j) CHECK(intact[j] == (j != victim));
        poke(p, 0xFF);
      }
    }
  }
  c.inspect({}, zones, stream(), digests, intact);
  for (bool ok : intact) CHECK(ok);
}

TEST_CASE("the device comparison gives the host's tally to the ulp at the tolerance", "[reward][gpu]") {
  gpu::DeviceChecks& c = checks();
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (ds::DType dtype : {ds::DType::f32, ds::DType::f64}) {
    for (int k : {1, 3, 40}) {
      for (bool huge : {false, true}) {
        if (huge && dtype == ds::DType::f64) continue;  // 1e39 is finite in f64
        INFO(ds::to_string(dtype) << " k=" << k << (huge ? " with an entry beyond FLT_MAX" : ""));
        const ds::SparseMatrix a = test_matrix(dtype, huge, rng);
        std::vector<double> x(static_cast<std::size_t>(a.cols()) * k);
        for (double& v : x) v = dtype == ds::DType::f32 ? static_cast<float>(unit(rng)) : unit(rng);
        std::vector<double> ref, ref_abs;
        rw::reference_output(a, x, k, ref, ref_abs);
        const double eps = rw::dtype_epsilon(dtype);
        const auto row_ptr = a.row_ptr();
        // The output: the reference in the dtype, then one element just inside the tolerance, one
        // just outside (row 700, the long one), wrong values and NaNs.
        std::vector<double> got(ref.size());
        for (std::size_t e = 0; e < ref.size(); ++e) {
          got[e] = dtype == ds::DType::f32 ? static_cast<double>(static_cast<float>(ref[e])) : ref[e];
        }
        const auto edge = [&](std::int64_t row, bool outside) {
          const std::size_t e = static_cast<std::size_t>(row) * k;
          const double tol = 8.0 * eps * (std::sqrt(static_cast<double>(row_ptr[row + 1] - row_ptr[row])) + 2.0) *
                             ref_abs[e];
          double in = 0, out = 0;
          tolerance_edge(ref[e], tol, dtype, in, out);
          got[e] = outside ? out : in;
        };
        edge(699, false);
        edge(700, true);
        const auto run = [&](const char* what) {
          INFO(what);
          const std::vector<std::uint8_t> y_bytes = in_dtype(got, dtype);
          const rw::OutputTally host = rw::tally_output(y_bytes, dtype, a, k, ref, ref_abs);
          gpu::GuardedBuffer rp = uploaded("row_ptr", bytes_of(std::vector<ds::Index>(row_ptr.begin(), row_ptr.end())));
          gpu::GuardedBuffer ci = uploaded("col_idx", bytes_of(std::vector<ds::Index>(a.col_idx().begin(),
                                                                                      a.col_idx().end())));
          gpu::GuardedBuffer val = uploaded("val", in_dtype({a.values().begin(), a.values().end()}, dtype));
          gpu::GuardedBuffer xb = uploaded("x", in_dtype(x, dtype));
          gpu::GuardedBuffer yb = uploaded("y", y_bytes);
          const gpu::DeviceChecks::Csr csr{rp.data(), ci.data(), val.data(), a.rows(), a.cols(), a.nnz()};
          const rw::OutputTally device = c.compare(csr, xb.data(), yb.data(), dtype, k, rw::kDefaultToleranceFactor,
                                                   stream());
          CHECK(device == host);
          CHECK(device.bad_index == 0);
          return host;
        };
        const rw::OutputTally edges = run("one element just inside, one just outside the tolerance");
        CHECK(edges.wrong == 1);
        CHECK(edges.first_wrong == 700);
        CHECK(edges.unwritten == 0);
        CHECK(edges.unchecked == (huge ? k : 0));
        got[static_cast<std::size_t>(1234) * k + (k - 1)] *= 1.5;
        got[static_cast<std::size_t>(20) * k] = std::numeric_limits<double>::quiet_NaN();
        got[static_cast<std::size_t>(900) * k] = std::numeric_limits<double>::quiet_NaN();
        const rw::OutputTally bad = run("wrong values and NaNs");
        CHECK(bad.unwritten == 2);
        CHECK(bad.first_unwritten == 20);
      }
    }
  }
}

TEST_CASE("a comparison batched with the memory check is the plain one, and compares nothing from a changed copy",
          "[reward][gpu]") {
  gpu::DeviceChecks& c = checks();
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const ds::DType dtype = ds::DType::f32;
  const int k = 3;
  const ds::SparseMatrix a = test_matrix(dtype, false, rng);
  std::vector<double> x(static_cast<std::size_t>(a.cols()) * k);
  for (double& v : x) v = static_cast<float>(unit(rng));
  std::vector<double> ref, ref_abs;
  rw::reference_output(a, x, k, ref, ref_abs);
  std::vector<double> got(ref.size());
  for (std::size_t e = 0; e < ref.size(); ++e) got[e] = static_cast<float>(ref[e]);
  got[77] *= 1.5;  // one wrong element
  const std::vector<std::uint8_t> y_bytes = in_dtype(got, dtype);
  const auto row_ptr = a.row_ptr();
  gpu::GuardedBuffer rp = uploaded("row_ptr", bytes_of(std::vector<ds::Index>(row_ptr.begin(), row_ptr.end())));
  gpu::GuardedBuffer ci = uploaded("col_idx", bytes_of(std::vector<ds::Index>(a.col_idx().begin(), a.col_idx().end())));
  gpu::GuardedBuffer val = uploaded("val", in_dtype({a.values().begin(), a.values().end()}, dtype));
  gpu::GuardedBuffer xb = uploaded("x", in_dtype(x, dtype));
  gpu::GuardedBuffer yb = uploaded("y", y_bytes);
  const gpu::DeviceChecks::Csr csr{rp.data(), ci.data(), val.data(), a.rows(), a.cols(), a.nnz()};
  const rw::OutputTally plain = c.compare(csr, xb.data(), yb.data(), dtype, k, rw::kDefaultToleranceFactor, stream());
  CHECK(plain == rw::tally_output(y_bytes, dtype, a, k, ref, ref_abs));
  CHECK(plain.wrong == 1);

  // x first, then the copy's three arrays; two comparisons (the same output twice) gated on them.
  const std::vector<gpu::DeviceChecks::Region> regions = {
      {xb.data(), xb.bytes()}, {rp.data(), rp.bytes()}, {ci.data(), ci.bytes()}, {val.data(), val.bytes()}};
  const std::vector<gpu::DeviceChecks::Guards> guards = {
      {yb.guard_before(), yb.guard_after(), gpu::GuardedBuffer::kGuardBytes}};
  std::vector<gpu::Digest> expected;
  std::vector<bool> intact;
  c.inspect(regions, {}, stream(), expected, intact);
  gpu::DeviceChecks::Comparison gated{csr, xb.data(), yb.data(), dtype, k, rw::kDefaultToleranceFactor, 1, {}};
  for (std::size_t i = 0; i < 3; ++i) gated.gate_digests[i] = expected[i + 1];
  const std::vector<gpu::DeviceChecks::Comparison> both = {gated, gated};
  gpu::DeviceChecks::Findings found;
  const std::uint64_t launches = c.launches();
  c.check(regions, guards, both, stream(), found);
  std::vector<std::uint64_t> sizes;
  for (const auto& r : regions) sizes.push_back(r.bytes);
  CHECK(c.launches() - launches == rw::plan_digest_tree(sizes).launches.size() + 1 + 2);
  CHECK(found.digests == expected);
  CHECK(found.intact == std::vector<bool>{true});
  REQUIRE(found.tallies.size() == 2);
  CHECK(found.tallies[0] == plain);
  CHECK(found.tallies[1] == plain);

  // The copy changed (one byte of val): its digest differs, and neither comparison read it.
  std::uint8_t first = 0;
  REQUIRE(cudaMemcpy(&first, val.data(), 1, cudaMemcpyDeviceToHost) == cudaSuccess);
  poke(val.data(), static_cast<std::uint8_t>(first ^ 0x40));
  c.untrusted();
  c.check(regions, guards, both, stream(), found);
  CHECK(found.digests[3] != expected[3]);
  for (const rw::OutputTally& t : found.tallies) {
    CHECK(t.bad_index > 0);  // every block: the gate was closed
    CHECK(t.wrong == 0);
    CHECK(t.unwritten == 0);
    CHECK(t.max_ratio == 0);
  }
  poke(val.data(), first);
  c.check(regions, guards, both, stream(), found);
  CHECK(found.tallies[0] == plain);

  // A comparison batched with regions must be gated, and its gate must name its CSR's arrays.
  gpu::DeviceChecks::Comparison ungated = gated;
  ungated.gate_at.reset();
  CHECK_THROWS_AS(c.check(regions, {}, {&ungated, 1}, stream(), found), std::logic_error);
  gpu::DeviceChecks::Comparison misnamed = gated;
  misnamed.gate_at = 0;
  CHECK_THROWS_AS(c.check(regions, {}, {&misnamed, 1}, stream(), found), std::logic_error);
  misnamed.gate_at = 2;
  CHECK_THROWS_AS(c.check(regions, {}, {&misnamed, 1}, stream(), found), std::logic_error);
}
