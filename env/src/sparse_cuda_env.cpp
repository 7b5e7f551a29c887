// SparseCudaEnv's bookkeeping: seeds, the current episode, the pending evaluation, info
// dictionaries and replay. The contract is in the header.
#include "sparserl/env/sparse_cuda_env.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sparserl/env/seeding.hpp"
#include "sparserl/reward/digest.hpp"

namespace sparserl::env {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string shape(std::initializer_list<long long> dims) {
  std::string s = "[";
  bool first = true;
  for (long long d : dims) {
    if (!first) s += ", ";
    first = false;
    s += std::to_string(d);
  }
  return s + "]";
}

}  // namespace

std::optional<std::string> EnvConfig::validate() const {
  if (max_tokens < 1 || max_tokens > (1 << 20)) {
    return "max_tokens = " + std::to_string(max_tokens) + ": must be in 1..1048576";
  }
  if (mask == MaskMode::syntax && max_tokens < kMinSyntaxTokens) {
    return "max_tokens = " + std::to_string(max_tokens) + ": the syntax mask needs at least " +
           std::to_string(kMinSyntaxTokens) + " (the shortest complete program)";
  }
  if (auto problem = observation.validate()) return "observation." + *problem;
  if (auto problem = reward.validate()) return "reward: " + *problem;
  if (truncation_reward && !std::isfinite(*truncation_reward)) {
    return "truncation_reward must be finite";
  }
  return std::nullopt;
}

double EnvConfig::resolved_truncation_reward() const {
  return std::clamp(truncation_reward.value_or(reward.compile_fail), reward.clip_min,
                    reward.clip_max);
}

std::string Spaces::describe() const {
  return "actions: Discrete(" + std::to_string(actions) + "); observation: matrix.rows " +
         shape({nnz_samples}) + " int32, matrix.cols " + shape({nnz_samples}) +
         " int32, matrix.embedding " + shape({nnz_samples, embedding_dim}) +
         " float32, matrix.features " + shape({feature_dim}) + " float32, tokens [0.." +
         std::to_string(max_tokens) + "] int32, action_mask " + shape({actions}) + " uint8 (" +
         std::string(to_string(mask)) + ")";
}

std::string observation_digest(const MatrixObservation& observation) {
  reward::Sha256 sha;
  const auto bytes = [](const std::vector<std::int32_t>& v) {
    return std::string_view(reinterpret_cast<const char*>(v.data()),
                            v.size() * sizeof(std::int32_t));
  };
  sha.update_field(std::to_string(observation.count));
  sha.update_field(bytes(observation.rows));
  sha.update_field(bytes(observation.cols));
  return sha.finish_hex();
}

SparseCudaEnv::SparseCudaEnv(EnvConfig config, std::shared_ptr<const Tokenizer> tokenizer,
                             TaskSource tasks, std::shared_ptr<datasets::MatrixStore> store,
                             std::shared_ptr<EvaluationBackend> backend, int env_id)
    : config_(std::move(config)),
      tokenizer_(std::move(tokenizer)),
      tasks_(std::move(tasks)),
      store_(std::move(store)),
      backend_(std::move(backend)),
      reward_([this] {
        if (auto problem = config_.validate())
          throw std::invalid_argument("env config: " + *problem);
        return reward::HierarchicalReward(config_.reward);
      }()),
      mask_(tokenizer_ ? tokenizer_->vocabulary_ptr() : nullptr, config_.mask, config_.max_tokens),
      env_id_(env_id) {
  if (!tokenizer_ || !store_ || !backend_) {
    throw std::invalid_argument(
        "SparseCudaEnv needs a tokenizer, a matrix store and an evaluation backend");
  }
}

SparseCudaEnv::~SparseCudaEnv() {
  // An evaluation still in flight is waited for: its worker writes into the future's shared state.
  if (pending_eval_ && pending_eval_->valid()) pending_eval_->wait();
}

ResetResult SparseCudaEnv::reset(std::optional<std::uint64_t> seed, const ResetOptions& options) {
  if (step_pending_)
    throw std::logic_error("reset() while a step is pending: call finish_step() first");
  if (seed || !seeded_) {
    env_seed_ = seed.value_or(config_.seed);
    tasks_.seed(env_seed_);
    next_episode_index_ = 0;
    seeded_ = true;
  }
  const datasets::Task task = options.task ? *options.task : tasks_.next();
  const std::uint64_t index = next_episode_index_++;
  const std::uint64_t eseed = options.episode_seed.value_or(episode_seed(env_seed_, index));

  const auto matrix = store_->load(task.uri);
  auto found = features_.find(task.uri);
  if (found == features_.end()) {
    if (features_.size() > 4096) features_.clear();
    found = features_.emplace(task.uri, datasets::compute_features(*matrix)).first;
  }
  matrix_obs_ = std::make_shared<const MatrixObservation>(
      observe_matrix(*matrix, found->second, task, config_.observation, eseed));

  episode_ = Episode{};
  episode_.task = task;
  episode_.env_id = env_id_;
  episode_.env_seed = env_seed_;
  episode_.episode_index = index;
  episode_.episode_seed = eseed;
  episode_.observation_digest = observation_digest(*matrix_obs_);
  episode_.tokens.reserve(static_cast<std::size_t>(std::min(config_.max_tokens, 4096)));
  mask_.reset();
  active_ = true;
  have_last_episode_ = false;
  episode_start_ = std::chrono::steady_clock::now();

  ResetResult r;
  r.observation = observe();
  r.info = episode_info();
  r.info.set("matrix.rows", static_cast<std::int64_t>(matrix->rows()));
  r.info.set("matrix.cols", static_cast<std::int64_t>(matrix->cols()));
  r.info.set("matrix.nnz", matrix->nnz());
  r.info.set("observation.count", matrix_obs_->count);
  r.info.set("mask", std::string(to_string(config_.mask)));
  return r;
}

Observation SparseCudaEnv::observe() {
  Observation o;
  o.matrix = matrix_obs_;
  o.tokens = episode_.tokens;
  o.action_mask.assign(tokenizer_->vocabulary().size(), 0);
  if (active_) mask_.fill(o.action_mask);
  o.task = episode_.task;
  o.remaining_tokens = config_.max_tokens - static_cast<int>(episode_.tokens.size());
  return o;
}

Info SparseCudaEnv::episode_info() const {
  Info info;
  info.set("task", episode_.task.str());
  info.set("task.uri", episode_.task.uri);
  info.set("env.id", env_id_);
  info.set("env.seed", static_cast<std::int64_t>(episode_.env_seed));
  info.set("episode.index", static_cast<std::int64_t>(episode_.episode_index));
  info.set("episode.seed", static_cast<std::int64_t>(episode_.episode_seed));
  return info;
}

void SparseCudaEnv::begin_step(TokenId token, StepAnnotation annotation) {
  if (step_pending_)
    throw std::logic_error("begin_step() while a step is pending: call finish_step()");
  if (!active_) {
    throw std::logic_error(
        "step() without an active episode: call reset() first (after the episode "
        "ended, too)");
  }
  const Vocabulary& v = tokenizer_->vocabulary();
  if (token < 0 || static_cast<std::size_t>(token) >= v.size()) {
    throw std::invalid_argument("action " + std::to_string(token) + " is outside Discrete(" +
                                std::to_string(v.size()) + ")");
  }
  mask_.advance(token);  // std::invalid_argument naming the token when the mask forbids it
  episode_.tokens.push_back(token);
  episode_.log_probs.push_back(annotation.log_prob);
  episode_.values.push_back(annotation.value);
  step_pending_ = true;
  StepResult r;
  if (token == v.eos()) {
    episode_.source = tokenizer_->decode(episode_.tokens);
    eval_start_ = std::chrono::steady_clock::now();
    try {
      pending_eval_ = backend_->submit(episode_.task, episode_.source);
    } catch (const std::exception& e) {
      std::promise<reward::EvalResult> failed;
      reward::EvalResult result;
      result.error = reward::ErrorKind::internal_error;
      result.message = std::string("the evaluation backend refused the request: ") + e.what();
      failed.set_value(std::move(result));
      pending_eval_ = failed.get_future();
    }
    pending_result_ = std::move(r);
    return;
  }
  if (static_cast<int>(episode_.tokens.size()) >= config_.max_tokens) {
    episode_.source = tokenizer_->decode(episode_.tokens);
    reward::RewardBreakdown breakdown;
    breakdown.total = breakdown.unclipped = config_.resolved_truncation_reward();
    breakdown.compile = breakdown.total;
    finish_episode(false, std::nullopt, breakdown.total, breakdown, r);
    r.info.set("truncated.reason", "max_tokens");
    pending_result_ = std::move(r);
    return;
  }
  r.observation = observe();
  r.step_type = episode_.tokens.size() == 1 ? StepType::first : StepType::mid;
  pending_result_ = std::move(r);
}

bool SparseCudaEnv::step_ready() const {
  if (!step_pending_) return false;
  if (!pending_eval_) return true;
  return pending_eval_->wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

bool SparseCudaEnv::wait_step(std::chrono::microseconds timeout) const {
  if (!step_pending_) return false;
  if (!pending_eval_) return true;
  return pending_eval_->wait_for(timeout) == std::future_status::ready;
}

StepResult SparseCudaEnv::finish_step() {
  if (!step_pending_) throw std::logic_error("finish_step() without begin_step()");
  StepResult r = std::move(*pending_result_);
  pending_result_.reset();
  if (pending_eval_) {
    reward::EvalResult result = take_result(*pending_eval_);
    pending_eval_.reset();
    episode_.evaluation_seconds = seconds_since(eval_start_);
    const reward::RewardBreakdown breakdown = reward_.breakdown(result);
    finish_episode(true, std::move(result), breakdown.total, breakdown, r);
  }
  step_pending_ = false;
  return r;
}

StepResult SparseCudaEnv::step(TokenId token, StepAnnotation annotation) {
  begin_step(token, annotation);
  return finish_step();
}

void SparseCudaEnv::finish_episode(bool terminated, std::optional<reward::EvalResult> eval,
                                   double reward, const reward::RewardBreakdown& breakdown,
                                   StepResult& r) {
  active_ = false;
  have_last_episode_ = true;
  episode_.terminated = terminated;
  episode_.truncated = !terminated;
  episode_.reward = reward;
  episode_.breakdown = breakdown;
  episode_.eval = std::move(eval);
  episode_.episode_seconds = seconds_since(episode_start_);
  r.observation = observe();
  r.reward = reward;
  r.terminated = terminated;
  r.truncated = !terminated;
  r.step_type = StepType::last;
  r.info = episode_info();
  r.info.set("episode.length", static_cast<std::int64_t>(episode_.tokens.size()));
  r.info.set("episode.source", episode_.source);
  r.info.set("episode.seconds", episode_.episode_seconds);
  if (episode_.eval) {
    add_eval_result(r.info, *episode_.eval);
    r.info.set("evaluation.seconds", episode_.evaluation_seconds);
  }
  add_reward_breakdown(r.info, breakdown);
}

Spaces SparseCudaEnv::spaces() const {
  Spaces s;
  s.actions = static_cast<std::int64_t>(tokenizer_->vocabulary().size());
  s.nnz_samples = config_.observation.nnz_samples;
  s.embedding_dim = config_.observation.embedding_dim;
  s.feature_dim = static_cast<int>(feature_names().size());
  s.max_tokens = config_.max_tokens;
  s.mask = config_.mask;
  return s;
}

EnvState SparseCudaEnv::state() const {
  EnvState s;
  s.task = episode_.task;
  s.env_id = env_id_;
  s.env_seed = episode_.env_seed;
  s.episode_index = episode_.episode_index;
  s.episode_seed = episode_.episode_seed;
  s.tokens = episode_.tokens;
  s.active = active_;
  return s;
}

const Episode* SparseCudaEnv::last_episode() const {
  return have_last_episode_ ? &episode_ : nullptr;
}

EpisodeOutcome SparseCudaEnv::evaluate(const datasets::Task& task,
                                       std::span<const TokenId> tokens) {
  return std::move(
      evaluate_group(task, {std::vector<TokenId>(tokens.begin(), tokens.end())}).front());
}

std::vector<EpisodeOutcome> SparseCudaEnv::evaluate_group(
    const datasets::Task& task, const std::vector<std::vector<TokenId>>& sequences) {
  std::vector<EpisodeOutcome> outcomes(sequences.size());
  std::vector<std::future<reward::EvalResult>> futures;
  futures.reserve(sequences.size());
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    outcomes[i].source = tokenizer_->decode(sequences[i]);
    try {
      futures.push_back(backend_->submit(task, outcomes[i].source));
    } catch (const std::exception& e) {
      std::promise<reward::EvalResult> failed;
      reward::EvalResult result;
      result.error = reward::ErrorKind::internal_error;
      result.message = std::string("the evaluation backend refused the request: ") + e.what();
      failed.set_value(std::move(result));
      futures.push_back(failed.get_future());
    }
  }
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    outcomes[i].eval = take_result(futures[i]);
    outcomes[i].breakdown = reward_.breakdown(outcomes[i].eval);
  }
  return outcomes;
}

ReplayReport SparseCudaEnv::replay(const Episode& recorded) {
  ReplayReport report;
  SparseCudaEnv fresh(config_, tokenizer_,
                      TaskSource::from_tasks({recorded.task}, TaskOrder::sequential), store_,
                      backend_, recorded.env_id);
  ResetOptions options;
  options.task = recorded.task;
  options.episode_seed = recorded.episode_seed;
  (void)fresh.reset(recorded.env_seed, options);
  const Episode& now = fresh.episode_;
  if (!recorded.observation_digest.empty() &&
      now.observation_digest != recorded.observation_digest) {
    report.mismatches.push_back("observation digest " + now.observation_digest + " != recorded " +
                                recorded.observation_digest);
  }
  StepResult last;
  for (std::size_t i = 0; i < recorded.tokens.size(); ++i) {
    try {
      last = fresh.step(recorded.tokens[i]);
    } catch (const std::exception& e) {
      report.mismatches.push_back("token " + std::to_string(i) + ": " + e.what());
      return report;
    }
    if (last.done() && i + 1 < recorded.tokens.size()) {
      report.mismatches.push_back("the episode ended at token " + std::to_string(i) + " of " +
                                  std::to_string(recorded.tokens.size()));
      return report;
    }
  }
  if (!last.done()) {
    report.mismatches.push_back("the recorded tokens do not end the episode");
    return report;
  }
  report.reward = last.reward;
  if (last.terminated != recorded.terminated || last.truncated != recorded.truncated) {
    report.mismatches.push_back("termination differs (terminated " +
                                std::to_string(last.terminated) + ", truncated " +
                                std::to_string(last.truncated) + ")");
  }
  if (now.source != recorded.source) report.mismatches.push_back("decoded program differs");
  if (recorded.eval && now.eval) {
    if (recorded.eval->error != now.eval->error || recorded.eval->stage != now.eval->stage) {
      report.mismatches.push_back(
          "evaluation outcome " + std::string(reward::to_string(now.eval->stage)) + "/" +
          std::string(reward::to_string(now.eval->error)) + " != recorded " +
          std::string(reward::to_string(recorded.eval->stage)) + "/" +
          std::string(reward::to_string(recorded.eval->error)));
    }
  }
  // Timed rewards vary with the measurement; everything before the speed term must match exactly.
  const bool timed = recorded.eval && recorded.eval->timed;
  if (!timed && last.reward != recorded.reward) {
    report.mismatches.push_back("reward " + std::to_string(last.reward) + " != recorded " +
                                std::to_string(recorded.reward));
  }
  if (timed && (now.breakdown.compile != recorded.breakdown.compile ||
                now.breakdown.test != recorded.breakdown.test)) {
    report.mismatches.push_back("compile or test reward term differs");
  }
  return report;
}

}  // namespace sparserl::env
