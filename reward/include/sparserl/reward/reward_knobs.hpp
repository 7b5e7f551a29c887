// The knobs of the reward and of the GPU protocol (datasets/knobs.hpp), declared once with the key
// names, defaults, ranges and help the experiment config shows: RewardConfig's terms, shape, tiers
// and clip, and GpuProtocol's two stages - check.* (inputs) and timing.* (repetitions against
// cuSPARSE) - and its speedup baseline. The evaluator's and the sandbox's settings are not here
// yet: the experiment schema still declares those itself.
#pragma once

#include "sparserl/datasets/knobs.hpp"
#include "sparserl/reward/protocol.hpp"
#include "sparserl/reward/reward.hpp"

namespace sparserl::reward {

// baseline, check.seed, check.random_inputs, timing.enabled, timing.warmup, timing.repetitions,
// timing.flush_l2.
const datasets::Knobs<GpuProtocol>& gpu_protocol_knobs();
// compile_pass, compile_fail, test_pass, test_fail, r_eff, r_pen, shape, tier_speedups,
// tier_values, clip_min, clip_max. The two tier lists are one list of (threshold, value) pairs:
// set both, the same length (RewardConfig::validate checks the order).
const datasets::Knobs<RewardConfig>& reward_knobs();

}  // namespace sparserl::reward
