// The episode path every driver shares (the contract is in the header): prompts from tasks,
// episodes from completions, the truncation rule and the reward applied in one place.
#include "sparserl/env/episode_pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sparserl/env/env_knobs.hpp"
#include "sparserl/reward/digest.hpp"

namespace sparserl::env {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A future that is already an internal_error result (the backend refused the request).
std::future<reward::EvalResult> refused(const std::exception& e) {
  std::promise<reward::EvalResult> failed;
  reward::EvalResult result;
  result.error = reward::ErrorKind::internal_error;
  result.message = std::string("the evaluation backend refused the request: ") + e.what();
  failed.set_value(std::move(result));
  return failed.get_future();
}

}  // namespace

std::optional<std::string> EnvConfig::validate() const {
  // Each knob's range, choices and checks come from its declaration (env_knobs.cpp); what is left
  // here relates fields to each other. The observation's knobs are named by their field here.
  static const datasets::Knobs<EnvConfig> own =
      env_knobs().section("", {"max_tokens", "mask", "truncation_reward"});
  if (auto problem = own.check(*this)) return problem;
  if (mask == MaskMode::syntax && max_tokens < kMinSyntaxTokens) {
    return "max_tokens = " + std::to_string(max_tokens) + ": the syntax mask needs at least " +
           std::to_string(kMinSyntaxTokens) + " (the shortest complete program)";
  }
  if (auto problem = observation.validate()) return "observation." + *problem;
  if (auto problem = reward.validate()) return "reward: " + *problem;
  return std::nullopt;
}

double EnvConfig::resolved_truncation_reward() const {
  return std::clamp(truncation_reward.value_or(reward.compile_fail), reward.clip_min,
                    reward.clip_max);
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

TaskObserver::TaskObserver(std::shared_ptr<datasets::MatrixStore> store, ObservationConfig config)
    : store_(std::move(store)), config_(config) {
  if (auto problem = config_.validate()) {
    throw std::invalid_argument("observation config: " + *problem);
  }
  if (!store_) throw std::invalid_argument("TaskObserver needs a matrix store");
}

TaskObserver::Observed TaskObserver::observe(const datasets::Task& task, std::uint64_t seed) const {
  Observed out;
  out.matrix = store_->load(task.uri);
  datasets::MatrixFeatures features;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = features_.find(task.uri);
    if (found == features_.end()) {
      if (features_.size() > 4096) features_.clear();
      found = features_.emplace(task.uri, datasets::compute_features(*out.matrix)).first;
    }
    features = found->second;
  }
  out.observation = std::make_shared<const MatrixObservation>(
      observe_matrix(*out.matrix, features, task, config_, seed));
  return out;
}

EpisodePipeline::EpisodePipeline(EnvConfig config,
                                 std::shared_ptr<const ProgramTokenizer> tokenizer,
                                 std::shared_ptr<datasets::MatrixStore> store,
                                 std::shared_ptr<EvaluationBackend> backend)
    : config_(std::move(config)),
      tokenizer_(std::move(tokenizer)),
      store_(std::move(store)),
      backend_(std::move(backend)),
      reward_([this] {
        if (auto problem = config_.validate())
          throw std::invalid_argument("env config: " + *problem);
        return reward::HierarchicalReward(config_.reward);
      }()),
      observer_(store_, config_.observation) {
  if (!tokenizer_ || !store_ || !backend_) {
    throw std::invalid_argument(
        "SparseCudaEnv needs a tokenizer, a matrix store and an evaluation backend");
  }
}

std::unique_ptr<EpisodePipeline> EpisodePipeline::with_tokenizer(
    std::shared_ptr<const ProgramTokenizer> tokenizer) const {
  return std::make_unique<EpisodePipeline>(config_, std::move(tokenizer), store_, backend_);
}

Prompt EpisodePipeline::start(const EpisodeStart& start) const {
  const TaskObserver::Observed observed = observer_.observe(start.task, start.episode_seed);
  Prompt p;
  p.start = start;
  p.matrix = observed.observation;
  p.observation_digest = observation_digest(*p.matrix);
  p.rows = observed.matrix->rows();
  p.cols = observed.matrix->cols();
  p.nnz = observed.matrix->nnz();
  p.started = std::chrono::steady_clock::now();
  return p;
}

std::vector<Prompt> EpisodePipeline::start(std::span<const EpisodeStart> starts) const {
  std::vector<Prompt> prompts;
  prompts.reserve(starts.size());
  for (const EpisodeStart& s : starts) prompts.push_back(start(s));
  return prompts;
}

PendingEpisode EpisodePipeline::submit(const Prompt& prompt, Completion completion) const {
  const std::size_t actions = tokenizer_->action_count();
  const auto length = static_cast<int>(completion.tokens.size());
  const bool ends =
      !completion.tokens.empty() && completion.tokens.back() == tokenizer_->end_of_program();
  const std::string what = "completion for " + prompt.start.task.str() + " (episode " +
                           std::to_string(prompt.start.episode_index) + ")";
  if (length > config_.max_tokens) {
    throw std::invalid_argument(what + ": " + std::to_string(length) + " tokens, max_tokens is " +
                                std::to_string(config_.max_tokens));
  }
  if (!ends && length != config_.max_tokens) {
    throw std::invalid_argument(what + ": " + std::to_string(length) +
                                " tokens without <eos>: neither ended nor cut at max_tokens (" +
                                std::to_string(config_.max_tokens) + ")");
  }
  if (completion.terminated != ends) {
    throw std::invalid_argument(what + ": terminated = " + std::to_string(completion.terminated) +
                                " but the tokens " + (ends ? "end" : "do not end") + " with <eos>");
  }
  for (const TokenId t : completion.tokens) {
    if (t < 0 || static_cast<std::size_t>(t) >= actions) {
      throw std::invalid_argument(what + ": token " + std::to_string(t) + " is outside Discrete(" +
                                  std::to_string(actions) + ")");
    }
  }
  PendingEpisode pending;
  Episode& e = pending.episode;
  e.task = prompt.start.task;
  e.env_id = prompt.start.env_id;
  e.env_seed = prompt.start.env_seed;
  e.episode_index = prompt.start.episode_index;
  e.episode_seed = prompt.start.episode_seed;
  e.observation_digest = prompt.observation_digest;
  e.matrix = prompt.matrix;
  e.tokens = std::move(completion.tokens);
  e.log_probs = std::move(completion.log_probs);
  e.values = std::move(completion.values);
  e.action_masks = std::move(completion.action_masks);
  // An agent that reports nothing records zeros, one per token (as step() without annotations).
  if (e.log_probs.empty()) e.log_probs.assign(e.tokens.size(), 0.0f);
  if (e.values.empty()) e.values.assign(e.tokens.size(), 0.0f);
  e.source = tokenizer_->program_text(e.tokens);
  e.terminated = ends;
  e.truncated = !ends;
  e.episode_seconds = seconds_since(prompt.started);  // finish() adds the evaluation's wait
  pending.submitted = std::chrono::steady_clock::now();
  if (ends) {
    try {
      pending.evaluation = backend_->submit(e.task, e.source);
    } catch (const std::exception& error) {
      pending.evaluation = refused(error);
    }
  }
  return pending;
}

bool EpisodePipeline::ready(const PendingEpisode& pending) {
  return !pending.evaluation ||
         pending.evaluation->wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

bool EpisodePipeline::wait(const PendingEpisode& pending, std::chrono::microseconds timeout) {
  return !pending.evaluation ||
         pending.evaluation->wait_for(timeout) == std::future_status::ready;
}

Episode EpisodePipeline::finish(PendingEpisode pending) const {
  Episode e = std::move(pending.episode);
  if (pending.evaluation) {
    e.eval = take_result(*pending.evaluation);
    e.evaluation_seconds = seconds_since(pending.submitted);
    e.episode_seconds += e.evaluation_seconds;
    e.breakdown = reward_.breakdown(*e.eval);
  } else {
    // Cut at max_tokens: never evaluated; the truncation reward stands in for R_compile's failure.
    e.breakdown.total = e.breakdown.unclipped = config_.resolved_truncation_reward();
    e.breakdown.compile = e.breakdown.total;
  }
  e.reward = e.breakdown.total;
  return e;
}

std::vector<Episode> EpisodePipeline::run(std::span<const Prompt> prompts,
                                          std::vector<Completion> completions) const {
  if (prompts.empty() ? !completions.empty() : completions.size() % prompts.size() != 0) {
    throw std::invalid_argument("run(): " + std::to_string(completions.size()) +
                                " completions for " + std::to_string(prompts.size()) +
                                " prompts (expected a multiple)");
  }
  const std::size_t samples = prompts.empty() ? 0 : completions.size() / prompts.size();
  std::vector<PendingEpisode> pending;
  pending.reserve(completions.size());
  for (std::size_t k = 0; k < completions.size(); ++k) {
    const Prompt& prompt = prompts[k / samples];
    pending.push_back(submit(prompt, std::move(completions[k])));
    Episode& e = pending.back().episode;
    e.group = static_cast<std::int64_t>(k / samples);
    e.episode_index = prompt.start.episode_index * samples + k % samples;
  }
  std::vector<Episode> episodes;
  episodes.reserve(pending.size());
  for (PendingEpisode& p : pending) episodes.push_back(finish(std::move(p)));
  return episodes;
}

Info episode_ids_info(const Episode& episode) {
  Info info;
  info.set("task", episode.task.str());
  info.set("task.uri", episode.task.uri);
  info.set("env.id", episode.env_id);
  info.set("env.seed", static_cast<std::int64_t>(episode.env_seed));
  info.set("episode.index", static_cast<std::int64_t>(episode.episode_index));
  info.set("episode.seed", static_cast<std::int64_t>(episode.episode_seed));
  return info;
}

Info EpisodePipeline::start_info(const Prompt& prompt) const {
  Episode ids;
  ids.task = prompt.start.task;
  ids.env_id = prompt.start.env_id;
  ids.env_seed = prompt.start.env_seed;
  ids.episode_index = prompt.start.episode_index;
  ids.episode_seed = prompt.start.episode_seed;
  Info info = episode_ids_info(ids);
  info.set("matrix.rows", prompt.rows);
  info.set("matrix.cols", prompt.cols);
  info.set("matrix.nnz", prompt.nnz);
  info.set("observation.count", prompt.matrix->count);
  info.set("mask", std::string(to_string(config_.mask)));
  return info;
}

Info EpisodePipeline::final_info(const Episode& episode) {
  Info info = episode_ids_info(episode);
  info.set("episode.length", static_cast<std::int64_t>(episode.tokens.size()));
  info.set("episode.source", episode.source);
  info.set("episode.seconds", episode.episode_seconds);
  if (episode.eval) {
    add_eval_result(info, *episode.eval);
    info.set("evaluation.seconds", episode.evaluation_seconds);
  }
  add_reward_breakdown(info, episode.breakdown);
  if (episode.truncated) info.set("truncated.reason", "max_tokens");
  return info;
}

}  // namespace sparserl::env
