// VectorEnv's slots: which environments wait for an action, which have a step in flight (an
// evaluation in the pool), and which have a result for recv(). Everything runs on the caller's
// thread; the only concurrency is the evaluator's, behind each environment's future.
#include "sparserl/env/vector_env.hpp"

#include <algorithm>
#include <stdexcept>

#include "sparserl/datasets/enum_names.hpp"
#include "sparserl/env/seeding.hpp"

namespace sparserl::env {

constexpr auto kAutoResetModes =
    datasets::enum_names<AutoReset::next_step, AutoReset::same_step>({"next_step", "same_step"});

std::string_view to_string(AutoReset mode) { return kAutoResetModes.name(mode); }

std::optional<AutoReset> parse_autoreset(std::string_view text) {
  return kAutoResetModes.parse(text);
}

VectorEnv::VectorEnv(VectorEnvConfig config, const EnvFactory& factory) : config_(config) {
  if (config_.num_envs < 1 || config_.num_envs > 65536) {
    throw std::invalid_argument("num_envs = " + std::to_string(config_.num_envs) +
                                ": must be in 1..65536");
  }
  if (config_.batch_size < 0 || config_.batch_size > config_.num_envs) {
    throw std::invalid_argument("batch_size = " + std::to_string(config_.batch_size) +
                                ": must be in 0..num_envs (0: all)");
  }
  for (int i = 0; i < config_.num_envs; ++i) {
    envs_.push_back(factory(i));
    if (!envs_.back()) throw std::invalid_argument("the env factory returned no environment");
  }
  slots_.assign(envs_.size(), Slot::idle);
  needs_reset_.assign(envs_.size(), 0);
}

void VectorEnv::add(int env_id, Observation observation, double reward, bool terminated,
                    bool truncated, Info info, StepType type,
                    std::optional<Observation> final_observation, std::optional<Info> final_info) {
  ready_.env_ids.push_back(env_id);
  ready_.observations.push_back(std::move(observation));
  ready_.rewards.push_back(reward);
  ready_.terminated.push_back(terminated ? 1 : 0);
  ready_.truncated.push_back(truncated ? 1 : 0);
  ready_.infos.push_back(std::move(info));
  ready_.step_types.push_back(type);
  ready_.final_observations.push_back(std::move(final_observation));
  ready_.final_infos.push_back(std::move(final_info));
  slots_[static_cast<std::size_t>(env_id)] = Slot::ready;
}

VectorStep VectorEnv::reset(std::optional<std::uint64_t> seed) {
  // Finish whatever is in flight (its episodes still reach the callback), then drop every result.
  while (!in_flight_.empty()) collect(in_flight_.front());
  ready_ = VectorStep{};
  std::optional<std::uint64_t> base = seed;
  if (!base && !seeded_) base = config_.seed;
  seeded_ = true;
  for (int i = 0; i < num_envs(); ++i) {
    std::optional<std::uint64_t> s;
    if (base) s = env_seed(*base, i);
    ResetResult r = envs_[static_cast<std::size_t>(i)]->reset(s);
    needs_reset_[static_cast<std::size_t>(i)] = 0;
    add(i, std::move(r.observation), 0.0, false, false, std::move(r.info), StepType::first);
  }
  VectorStep out = std::move(ready_);
  ready_ = VectorStep{};
  std::fill(slots_.begin(), slots_.end(), Slot::idle);
  return out;
}

void VectorEnv::send(std::span<const TokenId> actions, std::span<const int> env_ids,
                     std::span<const StepAnnotation> annotations) {
  if (actions.size() != env_ids.size() ||
      (!annotations.empty() && annotations.size() != actions.size())) {
    throw std::invalid_argument("send(): " + std::to_string(actions.size()) + " actions for " +
                                std::to_string(env_ids.size()) + " environments and " +
                                std::to_string(annotations.size()) + " annotations");
  }
  for (std::size_t i = 0; i < env_ids.size(); ++i) {
    const int id = env_ids[i];
    if (id < 0 || id >= num_envs()) {
      throw std::invalid_argument("send(): env id " + std::to_string(id) + " is outside 0.." +
                                  std::to_string(num_envs() - 1));
    }
    const auto slot = static_cast<std::size_t>(id);
    if (slots_[slot] != Slot::idle) {
      throw std::logic_error("send(): environment " + std::to_string(id) +
                             " has not returned its last result through recv() yet");
    }
    if (needs_reset_[slot] != 0) {  // next_step auto-reset: the action is ignored
      needs_reset_[slot] = 0;
      ResetResult r = envs_[slot]->reset();
      add(id, std::move(r.observation), 0.0, false, false, std::move(r.info), StepType::first);
      continue;
    }
    envs_[slot]->begin_step(actions[i], annotations.empty() ? StepAnnotation{} : annotations[i]);
    ++stats_.steps;
    slots_[slot] = Slot::in_flight;
    in_flight_.push_back(id);
  }
}

void VectorEnv::collect(int env_id) {
  in_flight_.erase(std::find(in_flight_.begin(), in_flight_.end(), env_id));
  SparseCudaEnv& env = *envs_[static_cast<std::size_t>(env_id)];
  StepResult r = env.finish_step();
  if (!r.done()) {
    add(env_id, std::move(r.observation), r.reward, false, false, std::move(r.info), r.step_type);
    return;
  }
  ++stats_.episodes;
  if (r.terminated) ++stats_.evaluations;
  if (on_episode_ && env.last_episode() != nullptr) on_episode_(*env.last_episode());
  if (config_.autoreset == AutoReset::same_step) {
    ResetResult next = env.reset();
    add(env_id, std::move(next.observation), r.reward, r.terminated, r.truncated,
        std::move(next.info), StepType::last, std::move(r.observation), std::move(r.info));
  } else {
    needs_reset_[static_cast<std::size_t>(env_id)] = 1;
    add(env_id, std::move(r.observation), r.reward, r.terminated, r.truncated, std::move(r.info),
        StepType::last);
  }
}

VectorStep VectorEnv::recv() {
  const std::size_t target =
      static_cast<std::size_t>(config_.batch_size == 0 ? num_envs() : config_.batch_size);
  while (true) {
    int pending = 0;
    for (const int id : std::vector<int>(in_flight_)) {
      if (envs_[static_cast<std::size_t>(id)]->step_ready()) {
        collect(id);
      } else {
        ++pending;
      }
    }
    stats_.max_in_flight = std::max(stats_.max_in_flight, pending);
    if (ready_.size() >= target || in_flight_.empty()) break;
    // Nothing more is ready: wait a little on the oldest evaluation in flight.
    (void)envs_[static_cast<std::size_t>(in_flight_.front())]->wait_step(
        std::chrono::microseconds(200));
  }
  VectorStep out = std::move(ready_);
  ready_ = VectorStep{};
  for (int id : out.env_ids) slots_[static_cast<std::size_t>(id)] = Slot::idle;
  return out;
}

VectorStep VectorEnv::step(std::span<const TokenId> actions,
                           std::span<const StepAnnotation> annotations) {
  if (static_cast<int>(actions.size()) != num_envs()) {
    throw std::invalid_argument("step(): " + std::to_string(actions.size()) + " actions for " +
                                std::to_string(num_envs()) + " environments");
  }
  std::vector<int> ids(envs_.size());
  for (int i = 0; i < num_envs(); ++i) ids[static_cast<std::size_t>(i)] = i;
  send(actions, ids, annotations);
  // Every environment, whatever the batch size.
  while (!in_flight_.empty()) {
    std::size_t before = in_flight_.size();
    for (const int id : std::vector<int>(in_flight_)) {
      if (envs_[static_cast<std::size_t>(id)]->step_ready()) collect(id);
    }
    stats_.max_in_flight = std::max(stats_.max_in_flight, static_cast<int>(in_flight_.size()));
    if (!in_flight_.empty() && in_flight_.size() == before) {
      (void)envs_[static_cast<std::size_t>(in_flight_.front())]->wait_step(
          std::chrono::microseconds(200));
    }
  }
  VectorStep out = std::move(ready_);
  ready_ = VectorStep{};
  for (int id : out.env_ids) slots_[static_cast<std::size_t>(id)] = Slot::idle;
  // In env order.
  std::vector<std::size_t> order(out.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return out.env_ids[a] < out.env_ids[b]; });
  VectorStep sorted;
  for (std::size_t i : order) {
    sorted.env_ids.push_back(out.env_ids[i]);
    sorted.observations.push_back(std::move(out.observations[i]));
    sorted.rewards.push_back(out.rewards[i]);
    sorted.terminated.push_back(out.terminated[i]);
    sorted.truncated.push_back(out.truncated[i]);
    sorted.infos.push_back(std::move(out.infos[i]));
    sorted.step_types.push_back(out.step_types[i]);
    sorted.final_observations.push_back(std::move(out.final_observations[i]));
    sorted.final_infos.push_back(std::move(out.final_infos[i]));
  }
  return sorted;
}

}  // namespace sparserl::env
