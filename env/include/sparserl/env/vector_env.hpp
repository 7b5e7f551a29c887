// VectorEnv: N SparseCudaEnv instances driven as one, in the style of EnvPool. Two ways to use it:
//
//   synchronous   step(actions) sends one action to every environment and returns all N results in
//                 env order. An environment whose episode just ended waits for its evaluation, so
//                 the call takes as long as the slowest evaluation in it.
//   asynchronous  send(actions, env_ids) then recv(): recv() returns as soon as batch_size
//                 environments have results; an environment whose evaluation is still in the
//                 evaluator's pool is simply not among them, so one slow evaluation does not stall
//                 the others. The caller acts on the env_ids it got back.
//
// Auto-reset (declared, as Gymnasium asks):
//   next_step  (Gymnasium >= 1.0's default) the step that ends an episode returns its final
//              observation; the next action sent to that environment is ignored and the environment
//              resets instead, returning the first observation (reward 0, step type first).
//   same_step  the step that ends an episode resets at once: it returns the new episode's first
//              observation and reset info, with the ended episode's observation and info in
//              final_observations / final_infos. The reward, terminated and truncated are the ended
//              episode's.
//
// Seeds: environment i is reset with seed + i (seeding.hpp); the first reset() without a seed uses
// VectorEnvConfig::seed. Every finished episode is passed to the episode callback (the trajectory
// recorder, an agent's rollout buffer) in the order recv() processes them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "sparserl/env/sparse_cuda_env.hpp"

namespace sparserl::env {

enum class AutoReset { next_step, same_step };
std::string_view to_string(AutoReset mode);
std::optional<AutoReset> parse_autoreset(std::string_view text);  // "next_step", "same_step"

struct VectorEnvConfig {
  int num_envs = 1;
  int batch_size = 0;  // recv() returns at least this many results; 0: num_envs
  AutoReset autoreset = AutoReset::next_step;
  std::uint64_t seed = 0;  // the base seed of the first reset() without one
};

struct VectorStep {
  std::vector<int> env_ids;
  std::vector<Observation> observations;
  std::vector<double> rewards;
  std::vector<std::uint8_t> terminated, truncated;
  std::vector<Info> infos;
  std::vector<StepType> step_types;
  std::vector<std::optional<Observation>> final_observations;  // same_step: the ended episode's
  std::vector<std::optional<Info>> final_infos;

  [[nodiscard]] std::size_t size() const { return env_ids.size(); }
};

struct VectorEnvStats {
  std::uint64_t steps = 0;        // actions applied
  std::uint64_t episodes = 0;     // finished (terminated or truncated)
  std::uint64_t evaluations = 0;  // finished episodes that were evaluated
  int max_in_flight = 0;          // most evaluations pending at once
};

class VectorEnv {
 public:
  // Makes environment env_id (0..num_envs-1). It should give each environment its own copy of the
  // task source, sharded with TaskSource::shard(env_id, num_envs) when it is sequential.
  using EnvFactory = std::function<std::unique_ptr<SparseCudaEnv>(int env_id)>;

  VectorEnv(VectorEnvConfig config, const EnvFactory& factory);

  [[nodiscard]] int num_envs() const { return static_cast<int>(envs_.size()); }
  [[nodiscard]] const VectorEnvConfig& config() const { return config_; }
  [[nodiscard]] SparseCudaEnv& env(int env_id) {
    return *envs_.at(static_cast<std::size_t>(env_id));
  }
  [[nodiscard]] Spaces spaces() const { return envs_.front()->spaces(); }
  [[nodiscard]] const VectorEnvStats& stats() const { return stats_; }

  // Resets every environment (seed + env_id); results in env order.
  VectorStep reset(std::optional<std::uint64_t> seed = std::nullopt);
  // Applies one action per listed environment; annotations (log-prob, value) are optional.
  // std::logic_error for an environment that is already waiting for its result.
  void send(std::span<const TokenId> actions, std::span<const int> env_ids,
            std::span<const StepAnnotation> annotations = {});
  // At least batch_size results (fewer only when fewer environments have a step in flight).
  VectorStep recv();
  // send() to every environment, then every result, in env order.
  VectorStep step(std::span<const TokenId> actions,
                  std::span<const StepAnnotation> annotations = {});

  void on_episode(std::function<void(const Episode&)> callback) {
    on_episode_ = std::move(callback);
  }

 private:
  enum class Slot { idle, in_flight, ready };  // ready: a result waits in ready_ for recv()
  void collect(int env_id);
  void add(int env_id, Observation observation, double reward, bool terminated, bool truncated,
           Info info, StepType type, std::optional<Observation> final_observation = std::nullopt,
           std::optional<Info> final_info = std::nullopt);

  VectorEnvConfig config_;
  std::vector<std::unique_ptr<SparseCudaEnv>> envs_;
  std::vector<Slot> slots_;
  std::vector<std::uint8_t> needs_reset_;  // next_step: the episode ended; the next send resets
  std::vector<int> in_flight_;             // env ids, in send order
  VectorStep ready_;
  bool seeded_ = false;
  VectorEnvStats stats_;
  std::function<void(const Episode&)> on_episode_;
};

}  // namespace sparserl::env
