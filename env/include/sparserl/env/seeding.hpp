// Every seed the environment uses is derived here, and only here, so that a run is reproduced from
// one number and a recorded episode from (task, episode seed, tokens):
//   env seed       base seed + env_id                         (EnvPool's convention; VectorEnv)
//   task order     Rng(env seed, kTaskStream)                 (shuffled and weighted task sources)
//   episode seed   splitmix64 of (env seed, episode index)   (reset() without options)
//   observation    Rng(episode seed, kObservationStream)      (observation.hpp)
//   generated task Rng(env seed, kGeneratorStream)            (a fresh seed= per generated matrix)
//   random agent   Rng(agent seed, kAgentStream)
// reset(seed) sets the env seed and restarts the episode index and the task order; reset() without
// a seed continues both (Gymnasium: no seed, no reseed); the first reset() without any seed uses
// EnvConfig::seed.
#pragma once

#include <cstdint>

#include "sparserl/datasets/random.hpp"

namespace sparserl::env {

inline constexpr std::uint64_t kTaskStream = 0x7461736b73ULL;             // "tasks"
inline constexpr std::uint64_t kGeneratorStream = 0x67656e6572617465ULL;  // "generate"
inline constexpr std::uint64_t kAgentStream = 0x6167656e74ULL;            // "agent"

inline std::uint64_t env_seed(std::uint64_t base_seed, int env_id) {
  return base_seed + static_cast<std::uint64_t>(env_id);
}

inline std::uint64_t episode_seed(std::uint64_t env_seed_value, std::uint64_t episode_index) {
  std::uint64_t state = env_seed_value;
  const std::uint64_t a = datasets::splitmix64(state);
  std::uint64_t mixed = a ^ (episode_index * 0x9e3779b97f4a7c15ULL);
  return datasets::splitmix64(mixed);
}

}  // namespace sparserl::env
