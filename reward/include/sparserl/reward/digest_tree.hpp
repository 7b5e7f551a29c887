// The SHA-256 tree digest of many device arrays at once, planned on the host. The GPU worker's
// DeviceChecks (reward/gpu/device_checks.hpp) digests every array it checks - the matrix arrays,
// the inputs x, the CSR copy - with the kernel sha256_regions (device_checks_source()), one launch
// per level of the tree for all arrays together instead of one per level per array. What the kernel
// needs to know about the tree - which array or scratch bytes a thread reads, where its digest goes,
// which threads belong to which array - is this plan's, made here and passed to the kernel as a
// table: the kernel only looks its thread up in it. The CPU tests (digest_tree_test.cpp) check the
// plan and run it with the host's Sha256 against the tree computed directly.
//
// The tree of one array of n bytes: the SHA-256 of each kDigestChunk-byte chunk (the last one
// shorter; an empty array is one empty chunk), in order; then the same over the concatenated chunk
// digests, until one digest is left (an array of at most one chunk: its plain SHA-256).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sparserl::reward {

inline constexpr std::uint64_t kDigestChunk = 1024;  // bytes a thread hashes (a multiple of 64)
// Jobs (arrays) one launch takes: the kernel's table is a parameter of fixed size. More arrays are
// planned in groups of this many, one group after the other.
inline constexpr std::size_t kDigestJobsPerLaunch = 32;

// max(1, ceil(bytes / kDigestChunk)): the digests one level of an array's tree yields.
std::uint64_t digest_chunks(std::uint64_t bytes);

// One array's level in one launch: threads [first, first + digest_chunks(bytes)) of the launch each
// hash one chunk of the `bytes` read from the array itself (level 0) or from the scratch area at
// in_offset (the level before's digests), writing 32 bytes each to the scratch area from out_offset
// on - or, at the array's last level (one thread), to digest slot `array`.
struct DigestJob {
  std::size_t array = 0;  // index of the array in the plan's input
  bool from_array = true;
  std::uint64_t in_offset = 0;  // scratch byte offset of the input (from_array: unused, 0)
  std::uint64_t bytes = 0;
  std::uint64_t first = 0;
  bool to_digest = false;
  std::uint64_t out_offset = 0;  // scratch byte offset of the output (to_digest: unused, 0)
  friend bool operator==(const DigestJob&, const DigestJob&) = default;
};

// One launch: at most kDigestJobsPerLaunch jobs, in increasing `first`, their threads back to back
// from 0 to `threads`.
struct DigestLaunch {
  std::vector<DigestJob> jobs;
  std::uint64_t threads = 0;
};

// The launches in order (each reads only what launches before it wrote) and the scratch bytes they
// need. A group's levels write the scratch area one after the other (nothing a launch reads is
// written by it or a later launch of its group); the next group starts again at offset 0, after the
// group before has finished on the stream. Offsets are multiples of 32.
struct DigestPlan {
  std::vector<DigestLaunch> launches;
  std::uint64_t scratch_bytes = 0;
};

// The plan for arrays of these sizes, digest slot i receiving array i's tree digest. No arrays: no
// launches.
DigestPlan plan_digest_tree(std::span<const std::uint64_t> bytes);

}  // namespace sparserl::reward
