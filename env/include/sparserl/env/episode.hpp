// Episode: one finished episode as the environment records it - what an agent's update() consumes
// and what the trajectory recorder writes as one HDF5 row. It holds enough to replay and validate
// the episode (task, episode seed, tokens, observation digest) and every outcome (the EvalResult
// and the reward breakdown). env/episode_pipeline.hpp makes every one of them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sparserl/datasets/task.hpp"
#include "sparserl/env/observation.hpp"
#include "sparserl/env/vocabulary.hpp"
#include "sparserl/reward/eval_result.hpp"
#include "sparserl/reward/reward.hpp"

namespace sparserl::env {

struct Episode {
  datasets::Task task;
  int env_id = 0;
  std::uint64_t env_seed = 0;
  std::uint64_t episode_index = 0;  // within the env seed
  std::uint64_t episode_seed = 0;   // what the observation was sampled with
  std::string observation_digest;   // SHA-256 of the matrix observation's sampled indices

  std::vector<TokenId> tokens;   // the actions, <eos> included when terminated
  std::vector<float> log_probs;  // per token, as the agent reported them (0 when it did not)
  std::vector<float> values;     // per token, the agent's value estimates (0 when none)
  std::string source;            // the decoded program

  bool terminated = false;  // ended with <eos>
  bool truncated = false;   // cut at max_tokens (no evaluation)
  double reward = 0;        // the final reward
  reward::RewardBreakdown breakdown;
  std::optional<reward::EvalResult> eval;  // absent when truncated

  double episode_seconds = 0;     // reset() to the final step's result
  double evaluation_seconds = 0;  // submit to result, as the env saw it
  std::string policy_id;          // set by whoever acted (the recorder writes it)

  // For the agent's update(), not recorded: the prompt, the group of samples it belongs to (the
  // prompt's index in its batch; -1: an episode on its own, as step() plays them) and the masks
  // its tokens were sampled under (empty: replayed from the tokens).
  std::shared_ptr<const MatrixObservation> matrix;
  std::int64_t group = -1;
  std::vector<std::uint8_t> action_masks;
};

}  // namespace sparserl::env
