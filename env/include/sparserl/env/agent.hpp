// The agent interface every algorithm and baseline implements, so that a benchmark compares them on
// equal terms: act on a batch of observations, learn from finished episodes, save and load. It is
// plain C++ (the LibTorch policies of agents/ implement it; so do the random agent here and the
// template-search adapter of `sparserl rollout`).
//
//   act(observations)   one token per observation, in order, each allowed by the observation's
//                       action mask, with the log-probability of that choice under the agent's
//                       policy (after masking) and its value estimate (0 without a critic). The
//                       environment records both in the Episode (and the trajectory file).
//   update(episodes)    learns from finished episodes; returns named statistics, named as the
//                       community names them ("reward_mean", "kl", "entropy", "clip_fraction",
//                       ...). Non-learning agents return none.
//   save(dir) / load(dir)  everything needed to resume the same trajectory of numbers: weights,
//                       optimiser, vocabulary (digest-checked on load), config, RNG state.
//   policy_id()         what trajectories record as the acting policy ("random:seed=3",
//                       "ppo:step=1200").
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sparserl/env/episode.hpp"
#include "sparserl/env/sparse_cuda_env.hpp"
#include "sparserl/env/vocabulary.hpp"

namespace sparserl::env {

struct ActionBatch {
  std::vector<TokenId> tokens;
  std::vector<float> log_probs;
  std::vector<float> values;
  [[nodiscard]] std::size_t size() const { return tokens.size(); }
  // The annotation of action i, for SparseCudaEnv::step / VectorEnv::send.
  [[nodiscard]] StepAnnotation annotation(std::size_t i) const {
    return {log_probs.empty() ? 0.0f : log_probs[i], values.empty() ? 0.0f : values[i]};
  }
};

using Statistics = std::vector<std::pair<std::string, double>>;

class Agent {
 public:
  virtual ~Agent() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::string policy_id() const { return name(); }
  virtual ActionBatch act(std::span<const Observation> observations) = 0;
  virtual Statistics update(std::span<const Episode> episodes) {
    (void)episodes;
    return {};
  }
  virtual void save(const std::filesystem::path& dir) const = 0;
  virtual void load(const std::filesystem::path& dir) = 0;
};

// Uniform over the action mask. Decision n draws from Rng(seed ^ n-th stream): its state is (seed,
// decisions made), so save/load resumes the exact sequence. log_prob = -log(allowed tokens).
class RandomAgent : public Agent {
 public:
  RandomAgent(std::uint64_t seed, std::shared_ptr<const Vocabulary> vocabulary);

  [[nodiscard]] std::string name() const override { return "random"; }
  [[nodiscard]] std::string policy_id() const override;
  // std::logic_error for an observation whose mask allows nothing (an ended episode).
  ActionBatch act(std::span<const Observation> observations) override;
  // Writes DIR/agent.txt (kind, seed, decisions, vocabulary name and digest) and the vocabulary.
  void save(const std::filesystem::path& dir) const override;
  // std::runtime_error naming the file for a missing or malformed state, or another vocabulary.
  void load(const std::filesystem::path& dir) override;

  [[nodiscard]] std::uint64_t decisions() const { return decisions_; }

 private:
  std::uint64_t seed_;
  std::uint64_t decisions_ = 0;
  std::shared_ptr<const Vocabulary> vocabulary_;
  std::vector<TokenId> allowed_;
};

}  // namespace sparserl::env
