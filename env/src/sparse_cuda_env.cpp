// SparseCudaEnv's bookkeeping: seeds, the task order, the current episode's tokens and mask, the
// pending step and replay. An episode starts and ends in the EpisodePipeline, as the trainer's and
// the bench's do. The contract is in the header.
#include "sparserl/env/sparse_cuda_env.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sparserl/env/seeding.hpp"
#include "sparserl/reward/digest.hpp"

namespace sparserl::env {
namespace {

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

std::string Spaces::describe() const {
  return "actions: Discrete(" + std::to_string(actions) + "); observation: matrix.rows " +
         shape({nnz_samples}) + " int32, matrix.cols " + shape({nnz_samples}) +
         " int32, matrix.embedding " + shape({nnz_samples, embedding_dim}) +
         " float32, matrix.features " + shape({feature_dim}) + " float32, tokens [0.." +
         std::to_string(max_tokens) + "] int32, action_mask " + shape({actions}) + " uint8 (" +
         std::string(to_string(mask)) + ")";
}

SparseCudaEnv::SparseCudaEnv(EnvConfig config, std::shared_ptr<const Tokenizer> tokenizer,
                             TaskSource tasks, std::shared_ptr<datasets::MatrixStore> store,
                             std::shared_ptr<EvaluationBackend> backend, int env_id)
    : tokenizer_(std::move(tokenizer)),
      pipeline_(std::make_shared<EpisodePipeline>(std::move(config), tokenizer_, std::move(store),
                                                  std::move(backend))),
      tasks_(std::move(tasks)),
      mask_(tokenizer_->vocabulary_ptr(), pipeline_->config().mask, pipeline_->config().max_tokens),
      env_id_(env_id) {}

SparseCudaEnv::~SparseCudaEnv() {
  // An evaluation still in flight is waited for: its worker writes into the future's shared state.
  if (pending_episode_ && pending_episode_->evaluation && pending_episode_->evaluation->valid()) {
    pending_episode_->evaluation->wait();
  }
}

ResetResult SparseCudaEnv::reset(std::optional<std::uint64_t> seed, const ResetOptions& options) {
  if (step_pending_)
    throw std::logic_error("reset() while a step is pending: call finish_step() first");
  if (seed || !seeded_) {
    env_seed_ = seed.value_or(config().seed);
    tasks_.seed(env_seed_);
    next_episode_index_ = 0;
    seeded_ = true;
  }
  EpisodeStart start;
  start.task = options.task ? *options.task : tasks_.next();
  start.env_id = env_id_;
  start.env_seed = env_seed_;
  start.episode_index = next_episode_index_++;
  start.episode_seed =
      options.episode_seed.value_or(episode_seed(env_seed_, start.episode_index));
  prompt_ = pipeline_->start(start);
  completion_ = Completion{};
  completion_.tokens.reserve(static_cast<std::size_t>(std::min(config().max_tokens, 4096)));
  mask_.reset();
  active_ = true;
  last_episode_.reset();

  ResetResult r;
  r.observation = observe();
  r.info = pipeline_->start_info(prompt_);
  return r;
}

Observation SparseCudaEnv::observe() {
  Observation o;
  o.matrix = prompt_.matrix;
  o.tokens = completion_.tokens;
  o.action_mask.assign(tokenizer().vocabulary().size(), 0);
  if (active_) mask_.fill(o.action_mask);
  o.task = prompt_.start.task;
  o.remaining_tokens = config().max_tokens - static_cast<int>(completion_.tokens.size());
  return o;
}

void SparseCudaEnv::begin_step(TokenId token, StepAnnotation annotation) {
  if (step_pending_)
    throw std::logic_error("begin_step() while a step is pending: call finish_step()");
  if (!active_) {
    throw std::logic_error(
        "step() without an active episode: call reset() first (after the episode "
        "ended, too)");
  }
  const Vocabulary& v = tokenizer().vocabulary();
  if (token < 0 || static_cast<std::size_t>(token) >= v.size()) {
    throw std::invalid_argument("action " + std::to_string(token) + " is outside Discrete(" +
                                std::to_string(v.size()) + ")");
  }
  mask_.advance(token);  // std::invalid_argument naming the token when the mask forbids it
  completion_.tokens.push_back(token);
  completion_.log_probs.push_back(annotation.log_prob);
  completion_.values.push_back(annotation.value);
  step_pending_ = true;
  pending_result_.emplace();
  const bool ends = token == v.eos();
  if (ends || static_cast<int>(completion_.tokens.size()) >= config().max_tokens) {
    // The episode is complete: the pipeline decodes it and evaluates it (or applies the
    // truncation rule), exactly as for a completion the trainer hands it.
    active_ = false;
    completion_.terminated = ends;
    pending_episode_ = pipeline_->submit(prompt_, std::move(completion_));
    completion_ = Completion{};
    return;
  }
  pending_result_->observation = observe();
  pending_result_->step_type =
      completion_.tokens.size() == 1 ? StepType::first : StepType::mid;
}

bool SparseCudaEnv::step_ready() const {
  if (!step_pending_) return false;
  return !pending_episode_ || EpisodePipeline::ready(*pending_episode_);
}

bool SparseCudaEnv::wait_step(std::chrono::microseconds timeout) const {
  if (!step_pending_) return false;
  return !pending_episode_ || EpisodePipeline::wait(*pending_episode_, timeout);
}

StepResult SparseCudaEnv::finish_step() {
  if (!step_pending_) throw std::logic_error("finish_step() without begin_step()");
  StepResult r = std::move(*pending_result_);
  pending_result_.reset();
  if (pending_episode_) end_episode(r);
  step_pending_ = false;
  return r;
}

StepResult SparseCudaEnv::step(TokenId token, StepAnnotation annotation) {
  begin_step(token, annotation);
  return finish_step();
}

void SparseCudaEnv::end_episode(StepResult& r) {
  PendingEpisode pending = std::move(*pending_episode_);
  pending_episode_.reset();
  last_episode_ = pipeline_->finish(std::move(pending));
  const Episode& e = *last_episode_;
  // The tokens stay in the last observation; its mask is all zero (the episode ended).
  completion_.tokens = e.tokens;
  r.observation = observe();
  r.reward = e.reward;
  r.terminated = e.terminated;
  r.truncated = e.truncated;
  r.step_type = StepType::last;
  r.info = EpisodePipeline::final_info(e);
}

Spaces SparseCudaEnv::spaces() const {
  Spaces s;
  s.actions = static_cast<std::int64_t>(tokenizer().vocabulary().size());
  s.nnz_samples = config().observation.nnz_samples;
  s.embedding_dim = config().observation.embedding_dim;
  s.feature_dim = static_cast<int>(feature_names().size());
  s.max_tokens = config().max_tokens;
  s.mask = config().mask;
  return s;
}

EnvState SparseCudaEnv::state() const {
  EnvState s;
  s.task = prompt_.start.task;
  s.env_id = env_id_;
  s.env_seed = prompt_.start.env_seed;
  s.episode_index = prompt_.start.episode_index;
  s.episode_seed = prompt_.start.episode_seed;
  s.tokens = completion_.tokens;
  s.active = active_;
  return s;
}

const Episode* SparseCudaEnv::last_episode() const {
  return last_episode_ ? &*last_episode_ : nullptr;
}

ReplayReport SparseCudaEnv::replay(const Episode& recorded) {
  ReplayReport report;
  SparseCudaEnv fresh(config(), tokenizer_,
                      TaskSource::from_tasks({recorded.task}, TaskOrder::sequential),
                      pipeline_->store(), pipeline_->backend(), recorded.env_id);
  ResetOptions options;
  options.task = recorded.task;
  options.episode_seed = recorded.episode_seed;
  (void)fresh.reset(recorded.env_seed, options);
  if (!recorded.observation_digest.empty() &&
      fresh.prompt_.observation_digest != recorded.observation_digest) {
    report.mismatches.push_back("observation digest " + fresh.prompt_.observation_digest +
                                " != recorded " + recorded.observation_digest);
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
  const Episode& now = *fresh.last_episode();
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
