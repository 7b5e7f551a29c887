// The knobs of the environment (datasets/knobs.hpp), declared once: EnvConfig's and its
// ObservationConfig's, with the key names, defaults, ranges and help the experiment config shows in
// its [env] section (the observation's fields sit beside the env's own there: "nnz_samples",
// "index_scaling"). The reward's struct inside EnvConfig is the reward library's and is not here.
#pragma once

#include "sparserl/datasets/knobs.hpp"
#include "sparserl/env/observation.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"

namespace sparserl::env {

const datasets::Knobs<ObservationConfig>& observation_knobs();
// max_tokens, mask, the observation's knobs (unprefixed), truncation_reward (its default is
// reward.compile_fail's, as EnvConfig resolves it).
const datasets::Knobs<EnvConfig>& env_knobs();

}  // namespace sparserl::env
