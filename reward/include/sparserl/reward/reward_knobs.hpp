// The knobs of the reward, the GPU protocol, the evaluator and the sandbox (datasets/knobs.hpp),
// declared once with the key names, defaults, ranges and help the experiment config shows:
// RewardConfig's terms, shape, tiers and clip; GpuProtocol's two stages - check.* (inputs) and
// timing.* (repetitions against cuSPARSE) - and its speedup baseline; EvaluatorConfig's workers,
// deadlines (seconds here, milliseconds in the struct), caches and program limits; SandboxLimits'
// limits (amounts -1 for unlimited), checked by SandboxLimits' own parser. The experiment schema
// lists these declarations and the runner fills the structs through them.
#pragma once

#include "sparserl/datasets/knobs.hpp"
#include "sparserl/reward/evaluator.hpp"
#include "sparserl/reward/protocol.hpp"
#include "sparserl/reward/reward.hpp"
#include "sparserl/reward/sandbox.hpp"

namespace sparserl::reward {

// baseline, check.seed, check.random_inputs, timing.enabled, timing.warmup, timing.repetitions,
// timing.flush_l2.
const datasets::Knobs<GpuProtocol>& gpu_protocol_knobs();
// compile_pass, compile_fail, test_pass, test_fail, r_eff, r_pen, shape, tier_speedups,
// tier_values, clip_min, clip_max. The two tier lists are one list of (threshold, value) pairs:
// set both, the same length (RewardConfig::validate checks the order).
const datasets::Knobs<RewardConfig>& reward_knobs();
// max_program_bytes, max_block, max_smem_bytes, max_registers_per_thread, max_spill_bytes,
// max_stored_entries.
const datasets::Knobs<ProgramLimits>& program_limits_knobs();
// worker, arch, compile_workers, gpu_workers, compile_timeout_s, gpu_timeout_s,
// gpu_timeout_factor, gpu_timeout_floor_s, gpu_timeout_calibrate, gpu_timeout_rerun, gpu_baseline_hints,
// startup_timeout_s,
// recycle_after, cache_entries (both in-memory caches), cache_dir, matrix_cache_entries,
// evaluation_threads, nvrtc_options, then program_limits_knobs(). Not the sandbox (sandbox_knobs),
// the protocol (gpu_protocol_knobs), the matrix folders nor the log; worker and cache_dir are
// taken as given (a caller resolves relative paths).
const datasets::Knobs<EvaluatorConfig>& evaluator_knobs();
// core_bytes, cpu_seconds, file_size_bytes, open_files, address_space_bytes, die_with_parent,
// close_descriptors, cpu_affinity: SandboxLimits::from_key_values's keys.
const datasets::Knobs<SandboxLimits>& sandbox_knobs();

}  // namespace sparserl::reward
