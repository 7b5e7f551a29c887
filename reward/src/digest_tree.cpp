// The host's plan of the device's SHA-256 tree digests (digest_tree.hpp): levels as launches, arrays
// in groups of kDigestJobsPerLaunch, scratch offsets.
#include "sparserl/reward/digest_tree.hpp"

#include <algorithm>

namespace sparserl::reward {

std::uint64_t digest_chunks(std::uint64_t bytes) {
  return std::max<std::uint64_t>(1, (bytes + kDigestChunk - 1) / kDigestChunk);
}

DigestPlan plan_digest_tree(std::span<const std::uint64_t> bytes) {
  DigestPlan plan;
  for (std::size_t group = 0; group < bytes.size(); group += kDigestJobsPerLaunch) {
    const std::size_t end = std::min(bytes.size(), group + kDigestJobsPerLaunch);
    // The group's arrays whose tree is not done, each with what its next level reads.
    std::vector<DigestJob> pending;
    for (std::size_t i = group; i < end; ++i) {
      DigestJob job;
      job.array = i;
      job.bytes = bytes[i];
      pending.push_back(job);
    }
    std::uint64_t used = 0;  // scratch bytes the group's levels so far have written
    while (!pending.empty()) {
      DigestLaunch launch;
      std::vector<DigestJob> next;
      for (DigestJob job : pending) {
        const std::uint64_t chunks = digest_chunks(job.bytes);
        job.first = launch.threads;
        job.to_digest = chunks == 1;
        if (!job.to_digest) {
          job.out_offset = used;
          used += chunks * 32;
          DigestJob up;
          up.array = job.array;
          up.from_array = false;
          up.in_offset = job.out_offset;
          up.bytes = chunks * 32;
          next.push_back(up);
        }
        launch.threads += chunks;
        launch.jobs.push_back(job);
      }
      plan.launches.push_back(std::move(launch));
      pending = std::move(next);
    }
    plan.scratch_bytes = std::max(plan.scratch_bytes, used);
  }
  return plan;
}

}  // namespace sparserl::reward
