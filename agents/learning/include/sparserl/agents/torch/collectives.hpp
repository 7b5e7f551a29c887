// The tensor collectives of a ProcessGroup (distributed.hpp) that the learner uses: a sum over the
// ranks and rank 0's values on every rank, in place. LibTorch inside: include only in agents/ and
// its torch tests. The tensor may live on any device; it travels to the group's (the CPU for gloo,
// cuda:LOCAL_RANK for NCCL) and back when it lives elsewhere.
#pragma once

#include <torch/types.h>

#include "sparserl/agents/distributed.hpp"

namespace sparserl::agents {

// Element-wise sum over the ranks, written into `tensor` on every rank.
void all_reduce_sum(ProcessGroup& group, torch::Tensor& tensor);
// Rank 0's values written into `tensor` on every rank.
void broadcast_from_main(ProcessGroup& group, torch::Tensor& tensor);

}  // namespace sparserl::agents
