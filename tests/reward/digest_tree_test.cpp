// The host's plan of the device's SHA-256 tree digests (digest_tree.hpp), which the kernel
// sha256_regions only reads: every launch's jobs cover its threads back to back from 0, at most 32
// of them; every array's levels form one chain (array bytes, then the scratch bytes its level before
// wrote) that ends in its own digest slot and nowhere else; no launch reads or writes scratch bytes
// another job of its group writes; the arrays go in groups of 32, one group's launches after the
// other's. Then the plan is run here, a launch at a time with the host's Sha256 (each launch's
// outputs written only after all its jobs have read), and gives the tree digest computed directly,
// the one the GPU test compares the device with.
#include "sparserl/reward/digest_tree.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "sparserl/reward/digest.hpp"

namespace rw = sparserl::reward;

namespace {

using Digest = std::array<std::uint8_t, 32>;

// The tree digest directly: SHA-256 of each 1 KiB chunk, then of the chunk digests, until one.
Digest direct_tree_digest(std::vector<std::uint8_t> level) {
  for (;;) {
    const std::size_t chunks = std::max<std::size_t>(1, (level.size() + 1023) / 1024);
    std::vector<std::uint8_t> next;
    Digest last{};
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t begin = c * 1024;
      const std::size_t n = std::min<std::size_t>(1024, level.size() - std::min(begin, level.size()));
      last = rw::Sha256().update(std::string_view(reinterpret_cast<const char*>(level.data()) + begin, n)).finish();
      next.insert(next.end(), last.begin(), last.end());
    }
    if (chunks == 1) return last;
    level = std::move(next);
  }
}

// The plan run on the host, as the device runs it: launch after launch, thread first + c of a job
// hashing chunk c of its bytes.
std::vector<Digest> run_plan(const rw::DigestPlan& plan, const std::vector<std::vector<std::uint8_t>>& arrays) {
  std::vector<std::uint8_t> scratch(plan.scratch_bytes, 0xAB);
  std::vector<Digest> slots(arrays.size());
  for (const rw::DigestLaunch& launch : plan.launches) {
    std::vector<std::pair<std::uint8_t*, Digest>> writes;  // applied after every job has read
    for (const rw::DigestJob& job : launch.jobs) {
      const std::uint8_t* in = job.from_array ? arrays[job.array].data() : scratch.data() + job.in_offset;
      REQUIRE((job.from_array || job.in_offset + job.bytes <= scratch.size()));
      for (std::uint64_t c = 0; c < rw::digest_chunks(job.bytes); ++c) {
        const std::uint64_t begin = c * rw::kDigestChunk;
        const std::uint64_t n = std::min(rw::kDigestChunk, job.bytes - std::min(begin, job.bytes));
        const Digest d = rw::Sha256().update(std::string_view(reinterpret_cast<const char*>(in) + begin, n)).finish();
        std::uint8_t* out = job.to_digest ? slots[job.array].data() : scratch.data() + job.out_offset + 32 * c;
        writes.emplace_back(out, d);
      }
    }
    for (const auto& [out, d] : writes) std::memcpy(out, d.data(), 32);
  }
  return slots;
}

// The plan's structure for arrays of `sizes` (see the file comment).
void check_plan(const rw::DigestPlan& plan, const std::vector<std::uint64_t>& sizes) {
  struct Chain {
    std::size_t jobs = 0;
    std::size_t last_launch = 0;
    rw::DigestJob last;
    bool done = false;
  };
  std::vector<Chain> chains(sizes.size());
  std::map<std::uint64_t, std::uint64_t> written;  // scratch ranges of the current group: begin -> end
  std::size_t group = 0;
  for (std::size_t l = 0; l < plan.launches.size(); ++l) {
    INFO("launch " << l);
    const rw::DigestLaunch& launch = plan.launches[l];
    REQUIRE(!launch.jobs.empty());
    REQUIRE(launch.jobs.size() <= rw::kDigestJobsPerLaunch);
    const std::size_t launch_group = launch.jobs.front().array / rw::kDigestJobsPerLaunch;
    REQUIRE(launch_group >= group);  // groups one after the other, never back
    if (launch_group != group) {
      for (std::size_t a = group * rw::kDigestJobsPerLaunch; a < std::min(sizes.size(), (group + 1) * rw::kDigestJobsPerLaunch); ++a) {
        REQUIRE(chains[a].done);  // the group before has finished
      }
      group = launch_group;
      written.clear();
    }
    std::uint64_t next_thread = 0;
    for (const rw::DigestJob& job : launch.jobs) {
      INFO("array " << job.array);
      REQUIRE(job.array < sizes.size());
      REQUIRE(job.array / rw::kDigestJobsPerLaunch == group);
      Chain& chain = chains[job.array];
      REQUIRE(!chain.done);
      REQUIRE(job.first == next_thread);  // back to back: each thread in exactly one job
      const std::uint64_t chunks = rw::digest_chunks(job.bytes);
      next_thread += chunks;
      if (chain.jobs == 0) {
        CHECK(job.from_array);
        CHECK(job.bytes == sizes[job.array]);
      } else {
        CHECK(chain.last_launch + 1 == l);  // one level a launch
        CHECK_FALSE(job.from_array);
        CHECK(job.in_offset == chain.last.out_offset);  // what its level before wrote, all of it
        CHECK(job.bytes == 32 * rw::digest_chunks(chain.last.bytes));
      }
      CHECK(job.to_digest == (chunks == 1));
      if (!job.to_digest) {
        const std::uint64_t begin = job.out_offset, end = job.out_offset + 32 * chunks;
        CHECK(begin % 32 == 0);
        CHECK(end <= plan.scratch_bytes);
        // No two writes of a group overlap, so nothing read in a group is written after it is made.
        const auto after = written.lower_bound(begin);
        if (after != written.end()) CHECK(after->first >= end);
        if (after != written.begin()) CHECK(std::prev(after)->second <= begin);
        written[begin] = end;
      }
      chain.jobs += 1;
      chain.last_launch = l;
      chain.last = job;
      chain.done = job.to_digest;
    }
    CHECK(launch.threads == next_thread);
  }
  for (std::size_t a = 0; a < sizes.size(); ++a) {
    INFO("array " << a << " of " << sizes[a] << " bytes");
    CHECK(chains[a].done);  // every tree ends in its digest slot, once
  }
}

// Levels of one array's tree.
std::size_t levels(std::uint64_t bytes) {
  std::size_t n = 1;
  for (; rw::digest_chunks(bytes) > 1; ++n) bytes = 32 * rw::digest_chunks(bytes);
  return n;
}

std::vector<std::vector<std::uint8_t>> random_arrays(const std::vector<std::uint64_t>& sizes, std::mt19937& rng) {
  std::vector<std::vector<std::uint8_t>> arrays;
  for (std::uint64_t size : sizes) {
    arrays.emplace_back(size);
    for (auto& b : arrays.back()) b = static_cast<std::uint8_t>(rng());
  }
  return arrays;
}

}  // namespace

TEST_CASE("the digest plan of arrays of mixed sizes is the tree, one launch a level", "[reward][digest_tree]") {
  const std::vector<std::uint64_t> sizes = {0, 1, 63, 64, 1024, 1025, 100 * 1024, (3u << 20) + 5, 1023, 33 * 1024 + 17};
  const rw::DigestPlan plan = rw::plan_digest_tree(sizes);
  check_plan(plan, sizes);
  std::size_t deepest = 0;
  for (std::uint64_t s : sizes) deepest = std::max(deepest, levels(s));
  CHECK(deepest == 4);  // 3 MB: 3,073 chunks, 97, 4, 1
  CHECK(plan.launches.size() == deepest);
  CHECK(plan.launches.front().jobs.size() == sizes.size());
  CHECK(plan.launches.back().jobs.size() == 1);
  std::mt19937 rng(5);
  const auto arrays = random_arrays(sizes, rng);
  const std::vector<Digest> got = run_plan(plan, arrays);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    INFO("array " << i << " of " << sizes[i] << " bytes");
    CHECK(got[i] == direct_tree_digest(arrays[i]));
  }
}

TEST_CASE("the digest plan of arrays of at most 1 KiB is one launch of plain SHA-256s", "[reward][digest_tree]") {
  const std::vector<std::uint64_t> sizes = {0, 1, 55, 56, 64, 1000, 1024};
  const rw::DigestPlan plan = rw::plan_digest_tree(sizes);
  check_plan(plan, sizes);
  REQUIRE(plan.launches.size() == 1);
  CHECK(plan.launches[0].threads == sizes.size());
  CHECK(plan.scratch_bytes == 0);
  std::mt19937 rng(6);
  const auto arrays = random_arrays(sizes, rng);
  const std::vector<Digest> got = run_plan(plan, arrays);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto* p = reinterpret_cast<const char*>(arrays[i].data());
    CHECK(got[i] == rw::Sha256().update(std::string_view(p, arrays[i].size())).finish());
  }
  CHECK(rw::plan_digest_tree({}).launches.empty());
  CHECK(rw::plan_digest_tree({}).scratch_bytes == 0);
}

TEST_CASE("more arrays than a launch takes go in groups of 32, each its own levels", "[reward][digest_tree]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint64_t> size(0, 40 * 1024);
  std::vector<std::uint64_t> sizes;
  for (int i = 0; i < 70; ++i) sizes.push_back(size(rng));
  sizes[40] = 200 * 1024;  // group 2 (arrays 32-63) three levels deep
  const rw::DigestPlan plan = rw::plan_digest_tree(sizes);
  check_plan(plan, sizes);
  std::size_t expected = 0;
  for (std::size_t g = 0; g < sizes.size(); g += 32) {
    std::size_t deepest = 0;
    for (std::size_t a = g; a < std::min(sizes.size(), g + 32); ++a) deepest = std::max(deepest, levels(sizes[a]));
    expected += deepest;
  }
  CHECK(plan.launches.size() == expected);
  const auto arrays = random_arrays(sizes, rng);
  const std::vector<Digest> got = run_plan(plan, arrays);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    INFO("array " << i << " of " << sizes[i] << " bytes");
    CHECK(got[i] == direct_tree_digest(arrays[i]));
  }
}
