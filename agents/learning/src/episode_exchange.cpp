// Episodes as bytes (distributed.hpp): how a data-parallel RL stage hands every rank's episodes to
// rank 0, the one that records trajectories. CBOR through nlohmann-json, with the EvalResult in the
// evaluator's own wire encoding (reward/protocol.hpp) so that no field of it can be forgotten here.
// No LibTorch.
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>

#include "sparserl/agents/distributed.hpp"
#include "sparserl/reward/protocol.hpp"

namespace sparserl::agents {

namespace {

using Json = nlohmann::json;

// The breakdown's fields by name: one list for both directions.
using Breakdown = reward::RewardBreakdown;
constexpr std::pair<const char*, bool Breakdown::*> kBreakdownFlags[] = {
    {"compiled", &Breakdown::compiled},
    {"tested", &Breakdown::tested},
    {"correct", &Breakdown::correct},
    {"resource_limit", &Breakdown::resource_limit},
    {"compile_only", &Breakdown::compile_only}};
constexpr std::pair<const char*, double Breakdown::*> kBreakdownValues[] = {
    {"speedup", &Breakdown::speedup}, {"compile", &Breakdown::compile},
    {"test", &Breakdown::test},       {"efficiency", &Breakdown::efficiency},
    {"penalty", &Breakdown::penalty}, {"unclipped", &Breakdown::unclipped},
    {"total", &Breakdown::total}};

Json breakdown_json(const Breakdown& b) {
  Json j = Json::object();
  for (const auto& [name, field] : kBreakdownFlags) j[name] = b.*field;
  for (const auto& [name, field] : kBreakdownValues) j[name] = b.*field;
  return j;
}

Breakdown breakdown_of(const Json& j) {
  Breakdown b;
  for (const auto& [name, field] : kBreakdownFlags) b.*field = j.at(name).get<bool>();
  for (const auto& [name, field] : kBreakdownValues) b.*field = j.at(name).get<double>();
  return b;
}

Json episode_json(const env::Episode& e) {
  Json j = {{"task", e.task.str()},
            {"env_id", e.env_id},
            {"env_seed", e.env_seed},
            {"episode_index", e.episode_index},
            {"episode_seed", e.episode_seed},
            {"observation_digest", e.observation_digest},
            {"tokens", e.tokens},
            {"log_probs", e.log_probs},
            {"values", e.values},
            {"source", e.source},
            {"terminated", e.terminated},
            {"truncated", e.truncated},
            {"reward", e.reward},
            {"breakdown", breakdown_json(e.breakdown)},
            {"episode_seconds", e.episode_seconds},
            {"evaluation_seconds", e.evaluation_seconds},
            {"policy_id", e.policy_id},
            {"group", e.group}};
  if (e.eval) {
    j["eval"] = Json::binary(reward::encode_payload(reward::GpuResponse{*e.eval, false}));
  }
  return j;
}

env::Episode episode_of(const Json& j) {
  env::Episode e;
  e.task = datasets::Task::parse(j.at("task").get<std::string>());
  e.env_id = j.at("env_id");
  e.env_seed = j.at("env_seed");
  e.episode_index = j.at("episode_index");
  e.episode_seed = j.at("episode_seed");
  e.observation_digest = j.at("observation_digest");
  e.tokens = j.at("tokens").get<std::vector<env::TokenId>>();
  e.log_probs = j.at("log_probs").get<std::vector<float>>();
  e.values = j.at("values").get<std::vector<float>>();
  e.source = j.at("source");
  e.terminated = j.at("terminated");
  e.truncated = j.at("truncated");
  e.reward = j.at("reward");
  e.breakdown = breakdown_of(j.at("breakdown"));
  e.episode_seconds = j.at("episode_seconds");
  e.evaluation_seconds = j.at("evaluation_seconds");
  e.policy_id = j.at("policy_id");
  e.group = j.at("group");
  if (j.contains("eval")) {
    const Json::binary_t& bytes = j.at("eval").get_binary();
    reward::Message message = reward::decode_payload(bytes);
    e.eval = std::get<reward::GpuResponse>(message).result;
  }
  return e;
}

}  // namespace

std::string encode_episodes(std::span<const env::Episode> episodes) {
  Json list = Json::array();
  for (const env::Episode& e : episodes) list.push_back(episode_json(e));
  const std::vector<std::uint8_t> bytes = Json::to_cbor(list);
  return {bytes.begin(), bytes.end()};
}

std::vector<env::Episode> decode_episodes(std::string_view bytes) {
  std::vector<env::Episode> out;
  try {
    const Json list = Json::from_cbor(bytes.begin(), bytes.end());
    for (const Json& j : list) out.push_back(episode_of(j));
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("decode_episodes: not a list of episodes (") +
                                e.what() + ")");
  }
  return out;
}

}  // namespace sparserl::agents
