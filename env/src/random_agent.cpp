// The random agent: uniform over the action mask, the floor every learned agent must clear and the
// driver of the environment's own tests and benchmarks.
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sparserl/datasets/random.hpp"
#include "sparserl/env/agent.hpp"
#include "sparserl/env/seeding.hpp"

namespace sparserl::env {

RandomAgent::RandomAgent(std::uint64_t seed, std::shared_ptr<const Vocabulary> vocabulary)
    : seed_(seed), vocabulary_(std::move(vocabulary)) {
  if (!vocabulary_) throw std::invalid_argument("RandomAgent needs a vocabulary");
}

std::string RandomAgent::policy_id() const { return "random:seed=" + std::to_string(seed_); }

ActionBatch RandomAgent::act(std::span<const Observation> observations) {
  ActionBatch batch;
  batch.tokens.reserve(observations.size());
  batch.log_probs.reserve(observations.size());
  batch.values.assign(observations.size(), 0.0f);
  for (const Observation& o : observations) {
    allowed_.clear();
    for (std::size_t i = 0; i < o.action_mask.size(); ++i) {
      if (o.action_mask[i] != 0) allowed_.push_back(static_cast<TokenId>(i));
    }
    if (allowed_.empty()) {
      throw std::logic_error(
          "RandomAgent::act: the observation's mask allows no token (the "
          "episode has ended: reset it)");
    }
    datasets::Rng rng(seed_ ^ kAgentStream, decisions_++);
    batch.tokens.push_back(allowed_[static_cast<std::size_t>(rng.below(allowed_.size()))]);
    batch.log_probs.push_back(-static_cast<float>(std::log(static_cast<double>(allowed_.size()))));
  }
  return batch;
}

void RandomAgent::save(const std::filesystem::path& dir) const {
  std::filesystem::create_directories(dir);
  const auto file = dir / "agent.txt";
  std::ofstream out(file, std::ios::trunc);
  out << "sparserl-agent random 1\n"
      << "seed " << seed_ << "\n"
      << "decisions " << decisions_ << "\n"
      << "vocabulary " << vocabulary_->name() << " " << vocabulary_->digest() << "\n";
  out.flush();
  if (!out) throw std::runtime_error("cannot write agent state " + file.string());
  vocabulary_->save(dir / (vocabulary_->name() + ".vocab"));
}

void RandomAgent::load(const std::filesystem::path& dir) {
  const auto file = dir / "agent.txt";
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read agent state " + file.string());
  std::string magic, kind, version, key, vocab_name, vocab_digest;
  std::uint64_t seed = 0, decisions = 0;
  in >> magic >> kind >> version;
  if (magic != "sparserl-agent" || kind != "random" || version != "1") {
    throw std::runtime_error(file.string() +
                             ": not a random agent's state (expected "
                             "'sparserl-agent random 1')");
  }
  if (!(in >> key >> seed) || key != "seed" || !(in >> key >> decisions) || key != "decisions" ||
      !(in >> key >> vocab_name >> vocab_digest) || key != "vocabulary") {
    throw std::runtime_error(file.string() +
                             ": malformed (expected seed, decisions and vocabulary lines)");
  }
  vocabulary_->require_digest(vocab_digest, "the agent state " + file.string());
  seed_ = seed;
  decisions_ = decisions;
}

}  // namespace sparserl::env
